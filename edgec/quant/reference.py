"""The NumPy integer reference of a quantized graph: what the C must match bit for bit. Each op runs on the
integer twin of its reference kernel (edgec/ops/select.py `reference`: the 16x8 one where its output is int16,
the int4-weight one where its weights are packed int4, else the int8 one)."""
from __future__ import annotations

import numpy as np

from edgec import ports
from edgec.ir import DTYPES, Graph, Op
from edgec.ops import select


def run_op(op: Op, inputs: list[np.ndarray], out_shape: tuple[int, ...], out_dtype: str = "int8") -> np.ndarray:
    """One op on its integer reference kernel; out_dtype is its output tensor's dtype."""
    run = select.twin(op, out_dtype)
    return np.asarray(run(op, inputs), DTYPES[out_dtype]).reshape(out_shape)


def run(graph: Graph, x_q: np.ndarray, keep_all: bool = False):
    """Run one int8 input (ONNX layout of the model input, batch included or not; a model with several
    inputs: the packed inputs, edgec/ports.py; a uint8 or int16 input of a .tflite file: its values).

    Returns the int8 output (ONNX layout; several outputs: packed) or, with keep_all, every tensor by name
    (int16 ones as int16)."""
    wide = {"int16": np.int16, "int32": np.int32}.get(graph.tensors[graph.input].dtype)   # an int16 / int32
    env = ports.feed(graph, x_q, wide if wide is not None and not graph.more_inputs else np.int8)   # port (.tflite)
    for op in graph.ops:
        out = graph.tensors[op.output]
        env[op.output] = run_op(op, [env[i] for i in op.inputs], out.shape, out.dtype)
    if keep_all:
        return env
    return ports.result(graph, env)
