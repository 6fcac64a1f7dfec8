"""edgec/frontend/canonicalize.py: an activation is fused into the op producing its input only when no other ONNX
value held in the same tensor is still to be read. A Transpose of a size-1 axis is a view of its input's tensor;
a Relu (or a QDQ pair's Clip) after it was fused into the MatMul before it, and the residual Add that also reads the
MatMul's output then read the clamped values (onnxruntime quantize_static's QDQ of a batch_first
TransformerEncoder was refused: the tensor the Add read had been renamed away)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from conftest import make_model, save
from edgec import api
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader


def residual_over_a_view():
    """x [1, 4, 8] -> MatMul -> a; a -> Transpose [1, 0, 2] (a view) -> Relu -> Transpose back -> r; y = a + r."""
    rng = np.random.default_rng(11)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
             helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0, 2], name="to_seq_first"),
             helper.make_node("Relu", ["t"], ["r"], name="relu"),
             helper.make_node("Transpose", ["r"], ["b"], perm=[1, 0, 2], name="to_batch_first"),
             helper.make_node("Add", ["a", "b"], ["y"], name="residual")]
    return make_model(nodes, ("x", [1, 4, 8]), ("y", [1, 4, 8]), {"w": rng.normal(size=(8, 8)) * 0.5})


def test_activation_is_not_fused_into_a_tensor_another_value_still_reads(tmp_path):
    path = save(residual_over_a_view(), tmp_path)
    rng = np.random.default_rng(2)
    calib = rng.normal(size=(16, 4, 8)).astype(np.float32)
    quant = api.calibrate(path, calib)
    x = rng.normal(size=(1, 4, 8)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0].reshape(-1)
    got = np.asarray(api.reference(quant, x).y, np.float64).reshape(-1)
    snr = 10 * np.log10(np.sum(want.astype(np.float64) ** 2) / np.sum((want - got) ** 2))
    assert snr > 25, snr


def test_integer_token_ids_into_an_embedding_are_an_int32_port():
    """torch's nn.Embedding exported to ONNX takes int64 token ids into a Gather of a constant table: the input is
    an int32 port read by an embedding_gather (it was refused); ids read otherwise stay refused in one line."""
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(np.random.default_rng(0).normal(size=(50, 8)).astype(np.float32), "table")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
                           helper.make_node("ReduceMean", ["e", "axes"], ["y"], name="pool", keepdims=0)], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [table, axes])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    graph = canonicalize.canonicalize(loader.prepare(model), "m")
    assert graph.tensors[graph.input].dtype == "int32" and graph.ops[0].kind == "embedding_gather"
    model.graph.node.append(helper.make_node("Cast", ["ids"], ["f"], name="cast", to=TensorProto.FLOAT))   # ids as values too
    model.graph.output.append(helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, 6]))
    with pytest.raises(EdgecError) as e:
        canonicalize.canonicalize(loader.prepare(model), "m")
    msg = str(e.value)
    assert "\n" not in msg and "input 'ids' is INT64; edgec takes float inputs, int64/int32 token ids read only by" \
        in msg, msg
