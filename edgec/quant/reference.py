"""The NumPy integer reference of a quantized graph: what the C must match bit for bit. Each op runs on the
integer twin of its reference kernel (edgec/ops/select.py `reference`: the 16x8 one where its output is int16,
the int4-weight one where its weights are packed int4, else the int8 one).

A model that keeps state between inferences (an LSTM, an SVDF, a signal front end: `registry.keeps_state`) runs
each call from the state after reset unless the caller holds a `State` and passes it: then consecutive calls carry
it, as the device does over consecutive invokes until `<name>_reset()` (TFLite Micro's semantics)."""
from __future__ import annotations

import numpy as np

from edgec import ports
from edgec.ir import DTYPES, Graph, Op
from edgec.ops import select, state as op_state
from edgec.ops.registry import state_fields, state_index


class State:
    """The state of every stateful op of one graph (op index -> its fields, edgec/ops/state.py), as the device
    keeps it in its arena between invokes; `reset()` is the generated `<name>_reset()`."""

    def __init__(self, graph: Graph):
        self._graph = graph
        self.ops: dict[int, dict] = {}
        self.reset()

    def reset(self) -> None:
        self.ops = {i: op_state.fresh(state_fields(op)) for i, op in enumerate(self._graph.ops) if state_fields(op)}


def run_op(op: Op, inputs: list[np.ndarray], out_shape: tuple[int, ...], out_dtype: str = "int8",
           state: dict | None = None) -> np.ndarray:
    """One op on its integer reference kernel; out_dtype is its output tensor's dtype; `state` the op's own
    (a stateful op: its fields, updated in place; None: from reset)."""
    run = select.twin(op, out_dtype)
    y = run(op, inputs) if state is None else run(op, inputs, state=state)
    return np.asarray(y, DTYPES[out_dtype]).reshape(out_shape)


def run(graph: Graph, x_q: np.ndarray, keep_all: bool = False, state: State | None = None):
    """Run one int8 input (ONNX layout of the model input, batch included or not; a model with several
    inputs: the packed inputs, edgec/ports.py; a uint8 or int16 input of a .tflite file: its values).
    `state`: the model's state carried from the previous call (updated in place); None: from reset.

    Returns the int8 output (ONNX layout; several outputs: packed) or, with keep_all, every tensor by name
    (int16 ones as int16)."""
    wide = {"int16": np.int16, "int32": np.int32}.get(graph.tensors[graph.input].dtype)   # an int16 / int32
    if graph.more_inputs:     # each port's values as its tensor's type (an int32 index port beside an int8 one)
        env = {t: np.asarray(v).astype(DTYPES[graph.tensors[t].dtype]) for t, v in ports.feed(graph, x_q).items()}
    else:
        env = ports.feed(graph, x_q, wide if wide is not None else np.int8)   # an int16 / int32 port (.tflite)
    if state is None and any(state_fields(op) for op in graph.ops):
        state = State(graph)
    for i, op in enumerate(graph.ops):
        out = graph.tensors[op.output]
        own = state.ops.get(state_index(graph, i)) if state is not None else None
        env[op.output] = run_op(op, [env[i] for i in op.inputs], out.shape, out.dtype, own)
    if keep_all:
        return env
    return ports.result(graph, env)


def run_sequence(graph: Graph, xs, reset_each: bool = False) -> np.ndarray:
    """Samples xs [n, ...] in order, the state carried from each to the next (the device's consecutive invokes),
    or reset before each with reset_each; the outputs stacked [n, ...]."""
    state = State(graph)
    outs = []
    for x in xs:
        if reset_each:
            state.reset()
        outs.append(np.asarray(run(graph, x, state=state)).reshape(-1))
    return np.stack(outs)
