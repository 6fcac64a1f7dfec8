"""Models as exporters write them, built and run on the host and the emulated Cortex-M4, bit-exact with the
reference: a PyTorch network exported by torch.onnx.export (dynamo, opset 18, with a LayerNormalization) and by
the TorchScript exporter (opset 13, with its Shape/Gather/Concat/Reshape and ConstantOfShape/Slice/Cast pad
chains), from
tests/data (made by tests/data/make_torch_export.py; torch never runs here), and a tf2onnx-style graph
(NHWC input, Transposes around every conv, Pad + Conv for SAME padding, a Reshape to a computed shape,
MatMul + Add for a Dense layer)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper, numpy_helper

from conftest import make_model, save
from edgec import api
from edgec.quant import calibrate
from edgec.frontend import canonicalize
from edgec.frontend import loader

DATA = Path(__file__).parent / "data"
BOARDS = ["host", "qemu-cortex-m4"]
TORCH = ["torch_mixed_ops", "torch_mixed_ops_legacy"]


def tf2onnx_style():
    """NHWC [1, 12, 12, 3] -> Transpose -> Pad (SAME, stride 2: [0, 1] per axis) -> Conv -> Relu6 -> Transpose ->
    Transpose -> depthwise Conv (SAME as Pad [1, 1]) -> Relu -> Transpose -> Mul by constant ->
    Shape -> Gather -> Unsqueeze -> Concat -> Reshape [1, -1] -> MatMul -> Add -> Softmax."""
    rng = np.random.default_rng(7)
    nodes = [
        helper.make_node("Transpose", ["input_1"], ["t0"], perm=[0, 3, 1, 2], name="conv/Conv2D__6"),
        helper.make_node("Pad", ["t0", "pads0", "zero"], ["p0"], mode="constant", name="conv/Pad"),
        helper.make_node("Conv", ["p0", "w0", "b0"], ["c0"], strides=[2, 2], kernel_shape=[3, 3], name="conv/Conv2D"),
        helper.make_node("Clip", ["c0", "lo", "hi"], ["r0"], name="conv/Relu6"),
        helper.make_node("Transpose", ["r0"], ["n0"], perm=[0, 2, 3, 1], name="conv/Conv2D__9"),
        helper.make_node("Transpose", ["n0"], ["t1"], perm=[0, 3, 1, 2], name="dw/depthwise__12"),
        helper.make_node("Pad", ["t1", "pads1"], ["p1"], name="dw/Pad"),
        helper.make_node("Conv", ["p1", "w1", "b1"], ["c1"], group=8, kernel_shape=[3, 3], name="dw/depthwise"),
        helper.make_node("Relu", ["c1"], ["r1"], name="dw/Relu"),
        helper.make_node("Transpose", ["r1"], ["n1"], perm=[0, 2, 3, 1], name="dw/depthwise__15"),
        helper.make_node("Mul", ["n1", "gain"], ["m1"], name="scale/mul"),
        helper.make_node("Shape", ["m1"], ["shp"], name="flatten/Shape"),
        helper.make_node("Gather", ["shp", "idx0"], ["batch"], axis=0, name="flatten/strided_slice"),
        helper.make_node("Unsqueeze", ["batch", "ax0"], ["batch1"], name="flatten/Unsqueeze"),
        helper.make_node("Concat", ["batch1", "minus1"], ["newshape"], axis=0, name="flatten/shape"),
        helper.make_node("Reshape", ["m1", "newshape"], ["flat"], name="flatten/Reshape"),
        helper.make_node("MatMul", ["flat", "wd"], ["mm"], name="dense/MatMul"),
        helper.make_node("Add", ["mm", "bd"], ["logits"], name="dense/BiasAdd"),
        helper.make_node("Softmax", ["logits"], ["Identity"], axis=-1, name="dense/Softmax")]
    inits = {"pads0": np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64), "zero": np.array(0.0, np.float32),
             "w0": rng.normal(size=(8, 3, 3, 3)) * 0.4, "b0": rng.normal(size=8) * 0.1,
             "lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32),
             "pads1": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
             "w1": rng.normal(size=(8, 1, 3, 3)) * 0.5, "b1": rng.normal(size=8) * 0.1,
             "gain": rng.uniform(0.5, 1.5, size=8), "idx0": np.array(0, np.int64), "ax0": np.array([0], np.int64),
             "minus1": np.array([-1], np.int64), "wd": rng.normal(size=(288, 6)) * 0.1, "bd": rng.normal(size=6) * 0.1}
    return make_model(nodes, ("input_1", [1, 12, 12, 3]), ("Identity", [1, 6]), inits)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """name -> (model path, calibration .npz, test .npz)."""
    tmp = tmp_path_factory.mktemp("exports")
    rng = np.random.default_rng(0)
    tf_calib, tf_test = tmp / "tf_calib.npz", tmp / "tf_test.npz"
    np.savez(tf_calib, x=rng.uniform(-1, 1, size=(16, 12, 12, 3)).astype(np.float32))
    np.savez(tf_test, x=rng.uniform(-1, 1, size=(6, 12, 12, 3)).astype(np.float32))
    got = {"tf2onnx_style": (save(tf2onnx_style(), tmp, "tf2onnx_style.onnx"), tf_calib, tf_test)}
    for name in TORCH:
        got[name] = (DATA / f"{name}.onnx", DATA / "torch_mixed_ops_calib.npz", DATA / "torch_mixed_ops_test.npz")
    return got


@pytest.fixture(scope="module")
def builds(exports, tmp_path_factory):
    root = tmp_path_factory.mktemp("export_builds")
    cache = {}

    def get(name, board):
        if (name, board) not in cache:
            model, calib, _ = exports[name]
            cache[name, board] = root / f"{name}-{board}"
            api.build(model, calib, board, cache[name, board])
        return cache[name, board]
    return get


def test_the_torch_exports_are_the_network_torch_ran(exports):
    """onnxruntime on both exported files gives torch's own outputs (stored by the export script)."""
    for name in TORCH:
        model, _, test = exports[name]
        t = np.load(test)
        np.testing.assert_allclose(calibrate.run_float(loader.load_model(model), t["x"]), t["y_torch"], atol=1e-4)


def test_what_exporters_compute_at_build_time_never_reaches_the_device(exports):
    kinds = {}
    for name in TORCH + ["tf2onnx_style"]:
        graph = canonicalize.canonicalize(loader.load_model(exports[name][0]), name)
        kinds[name] = [op.kind + (f"/{op.attrs['fn']}" if op.kind == "lut" else "") for op in graph.ops]
    # both PyTorch exporters give the same device graph up to the LayerNorm: SiLU and HardSwish as one table
    # each, the gate's Mul, Concat, the reflect Pad as an index map, both Slices and the Resize as one index
    # map, no op of the shape chains; the LayerNorm is one layer_norm op, from dynamo's LayerNormalization or from
    # TorchScript's decomposition at opset 13 (ReduceMean, Sub, Pow, ...: edgec/frontend/decomposed.py)
    trunk = ["transpose", "conv2d", "lut/silu", "depthwise_conv2d", "lut/hard_swish", "conv2d", "lut/sigmoid",
             "binary", "concat", "remap", "conv2d", "remap", "max_pool", "reshape", "avg_pool"]
    assert kinds["torch_mixed_ops"] == kinds["torch_mixed_ops_legacy"] == trunk + [
        "reshape", "layer_norm", "fully_connected"]
    # tf2onnx: the Transposes only relabel the layout (the input's one is a real move: C = 3), both Pads became
    # the convolutions' padding, the constant Mul a table, the Reshape to a computed shape a view, MatMul + Add
    # one fully connected layer
    assert kinds["tf2onnx_style"] == ["conv2d", "depthwise_conv2d", "lut/mul_c", "reshape", "fully_connected",
                                      "softmax"]


# every export on the host board (the generated C bit-exact with the reference); one on the emulated Cortex-M4 in the
# default run (the device runs the same C, from the same kernels, as for any other model), the others with the sweeps
CASES = [pytest.param(name, board, marks=[pytest.mark.sweep] if board != "host" and name != "torch_mixed_ops" else [])
         for name in TORCH + ["tf2onnx_style"] for board in BOARDS]


@pytest.mark.parametrize("name,board", CASES)
def test_export_runs_bit_exact_on_board(name, board, exports, builds):
    out = builds(name, board)
    r = api.bench(out, exports[name][2])
    assert r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]
    if name == "tf2onnx_style":     # a softmax classifier (random weights): INT8 picks float's class
        assert r["agreement_top1"]["int8_vs_float"] >= 5 / 6, r["agreement_top1"]
    else:                           # logits: INT8 within 3% of the float output's range
        t = np.load(exports[name][2])
        span = float(np.ptp(calibrate.run_float(loader.load_model(exports[name][0]), t["x"])))
        assert r["output_error"]["max_abs_vs_float"] <= 0.03 * span, (r["output_error"], span)


def test_chained_index_maps_become_one(tmp_path):
    """Pad (reflect) -> Slice -> Pad (constant 0.5) -> Slice (step 2): one remap, the same numbers as onnxruntime;
    two constant Pads with different values stay two."""
    from edgec.quant import floatref

    def model(second_value):
        nodes = [helper.make_node("Pad", ["x", "p1"], ["a"], mode="reflect", name="pad1"),
                 helper.make_node("Slice", ["a", "s1", "e1", "ax"], ["b"], name="slice1"),
                 helper.make_node("Pad", ["b", "p2", "v2"], ["c"], mode="constant", name="pad2"),
                 helper.make_node("Slice", ["c", "s2", "e2", "ax", "st2"], ["d"], name="slice2"),
                 helper.make_node("Pad", ["d", "p2", "v3"], ["y"], mode="constant", name="pad3")]
        inits = {"p1": np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64), "s1": np.array([1, 0], np.int64),
                 "e1": np.array([11, 12], np.int64), "ax": np.array([2, 3], np.int64),
                 "p2": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "v2": np.array(0.5, np.float32),
                 "s2": np.array([0, 1], np.int64), "e2": np.array([12, 14], np.int64),
                 "st2": np.array([2, 3], np.int64), "v3": np.array(second_value, np.float32)}
        return make_model(nodes, ("x", [1, 2, 8, 8]), ("y", [1, 2, 8, 7]), inits)
    x = np.random.default_rng(0).normal(size=(3, 2, 8, 8)).astype(np.float32)
    for value, remaps in ((0.5, 1), (0.0, 2)):
        m = model(value)
        graph = canonicalize.canonicalize(m, "chain")
        assert [op.kind for op in graph.ops] == ["remap"] * remaps
        want = calibrate.run_float(m, x)
        got = np.stack([floatref.run(graph, xi[None])[graph.output].reshape(want.shape[1:]) for xi in x])
        np.testing.assert_array_equal(got, want)


def torchscript_class_token():
    """A ViT's class token as PyTorch's TorchScript exporter writes `cls.expand(x.shape[0], -1, -1)` at a fixed
    input shape: ConstantOfShape -> Mul -> Equal -> Where -> Expand of constants, concatenated before the patch
    embeddings; then the position embedding, the class token's row and a linear head."""
    r = np.random.default_rng(5)
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(v), name))
    nodes = [helper.make_node("Conv", ["input", "pw", "pb"], ["emb"], strides=[4, 4], name="/patch/Conv"),
             c("flat", np.array([1, 16, 16], np.int64)), helper.make_node("Reshape", ["emb", "flat"], ["r"], name="/Reshape"),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1], name="/Transpose"),
             c("three", np.array([3], np.int64)), c("size", np.array([1, -1, -1], np.int64)), c("m1", np.array(-1, np.int64)),
             helper.make_node("ConstantOfShape", ["three"], ["ones"], name="/ConstantOfShape",
                              value=numpy_helper.from_array(np.array([1], np.int64))),
             helper.make_node("Mul", ["ones", "m1"], ["neg"], name="/Mul"),
             helper.make_node("Equal", ["size", "neg"], ["eq"], name="/Equal"),
             helper.make_node("Where", ["eq", "ones", "size"], ["w"], name="/Where"),
             helper.make_node("Expand", ["cls", "w"], ["clsx"], name="/Expand"),
             helper.make_node("Concat", ["clsx", "t"], ["tokens"], axis=1, name="/Concat_1"),
             helper.make_node("Add", ["tokens", "pos"], ["a"], name="/Add"), c("zero", np.array(0, np.int64)),
             helper.make_node("Gather", ["a", "zero"], ["g"], axis=1, name="/Gather"),
             helper.make_node("Gemm", ["g", "fw", "fb"], ["y"], transB=1, name="/fc/Gemm")]
    inits = {"pw": r.standard_normal((16, 3, 4, 4)) * 0.2, "pb": np.zeros(16), "cls": r.standard_normal((1, 1, 16)),
             "pos": r.standard_normal((1, 17, 16)) * 0.1, "fw": r.standard_normal((5, 16)) * 0.3, "fb": np.zeros(5)}
    return make_model(nodes, ("input", [1, 3, 16, 16]), ("y", [1, 5]), inits, opset=17)


def test_folded_class_token_has_a_static_shape(tmp_path):
    """Issue 29, defect 5: the class token's chain folds to a constant at load; the Concat reading it was refused
    with "the shape of '...' is not static" (a folded constant has no value_info). Its shape is the constant's:
    whatever edgec says of the model now, it is not that."""
    info = api.inspect_model(save(torchscript_class_token(), tmp_path))
    assert not any("not static" in p["what"] for p in info["problems"]), info["problems"]
    assert not info["problems"], info["problems"]


def test_class_token_concat_builds(tmp_path):
    """The class token (a constant) concatenated before the patch embeddings (an activation) was refused
    ("concatenating the constant ... is not supported"): its values are a constant part of the concat, stored in
    the output's quantization. The float graph is ONNX Runtime's; the INT8 one close to it and its C bit-exact."""
    from conftest import check_generated_c
    from edgec.fixedpoint import scheme
    from edgec.quant import floatref, quantize, reference

    model = loader.prepare(torchscript_class_token())
    x = np.random.default_rng(2).uniform(0, 1, (16, 3, 16, 16)).astype(np.float32)
    graph = canonicalize.canonicalize(model, "class_token")
    assert any(op.kind == "concat" and op.attrs.get("consts") for op in graph.ops)
    want = calibrate.run_float(model, x[:1])[0]
    np.testing.assert_allclose(floatref.output(graph, x[0]).reshape(want.shape), want, atol=1e-4)
    own = {t.source for t in graph.tensors.values() if t.source.startswith("edgec:")}   # edgec's own tensors
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values() if t.source not in own])
    graph = quantize.quantize(graph, {**ranges, **floatref.ranges(graph, x, own)})
    tout = graph.tensors[graph.output]
    got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    assert np.abs(got.reshape(want.shape) - want).max() <= 6 * tout.scale
    check_generated_c(graph, x, tmp_path)
