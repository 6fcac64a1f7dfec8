"""The default's choice of minmax ranges widened for unseen samples (edgec/quant/unseen_choice.py): cross-validated on
the calibration samples, each fold quantized from the other folds' ranges only, kept above the recipe's bar."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLES
from edgec import api
from edgec.quant import fixes, ptq, unseen_choice

DIGITS = EXAMPLES / "digits_cnn"


def _few(tmp_path, n=8):
    calib = tmp_path / "few.npz"
    x = np.load(DIGITS / "calib.npz")["x"][:n]
    np.savez(calib, x=x)
    return calib, x


def test_each_fold_is_quantized_from_the_other_samples_ranges_alone(tmp_path, monkeypatch):
    calib, x = _few(tmp_path)
    calls, stats = [], []
    quantize, choose = unseen_choice.quantize, unseen_choice.choose
    monkeypatch.setattr(unseen_choice, "quantize", lambda g, r, pc: calls.append(r) or quantize(g, r, pc))
    monkeypatch.setattr(unseen_choice, "choose", lambda m, g, st, *a: stats.append(st) or choose(m, g, st, *a))
    _, res = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(sensitivity_samples=0, cache=False))
    st = stats[0]
    assert "8 folds of 8 calibration samples" in res.fixes.reason and len(calls) >= len(x)
    moved = 0
    for i in range(len(x)):        # leave-one-out: fold i's observed ranges are the other 7 samples' extremes
        want = {n: (e[np.arange(len(x)) != i, 0].min(), e[np.arange(len(x)) != i, 1].max())
                for n, e in st.extremes.items()}
        assert any(all(c[n] == r for n, r in want.items()) for c in calls), f"fold {i}"
        moved += any(r != (st.lo[n], st.hi[n]) for n, r in want.items())
    assert moved >= 2              # samples that set an extreme: a fold that had seen them would differ


def test_the_widened_ranges_are_kept_only_above_the_recipes_bar(tmp_path, monkeypatch):
    calib, _ = _few(tmp_path)
    opts = ptq.QuantOptions(sensitivity_samples=0, cache=False)
    _, seen = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(
        sensitivity_samples=0, cache=False, unseen_ranges=False))
    _, wide = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(
        sensitivity_samples=0, cache=False, unseen_ranges=True))
    assert seen.ranges != wide.ranges
    # forced either way (--no-unseen-ranges / --unseen-ranges): nothing cross-validated, and the report says so
    assert not seen.fixes.unseen and "forced (unseen_ranges=False, --no-unseen-ranges)" in seen.fixes.reason
    assert wide.fixes.unseen and "forced (unseen_ranges=True, --unseen-ranges)" in wide.fixes.reason
    report = api.write_quant_report(wide, wide.options, tmp_path, "digits")["fixes"]
    assert report["unseen"] is True and "not cross-validated" in report["reason"]
    assert "folds of" not in seen.fixes.reason + wide.fixes.reason   # the unseen choice's words (not bias correction's)
    monkeypatch.setattr(fixes, "MIN_GAIN_DB", -100.0)        # any measure passes
    _, low = api.calibrate_model(DIGITS / "model.onnx", calib, opts)
    assert low.fixes.unseen and low.ranges == wide.ranges and "widened for unseen samples kept" in low.fixes.reason
    monkeypatch.setattr(fixes, "MIN_GAIN_DB", 100.0)         # none does
    _, high = api.calibrate_model(DIGITS / "model.onnx", calib, opts)
    assert not high.fixes.unseen and high.ranges == seen.ranges and "not kept" in high.fixes.reason
    before, after = (float(v) for v in high.fixes.reason.split("output SQNR ")[1].split(" dB")[0].split(" -> "))
    assert f"{before:.1f} -> {after:.1f} dB" in low.fixes.reason     # the same measure, only the bar moved


@pytest.mark.parametrize("flag, want", [([], None), (["--unseen-ranges"], True), (["--no-unseen-ranges"], False)])
def test_the_command_line_forces_the_choice(flag, want):
    from edgec import cli

    for command in (["calibrate"], ["build", "--board", "host"]):
        args = cli.parser().parse_args([*command, "m.onnx", "--calib", "c.npz", *flag])
        assert cli._quant_options(args).unseen_ranges is want
