"""Bias correction (edgec/quant/biascorr.py) sees the weights the quantized layer really holds: int4 levels for a
layer with int4 weights (`--weights int4`), so the mean shift int4 rounding causes is removed as int8's is."""
from __future__ import annotations

import numpy as np
from onnx import helper

from conftest import make_model, save
from edgec import api, ports
from edgec.frontend import loader
from edgec.quant import biascorr, calibrate, ptq, reference


def _mlp(tmp_path):
    """x[1,64] (inputs in [0, 1]: a mean the weights' rounding shifts) -> Gemm 64->32 + Relu -> Gemm 32->8."""
    r = np.random.default_rng(11)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["a"], transB=1, name="fc1"),
             helper.make_node("Relu", ["a"], ["h"], name="relu"),
             helper.make_node("Gemm", ["h", "w2", "b2"], ["y"], transB=1, name="fc2")]
    inits = {"w1": r.standard_normal((32, 64)) * 0.3, "b1": r.standard_normal(32) * 0.1,
             "w2": r.standard_normal((8, 32)) * 0.3, "b2": np.zeros(8)}
    path = save(make_model(nodes, ("x", [1, 64]), ("y", [1, 8]), inits), tmp_path)
    x = r.random((96, 64), dtype=np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    return path, x


def _int4_mean_shift(path, x, tmp_path, **kw):
    """(|mean output shift from the float model| per output, the output's step) of the MLP with int4 weights."""
    fl = calibrate.run_float(loader.load_model(path), x).reshape(len(x), -1)
    res = api.calibrate_model(path, tmp_path / "calib.npz",
                              ptq.QuantOptions.plain(weights="int4", sensitivity_samples=0, **kw))[1]
    g = res.graph
    out = g.tensors[g.output]
    q = np.stack([reference.run(g, v).reshape(-1) for v in ports.quantize_inputs(g, x)]).astype(np.float64)
    return np.abs(((q - out.zero_point) * out.scale - fl).mean(axis=0)), out.scale


def test_int4_layers_are_corrected_for_their_int4_rounding(tmp_path, monkeypatch):
    """Both variants through api (`--bias-correction quantized`, and `weights`: each layer's own rounding alone)
    take the int4 layers' mean output shift mostly away."""
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    path, x = _mlp(tmp_path)
    before, step = _int4_mean_shift(path, x, tmp_path)
    assert before.max() > 2 * step                      # int4 rounding shifts the outputs' means by steps
    for variant in ("quantized", "weights"):
        after, _ = _int4_mean_shift(path, x, tmp_path, bias_correction=variant)
        assert after.max() < 0.5 * before.max() and after.mean() < step, (variant, before, after, step)


def test_dequantized_weights_are_the_int4_levels_of_an_int4_layer():
    from edgec.ir import Op
    w = np.random.default_rng(2).standard_normal((4, 10))
    op = Op("fully_connected", "fc", ("x",), "y", attrs={"weights": w, "bias": np.zeros(4), "weight_bits": 4})
    d = biascorr._dequantized_weights(op, True)
    scale = np.abs(w).max(axis=1, keepdims=True) / 7
    assert np.allclose(d / scale, np.round(d / scale)) and np.abs(np.round(d / scale)).max() == 7
    op8 = Op("fully_connected", "fc", ("x",), "y", attrs={"weights": w, "bias": np.zeros(4)})
    assert len(np.unique(np.round(biascorr._dequantized_weights(op8, True) / (scale / 127 * 7)))) > 15


def test_the_shift_is_shrunk_to_what_the_samples_agree_on():
    r = np.random.default_rng(5)
    agreed = 1.0 + 0.01 * r.standard_normal(8)           # every sample shifted by 1: taken off whole
    noise = 0.1 + r.standard_normal(8)                    # a mean of the samples' noise: mostly not
    diff = np.stack([agreed, noise], axis=1)
    s = biascorr.shrunk_shift(diff)
    assert abs(s[0] - diff[:, 0].mean()) < 1e-3 * abs(diff[:, 0].mean())
    assert abs(s[1]) < 0.25 * abs(diff[:, 1].mean()) or abs(s[1]) < 0.05
    assert np.array_equal(biascorr.shrunk_shift(diff[:1]), diff[0])    # one sample: nothing to judge it by


def test_the_shrinkage_factor_is_one_minus_shrink_standard_errors_squared_over_the_shift_squared(monkeypatch):
    """m x max(0, 1 - SHRINK se^2/m^2): with SHRINK 1 (the default) a shift of 1.3 se keeps 41 % of itself, with
    SHRINK 2 none (taking off the whole estimate pays only past m^2 = 2 se^2); a shift of 4 se 94 % / 88 %."""
    base = np.array([-1.5, -1.0, -0.5, 0.0, 0.0, 0.5, 1.0, 1.5])     # mean 0
    se = float(np.sqrt(base.var(ddof=1) / len(base)))
    diff = np.stack([base + np.sqrt(1.7) * se, base + 4.0 * se], axis=1)
    assert biascorr.SHRINK == 1.0
    assert np.allclose(biascorr.shrunk_shift(diff), [np.sqrt(1.7) * se * (1 - 1 / 1.7), 4.0 * se * (1 - 1 / 16)])
    monkeypatch.setattr(biascorr, "SHRINK", 2.0)
    s = biascorr.shrunk_shift(diff)
    assert s[0] == 0.0 and np.isclose(s[1], 4.0 * se * (1.0 - 2.0 / 16.0))


def test_a_real_shift_is_still_corrected_with_eight_samples(tmp_path, monkeypatch):
    """The int4 layers' mean shift, measured on 8 calibration samples only: the samples agree on it, so the
    shrinkage leaves most of the correction."""
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    path, x = _mlp(tmp_path)
    np.savez(tmp_path / "calib8.npz", x=x[:8])
    fl = calibrate.run_float(loader.load_model(path), x).reshape(len(x), -1)

    def mean_shift(**kw):
        res = api.calibrate_model(path, tmp_path / "calib8.npz",
                                  ptq.QuantOptions.plain(weights="int4", sensitivity_samples=0, **kw))[1]
        g = res.graph
        out = g.tensors[g.output]
        q = np.stack([reference.run(g, v).reshape(-1) for v in ports.quantize_inputs(g, x)]).astype(np.float64)
        return np.abs(((q - out.zero_point) * out.scale - fl).mean(axis=0))

    before, after = mean_shift(), mean_shift(bias_correction="quantized")
    assert after.mean() < 0.6 * before.mean(), (before, after)


def test_each_layer_is_requantized_alone_as_the_whole_graph_would_be(tmp_path):
    """correct_quantized quantizes only the layer it corrects (quantize.requantize_op): the graph it returns is the
    one quantizing the whole float graph with the corrected biases gives, integer for integer."""
    from edgec.quant.quantize import quantize
    path, x = _mlp(tmp_path)
    res = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions.plain(sensitivity_samples=0,
                                                                                    cache=False))[1]
    corrected, n = biascorr.correct_quantized(res.graph, x[:16])
    again = quantize(corrected, res.ranges)
    assert n == 2
    assert any(not np.array_equal(a.arrays["bias"], b.arrays["bias"])
               for a, b in zip(res.graph.ops, corrected.ops) if "bias" in a.arrays)
    for a, b in zip(corrected.ops, again.ops):
        assert a.arrays.keys() == b.arrays.keys() and a.params == b.params, a.name
        assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays), a.name


def test_the_weights_variant_takes_off_each_layers_own_rounding_on_the_inputs_it_sees(tmp_path):
    """variant "weights": fc1's bias loses the shrunk mean of (W_q - W) x_q over the samples, x_q the dequantized int8
    input the layer reads, and not the input's own rounding W (x_q - x), which the quantized variant also takes off."""
    from edgec.fixedpoint.scheme import dequantize
    path, x = _mlp(tmp_path)
    res = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions.plain(sensitivity_samples=0,
                                                                                    cache=False))[1]
    g = res.graph
    fc1 = next(op for op in g.ops if op.name == "fc1")
    xs = x[:8]
    xq = np.stack([dequantize(g.tensors[fc1.inputs[0]], v).reshape(-1) for v in ports.quantize_inputs(g, xs)])
    w = fc1.attrs["weights"].astype(np.float64)
    assert w.shape == (32, 64)
    wq = biascorr._dequantized_weights(fc1, True)
    own = biascorr.shrunk_shift(xq @ (wq - w).T)
    both = biascorr.shrunk_shift(xq @ wq.T - xs.astype(np.float64) @ w.T)
    assert np.abs(own - both).max() > 1e-4                   # the two variants differ on this layer
    for variant, want in (("weights", own), ("quantized", both)):
        corrected = biascorr.correct_quantized(g, xs, True, variant)[0]
        got = next(op for op in corrected.ops if op.name == "fc1").attrs["bias"]
        assert np.allclose(got, fc1.attrs["bias"] - want, atol=1e-6), variant


def test_float_targets_of_all_samples_serve_any_fold(tmp_path, monkeypatch):
    """correct_quantized given float_targets' rows of a fold (what fixes.own_rounding_pays passes, each sample's
    float model run once, not once per fold) corrects as it does computing them itself on that fold."""
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    path, x = _mlp(tmp_path)
    g = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions.plain(sensitivity_samples=0,
                                                                                  cache=False))[1].graph
    xs, rows = x[:8], np.array([0, 1, 2, 3, 6, 7])
    t = biascorr.float_targets(g, xs)
    assert sum(a is not None for a in t) == 2 and all(a is None or a.shape[0] == 8 for a in t)
    mine = biascorr.correct_quantized(g, xs[rows], True, "quantized", [None if a is None else a[rows] for a in t])[0]
    own = biascorr.correct_quantized(g, xs[rows], True, "quantized")[0]
    assert all(np.array_equal(a.attrs.get("bias", 0), b.attrs.get("bias", 0)) for a, b in zip(mine.ops, own.ops))
    wrong = biascorr.correct_quantized(g, xs[rows], True, "quantized", [None if a is None else a[:6] for a in t])[0]
    assert not all(np.array_equal(a.attrs.get("bias", 0), b.attrs.get("bias", 0)) for a, b in zip(wrong.ops, own.ops))
