"""QDQ models: a model quantized by ONNX Runtime's quantize_static (QDQ format) or exported by PyTorch with
QuantizeLinear/DequantizeLinear keeps its own scales and zero points in edgec (edgec/frontend/qdq.py)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import EXAMPLES, save
from edgec import api
from edgec.quant import artifact
from edgec.frontend import loader
from edgec.frontend import qdq
from edgec.errors import EdgecError
from edgec.fixedpoint import scheme

DIGITS = EXAMPLES / "digits_cnn"


def ort_quantize(tmp_path, activation="QInt8", weight="QInt8", per_channel=True, extra=None, samples=32):
    """examples/digits_cnn through ORT's recommended pre-processing and quantize_static (QDQ)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre, out = tmp_path / "pre.onnx", tmp_path / f"digits_qdq_{activation}_{weight}.onnx"
    quant_pre_process(str(DIGITS / "model.onnx"), str(pre), skip_symbolic_shape=True)
    x = np.load(DIGITS / "calib.npz")["x"][:samples].astype(np.float32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"input": x[i:i + 1]} for i in range(len(x))])

        def get_next(self):
            return next(self.it, None)
    quantize_static(str(pre), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=getattr(QuantType, activation), weight_type=getattr(QuantType, weight),
                    extra_options=extra or {})
    return out


def ort_qparams(path):
    """ORT's activation (scale, zero point) per quantized value, and weight scales per weight value."""
    m = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    acts, weights = {}, {}
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear":
            acts[n.input[0]] = (float(inits[n.input[1]]), int(inits[n.input[2]]))
        elif n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].dtype == np.int8:
            weights[n.output[0]] = (inits[n.input[0]], inits[n.input[1]])
    return m, acts, weights


@pytest.fixture(scope="module")
def qdq_int8(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qdq")
    return ort_quantize(tmp), tmp


def test_ort_qdq_model_keeps_its_quantization_and_runs_bit_exact(qdq_int8):
    path, tmp = qdq_int8
    model, acts, weights = ort_qparams(path)
    out = tmp / "build"
    api.build(path, DIGITS / "calib.npz", "host", out)
    graph = artifact.load_graph(out)
    # every activation tensor is quantized exactly as ORT's QuantizeLinear says (int8: the same numbers)
    q_of = {}     # an ORT value, or the output of its QDQ pair -> ORT's quantization
    for q in model.graph.node:
        if q.op_type == "QuantizeLinear":
            for dq in model.graph.node:
                if dq.op_type == "DequantizeLinear" and dq.input[0] == q.output[0]:
                    q_of[dq.output[0]] = q_of[q.input[0]] = acts[q.input[0]]
    checked = 0
    for t in graph.tensors.values():
        if t.source in q_of:
            assert (t.scale, t.zero_point) == (pytest.approx(q_of[t.source][0], rel=1e-7), q_of[t.source][1]), t
            assert np.float32(t.scale) == np.float32(q_of[t.source][0])
            checked += 1
    assert checked == len(graph.tensors)          # every one of them
    assert (graph.tensors[graph.input].scale, graph.tensors[graph.input].zero_point) == \
        (pytest.approx(acts["input"][0], rel=1e-7), acts["input"][1])
    # every weighted layer has ORT's int8 weights and weight scales
    layers = [op for op in graph.ops if "weights" in op.arrays]
    assert len(layers) == len(weights) == 4
    by_name = {n.name: n for n in model.graph.node}
    for op in layers:
        wq, ws = weights[by_name[op.name].input[1]]
        mine = op.arrays["weights"]
        mine = mine.transpose(2, 0, 1)[:, None] if op.kind == "depthwise_conv2d" else \
            mine.transpose(0, 3, 1, 2) if mine.ndim == 4 else mine
        if op.kind == "fully_connected":     # its columns follow the channels-last flatten
            mine, wq = np.sort(mine, axis=1), np.sort(wq, axis=1)
        np.testing.assert_array_equal(mine, wq)        # ORT's integers...
        x_scale, y_scale = graph.tensors[op.inputs[0]].scale, graph.tensors[op.output].scale
        mult, shift = zip(*(scheme.quantize_multiplier_one_rounding(s)       # (one rounding, as ORT's)
                            for s in x_scale * ws.astype(np.float64) / y_scale))
        np.testing.assert_array_equal(op.arrays["mult"], mult)   # ...and ORT's weight scales
        np.testing.assert_array_equal(op.arrays["shift"], shift)
    # accuracy: the same as ORT's own run of the QDQ model, on the device bit-exact with the reference
    r = api.bench(out, DIGITS / "test.npz", limit=200)
    assert r["agreement"]["device_vs_reference"] == 1.0
    t = np.load(DIGITS / "test.npz")
    x, y = t["x"][:200].astype(np.float32), t["y"][:200]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ort_out = np.concatenate([sess.run(None, {"input": x[i:i + 1]})[0] for i in range(len(x))])
    ort_acc = float(np.mean(ort_out.argmax(1) == y))
    print(f"QDQ digits_cnn: ORT {ort_acc:.4f}, edgec int8 {r['accuracy']['int8_reference']:.4f}, "
          f"device {r['accuracy']['device']:.4f}")
    assert abs(r["accuracy"]["device"] - ort_acc) <= 0.01


def test_inspect_says_the_quantization_comes_from_the_model(qdq_int8):
    path, _ = qdq_int8
    info = api.inspect_model(path)
    assert info["problems"] == [] and info["qdq"] == {"activations": 8, "weights": 8}   # 4 weights, 4 biases


def test_uint8_activations_are_shifted_by_128(tmp_path):
    path = ort_quantize(tmp_path, activation="QUInt8")
    _, acts, _ = ort_qparams(path)
    fixed = qdq.info(loader.load_model(path))["activations"]
    assert fixed["input"] == [acts["input"][0], acts["input"][1] - 128]
    assert all(fixed[k] == [s, z - 128] for k, (s, z) in acts.items())


def test_per_tensor_weight_scales(tmp_path):
    path = ort_quantize(tmp_path, per_channel=False, samples=8)
    model, acts, weights = ort_qparams(path)
    _, graph, _ = api.compile_model(path, DIGITS / "calib.npz")
    layers = [op for op in graph.ops if "weights" in op.arrays]
    assert len(layers) == 4
    by_name = {n.name: n for n in model.graph.node}
    for op in layers:
        ws = weights[by_name[op.name].input[1]][1]
        assert ws.size == 1
        np.testing.assert_array_equal(op.attrs["weight_scale"], np.full(len(op.arrays["bias"]), float(ws)))
    assert (graph.tensors[graph.output].scale, graph.tensors[graph.output].zero_point) == \
        (pytest.approx(acts["output_QuantizeLinear_Input"][0], rel=1e-7), acts["output_QuantizeLinear_Input"][1])


@pytest.mark.parametrize("weight,activation,extra,per_channel,message", [
    ("QUInt8", "QUInt8", None, True, "uint8 weights"),
    ("QInt8", "QInt8", {"WeightSymmetric": False}, False, "asymmetric int8 weights"),
])     # (uint16 activations, refused here before, run as int16 shifted by 32768: tests/test_qdq16.py)
def test_what_the_scheme_cannot_take_is_refused_clearly(tmp_path, weight, activation, extra, per_channel, message):
    path = ort_quantize(tmp_path, activation=activation, weight=weight, extra=extra, per_channel=per_channel,
                        samples=4)
    with pytest.raises(EdgecError, match=message) as err:
        loader.load_model(path)
    assert "\n" not in str(err.value) and ("DequantizeLinear" in str(err.value) or "QuantizeLinear" in str(err.value))


def test_pytorch_style_fake_quantized_weights(tmp_path):
    """PyTorch's QAT export: float weights -> QuantizeLinear -> DequantizeLinear (per channel, int8, zero point
    0), uint8 activations; the weights edgec runs are the exported integers with the exported scales."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 3, 3, 3)).astype(np.float32)
    ws = (np.abs(w).reshape(8, -1).max(1) / 127).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_in"),
             helper.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"], axis=0, name="q_w"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0, name="dq_w"),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("QuantizeLinear", ["r", "rs", "rz"], ["rq"], name="q_out"),
             helper.make_node("DequantizeLinear", ["rq", "rs", "rz"], ["y"], name="dq_out")]
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w", w), ("ws", ws), ("wz", np.zeros(8, np.int8)), ("xs", np.array(1 / 255, np.float32)),
        ("xz", np.array(0, np.uint8)), ("rs", np.array(0.05, np.float32)), ("rz", np.array(0, np.uint8))]]
    g = helper.make_graph(nodes, "torch_qat", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    path = save(model, tmp_path, "qat.onnx")
    calib = tmp_path / "c.npz"
    np.savez(calib, x=rng.uniform(0, 1, size=(8, 3, 6, 6)).astype(np.float32))
    _, graph, _ = api.compile_model(path, calib)
    conv = next(op for op in graph.ops if op.kind == "conv2d")
    np.testing.assert_array_equal(conv.attrs["weight_scale"], ws.astype(np.float64))
    want = np.clip(np.rint(w / ws.reshape(-1, 1, 1, 1)), -128, 127).astype(np.int8).transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(conv.arrays["weights"], want)
    assert (graph.tensors[graph.input].scale, graph.tensors[graph.input].zero_point) == (np.float32(1 / 255), -128)
    assert (graph.tensors[graph.output].scale, graph.tensors[graph.output].zero_point) == (np.float32(0.05), -128)
    assert conv.attrs["act"][0] == 0.0          # the Relu fused (and the QDQ pair's saturation with it)


def test_one_quantize_read_by_several_dequantize_nodes(tmp_path):
    """ORT's QDQ for a tensor with several readers: one QuantizeLinear, one DequantizeLinear per reader."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["a"], name="dq_a"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["b"], name="dq_b"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "b"], ["y"], name="add")]
    g = helper.make_graph(nodes, "fanout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                          [numpy_helper.from_array(np.array(0.02, np.float32), "s"),
                           numpy_helper.from_array(np.array(3, np.int8), "z")])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path)
    m = loader.load_model(path)
    assert [n.op_type for n in m.graph.node] == ["Clip", "Identity", "Relu", "Add"]
    assert qdq.info(m)["activations"] == {"x": [np.float32(0.02), 3], "a": [np.float32(0.02), 3],
                                          "b": [np.float32(0.02), 3]}
    calib = tmp_path / "c.npz"
    np.savez(calib, x=np.random.default_rng(0).uniform(-2, 2, size=(8, 8)).astype(np.float32))
    _, graph, _ = api.compile_model(path, calib)
    assert (graph.tensors[graph.input].scale, graph.tensors[graph.input].zero_point) == (np.float32(0.02), 3)


def _uint8_input(path, out):
    """The QDQ model as tf2onnx writes an image model: its input is uint8 (the QuantizeLinear of the float input
    removed), read by the DequantizeLinear directly."""
    m = onnx.load(str(path))
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "input")
    for n in m.graph.node:
        n.input[:] = ["input" if i == q.output[0] else i for i in n.input]
    m.graph.node.remove(q)
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.UINT8
    onnx.save(m, str(out))
    return out


def test_uint8_graph_input_then_dequantize(tmp_path):
    """Issue 29, defect 4: a QDQ model whose input is uint8 read by DequantizeLinear (tf2onnx) builds; the device's
    input port is uint8 with the model's zero point (the sensor's bytes go in as they are), converted to the int8
    grid (x - 128) by a `quantize` op; on bytes u it computes exactly what the float-input QDQ model computes on
    int8 u - 128, and it agrees with ONNX Runtime running the uint8 model."""
    from edgec import pipeline
    from edgec.quant import reference

    path = ort_quantize(tmp_path, activation="QUInt8")
    u8 = _uint8_input(path, tmp_path / "digits_u8.onnx")
    _, acts, _ = ort_qparams(path)
    _, graph, _ = pipeline.compile_model(u8, DIGITS / "calib.npz")
    _, base, _ = pipeline.compile_model(path, DIGITS / "calib.npz")
    port = graph.tensors[graph.input]
    assert (port.dtype, port.scale, port.zero_point) == ("uint8", acts["input"][0], acts["input"][1])
    assert graph.ops[0].kind == "quantize" and [op.kind for op in graph.ops[1:]] == [op.kind for op in base.ops]
    x = np.load(DIGITS / "calib.npz")["x"][:40].astype(np.float32)
    u = scheme.quantize_input(port, x)
    assert u.dtype == np.uint8
    got = np.stack([reference.run(graph, ui.reshape(-1)).reshape(-1) for ui in u])
    want = np.stack([reference.run(base, (ui.astype(np.int16) - 128).astype(np.int8).reshape(-1)).reshape(-1)
                     for ui in u])
    assert np.array_equal(got, want)
    sess = ort.InferenceSession(str(u8), providers=["CPUExecutionProvider"])
    ort_out = np.concatenate([sess.run(None, {"input": ui[None]})[0] for ui in u]).reshape(len(u), -1)
    ours = scheme.dequantize(graph.tensors[graph.output], got)
    assert np.mean(ours.argmax(axis=1) == ort_out.argmax(axis=1)) >= 0.95


def _corpus(name):
    path = EXAMPLES.parent / "tests" / "corpus" / name / "model.onnx"
    return path, path.parent / "calib.npz"


def test_brevitas_qcdq_clipped_weights_keep_the_files_integers_and_scales():
    """Brevitas's export_onnx_qcdq (tests/corpus/brevitas_kws_int4_weights, scripts/corpus/export_qdq_tools.py):
    every weight is an int8 constant -> Clip (4-bit, narrow range: [-7, 7]) -> DequantizeLinear (per channel), every bias an int32
    DequantizeLinear. The Clip of constants is folded at import, each layer runs the clipped integers with the
    file's own scales, and edgec's reference stays near ONNX Runtime's run of the QDQ file."""
    path, calib = _corpus("brevitas_kws_int4_weights")
    model = onnx.load(str(path))
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    consts.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in model.graph.node
                   if n.op_type == "Constant"})
    clips = [n for n in model.graph.node if n.op_type == "Clip" and n.input[0] in consts]
    assert len(clips) == 6 and all(consts[c.input[1]] == -7 and consts[c.input[2]] == 7 for c in clips)
    by_out = {n.output[0]: n for n in model.graph.node}
    _, graph, _ = api.compile_model(path, calib, optimize="size")
    layers = [op for op in graph.ops if "weights4" in op.arrays]     # 4-bit: stored packed two per byte (size)
    assert len(layers) == 6 and not any("weights" in op.arrays for op in graph.ops)
    for op in layers:
        node = next(n for n in model.graph.node if n.name == op.name)
        dq = by_out[node.input[1]]
        assert by_out[dq.input[0]].op_type == "Clip"
        np.testing.assert_array_equal(op.attrs["weight_scale"], consts[dq.input[1]].astype(np.float64).reshape(-1))
        n = op.attrs["weights"].size
        assert op.arrays["weights4"].size == (n + 1) // 2
        w = scheme.unpack_int4(op.arrays["weights4"], n)
        assert w.min() >= -7 and w.max() <= 7
        assert np.array_equal(np.sort(w.reshape(-1)), np.sort(np.clip(consts[by_out[dq.input[0]].input[0]], -7, 7)
                                                                .reshape(-1)))
    from edgec import ports
    from edgec.quant import reference
    x = np.load(calib)["x"][:4].astype(np.float32)
    got = ports.dequantize_outputs(graph, np.stack([reference.run(graph, xi) for xi in
                                                    ports.quantize_inputs(graph, x)])).reshape(len(x), -1)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.concatenate([sess.run(None, {model.graph.input[0].name: xi[None]})[0] for xi in x])
    assert 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2)) > 35     # dB; 48.7 on the corpus oracle's samples


def test_brevitas_int32_biases_and_pooled_grid_are_the_files():
    """Brevitas's int32 biases (tests/corpus/brevitas_kws_int8_sym) come out as the file's integers in every layer,
    the fully connected one included: its input is the file's grid after the global average pool (a mean with the
    file's output scale, the pair's saturation subsumed), not the pool's input grid."""
    path, calib = _corpus("brevitas_kws_int8_sym")
    model = onnx.load(str(path))
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    consts.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in model.graph.node
                   if n.op_type == "Constant"})
    by_out = {n.output[0]: n for n in model.graph.node}
    _, graph, _ = api.compile_model(path, calib)
    layers = [op for op in graph.ops if "bias" in op.arrays]
    assert len(layers) == 6 and not any(op.kind == "avg_pool" for op in graph.ops)
    for op in layers:
        node = next(n for n in model.graph.node if n.name == op.name)
        want = consts[by_out[node.input[2]].input[0]]
        assert want.dtype == np.int32
        np.testing.assert_array_equal(np.sort(op.arrays["bias"].reshape(-1)), np.sort(want.reshape(-1)))


def _act_qdq(name, x, out, scale, zp, axis=None):
    kw = {} if axis is None else {"axis": axis}
    return ([helper.make_node("QuantizeLinear", [x, f"{name}_s", f"{name}_z"], [f"{name}_q"], name=f"q_{name}", **kw),
             helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [out], name=f"dq_{name}",
                              **kw)],
            [numpy_helper.from_array(np.asarray(scale, np.float32), f"{name}_s"),
             numpy_helper.from_array(np.asarray(zp), f"{name}_z")])


def test_a_float_input_reshaped_before_its_quantize_takes_that_grid(tmp_path):
    """tf2onnx writes a flattened input as input -> Reshape -> QuantizeLinear (tests/corpus/tiny13_kj_kws_ds_cnn):
    ONNX Runtime quantizes the reshaped float input with that QuantizeLinear's grid, so the input port takes it
    (not a grid from the calibration range, which made that model 8 dB further from ORT's QDQ execution); the
    output is ORT's to half a step of its own (calibrated) grid on every sample."""
    from edgec.quant import reference

    q, iq = _act_qdq("a", "r", "rd", 0.25, np.int8(3))
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape")] + q + \
        [helper.make_node("Relu", ["rd"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "reshaped_input", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])],
                          iq + [numpy_helper.from_array(np.array([1, 3, 4], np.int64), "shape")])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path)
    x = np.random.default_rng(1).uniform(0, 1, size=(16, 12)).astype(np.float32)     # a range far finer than 0.25
    np.savez(tmp_path / "c.npz", x=x)
    _, graph, _ = api.compile_model(path, tmp_path / "c.npz")
    port = graph.tensors[graph.input]
    assert (port.scale, port.zero_point) == (np.float32(0.25), 3)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.stack([sess.run(None, {"x": xi[None]})[0].reshape(-1) for xi in x])
    got = np.stack([scheme.dequantize(graph.tensors[graph.output], reference.run(graph, xi)).reshape(-1)
                    for xi in scheme.quantize_input(port, x)])
    assert np.max(np.abs(got - want)) <= graph.tensors[graph.output].scale / 2 + 1e-6


def test_per_axis_activation_scales_take_the_widest_channel(tmp_path):
    """NNCF quantizes a depthwise conv's input per channel (uint8, zero point 0); edgec's activations have one grid:
    the widest channel's scale, which holds every channel's range (docs/models.md states it)."""
    a, ia = _act_qdq("a", "x", "xd", [0.01, 0.03, 0.02], np.zeros(3, np.uint8), axis=1)
    g = helper.make_graph(a + [helper.make_node("Relu", ["xd"], ["y"], name="relu")], "per_axis",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])], ia)
    m = loader.load_model(save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path))
    info = qdq.info(m)
    assert info["activations"]["x"] == [pytest.approx(0.03), -128] and info["per_axis_widened"] == ["q_a"]
    clip = next(n for n in m.graph.node if n.op_type == "Clip")
    lo, hi = (numpy_helper.to_array(i) for i in m.graph.initializer if i.name in clip.input[1:])
    assert (float(lo), float(hi)) == (0.0, pytest.approx(255 * 0.03))


def test_every_node_in_the_way_is_named_in_one_line(tmp_path):
    """Two float8 activation pairs (a type edgec does not run; uint16 was one until it ran as shifted int16), one
    after the other: both QuantizeLinear nodes named in the one error."""
    a, ia = _act_qdq("a", "x", "xd", 0.01, np.int8(0))
    b, ib = _act_qdq("b", "r", "y", 0.01, np.int8(0))
    ia[1] = helper.make_tensor("a_z", TensorProto.FLOAT8E4M3FN, [], [0.0])
    ib[1] = helper.make_tensor("b_z", TensorProto.FLOAT8E4M3FN, [], [0.0])
    g = helper.make_graph(a + [helper.make_node("Relu", ["xd"], ["r"], name="relu")] + b, "float8",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], ia + ib)
    with pytest.raises(EdgecError) as err:
        loader.load_model(save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), tmp_path))
    line = str(err.value)
    assert "\n" not in line and "node 'q_a' (QuantizeLinear)" in line and "1 more QuantizeLinear node(s) ('q_b')" in line


def test_nncf_per_channel_depthwise_inputs_are_absorbed_into_the_neighbouring_weights():
    """NNCF's nncf.quantize on ONNX (tests/corpus/nncf_onnx_torch_ds_cnn_kws) quantizes each depthwise conv's input
    per channel. The per-channel factors go into the producing conv's and the depthwise conv's weight scales (the
    integers stay the file's), the tensor gets one grid (the widest channel's), and no pair is widened."""
    path, calib = _corpus("nncf_onnx_torch_ds_cnn_kws")
    model = onnx.load(str(path))
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    per_axis = {n.name: consts[n.input[1]] for n in model.graph.node
                if n.op_type == "QuantizeLinear" and n.input[0] not in consts and consts[n.input[1]].size > 1}
    info = qdq.info(loader.load_model(path))
    assert sorted(info["per_axis_absorbed"]) == sorted(per_axis) and len(per_axis) == 4
    assert info["per_axis_widened"] == []
    for name, s in per_axis.items():
        q = next(n for n in model.graph.node if n.name == name)
        assert info["activations"][q.input[0]] == [pytest.approx(float(s.max())), -128]
    _, graph, _ = api.compile_model(path, calib)
    from edgec import ports
    from edgec.quant import reference
    x = np.load(calib)["x"][:4].astype(np.float32)
    got = ports.dequantize_outputs(graph, np.stack([reference.run(graph, xi) for xi in
                                                    ports.quantize_inputs(graph, x)])).reshape(len(x), -1)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.concatenate([sess.run(None, {model.graph.input[0].name: xi[None]})[0] for xi in x])
    assert 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2)) > 30     # dB (widened instead: 31.6 on
    # the oracle's samples, absorbed: 34.1; ORT's own fused and unfused runs of the file differ by 49.6)


def _tf2onnx_from_tflite(tmp_path):
    """A QDQ model as tf2onnx's from_tflite writes an int8 .tflite: the int8 input moved (Reshape, Transpose) before
    its DequantizeLinear, and a QuantizeLinear -> Reshape -> DequantizeLinear (a Flatten of int8 values)."""
    rng = np.random.default_rng(3)
    w = rng.integers(-127, 128, (4, 5)).astype(np.int8)
    consts = {"s_in": np.float32(0.05), "z_in": np.int8(0), "w": w, "s_w": np.float32(0.02), "z_w": np.int8(0),
              "s_h": np.float32(0.1), "z_h": np.int8(-3), "shape3": np.array([1, 4, 6], np.int64),
              "shape2": np.array([1, 30], np.int64)}
    nodes = [helper.make_node("Reshape", ["x", "shape3"], ["x3"], name="expand"),
             helper.make_node("Transpose", ["x3"], ["xt"], perm=[0, 2, 1], name="t"),
             helper.make_node("DequantizeLinear", ["xt", "s_in", "z_in"], ["xf"], name="dq_in"),
             helper.make_node("DequantizeLinear", ["w", "s_w", "z_w"], ["wf"], name="dq_w"),
             helper.make_node("MatMul", ["xf", "wf"], ["h"], name="mm"),
             helper.make_node("QuantizeLinear", ["h", "s_h", "z_h"], ["hq"], name="q_h"),
             helper.make_node("Reshape", ["hq", "shape2"], ["hq2"], name="flatten"),
             helper.make_node("DequantizeLinear", ["hq2", "s_h", "z_h"], ["y"], name="dq_h")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 24])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 30])],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return save(model, tmp_path, "from_tflite.onnx")


def test_integers_moved_before_their_dequantize_are_dequantized_first(tmp_path):
    """tf2onnx's from_tflite of an int8 .tflite was refused ("input ... is INT8; edgec takes float inputs ...", then
    "integer tensors in the graph are not supported" for the Flatten): the DequantizeLinear now moves up to the
    integers, the data movement after it; the input port is int8 on the file's grid and edgec agrees with ONNX
    Runtime running the file to within one step of the output's grid."""
    from edgec import pipeline
    from edgec.quant import reference

    path = _tf2onnx_from_tflite(tmp_path)
    x = np.random.default_rng(4).integers(-128, 128, (16, 1, 24)).astype(np.int8)
    calib = tmp_path / "c.npz"
    np.savez(calib, x=(x[:, 0].astype(np.float32) * 0.05))
    _, graph, _ = pipeline.compile_model(path, calib)
    port = graph.tensors[graph.input]
    assert (port.dtype, float(port.scale), int(port.zero_point)) == ("int8", np.float32(0.05), 0)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.concatenate([sess.run(None, {"x": xi})[0] for xi in x])
    got = np.stack([scheme.dequantize(graph.tensors[graph.output], reference.run(graph, xi.reshape(-1))).reshape(-1)
                    for xi in x])
    assert np.abs(got - want).max() <= 0.1 + 1e-6


def _int8_output_model(tmp_path, uint8: bool = False):
    """_tf2onnx_from_tflite ending as tf2onnx's from_tflite ends an int8 file: QuantizeLinear -> the graph output
    (int8 [1, 6, 5], scale 0.1, zero point -3; uint8: zero point 125, a uint8 file's output)."""
    m = onnx.load(str(_tf2onnx_from_tflite(tmp_path)))
    for name in ("flatten", "dq_h"):
        m.graph.node.remove(next(n for n in m.graph.node if n.name == name))
    q = next(n for n in m.graph.node if n.name == "q_h")
    q.output[0] = "y"
    if uint8:
        m.graph.initializer.append(numpy_helper.from_array(np.uint8(125), "z_u8"))
        q.input[2] = "z_u8"
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.UINT8 if uint8 else TensorProto.INT8,
                                                             [1, 6, 5]))
    return save(m, tmp_path, "u8_out.onnx" if uint8 else "int8_out.onnx")


@pytest.mark.parametrize("uint8", [False, True])
def test_an_int8_graph_output_is_an_int8_port_on_the_files_grid(tmp_path, uint8):
    """tf2onnx's from_tflite ends an int8 file with QuantizeLinear -> the graph output (int8, no DequantizeLinear):
    it was refused ("writes the graph output 'y' as integers"); it now builds, the output port int8 (uint8 for a
    QuantizeLinear to uint8, through a `quantize` op) on the QuantizeLinear's own scale and zero point, and the
    reference's integers are ONNX Runtime's (the file run as it is) to within one step of the grid."""
    from edgec import pipeline
    from edgec.quant import reference

    path = _int8_output_model(tmp_path, uint8)
    x = np.random.default_rng(4).integers(-128, 128, (16, 1, 24)).astype(np.int8)
    calib = tmp_path / "c.npz"
    np.savez(calib, x=(x[:, 0].astype(np.float32) * 0.05))
    _, graph, _ = pipeline.compile_model(path, calib)
    out = graph.tensors[graph.output]
    want_q = ("uint8", np.float32(0.1), 125) if uint8 else ("int8", np.float32(0.1), -3)
    assert (out.dtype, float(out.scale), int(out.zero_point)) == want_q
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.stack([sess.run(None, {"x": xi})[0].reshape(-1) for xi in x]).astype(np.int64)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x]).astype(np.int64)
    assert np.abs(got - want).max() <= 1 and np.mean(got == want) > 0.9


def test_an_int8_graph_output_builds_and_the_header_states_its_grid(tmp_path):
    """The build's header declares the int8 output with the QuantizeLinear's scale and zero point; the host device
    agrees with the reference."""
    path = _int8_output_model(tmp_path)
    x = np.random.default_rng(4).integers(-128, 128, (16, 24)).astype(np.float32) * 0.05
    np.savez(tmp_path / "c.npz", x=x)
    np.savez(tmp_path / "t.npz", x=x[:4])
    api.build(path, tmp_path / "c.npz", "host", tmp_path / "b")
    header = (tmp_path / "b" / "model" / "int8_out.h").read_text()
    assert "int8_t *int8_out_output(void);" in header and "#define INT8_OUT_OUTPUT_ZERO_POINT (-3)" in header
    assert "#define INT8_OUT_OUTPUT_SCALE 0.1" in header, header
    r = api.bench(tmp_path / "b", tmp_path / "t.npz", report_dir=None)
    assert r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]
    api.build(_int8_output_model(tmp_path, uint8=True), tmp_path / "c.npz", "host", tmp_path / "u")
    header = (tmp_path / "u" / "model" / "u8_out.h").read_text()
    assert "uint8_t *u8_out_output(void);" in header and "#define U8_OUT_OUTPUT_UINT8 1" in header
    assert "#define U8_OUT_OUTPUT_ZERO_POINT (125)" in header, header
    r = api.bench(tmp_path / "u", tmp_path / "t.npz", report_dir=None)
    assert r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]


def test_a_per_axis_quantize_linear_graph_output_is_refused_naming_its_axis(tmp_path):
    """A QuantizeLinear with an axis and per-channel scales writing the graph output (an int8 port with a scale per
    channel; edgec/ops/convert.py `import_quantize_linear`): refused in one line naming the node, its scales and axis,
    and what to do (one scale per output port); the same pair ending in its DequantizeLinear builds, on the widest
    channel's scale."""
    s, z = np.array([0.01, 0.02, 0.03, 0.04], np.float32), np.zeros(4, np.int8)
    w = np.random.default_rng(3).standard_normal((4, 2, 3, 3)).astype(np.float32) * 0.3
    conv = helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv")
    inits = [numpy_helper.from_array(a, k) for k, a in (("w", w), ("s", s), ("z", z))]
    x = np.random.default_rng(3).uniform(-1, 1, (8, 2, 6, 6)).astype(np.float32)
    np.savez(tmp_path / "c.npz", x=x)
    ends = {"q": ([helper.make_node("QuantizeLinear", ["c", "s", "z"], ["y"], axis=1, name="q_out")], TensorProto.INT8),
            "qdq": ([helper.make_node("QuantizeLinear", ["c", "s", "z"], ["cq"], axis=1, name="q_out"),
                     helper.make_node("DequantizeLinear", ["cq", "s", "z"], ["y"], axis=1, name="dq_out")],
                    TensorProto.FLOAT)}
    for end, (nodes, yt) in ends.items():
        g = helper.make_graph([conv, *nodes], "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", yt, [1, 4, 6, 6])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        path = save(m, tmp_path, f"{end}.onnx")
        if end == "q":
            with pytest.raises(EdgecError) as err:
                api.compile_model(path, tmp_path / "c.npz")
            msg = str(err.value)
            assert "'q_out'" in msg and "4 scales along axis 1" in msg and "per tensor" in msg and "\n" not in msg, msg
        else:
            _, graph, _ = api.compile_model(path, tmp_path / "c.npz")
            assert graph.tensors[graph.output].scale == pytest.approx(0.04)


def test_a_qdq_model_without_calibration_data_is_told_why_it_needs_some(qdq_int8):
    # it used to be told "a float model needs calibration data": wrong about what the file is
    from edgec import pipeline
    with pytest.raises(EdgecError) as err:
        pipeline.calibrate_model(qdq_int8[0], None)
    message = str(err.value)
    assert "a QDQ model needs calibration data too" in message and "--calib" in message
    assert "a float model" not in message
