"""The NumPy integer reference of a quantized graph: what the C must match bit for bit."""
from __future__ import annotations

import numpy as np

from edgec.ops import kernels_ref as K
from edgec.quant import int16
from edgec.ops import ops_ext
from edgec.ir import DTYPES, Graph, Op


def run_op(op: Op, inputs: list[np.ndarray], out_shape: tuple[int, ...], out_dtype: str = "int8") -> np.ndarray:
    """One op on its integer reference kernel; out_dtype is its output tensor's dtype."""
    if out_dtype != "int8" or op.kind == int16.CONVERT:
        return np.asarray(int16.run_op(op, inputs, out_dtype), DTYPES[out_dtype]).reshape(out_shape)
    p, a = op.params, op.arrays
    x = inputs[0]
    if op.kind in ("conv2d", "depthwise_conv2d"):
        x = x.reshape(p["in_h"], p["in_w"], p["in_c"])
        fn = K.conv2d_s8 if op.kind == "conv2d" else K.depthwise_conv2d_s8
        y = fn(p, x, a["weights"], a["bias"], a["mult"], a["shift"])
    elif op.kind == "fully_connected":
        y = K.fully_connected_s8(p, x.reshape(-1), a["weights"], a["bias"], a["mult"], a["shift"])
    elif op.kind == "max_pool":
        y = K.max_pool_s8(p, x.reshape(p["in_h"], p["in_w"], p["c"]))
    elif op.kind == "avg_pool":
        y = K.avg_pool_s8(p, x.reshape(p["in_h"], p["in_w"], p["c"]))
    elif op.kind == "add":
        y = K.add_s8(p, x.reshape(-1), inputs[1].reshape(-1))
    elif op.kind == "softmax":
        y = K.softmax_s8(x.reshape(p["rows"], p["cols"]), a["exp_table"])
    elif op.kind == "transpose":
        y = K.transpose_s8(x.reshape(p["dims"]), p["perm"])
    elif op.kind == "reshape":
        y = x
    else:
        y = ops_ext.run_op(op, inputs)
    return np.asarray(y, np.int8).reshape(out_shape)


def run(graph: Graph, x_q: np.ndarray, keep_all: bool = False):
    """Run one int8 input (ONNX layout of the model input, batch included or not).

    Returns the int8 output (ONNX layout) or, with keep_all, every tensor by name (int16 ones as int16)."""
    env = {graph.input: np.asarray(x_q, np.int8).reshape(graph.tensors[graph.input].shape)}
    for op in graph.ops:
        out = graph.tensors[op.output]
        env[op.output] = run_op(op, [env[i] for i in op.inputs], out.shape, out.dtype)
    if keep_all:
        return env
    return env[graph.output].reshape(graph.output_onnx_shape)
