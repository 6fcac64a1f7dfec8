"""The default quantization recipe (edgec/quant/fixes.py): fixes chosen by held-out output SQNR, flags that force."""
from __future__ import annotations

import json
import runpy

import numpy as np
import onnx
import pytest

from conftest import EXAMPLES, check_generated_c
from edgec import api
from edgec.quant import fixes, ptq, reference
from edgec.fixedpoint.scheme import quantize_input
from edgec.quant.calibrate import run_float

DIGITS = EXAMPLES / "digits_cnn"


def _conv_outlier(tmp_path, which: str = "conv_outlier"):
    """examples/hostile_channel/conv_outlier.py's model, made anew from the digits CNN."""
    return runpy.run_path(str(EXAMPLES / "hostile_channel" / "conv_outlier.py"))["write"](which, tmp_path)


def _top1(graph, x, y) -> float:
    xq = quantize_input(graph.tensors[graph.input], x)
    out = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    return 100 * float(np.mean(out.argmax(1) == y))


@pytest.fixture(scope="module")
def test_set():
    z = np.load(DIGITS / "test.npz")
    return z["x"].astype(np.float32), z["y"]


@pytest.mark.parametrize("which, layer", [("conv_outlier", "/conv1/Conv"), ("depthwise_outlier", "/dw/Conv")])
def test_default_equalizes_an_outlier_channel_and_stays_within_one_point(tmp_path, test_set, which, layer):
    """A 50x channel after a conv or a depthwise conv (compensated in the next layer): the default equalizes."""
    x, y = test_set
    path = _conv_outlier(tmp_path, which)
    float_top1 = 100 * float(np.mean(run_float(onnx.load(str(path)), x).argmax(1) == y))
    _, res = api.calibrate_model(path, DIGITS / "calib.npz", ptq.QuantOptions(cache=False, sensitivity_samples=0))
    f = res.fixes
    assert f.judged and f.equalize and res.options.equalize is True, f.summary()
    assert f"outlier channels in {layer}" in " ".join(f.findings)
    plain, eq = f.trials[0], next(t for t in f.trials if t["fix"] == "cross-layer equalization")
    assert eq["kept"] and eq["held_out_db"] > plain["held_out_db"] + 6       # the 50x channel costs >6 dB
    assert _top1(res.graph, x, y) >= float_top1 - 1.0
    assert res.to_json(res.options)["fixes"]["chosen"][0] == "cross-layer equalization"
    check_generated_c(res.graph, x[:64], tmp_path / "c")                      # the C still matches bit for bit


def test_default_does_not_lose_accuracy_on_the_digits_example(test_set):
    x, y = test_set
    plain = api.calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz",
                                ptq.QuantOptions.plain(cache=False, sensitivity_samples=0))[1]
    default = api.calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz",
                                  ptq.QuantOptions(cache=False, sensitivity_samples=0))[1]
    assert default.fixes.judged and plain.fixes is None
    kept = [t for t in default.fixes.trials if t["kept"]]
    assert kept[-1]["held_out_db"] >= kept[0]["held_out_db"]
    assert _top1(default.graph, x, y) >= _top1(plain.graph, x, y)


def test_a_fix_the_integer_kernels_cannot_take_is_a_lost_trial_not_a_failed_build(tmp_path, monkeypatch):
    """An equalized candidate whose quantization fails (a float VWW .tflite: a multiplier out of the kernels'
    range at one layer) is recorded as a trial not kept, with the reason; the build goes on with the plain recipe.
    Before, the error ended the build though the plain model quantizes."""
    from edgec.errors import EdgecError
    from edgec.quant import equalize

    equalized, real_equalize, real_quantize = [], equalize.equalize, fixes.quantize

    def recording(graph, *a, **k):
        out = real_equalize(graph, *a, **k)
        equalized.append(out[0])
        return out

    def refusing(g, *a, **k):
        if any(g is e for e in equalized):
            raise EdgecError("node /conv1/Conv: requantization multiplier out of range")
        return real_quantize(g, *a, **k)

    monkeypatch.setattr(equalize, "equalize", recording)
    monkeypatch.setattr(fixes, "quantize", refusing)
    _, res = api.calibrate_model(_conv_outlier(tmp_path), DIGITS / "calib.npz",
                                 ptq.QuantOptions(cache=False, sensitivity_samples=0))
    eq = next(t for t in res.fixes.trials if t["fix"] == "cross-layer equalization")
    assert equalized and not eq["kept"] and "multiplier out of range" in eq["error"], res.fixes.trials
    assert not res.fixes.equalize and res.options.equalize is False
    assert res.fixes.trials[0]["held_out_db"] > 0 and res.fixes.summary()


def test_flags_force_the_choices(tmp_path):
    path = _conv_outlier(tmp_path)
    _, res = api.calibrate_model(path, DIGITS / "calib.npz",
                                 ptq.QuantOptions(equalize=False, sensitivity_samples=0, cache=False))
    assert not res.fixes.equalize and all(t["fix"] != "cross-layer equalization" for t in res.fixes.trials)
    _, forced = api.calibrate_model(path, DIGITS / "calib.npz", ptq.QuantOptions.plain(sensitivity_samples=0))
    assert forced.fixes is None and forced.method == "minmax" and forced.options.equalize is False


def test_too_few_samples_keep_minmax_with_shrunk_bias_correction_and_say_why(tmp_path):
    calib = tmp_path / "few.npz"
    np.savez(calib, x=np.load(DIGITS / "calib.npz")["x"][:fixes.MIN_CV_SAMPLES - 1])
    _, res = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(sensitivity_samples=0, cache=False))
    assert not res.fixes.judged and "fewer than" in res.fixes.reason and res.method == "minmax"
    assert "no held-out split" in res.fixes.summary()
    # not judged, bias correction still applies: its shift shrunk to what the few samples agree on
    assert res.fixes.bias_correction and res.options.bias_correction == "quantized"
    assert "bias correction (shrunk" in res.fixes.summary()
    # unseen_ranges=False: the observed extremes; True: its minmax ends widened where unseen samples likely pass
    # them (ranges.unseen), never narrowed
    _, seen = api.calibrate_model(DIGITS / "model.onnx", calib,
                                  ptq.QuantOptions(sensitivity_samples=0, cache=False, unseen_ranges=False))
    assert not seen.fixes.unseen and "widened" not in seen.fixes.summary()
    _, wide = api.calibrate_model(DIGITS / "model.onnx", calib,
                                  ptq.QuantOptions(sensitivity_samples=0, cache=False, unseen_ranges=True))
    assert wide.fixes.unseen and "widened" in wide.fixes.summary()
    assert all(wide.ranges[k][0] <= lo and hi <= wide.ranges[k][1] for k, (lo, hi) in seen.ranges.items())
    assert any(wide.ranges[k] != r for k, r in seen.ranges.items())
    # the default (None) chose between them on the calibration samples, cross-validated (unseen_choice.py)
    assert "cross-validated output SQNR" in res.fixes.reason
    assert res.ranges == (wide.ranges if res.fixes.unseen else seen.ranges)
    _, given = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(
        sensitivity_samples=0, cache=False, method="minmax", unseen_ranges=True))   # minmax asked for: as observed
    assert not given.fixes.unseen and given.ranges == seen.ranges
    _, off = api.calibrate_model(DIGITS / "model.onnx", calib,
                                 ptq.QuantOptions(sensitivity_samples=0, cache=False, bias_correction=False))
    assert not off.fixes.bias_correction and off.options.bias_correction is False
    assert not fixes.unjudged(off.graph, 1, (), "one sample", None, None, None).bias_correction


def test_an_unjudged_bias_correction_that_hurts_the_calibration_samples_is_left_out(tmp_path, monkeypatch):
    from edgec.quant import biascorr
    calib = tmp_path / "few.npz"
    np.savez(calib, x=np.load(DIGITS / "calib.npz")["x"][:fixes.MIN_CV_SAMPLES - 1])
    monkeypatch.setattr(biascorr, "shrunk_shift", lambda diff: diff.mean(axis=0) + 5.0)   # a wrong shift
    _, res = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(sensitivity_samples=0, cache=False))
    assert not res.fixes.bias_correction and res.options.bias_correction is False
    assert "bias correction left out" in res.fixes.reason
    _, plain = api.calibrate_model(DIGITS / "model.onnx", calib,
                                   ptq.QuantOptions.plain(sensitivity_samples=0, cache=False))
    assert all(np.array_equal(a.attrs.get("bias", 0), b.attrs.get("bias", 0))
               for a, b in zip(res.graph.ops, plain.graph.ops))


def test_a_default_bias_correction_that_hurts_the_held_out_folds_too_is_left_out(tmp_path, monkeypatch):
    """With 8 samples (MIN_CV_SAMPLES) a default bias correction that lowers the calibration samples' SQNR is also
    measured on samples it was not fitted to: each of CV_FOLDS folds with a correction fitted on the other folds;
    left out when that says so too."""
    from edgec.quant import biascorr
    calib = tmp_path / "eight.npz"
    x = np.load(DIGITS / "calib.npz")["x"][:fixes.MIN_CV_SAMPLES]
    np.savez(calib, x=x)
    fitted, real = [], biascorr.correct_quantized

    def recording(graph, samples, *a, **k):
        fitted.append(np.asarray(samples))
        return real(graph, samples, *a, **k)

    monkeypatch.setattr(biascorr, "correct_quantized", recording)
    monkeypatch.setattr(biascorr, "shrunk_shift", lambda diff: diff.mean(axis=0) + 5.0)   # a wrong shift
    _, res = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(sensitivity_samples=0, cache=False))
    assert not res.fixes.bias_correction and res.options.bias_correction is False
    assert "calibration samples" in res.fixes.reason and "cross-validated (4 folds)" in res.fixes.reason
    # the final correction first, the check's folds last (between them the variant's leave-one-out choice)
    assert len(fitted[0]) == len(x) and len(fitted) > 1 + fixes.CV_FOLDS
    left_out = [[i for i in range(len(x)) if not any(np.array_equal(x[i], r) for r in f)]
                for f in fitted[-fixes.CV_FOLDS:]]
    assert sorted(i for rows in left_out for i in rows) == list(range(len(x)))   # each sample held out once
    assert all(len(rows) == 2 for rows in left_out)


@pytest.mark.parametrize("bad", ["quantized", "weights"])
def test_the_default_bias_correction_variant_is_the_one_the_folds_find_closer_to_float(tmp_path, monkeypatch, bad):
    """With the variant left open, check_unjudged_bias cross-validates both biascorr variants on the calibration
    samples and keeps the one with the higher SQNR: the variant made wrong (a shift of 5 on every channel) loses,
    whichever it is; a variant the options give is kept without that choice."""
    from edgec.quant import biascorr
    calib = tmp_path / "eight.npz"
    np.savez(calib, x=np.load(DIGITS / "calib.npz")["x"][:fixes.MIN_CV_SAMPLES])
    real, good = biascorr.correct_quantized, {"quantized": "weights", "weights": "quantized"}[bad]

    def damaged(graph, samples, per_channel=True, variant="quantized", *rest):
        if variant != bad:
            return real(graph, samples, per_channel, variant, *rest)
        with monkeypatch.context() as m:
            m.setattr(biascorr, "shrunk_shift", lambda diff: diff.mean(axis=0) + 5.0)
            return real(graph, samples, per_channel, variant, *rest)

    monkeypatch.setattr(biascorr, "correct_quantized", damaged)
    _, res = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions(sensitivity_samples=0, cache=False))
    assert res.fixes.bias_correction and res.fixes.bias_variant == good and res.options.bias_correction == good
    assert f"bias correction variant {good} (cross-validated output SQNR quantized" in res.fixes.reason
    _, given = api.calibrate_model(DIGITS / "model.onnx", calib,
                                   ptq.QuantOptions(sensitivity_samples=0, cache=False, bias_correction=good))
    assert not given.fixes.bias_open and "variant" not in given.fixes.reason
    assert given.options.bias_correction == good and given.fixes.bias_variant == good


def test_folds_of_one_graph_measure_what_the_graph_does(tmp_path):
    """worst_output_sqnr of (graph, rows) folds pools each fold's outputs in sample order: folds that are all the
    same graph give that graph's figure."""
    calib = tmp_path / "eight.npz"
    x = np.load(DIGITS / "calib.npz")["x"][:8]
    np.savez(calib, x=x)
    model, res = api.calibrate_model(DIGITS / "model.onnx", calib, ptq.QuantOptions.plain(sensitivity_samples=0,
                                                                                          cache=False))
    g = res.graph
    whole = fixes.worst_output_sqnr(model, g, x)
    folds = [(g, rows) for rows in np.array_split(np.arange(len(x)), fixes.CV_FOLDS)]
    assert fixes.worst_output_sqnr(model, folds, x) == whole
    assert fixes.worst_output_sqnr(model, folds[::-1], x) == whole


def test_build_report_and_quant_json_say_what_the_default_chose(tmp_path):
    out = tmp_path / "build"
    report = api.build(_conv_outlier(tmp_path), DIGITS / "calib.npz", "host", out, firmware=False,
                       options=ptq.QuantOptions(sensitivity_samples=0))
    quant = json.loads((out / "quant.json").read_text())
    assert quant["fixes"]["equalize"] is True and quant["options"]["equalize"] is True
    entry = json.dumps(report)
    assert '"fixes"' in entry and "cross-layer equalization" in entry


HOSTILE = EXAMPLES / "hostile_channel"


@pytest.mark.parametrize("name", ["model", "residual_add", "saturating"])
def test_hostile_mlps_stay_within_one_point_of_float_by_default(name):
    """An FC layer with a 50x outlier unit, a residual add of mismatched ranges, a saturating Tanh
    (examples/hostile_channel: train.py, hostile_mlps.py): the default build on their test set."""
    z = np.load(HOSTILE / "test.npz")
    x, y = z["x"].astype(np.float32), z["y"]
    path = HOSTILE / f"{name}.onnx"
    float_top1 = 100 * float(np.mean(run_float(onnx.load(str(path)), x).argmax(1) == y))
    _, res = api.calibrate_model(path, HOSTILE / "calib.npz", ptq.QuantOptions(cache=False, sensitivity_samples=0))
    assert res.fixes.judged
    assert _top1(res.graph, x, y) >= float_top1 - 1.0, res.fixes.summary()
