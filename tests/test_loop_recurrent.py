"""edgec/frontend/loop_recurrent.py: tf2onnx's Loop of a Keras GRU (reset_after True or False, forward or
go_backwards, last state or the sequence) or LSTM cell becomes one ONNX GRU / LSTM node with Keras's weights in
ONNX's gate order and layout, computing what the Loop computes; a Loop that is not exactly such a cell (another
activation, a changed constant, fewer trips than frames) is left to the unroller. Fixtures: tests/data/tf2onnx_loops/
(scripts/make_tf2onnx_loop_cells.py: Keras 3 + tf2onnx, 5 steps, 3 features, 4 units, random weights)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from edgec.frontend import canonicalize, loader, loop_recurrent

DATA = Path(__file__).parent / "data" / "tf2onnx_loops"


def _run(model: onnx.ModelProto, x: np.ndarray) -> list:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})


def _x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(1, 5, 3)).astype(np.float32)


def _agrees_with_the_file(model: onnx.ModelProto, original: onnx.ModelProto) -> None:
    for seed in range(3):
        for got, want in zip(_run(model, _x(seed)), _run(original, _x(seed)), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, op, linear_before_reset", [
    ("gru_last_b1", "GRU", 1), ("gru_seq_bnone", "GRU", 1), ("gru_backwards_b1", "GRU", 1),
    ("gru_reset_before_b1", "GRU", 0), ("lstm_seq_b1", "LSTM", None), ("lstm_state_b1", "LSTM", None)])
def test_a_keras_cell_loop_is_one_recurrent_node(name, op, linear_before_reset):
    original = onnx.load(str(DATA / f"{name}.onnx"))
    model = loader.prepare(onnx.load(str(DATA / f"{name}.onnx")), name)
    kinds = [n.op_type for n in model.graph.node]
    assert "Loop" not in kinds and kinds.count(op) == 1 and len(kinds) < 20, kinds
    node = next(n for n in model.graph.node if n.op_type == op)
    if linear_before_reset is not None:
        assert loop_recurrent._attr(node, "linear_before_reset") == linear_before_reset
    _agrees_with_the_file(model, original)
    graph = canonicalize.canonicalize(model, name)      # (go_backwards: Keras's ReverseSequence first, a remap)
    # one op per output the graph reads (return_state: Y_h, also read as the sequence's last step, and Y_c)
    assert sum(o.kind == op.lower() for o in graph.ops) == (2 if name == "lstm_state_b1" else 1)


@pytest.mark.parametrize("name", ["gru_relu_b1", "gru_hard_sigmoid_b1"])
def test_another_activation_is_left_to_the_unroller(name):
    original = onnx.load(str(DATA / f"{name}.onnx"))
    model = loader.prepare(onnx.load(str(DATA / f"{name}.onnx")), name)
    kinds = [n.op_type for n in model.graph.node]
    assert "GRU" not in kinds and "Loop" not in kinds and len(kinds) > 50       # unrolled
    _agrees_with_the_file(model, original)


def _loop(model: onnx.ModelProto) -> onnx.NodeProto:
    return next(n for n in model.graph.node if n.op_type == "Loop")


def _edited(edit) -> onnx.ModelProto:
    model = onnx.load(str(DATA / "gru_last_b1.onnx"))
    edit(model)
    return model


def _one_minus(model):       # (1 - z) written as (0.9 - z): no longer a GRU
    body = next(a.g for a in _loop(model).attribute if a.name == "body")
    sub = next(n for n in body.node if n.op_type == "Sub")
    init = next(i for i in body.initializer if i.name == sub.input[0])
    init.CopyFrom(numpy_helper.from_array(np.asarray(0.9, np.float32), init.name))


def _three_trips(model):     # the trip count 3 of 5 frames: the first three steps only
    trips = next(i for i in model.graph.initializer if i.name == _loop(model).input[0])
    trips.CopyFrom(numpy_helper.from_array(np.asarray(3, np.int64), trips.name))


def _scaled_state(model):    # the new state written as 0.5 * h': the body is no longer the cell
    body = next(a.g for a in _loop(model).attribute if a.name == "body")
    k = next(i for i, o in enumerate(body.output[1:]) if o.name.endswith("Identity_4:0")) + 1
    old = body.output[k].name
    body.initializer.append(numpy_helper.from_array(np.asarray(0.5, np.float32), "edgec_test_half"))
    body.node.append(onnx.helper.make_node("Mul", [old, "edgec_test_half"], ["edgec_test_scaled"]))
    body.output[k].name = "edgec_test_scaled"


def test_an_initial_state_computed_at_run_time_is_left_to_the_unroller():
    def edit(model):         # h0 = zeros + 0 * x[0, 0, 0]: no longer a constant
        loop = _loop(model)
        k = next(i for i, v in enumerate(loop.input) if "zeros" in v)
        model.graph.initializer.append(numpy_helper.from_array(np.asarray([0], np.int64), "edgec_test_zero"))
        model.graph.initializer.append(numpy_helper.from_array(np.asarray([1], np.int64), "edgec_test_one"))
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(0.0, np.float32), "edgec_test_nil"))
        first = [onnx.helper.make_node("Slice", [model.graph.input[0].name, "edgec_test_zero", "edgec_test_one",
                                                  "edgec_test_one"], ["edgec_test_x0"]),
                 onnx.helper.make_node("Squeeze", ["edgec_test_x0", "edgec_test_one"], ["edgec_test_x1"]),
                 onnx.helper.make_node("Slice", ["edgec_test_x1", "edgec_test_zero", "edgec_test_one",
                                                  "edgec_test_one"], ["edgec_test_x2"]),
                 onnx.helper.make_node("Mul", ["edgec_test_x2", "edgec_test_nil"], ["edgec_test_h"]),
                 onnx.helper.make_node("Add", ["edgec_test_h", loop.input[k]], ["edgec_test_h0"])]
        nodes = first + list(model.graph.node)
        loop.input[k] = "edgec_test_h0"
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    original = _edited(edit)
    model = loader.prepare(_edited(edit), "edited")
    assert "GRU" not in [n.op_type for n in model.graph.node]
    _agrees_with_the_file(model, original)


@pytest.mark.parametrize("edit", [_one_minus, _three_trips, _scaled_state])
def test_a_loop_that_is_not_exactly_the_cell_is_unrolled(edit):
    original = _edited(edit)
    model = loader.prepare(_edited(edit), "edited")
    kinds = [n.op_type for n in model.graph.node]
    assert "GRU" not in kinds and "Loop" not in kinds, kinds
    _agrees_with_the_file(model, original)


def test_cell_step_is_onnx_runtimes_gru_and_lstm_step():
    rng = np.random.default_rng(5)
    x, h, c = rng.normal(size=(2, 3)), rng.uniform(-1, 1, (2, 4)), rng.uniform(-1, 1, (2, 4))
    for op, gates, lbr in (("GRU", 3, 1), ("GRU", 3, 0), ("LSTM", 4, 0)):
        W, R, B = rng.normal(size=(gates * 4, 3)), rng.normal(size=(gates * 4, 4)), rng.normal(size=2 * gates * 4)
        ins = ["x", "W", "R", "B", "", "h"] + (["c"] if op == "LSTM" else [])
        extra = {"linear_before_reset": lbr} if op == "GRU" else {}
        node = onnx.helper.make_node(op, ins, ["", "yh"] + (["yc"] if op == "LSTM" else []), hidden_size=4, **extra)
        f = onnx.TensorProto.FLOAT
        graph = onnx.helper.make_graph(
            [node], "g", [onnx.helper.make_tensor_value_info("x", f, [1, 2, 3])],
            [onnx.helper.make_tensor_value_info(o, f, None) for o in node.output if o],
            [numpy_helper.from_array(np.asarray(v, np.float32)[None], k) for k, v in
             (("W", W), ("R", R), ("B", B), ("h", h), ("c", c))])
        m = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 14)])
        m.ir_version = 8
        got = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"x": np.asarray(x, np.float32)[None]})
        want = loop_recurrent.cell_step(op, W, R, B, lbr, np.float32(x), np.float32(h), np.float32(c))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g[0], w, rtol=1e-4, atol=1e-5)


@pytest.mark.sweep      # ~3 s (two calibrations); the corpus's tf2onnx GRU and LSTM run it end to end on both boards
@pytest.mark.parametrize("name", ["gru_seq_bnone", "lstm_seq_b1"])
def test_the_recognised_cell_quantizes_and_tracks_float(name):
    from edgec import api
    path = DATA / f"{name}.onnx"
    rng = np.random.default_rng(2)
    quant = api.calibrate(path, rng.normal(size=(32, 5, 3)).astype(np.float32))
    assert any(o.kind == name[:name.index("_")] for o in quant.graph.ops)
    x = rng.normal(size=(1, 5, 3)).astype(np.float32)
    want = _run(onnx.load(str(path)), x)[0].reshape(-1)
    got = np.asarray(api.reference(quant, x).y, np.float64).reshape(-1)
    assert np.abs(got - want).max() < 0.05, (got, want)
