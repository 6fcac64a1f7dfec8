"""ONNX Runtime's QOperator-format files (quantize_static with QuantFormat.QOperator: QLinearConv, QLinearMatMul and
com.microsoft's QGemm, QLinearAdd, QLinearMul, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
QLinearAveragePool, QLinearGlobalAveragePool) rewritten as the QDQ graph they stand for (edgec/frontend/qoperator.py):
the file's own scales, within one output step of ONNX Runtime's run of the file; dynamic
quantization refused in one line naming every node."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from conftest import make_model, save
from edgec import api, ports
from edgec.errors import EdgecError
from edgec.frontend import loader, qoperator
from edgec.quant import artifact, reference

RNG = np.random.default_rng(29)


def _float_model(tmp_path):
    """Conv -> LeakyRelu, Conv -> Sigmoid, Concat, AveragePool, MaxPool, Add, Mul, GlobalAveragePool, Flatten, Gemm,
    MatMul, Softmax: every QLinear operator ONNX Runtime writes."""
    f = lambda *s: (RNG.standard_normal(s) * 0.4).astype(np.float32)       # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c1"], ["l1"], alpha=0.1),
             helper.make_node("Conv", ["x", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c2"], ["s2"]),
             helper.make_node("Concat", ["l1", "s2"], ["cat"], axis=1),
             helper.make_node("AveragePool", ["cat"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              count_include_pad=1),
             helper.make_node("MaxPool", ["ap"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["mp", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c3", "mp"], ["a"]),
             helper.make_node("Mul", ["a", "c3"], ["m"]),
             helper.make_node("GlobalAveragePool", ["m"], ["p"]),
             helper.make_node("Flatten", ["p"], ["fl"]),
             helper.make_node("Gemm", ["fl", "w4", "b4"], ["g"], transB=1),
             helper.make_node("MatMul", ["g", "w5"], ["mm"]),
             helper.make_node("Softmax", ["mm"], ["y"], axis=-1)]
    inits = {"w1": f(4, 2, 3, 3), "b1": f(4), "w2": f(4, 2, 3, 3), "b2": f(4), "w3": f(8, 8, 3, 3), "b3": f(8),
             "w4": f(6, 8), "b4": f(6), "w5": f(6, 5)}
    return save(make_model(nodes, ("x", [1, 2, 8, 8]), ("y", [1, 5]), inits, opset=13), tmp_path, "float.onnx")


def _quantized(tmp_path, fmt, activations="QInt8", per_channel=True):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    src, out = _float_model(tmp_path), tmp_path / f"{fmt}_{activations}.onnx"
    x = np.random.default_rng(1).uniform(-1, 1, (16, 2, 8, 8)).astype(np.float32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": x[i:i + 1]} for i in range(len(x))])

        def get_next(self):
            return next(self.it, None)
    quantize_static(str(src), str(out), Reader(), quant_format=getattr(QuantFormat, fmt), per_channel=per_channel,
                    activation_type=getattr(QuantType, activations), weight_type=QuantType.QInt8)
    np.savez(tmp_path / "calib.npz", x=x)
    return out, x


def _edgec(path, tmp_path, x):
    out = tmp_path / f"build_{path.stem}"
    api.build(path, tmp_path / "calib.npz", "host", out, firmware=False)
    graph = artifact.load_graph(out)
    t = graph.tensors[graph.output]
    ints = np.stack([reference.run(graph, q).reshape(-1) for q in ports.quantize_inputs(graph, x)])
    return ints, (ints.astype(np.float64) - t.zero_point) * t.scale, t.scale


def _ort(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.stack([sess.run(None, {"x": xi[None]})[0].reshape(-1) for xi in x])


@pytest.mark.parametrize("activations", ["QInt8", "QUInt8"])
def test_a_qoperator_file_builds_as_the_qdq_graph_it_stands_for(tmp_path, activations):
    qop, x = _quantized(tmp_path, "QOperator", activations)
    kinds = {n.op_type for n in loader.onnx.load(str(qop)).graph.node}
    assert {"QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearMul", "QLinearConcat", "QLinearSigmoid",
            "QLinearLeakyRelu", "QLinearSoftmax", "QLinearAveragePool", "QLinearGlobalAveragePool"} <= kinds
    rewritten = save(qoperator.to_qdq(loader.onnx.load(str(qop))), tmp_path, "rewritten.onnx")
    assert not qoperator.is_qoperator(loader.onnx.load(str(rewritten)))
    theirs, rewritten = _ort(qop, x), _ort(rewritten, x)
    _, real, scale = _edgec(qop, tmp_path, x)
    assert np.abs(rewritten - theirs).max() <= scale + 1e-6     # the QDQ graph means what the QOperator file does
    # edgec's integers (TFLite's integer requantization) against ONNX Runtime's run of the file (float rescaling):
    assert np.abs(real - theirs).max() <= 4 * scale + 1e-6     # a few steps of the Softmax's 1/256 at most


def test_dynamic_quantization_is_refused_naming_every_node(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    src, out = _float_model(tmp_path), tmp_path / "dynamic.onnx"
    quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8)
    nodes = [n for n in loader.onnx.load(str(out)).graph.node if n.op_type in qoperator.DYNAMIC]
    assert len(nodes) >= 2
    with pytest.raises(EdgecError) as e:
        loader.load_model(out)
    msg = str(e.value)
    assert "\n" not in msg and "dynamic quantization" in msg
    for op in {n.op_type for n in nodes}:          # every operator, with how many of it
        assert f"{op} x{sum(n.op_type == op for n in nodes)} (" in msg


def test_a_float_slice_quantized_on_its_own_grid_is_requantized_there(tmp_path):
    """ShuffleNet's channel split in ONNX Runtime's QOperator format: DequantizeLinear -> Slice (float) ->
    QuantizeLinear with the Slice output's own calibrated grid, narrower than its input's. The int8 Slice keeps its
    input's grid, so edgec requantizes (and saturates) to the file's grid after it, as ONNX Runtime does
    (ortqop_u8_tv_shufflenet_v2_x0_5_96 was 13.7 dB from ONNX Runtime's run without it, docs/corpus.md)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    w1 = (RNG.standard_normal((4, 2, 3, 3)) * 0.4).astype(np.float32)
    w1[:2] *= 0.2                         # the passed-through half spans a fifth of the other's range
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Slice", ["r", "s0", "s2", "ax"], ["x1"]),
             helper.make_node("Slice", ["r", "s2", "s4", "ax"], ["x2"]),
             helper.make_node("Conv", ["x2", "w2"], ["c2"]),
             helper.make_node("Relu", ["c2"], ["b"]),
             helper.make_node("Concat", ["x1", "b"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w3"], ["y"])]
    inits = {"w1": w1, "w2": (RNG.standard_normal((2, 2, 1, 1)) * 0.5).astype(np.float32),
             "w3": (RNG.standard_normal((3, 4, 1, 1)) * 0.5).astype(np.float32),
             "s0": np.array([0], np.int64), "s2": np.array([2], np.int64), "s4": np.array([4], np.int64),
             "ax": np.array([1], np.int64)}
    src, qop = save(make_model(nodes, ("x", [1, 2, 8, 8]), ("y", [1, 3, 8, 8]), inits), tmp_path, "f.onnx"), \
        tmp_path / "qop.onnx"
    calib = np.random.default_rng(2).uniform(-1, 1, (8, 2, 8, 8)).astype(np.float32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": c[None]} for c in calib])

        def get_next(self):
            return next(self.it, None)
    quantize_static(str(src), str(qop), Reader(), quant_format=QuantFormat.QOperator, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    np.savez(tmp_path / "calib.npz", x=calib)
    grids = {i.name: numpy_helper.to_array(i) for i in loader.onnx.load(str(qop)).graph.initializer}
    assert grids["x1_scale"] < 0.5 * grids["c_scale"]        # the float Slice's output on its own, narrower grid
    x = np.random.default_rng(3).uniform(-2, 2, (8, 2, 8, 8)).astype(np.float32)    # beyond the calibration
    _, real, scale = _edgec(qop, tmp_path, x)
    assert np.abs(real - _ort(qop, x)).max() <= 2 * scale + 1e-6
