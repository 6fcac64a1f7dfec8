"""edgec/frontend/unroll_rnn.py: an ONNX GRU / LSTM whose initial state is a model input (a streaming model's state
in and out) was refused ("its initial state 'h' must be a constant"); it is now written out step by step, equal to
ONNX Runtime's run of the node, and builds."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgec import api
from edgec.frontend import unroll_rnn

T, I, H = 6, 5, 7


def _model(kind: str, direction="forward", lbr=0, layout=0) -> onnx.ModelProto:
    """X [T, 1, I] (layout 1, batch first: [1, T, I]) and h0 [1, 1, H] (an LSTM also c0) in; Y, Y_h (and Y_c)
    out."""
    rng = np.random.default_rng(4)
    g = 3 if kind == "GRU" else 4
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.5).astype(np.float32), n)
             for n, s in (("W", (1, g * H, I)), ("R", (1, g * H, H)), ("B", (1, 2 * g * H)))]
    states = ["h0"] + (["c0"] if kind == "LSTM" else [])
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    attrs = {"hidden_size": H, "direction": direction, "layout": layout}
    if kind == "GRU":
        attrs["linear_before_reset"] = lbr
    node = helper.make_node(kind, ["X", "W", "R", "B", "", *states], outs, **attrs)
    ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, T, I] if layout else [T, 1, I])] + \
        [helper.make_tensor_value_info(s, TensorProto.FLOAT, [1, 1, H]) for s in states]
    shapes = {"Y": [1, T, 1, H] if layout else [T, 1, 1, H], "Y_h": [1, 1, H], "Y_c": [1, 1, H]}
    graph = helper.make_graph([node], "rnn", ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o])
                                                   for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _feeds(model, n=3):
    rng = np.random.default_rng(5)
    return [{i.name: (rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]) *
                      (1.0 if i.name == "X" else 0.5)).astype(np.float32) for i in model.graph.input}
            for _ in range(n)]


@pytest.mark.parametrize("kind,direction,lbr", [("GRU", "forward", 0), ("GRU", "forward", 1), ("GRU", "reverse", 0),
                                                ("LSTM", "forward", 0), ("LSTM", "reverse", 0)])
def test_a_state_input_rnn_written_out_equals_onnx_runtime(kind, direction, lbr):
    model = _model(kind, direction, lbr)
    written = unroll_rnn.unroll_state_inputs(onnx.shape_inference.infer_shapes(model))
    assert written is not None and not any(n.op_type in ("GRU", "LSTM") for n in written.graph.node)
    a = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in _feeds(model):
        for want, got in zip(a.run(None, feed), b.run(None, feed)):
            assert want.shape == got.shape and np.abs(want - got).max() < 1e-5


def test_a_constant_initial_state_is_left_to_the_recurrent_op():
    model = _model("GRU")
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((1, 1, H), np.float32), "h0"))
    del model.graph.input[1:]
    assert unroll_rnn.unroll_state_inputs(onnx.shape_inference.infer_shapes(model)) is None


def test_pytorchs_zero_state_from_the_input_shape_is_left_to_the_recurrent_op():
    """h0 = zeros [1, batch, H] with the batch read by Shape(X) (PyTorch's chain): computed, but constant once shapes
    are static; the importer folds it, and the node stays edgec's own GRU (int16 state), not written out."""
    model = _model("GRU")
    del model.graph.input[1:]
    c = lambda name, v: model.graph.initializer.append(numpy_helper.from_array(np.array(v, np.int64), name))  # noqa: E731
    c("one", [1]), c("two", [2]), c("hid", [H])
    model.graph.node.insert(0, helper.make_node("ConstantOfShape", ["h0_shape"], ["h0"]))
    model.graph.node.insert(0, helper.make_node("Concat", ["one", "batch", "hid"], ["h0_shape"], axis=0))
    model.graph.node.insert(0, helper.make_node("Slice", ["x_shape", "one", "two"], ["batch"]))
    model.graph.node.insert(0, helper.make_node("Shape", ["X"], ["x_shape"]))
    assert unroll_rnn.unroll_state_inputs(onnx.shape_inference.infer_shapes(model)) is None


def test_a_streaming_gru_with_its_state_in_and_out_builds(tmp_path):
    """Batch first (layout 1, as PyTorch exports it), once refused at load; its INT8 reference at least 20 dB from
    ONNX Runtime's float outputs (24.1 measured), every output."""
    model = _model("GRU", layout=1)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    feeds = _feeds(model, 40)
    api.build(path, {f"x_{k}": np.concatenate([f[k] for f in feeds[:32]]) for k in feeds[0]}, "host",
              tmp_path / "out", firmware=False)
    # ONNX Runtime runs no layout 1: the same node time-major (batch 1: Y's elements in the same order)
    sess = ort.InferenceSession(_model("GRU").SerializeToString(), providers=["CPUExecutionProvider"])
    want = np.stack([np.concatenate([y.reshape(-1) for y in sess.run(None, {**f, "X": f["X"].transpose(1, 0, 2)})])
                     for f in feeds[32:]])
    got = np.stack([np.asarray(api.reference(tmp_path / "out", np.concatenate([f["X"].reshape(-1), f["h0"].reshape(-1)])).y,
                               np.float64).reshape(-1) for f in feeds[32:]])
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2))
    assert sqnr > 20, sqnr
