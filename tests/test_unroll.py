"""edgec/frontend/unroll.py: an ONNX Loop of a trip count known at build time (tf2onnx's Keras 3 LSTM/GRU) is
written out once per iteration, the counters and condition evaluated at build time; it was refused as control flow.
A Loop whose trip count is computed at run time is left for the canonicalizer to refuse, naming it."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import save
from edgec import api
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader, unroll


def loop_model(trips_from_input: bool = False) -> onnx.ModelProto:
    """x [1, 5, 4]: h = tanh(0.5 * h @ W + x[:, t]) over t (a counter and a `t + 1 < 5` condition carried as tf2onnx
    writes them), y = the last h, s = every h stacked (a scan output)."""
    rng = np.random.default_rng(3)
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "t"], ["xt"], axis=1),
         helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
         helper.make_node("Mul", ["hw", "half"], ["hw2"]),
         helper.make_node("Add", ["hw2", "xt"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Add", ["t", "one"], ["t_next"]),
         helper.make_node("Less", ["t_next", "five"], ["cond_out"]),
         helper.make_node("Identity", ["h_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("iter", i64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("t", i64, []), helper.make_tensor_value_info("h_in", f, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("t_next", i64, []), helper.make_tensor_value_info("h_out", f, [1, 4]),
         helper.make_tensor_value_info("scan", f, [1, 4])],
        [numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array(5, np.int64), "five"),
         numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    nodes = [helper.make_node("Loop", ["trips", "go", "t0", "h0"], ["t_last", "y", "s"], body=body, name="rnn")]
    inits = {"go": np.array(True), "t0": np.array(0, np.int64), "h0": np.zeros((1, 4), np.float32),
             "w": rng.normal(0, 0.5, (4, 4)).astype(np.float32)}
    if trips_from_input:          # the trip count: a run-time value (the input's first element, cast)
        nodes.insert(0, helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0))
        nodes.insert(1, helper.make_node("Cast", ["m"], ["trips"], to=i64))
    else:
        inits["trips"] = np.array(5, np.int64)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", f, [1, 5, 4])],
                              [helper.make_tensor_value_info("y", f, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _ort(model, x):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})


def test_a_loop_of_known_trip_count_is_its_body_written_out():
    model = loop_model()
    flat = unroll.unroll_loops(model)
    assert flat is not None and not any(n.op_type == "Loop" for n in flat.graph.node)
    assert sum(n.op_type == "Tanh" for n in flat.graph.node) == 5       # one cell per iteration
    assert not any(n.op_type in ("Less", "Add") and "t_next" in n.output[0] for n in flat.graph.node)  # counters folded
    x = np.random.default_rng(0).normal(size=(1, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(_ort(flat, x)[0], _ort(model, x)[0], rtol=1e-6, atol=1e-6)


@pytest.mark.sweep      # ~2.5 s (calibration); the corpus's tf2onnx_gru_kws_batch_none runs it end to end too
def test_an_unrolled_loop_quantizes_and_tracks_float(tmp_path):
    path = save(loop_model(), tmp_path)
    rng = np.random.default_rng(1)
    calib = rng.normal(size=(16, 5, 4)).astype(np.float32)
    quant = api.calibrate(path, calib)
    x = rng.normal(size=(1, 5, 4)).astype(np.float32)
    want = _ort(loop_model(), x)[0].reshape(-1)
    got = np.asarray(api.reference(quant, x).y, np.float64).reshape(-1)
    assert np.abs(got - want).max() < 0.05, (got, want)


def test_a_loop_counted_at_run_time_is_refused_naming_it():
    model = loop_model(trips_from_input=True)
    assert unroll.unroll_loops(loader.prepare(onnx.ModelProto.FromString(model.SerializeToString()))) is None
    with pytest.raises(EdgecError, match=r"unsupported operators: Loop \(rnn, opset 13\)"):
        canonicalize.canonicalize(loader.prepare(model), "m")


def scan_model(opset: int = 13, reverse: int = 0) -> onnx.ModelProto:
    """x [1, 5, 4] -> Transpose to time-major [5, 1, 4] -> Scan (tf2onnx's TF1 dynamic_rnn): h = tanh(h @ W + x_t),
    a step counter carried beside it; y = the last h, s = every h stacked on axis 1 (scan_output_axes), the scan
    input read forward or in reverse (scan_input_directions)."""
    rng = np.random.default_rng(4)
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "w"], ["hw"]), helper.make_node("Add", ["hw", "xt"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]), helper.make_node("Add", ["t", "one"], ["t_next"]),
         helper.make_node("Identity", ["h_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("h_in", f, [1, 4]), helper.make_tensor_value_info("t", f, []),
         helper.make_tensor_value_info("xt", f, [1, 4])],
        [helper.make_tensor_value_info("h_out", f, [1, 4]), helper.make_tensor_value_info("t_next", f, []),
         helper.make_tensor_value_info("scan", f, [1, 4])],
        [numpy_helper.from_array(np.array(1, np.float32), "one")])
    nodes = [helper.make_node("Transpose", ["x"], ["xt_all"], perm=[1, 0, 2]),
             helper.make_node("Scan", ["h0", "t0", "xt_all"], ["y", "t_last", "s"], body=body, num_scan_inputs=1,
                              scan_input_directions=[reverse], scan_output_axes=[1], name="rnn_scan")]
    inits = {"h0": np.zeros((1, 4), np.float32), "t0": np.array(0, np.float32),
             "w": rng.normal(0, 0.5, (4, 4)).astype(np.float32)}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", f, [1, 5, 4])],
                              [helper.make_tensor_value_info("y", f, [1, 4]),
                               helper.make_tensor_value_info("s", f, [1, 5, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("opset,reverse", [(13, 0), (11, 1)])
def test_a_scan_of_known_length_is_its_body_written_out(opset, reverse):
    """A Scan was refused as control flow ("unsupported operators: Scan"); one of a length known at build time is
    its body once per step, the counter folded, the scan output stacked on its axis, as ONNX Runtime runs it."""
    model = scan_model(opset, reverse)
    prepared = loader.prepare(onnx.ModelProto.FromString(model.SerializeToString()))
    assert not any(n.op_type == "Scan" for n in prepared.graph.node)
    assert sum(n.op_type == "Tanh" for n in prepared.graph.node) == 5
    assert not any(n.op_type == "Add" and "t_next" in n.output[0] for n in prepared.graph.node)
    x = np.random.default_rng(0).normal(size=(1, 5, 4)).astype(np.float32)
    for got, want in zip(_ort(prepared, x), _ort(model, x)):
        assert got.shape == want.shape == ((1, 4) if got.ndim == 2 else (1, 5, 4))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    canonicalize.canonicalize(prepared, "m")
