"""Calibration: range methods, streamed statistics, the cache, auto, bias correction, cross-layer
equalization and the sensitivity report (which must single out a deliberately broken layer)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import helper

from conftest import EXAMPLES, make_model, save
from edgec import api
from edgec.quant import calibrate
from edgec.frontend import canonicalize
from edgec.quant import equalize
from edgec.quant import floatref
from edgec.quant import ptq
from edgec.quant import ranges
from edgec.quant import sensitivity
from edgec.data import load_dataset, open_samples
from edgec.errors import EdgecError
from edgec.fixedpoint.scheme import qparams_from_range

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))


def _hist(values):
    lo, hi = float(values.min()), float(values.max())
    return lo, hi, ranges.histogram(values, lo, hi)


def test_methods_clip_a_rare_outlier_and_minmax_does_not():
    v = np.concatenate([rng.standard_normal(200_000), [60.0]])
    lo, hi, h = _hist(v)
    assert ranges.choose("minmax", lo, hi, h) == (lo, hi)
    for method in ("percentile", "entropy"):
        a, b = ranges.choose(method, lo, hi, h, percentile=99.99)
        assert lo <= a < 0 < b < 10, (method, a, b)      # the outlier at 60 is clipped
    a, b = ranges.choose("mse", lo, hi, h)               # one value's squared error weighs a lot: a milder clip
    assert lo <= a < 0 < b < hi


def test_mse_is_the_least_squared_error_on_its_data():
    v = np.abs(rng.standard_cauchy(100_000)).clip(0, 200)
    lo, hi, h = _hist(v)
    def err(r):
        s, z = qparams_from_range(*r)
        return np.mean(((np.clip(np.round(v / s) + z, -128, 127) - z) * s - v) ** 2)
    chosen = ranges.choose("mse", lo, hi, h)
    for method in ("minmax", "percentile", "entropy"):
        assert err(chosen) <= err(ranges.choose(method, lo, hi, h)) * 1.05, method


def test_per_sample_extremes_are_summarised_the_same_in_any_batching():
    mins, maxs = rng.standard_normal(11), rng.standard_normal(11) + 3
    for cuts in ([11], [1] * 11, [3, 1, 2, 5], [2] * 5 + [1]):
        s, i = None, 0
        for k in cuts:
            s, i = ranges.sample_extremes(s, mins[i:i + k], maxs[i:i + k], 7), i + k
        lo, hi = np.sort(mins), np.sort(maxs)
        assert s == (11, lo[0], lo[1], lo[-1], hi[-1], hi[-2], hi[0], 7), cuts
    one = ranges.sample_extremes(None, [1.0], [2.0])
    assert ranges.unseen(1.0, 2.0, one) == (1.0, 2.0)                       # one sample: nothing to extrapolate


def test_unseen_widens_a_small_tensor_whose_extremes_vary_not_a_large_one():
    """8 samples whose maxima spread from 1.0 to 5.0 (mean spacing 4/7): a 10-number tensor takes the wider end (a
    clipped number costs more than a coarser grid for ten), a feature map of 20000 numbers does not; an end the
    samples agree on (a ReLU's 0) stays."""
    spread = (8, 0.0, 0.0, 0.0, 5.0, 4.0, 1.0, 10)
    assert ranges.unseen(0.0, 5.0, spread) == (0.0, 5.0 + 4 / 7)
    assert ranges.unseen(0.0, 5.0, spread[:7] + (20_000,)) == (0.0, 5.0)
    assert ranges.unseen(-2.0, 5.0, (8, -2.0, -1.0, 0.0, 5.0, 5.0, 5.0, 10)) == (-2.0 - 2 / 7, 5.0)


def test_relu_zero_spike_does_not_collapse_entropy():
    v = np.maximum(rng.standard_normal(100_000) * 2, 0)   # half exact zeros
    lo, hi, h = _hist(v)
    a, b = ranges.choose("entropy", lo, hi, h)
    assert a == 0 and 0.5 * hi < b <= hi


def _convnet(broken: bool = False):
    """x[1,3,8,8] -> convA+ReLU -> convB+ReLU -> convC(1x1)+ReLU -> GAP -> Flatten -> Gemm[4].

    broken: convA's channel 0 is dead (always 0) and convB has one huge weight reading it: the float
    function is unchanged, but one per-tensor weight scale for convB rounds its other weights to 0."""
    r = np.random.default_rng(1)
    wa, ba = (r.standard_normal((8, 3, 3, 3)) * 0.4).astype(np.float32), np.full(8, 0.1, np.float32)
    wb = (r.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32)
    if broken:
        wa[0], ba[0] = 0.0, -1.0
        wb[0, 0, 1, 1] = 400.0
    nodes = [helper.make_node("Conv", ["x", "wa", "ba"], ["a"], pads=[1, 1, 1, 1], name="convA"),
             helper.make_node("Relu", ["a"], ["ra"], name="reluA"),
             helper.make_node("Conv", ["ra", "wb", "bb"], ["b"], pads=[1, 1, 1, 1], name="convB"),
             helper.make_node("Relu", ["b"], ["rb"], name="reluB"),
             helper.make_node("Conv", ["rb", "wc", "bc"], ["c"], name="convC"),
             helper.make_node("Relu", ["c"], ["rc"], name="reluC"),
             helper.make_node("GlobalAveragePool", ["rc"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    inits = {"wa": wa, "ba": ba, "wb": wb, "bb": np.full(8, 0.05, np.float32),
             "wc": (r.standard_normal((8, 8, 1, 1)) * 0.3).astype(np.float32), "bc": np.zeros(8, np.float32),
             "wf": (r.standard_normal((4, 8)) * 0.5).astype(np.float32), "bf": np.zeros(4, np.float32)}
    return make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, 4]), inits)


def _files(tmp_path, model, n=64, shape=(3, 8, 8), name="model"):
    path = save(model, tmp_path, f"{name}.onnx")
    calib = tmp_path / f"{name}_calib.npz"
    np.savez(calib, x=np.random.default_rng(2).random((n,) + shape, dtype=np.float32))
    return path, calib


def test_sensitivity_singles_out_the_broken_layer(tmp_path):
    path, calib = _files(tmp_path, _convnet(broken=True))
    # the plain recipe: the default's own fixes (equalization) would repair the broken layer
    _, res = api.calibrate_model(path, calib, ptq.QuantOptions.plain(per_channel=False, sensitivity_samples=8))
    rows = res.sensitivity
    worst, rest = rows[0], rows[1:]
    assert worst["layer"] == "convB", sensitivity.table(rows)
    assert worst["isolated_db"] < 10 and all(r["isolated_db"] > worst["isolated_db"] + 15 for r in rest)
    assert all(r["isolated_output_db"] > worst["isolated_output_db"] + 10 for r in rest)
    # per-channel weights repair most of it: the report shows the difference
    _, fixed = api.calibrate_model(path, calib, ptq.QuantOptions.plain(per_channel=True, sensitivity_samples=8))
    conv_b = next(r for r in fixed.sensitivity if r["layer"] == "convB")
    assert conv_b["isolated_db"] > worst["isolated_db"] + 10


def test_stream_batches_match_the_file_and_compressed_files_stream_too(tmp_path):
    x = rng.random((37, 3, 8, 8), dtype=np.float32)
    for save_fn in (np.savez, np.savez_compressed):
        path = tmp_path / f"{save_fn.__name__}.npz"
        save_fn(path, x=x, y=np.zeros(37, np.int64))
        with open_samples(path, (1, 3, 8, 8)) as s:
            got = np.concatenate([b for _, b in s.batches(8)])
            assert s.n == 37 and np.array_equal(got, load_dataset(path, (1, 3, 8, 8)).x)
            assert [i for i, _ in s.batches(16)] == [0, 16, 32]
            assert np.array_equal(s.first(5), got[:5]) and s.head(10).n == 10 and np.array_equal(s.labels(), np.zeros(37))
            assert s.head(10).digest() == s.digest().replace(":37", ":10")


def test_batched_and_per_sample_statistics_agree(tmp_path):
    model = _convnet()
    path, calib = _files(tmp_path, model, n=20)
    graph = canonicalize.canonicalize(model, "m")
    values = [t.source for t in graph.tensors.values()]
    with open_samples(calib, graph.input_onnx_shape) as samples:
        one = calibrate.collect(model, samples, values, batch=1, holdout=4)
        many = calibrate.collect(model, samples, values, batch=8, holdout=4)
    assert one.batch == 1 and many.batch == 8
    for v in values:
        assert np.isclose(one.lo[v], many.lo[v], atol=1e-5) and np.isclose(one.hi[v], many.hi[v], atol=1e-5)
        assert np.allclose(one.spread[v], many.spread[v], atol=1e-5) and one.spread[v][0] == 20   # per sample
        assert one.extremes[v].shape == (20, 2) and np.allclose(one.extremes[v], many.extremes[v], atol=1e-5)
        assert np.isclose(one.extremes[v][:, 0].min(), one.lo[v]) and np.isclose(one.extremes[v][:, 1].max(), one.hi[v])
        if v in one.hist_fit:
            assert np.abs(one.hist_fit[v] - many.hist_fit[v]).sum() <= 4 and one.hist_hold[v].sum() > 0
    assert len(many.holdout_x) == 4 and many.samples == 20


def test_cache_skips_recalibration(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    path, calib = _files(tmp_path, _convnet())
    opts = ptq.QuantOptions(method="percentile", sensitivity_samples=0)
    _, first = api.calibrate_model(path, calib, opts)
    assert not first.cached

    def fail(*a, **k):
        raise AssertionError("recalibrated although the statistics are cached")
    monkeypatch.setattr(calibrate, "collect", fail)
    _, again = api.calibrate_model(path, calib, ptq.QuantOptions(method="mse", sensitivity_samples=0))
    assert again.cached
    stored = calibrate.load_stats(next((tmp_path / "cache").rglob("*.npz")))     # the samples' own extremes kept
    assert stored is not None and stored.extremes and all(e.shape[1] == 2 for e in stored.extremes.values())
    # other data: a new key
    np.savez(calib, x=np.random.default_rng(3).random((64, 3, 8, 8), dtype=np.float32))
    with pytest.raises(AssertionError, match="recalibrated"):
        api.calibrate_model(path, calib, opts)


def test_auto_picks_the_best_method_on_held_out_samples(tmp_path):
    path, calib = _files(tmp_path, _convnet(), n=80)
    _, res = api.calibrate_model(path, calib, ptq.QuantOptions(method="auto", sensitivity_samples=0))
    assert set(res.scores) == set(ranges.METHODS)
    assert res.method in ranges.METHODS and res.scores[res.method] == max(res.scores.values())


def _sqnr(model, calib, options):
    model_path, calib_path = calib
    _, res = api.calibrate_model(model_path, calib_path, options)
    x = np.load(calib_path)["x"][:16]
    return ptq.output_sqnr(res.graph, x, calibrate.run_float(model, x))


def test_bias_correction_reduces_output_error_of_coarse_weights(tmp_path):
    model = _convnet(broken=True)
    files = _files(tmp_path, model)
    base = _sqnr(model, files, ptq.QuantOptions.plain(per_channel=False, sensitivity_samples=0))
    corrected = _sqnr(model, files, ptq.QuantOptions.plain(per_channel=False, bias_correction=True, sensitivity_samples=0))
    assert corrected > base + 1.0, (base, corrected)


def test_bias_correction_on_the_quantized_models_own_activations_beats_float_inputs(tmp_path):
    """Measured with the inputs the quantized layers really see, the correction also removes the mean
    shift upstream quantization leaves in them; the float variant only sees the weights' rounding."""
    model = _convnet(broken=True)
    files = _files(tmp_path, model)
    opts = dict(per_channel=False, sensitivity_samples=0)
    float_inputs = _sqnr(model, files, ptq.QuantOptions(bias_correction="float", **opts))
    own = _sqnr(model, files, ptq.QuantOptions(bias_correction="quantized", **opts))
    assert own > float_inputs + 3.0, (float_inputs, own)
    # the corrected bias is what the INT8 model uses; the float reference (sensitivity) keeps the model's own
    _, res = api.calibrate_model(*files, ptq.QuantOptions(bias_correction=True, **opts))
    conv_b = next(op for op in res.graph.ops if op.name == "convB")
    assert not np.allclose(conv_b.attrs["bias"], conv_b.attrs["float_bias"])
    x = np.load(files[1])["x"][:4]
    want = calibrate.run_float(model, x)
    got = np.stack([floatref.output(res.graph, xi) for xi in x])
    assert np.allclose(got.reshape(want.shape), want, atol=1e-4)
    with pytest.raises(EdgecError, match="unknown bias correction"):
        api.calibrate_model(*files, ptq.QuantOptions(bias_correction="sideways", **opts))


def _separable():
    """Depthwise-separable: conv -> ReLU -> depthwise (badly scaled channels) -> ReLU -> 1x1 conv."""
    r = np.random.default_rng(4)
    scales = np.array([0.01, 0.05, 1.0, 8.0, 0.2, 3.0], np.float32)
    w1 = (r.standard_normal((6, 2, 3, 3)) * scales[:, None, None, None]).astype(np.float32)
    wd = (r.standard_normal((6, 1, 3, 3)) / scales[:, None, None, None]).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["a"], ["ra"], name="relu1"),
             helper.make_node("Conv", ["ra", "wd", "bd"], ["d"], group=6, pads=[1, 1, 1, 1], name="dw"),
             helper.make_node("Relu", ["d"], ["rd"], name="relu2"),
             helper.make_node("Conv", ["rd", "wp", "bp"], ["y"], name="pw")]
    inits = {"w1": w1, "b1": 0.1 * scales, "wd": wd, "bd": np.zeros(6, np.float32),
             "wp": (r.standard_normal((4, 6, 1, 1)) * 0.5).astype(np.float32), "bp": np.zeros(4, np.float32)}
    return make_model(nodes, ("x", [1, 2, 6, 6]), ("y", [1, 4, 6, 6]), inits)


def test_equalization_keeps_the_float_function_and_helps_per_tensor_weights(tmp_path):
    model = _separable()
    graph = canonicalize.canonicalize(model, "m")
    equalized, factors = equalize.equalize(graph)
    assert len(factors) == 2 and len(equalize.pairs(graph)) == 2
    x = rng.random((3, 2, 6, 6), dtype=np.float32)
    for xi in x:
        assert np.allclose(floatref.run(equalized, xi)[graph.output], floatref.run(graph, xi)[graph.output], atol=1e-4)
    files = _files(tmp_path, model, shape=(2, 6, 6))
    plain = _sqnr(model, files, ptq.QuantOptions.plain(per_channel=False, sensitivity_samples=0))
    cle = _sqnr(model, files, ptq.QuantOptions.plain(per_channel=False, equalize=True, sensitivity_samples=0))
    assert cle > plain + 6.0, (plain, cle)


def _conv_relu_pool_conv():
    """conv (badly scaled channels) -> ReLU -> MaxPool 2x2 -> ReLU -> conv 3x3 (scaled the other way)."""
    r = np.random.default_rng(6)
    scales = np.array([0.02, 0.1, 1.0, 6.0, 0.3], np.float32)
    w1 = (r.standard_normal((5, 2, 3, 3)) * scales[:, None, None, None]).astype(np.float32)
    w2 = (r.standard_normal((3, 5, 3, 3)) / scales[None, :, None, None]).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["a"], ["ra"], name="relu1"),
             helper.make_node("MaxPool", ["ra"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             helper.make_node("Relu", ["p"], ["rp"], name="relu2"),
             helper.make_node("Conv", ["rp", "w2", "b2"], ["y"], pads=[1, 1, 1, 1], name="conv2")]
    inits = {"w1": w1, "b1": 0.05 * scales, "w2": w2, "b2": np.zeros(3, np.float32)}
    return make_model(nodes, ("x", [1, 2, 8, 8]), ("y", [1, 3, 4, 4]), inits)


def test_equalization_works_through_relu_and_max_pooling(tmp_path):
    model = _conv_relu_pool_conv()
    graph = canonicalize.canonicalize(model, "m")
    assert "max_pool" in [op.kind for op in graph.ops]
    equalized, factors = equalize.equalize(graph)
    assert [(a.name, b.name) for a, b in equalize.pairs(graph)] == [("conv1", "conv2")]
    assert len(factors) == 2            # conv1's output and the pool's output are both rescaled
    x = rng.random((3, 2, 8, 8), dtype=np.float32)
    for xi in x:
        assert np.allclose(floatref.run(equalized, xi)[graph.output], floatref.run(graph, xi)[graph.output], atol=1e-4)
    files = _files(tmp_path, model, shape=(2, 8, 8))
    plain = _sqnr(model, files, ptq.QuantOptions.plain(per_channel=False, sensitivity_samples=0))
    cle = _sqnr(model, files, ptq.QuantOptions.plain(per_channel=False, equalize=True, sensitivity_samples=0))
    assert cle > plain + 6.0, (plain, cle)


def test_build_writes_quant_params_and_sensitivity_plot(tmp_path):
    out = tmp_path / "b"
    report = api.build(EXAMPLES / "cancer_conv1d" / "model.onnx", EXAMPLES / "cancer_conv1d" / "calib.npz", "host",
                       out, firmware=False, options=ptq.QuantOptions(method="mse", sensitivity_samples=4))
    q = report["quantization"]
    assert q["method"] == "mse"
    svg = (out / q["sensitivity_plot"]).read_text()
    assert "<svg" in svg and q["worst_layer"]["layer"] in svg
    rows = json.loads((out / q["sensitivity"]).read_text())
    assert [r["isolated_output_db"] for r in rows] == sorted(r["isolated_output_db"] for r in rows)
    params = json.loads((out / "quant.json").read_text())
    assert params["input"]["scale"] == report["input"]["scale"]


def test_one_image_input_and_several_outputs_calibrate(tmp_path):
    """Issue 29, defect 1: one [1,3,8,8] input and two outputs (the logits and a feature map): the calibration
    samples are packed (several outputs) and must reach onnxruntime in the input's shape, not as a flat vector
    ("Invalid rank")."""
    from onnx import TensorProto
    from edgec import pipeline, ports
    from edgec.quant import reference

    model = _convnet()
    model.graph.output.append(helper.make_tensor_value_info("rc", TensorProto.FLOAT, [1, 8, 8, 8]))
    path, calib = _files(tmp_path, model)
    _, graph, _ = pipeline.compile_model(path, calib)
    assert [graph.port_names[t] for t in graph.outputs] == ["y", "rc"]
    data = ports.load_data(calib, graph)
    assert data.x.shape == (64, 3 * 8 * 8)
    want = calibrate.run_float(model, data.x[:8])
    got = ports.dequantize_outputs(graph, np.stack([reference.run(graph, q) for q in ports.quantize_inputs(graph, data.x[:8])]))
    assert want.shape == got.shape == (8, 4 + 8 * 8 * 8)
    assert np.abs(got - want).max() < 0.1 * np.abs(want).max()


def test_a_scalar_output_model_calibrates_and_builds(tmp_path):
    """A model whose output is rank 0 (ReduceMean over everything, keepdims=0): `inspect` says it is supported,
    and calibrate and build used to stop with an IndexError (the batched session's check indexed the scalar)."""
    import onnx
    from onnx import TensorProto, numpy_helper
    w = numpy_helper.from_array(np.random.RandomState(0).randn(8, 1).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]),
                               helper.make_node("ReduceMean", ["m"], ["y"], keepdims=0)], "scalar_out",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "scalar_out.onnx")
    np.savez(tmp_path / "calib.npz", x=np.random.RandomState(1).randn(32, 8).astype(np.float32))
    report = api.build(tmp_path / "scalar_out.onnx", tmp_path / "calib.npz", "host", tmp_path / "out", firmware=False,
                       options=ptq.QuantOptions(sensitivity_samples=0, cache=False))
    assert report["output"]["shape"] == [] and report["output"]["bytes"] == 1


def test_a_rank_one_model_calibrates_and_its_samples_are_whole_vectors(tmp_path):
    """A model taking one vector [8] (no batch axis) and giving one [3]: the data file's x (N, 8) holds one vector
    a sample (the model took [1] before, "x must be (N, )"); onnxruntime gets each sample in the input's own
    shape and its outputs come one row a sample; the reference follows the float model."""
    import onnx
    from onnx import TensorProto, numpy_helper
    from edgec import pipeline, ports
    from edgec.quant import reference
    w = numpy_helper.from_array(np.random.RandomState(0).randn(8, 3).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "vector",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "vector.onnx")
    np.savez(tmp_path / "calib.npz", x=np.random.RandomState(1).randn(32, 8).astype(np.float32))
    _, g, _ = pipeline.compile_model(tmp_path / "vector.onnx", tmp_path / "calib.npz")
    assert g.input_onnx_shape == (1, 8) and g.output_onnx_shape == (1, 3)
    data = ports.load_data(tmp_path / "calib.npz", g)
    want = calibrate.run_float(model, data.x)
    got = ports.dequantize_outputs(g, np.stack([reference.run(g, q) for q in ports.quantize_inputs(g, data.x)]))
    got = got.reshape(len(got), -1)
    assert want.shape == got.shape == (32, 3)
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()


def test_samples_of_one_value_may_come_as_a_vector(tmp_path):
    """A model taking [1, 1] (hello_world's sine): x may be (N,), one value a sample, as well as (N, 1)."""
    x = np.linspace(0, 6.28, 20).astype(np.float32)
    np.savez(tmp_path / "d.npz", x=x, y=np.sin(x))
    d = load_dataset(tmp_path / "d.npz", (1, 1), float_labels=True)
    assert d.x.shape == (20, 1) and np.array_equal(d.x[:, 0], x)
    with open_samples(tmp_path / "d.npz", (1, 1)) as s:
        assert s.n == 20 and np.array_equal(np.concatenate([b for _, b in s.batches(8)]).reshape(-1), x)
    with pytest.raises(EdgecError, match=r"x has shape \[20\] but the model takes \[1, 2\]"):
        load_dataset(tmp_path / "d.npz", (1, 2))


def _edit_entries(cache, kind: str) -> None:
    """Edit every cache entry as a hand, another program or a bit flip might: it stays a readable .npz."""
    for entry in cache.rglob("*.npz"):
        with np.load(entry, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
        meta = json.loads(str(d["meta"]))
        n = len(meta["names"])
        if kind == "NaN ranges":
            meta["lo"] = [float("nan")] * n
        elif kind == "inverted ranges":
            meta["lo"], meta["hi"] = [1e30] * n, [-1e30] * n
        elif kind == "ranges that are not numbers":
            meta["lo"] = ["a"] * n
        elif kind == "a tensor left out":
            meta["names"], meta["lo"], meta["hi"] = meta["names"][1:], meta["lo"][1:], meta["hi"][1:]
        elif kind == "short histograms":
            d.update({k: np.zeros(3, np.int64) for k in d if k.startswith(("fit.", "hold."))})
        elif kind == "per-sample extremes that are not numbers":
            meta["spread"] = [["a"] * 8] * n
        elif kind == "samples' own extremes that are not finite":
            d.update({k: np.full((2, 2), np.nan) for k in d if k.startswith("ext.")})
        elif kind == "odd hold-out rows":
            d["holdout_x"], d["holdout_y"] = np.zeros((3, 7), np.float32), np.zeros(2, np.float32)
        d["meta"] = np.array(json.dumps(meta))
        np.savez(entry, **d)


@pytest.mark.parametrize("kind", ["NaN ranges", "inverted ranges", "ranges that are not numbers",
                                  "a tensor left out", "short histograms", "odd hold-out rows",
                                  "per-sample extremes that are not numbers",
                                  "samples' own extremes that are not finite"])
def test_an_edited_cache_entry_is_discarded_not_used(tmp_path, monkeypatch, kind):
    """A cache entry that reads as an .npz but does not say what calibration writes: used as it was, its ranges
    crashed the build (a TypeError), were used inverted, or gave an error that blamed the calibration data.
    It is discarded and the model calibrated again, to the same graph."""
    from edgec.quant import artifact
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    path, calib = _files(tmp_path, _convnet())
    opts = ptq.QuantOptions(sensitivity_samples=0)
    _, clean = api.calibrate_model(path, calib, opts)
    assert list((tmp_path / "cache").rglob("*.npz"))
    _edit_entries(tmp_path / "cache", kind)
    _, again = api.calibrate_model(path, calib, opts)
    assert artifact.graph_hash(again.graph) == artifact.graph_hash(clean.graph)
