"""ONNX Runtime's QOperator-format files (quantize_static with QuantFormat.QOperator: QLinearConv, QLinearMatMul and
com.microsoft's QGemm, QLinearAdd, QLinearMul, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
QLinearAveragePool, QLinearGlobalAveragePool) rewritten as the QDQ graph they stand for (edgec/frontend/qoperator.py):
the file's own scales, within one output step of ONNX Runtime's run of the file; dynamic
quantization refused in one line naming every node."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

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
