"""Saturating layers (edgec/quant/saturation.py): where an activation table is flat, the cut of its input's range,
and the default recipe's trial of it (edgec/quant/fixes.py)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import EXAMPLES, check_generated_c, make_model, save
from edgec import api
from edgec.ir import Op
from edgec.quant import calibrate, ptq, saturation


def _table(fn: str, fparams=None) -> Op:
    return Op(kind="lut", name=fn, inputs=("x",), output="y",
              attrs={"fn": fn, "fparams": fparams or {}, "consts": None, "count": 1, "inner": 1})


def test_flat_tails_of_tanh_sigmoid_clip_and_a_function_without_any():
    a, b = saturation.flat_tails(_table("tanh"), -140.0, 110.0)
    assert -4.5 < a < -3.0 and 3.0 < b < 4.5                  # tanh within a quarter output step of +-1 beyond
    a, b = saturation.flat_tails(_table("sigmoid"), -50.0, 50.0)
    assert -9 < a < -5 and 5 < b < 9
    a, b = saturation.flat_tails(_table("clip", {"lo": 0.0, "hi": 6.0}), -20.0, 30.0)
    assert abs(a) < 0.02 and abs(b - 6.0) < 0.02
    # no flat tail: cut by at most a quarter of an output step (of 255 over the range)
    assert np.allclose(saturation.flat_tails(_table("identity"), -3.0, 5.0), (-3.0, 5.0), atol=8 / 1000)
    assert np.allclose(saturation.flat_tails(_table("tanh"), -1.0, 1.0), (-1.0, 1.0), atol=5 / 1000)


def _outlier_tanh():
    """x[1,16] -> fc1 -> Tanh -> fc2[4]: fc1's outputs are mostly within +-2, but input feature 0 (rarely large
    in the data) drives them to +-100, so a min/max range leaves Tanh's moving part a handful of levels."""
    r = np.random.default_rng(11)
    w1 = r.standard_normal((16, 16)) * 0.3
    w1[:, 0] = 1.0
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["a"], transB=1, name="fc1"),
             helper.make_node("Tanh", ["a"], ["h"], name="tanh"),
             helper.make_node("Gemm", ["h", "w2", "b2"], ["y"], transB=1, name="fc2")]
    inits = {"w1": w1, "b1": np.zeros(16), "w2": r.standard_normal((4, 16)), "b2": np.zeros(4)}
    x = (r.standard_normal((160, 16)) * 0.5).astype(np.float32)
    x[::40, 0] = 100.0                                    # one sample in 40 saturates every unit
    return make_model(nodes, ("x", [1, 16]), ("y", [1, 4]), inits), x


def test_the_default_recipe_finds_the_saturating_tanh_and_cuts_its_range(tmp_path):
    model, x = _outlier_tanh()
    path = save(model, tmp_path)
    np.savez(tmp_path / "calib.npz", x=x[:128])
    _, res = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions(cache=False, sensitivity_samples=0))
    f = res.fixes
    assert any(s.startswith("saturating input a ") for s in f.findings), f.findings
    trial = next(t for t in f.trials if t["fix"] == "saturation-aware ranges")
    assert trial["kept"] and f.saturation and res.options.saturation, f.summary()
    assert "saturation-aware ranges" in res.to_json(res.options)["fixes"]["chosen"]
    lo, hi = res.ranges["a"]
    assert -5 < lo < 0 and 3 < hi < 5                    # the range quant.json records is the cut one
    x_test = x[128:]
    y = calibrate.run_float(model, x_test)
    plain = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions.plain(cache=False,
                                                                                      sensitivity_samples=0))[1]
    assert ptq.output_sqnr(res.graph, x_test, y) > ptq.output_sqnr(plain.graph, x_test, y) + 6
    check_generated_c(res.graph, x_test, tmp_path / "c")           # still bit-exact: only a range changed


def test_a_tanh_input_read_elsewhere_keeps_its_range(tmp_path):
    """A Tanh input that another op reads too (a skip around the Tanh) needs its whole range: no candidate."""
    model, x = _outlier_tanh()
    nodes = list(model.graph.node)
    nodes[2].input[0] = "s"
    nodes.insert(2, helper.make_node("Add", ["h", "a"], ["s"], name="skip"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    np.savez(tmp_path / "calib.npz", x=x[:128])
    res = api.calibrate_model(save(model, tmp_path), tmp_path / "calib.npz",
                              ptq.QuantOptions.plain(cache=False, sensitivity_samples=0, saturation=True))[1]
    assert saturation.candidates(res.graph) == []
    assert res.ranges["a"][1] > 50                          # the min/max range, uncut


@pytest.mark.parametrize("name", ["saturating"])
def test_the_hostile_saturating_tanh_is_found(name):
    """examples/hostile_channel/saturating.onnx: the Tanh input spans -140..110; the recipe reports it and keeps
    the cut only if it raises the held-out SQNR (on these training samples it does not)."""
    _, res = api.calibrate_model(EXAMPLES / "hostile_channel" / f"{name}.onnx", EXAMPLES / "hostile_channel" / "calib.npz",
                                 ptq.QuantOptions(cache=False, sensitivity_samples=0))
    assert any(s.startswith("saturating input a1 ") for s in res.fixes.findings), res.fixes.findings
    assert any(t["fix"] == "saturation-aware ranges" for t in res.fixes.trials)


@pytest.mark.parametrize("flag, want", [([], None), (["--saturation"], True), (["--no-saturation"], False)])
def test_the_command_line_forces_the_choice(flag, want):
    from edgec import cli

    args = cli.parser().parse_args(["calibrate", "m.onnx", "--calib", "c.npz", *flag])
    assert cli._quant_options(args).saturation is want
    assert ptq.QuantOptions.plain().saturation is False                # plain: the recipe's choices all off
