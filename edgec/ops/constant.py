"""constant_tensor: a tensor the model fixes completely, written into its buffer at every inference (kernel
edgec_constant_s8 in runtime_c/edgec_movement.c).

A .tflite branch computed from constants only, through data movement alone (an SSD's anchors: a constant
TILEd, reshaped and concatenated into a graph output, as ST's model zoo exports them), is evaluated at import
(edgec/frontend/tflite_fold.py); where an operator or a graph output reads such a value as an activation, this
op puts its bytes there. Its values keep the file's quantization, bit for bit.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef


def _given(op: Op, ins: list[Tensor], out: Tensor) -> None:
    op.params["n"] = int(np.asarray(op.arrays["values"]).size)


def run_constant(op: Op, inputs: list) -> np.ndarray:
    return np.asarray(op.arrays["values"], np.int8).reshape(-1).copy()


def float_constant(op: Op, inputs: list) -> np.ndarray:
    return np.asarray(op.attrs["float_values"], np.float32).copy()


def c_constant(op: Op, low, site: CallSite) -> str:
    return f"{low.kernel.name}({site.arrays['values']}, {site.output}, {int(op.params['n'])});"


def emit(tx, consumer, index: int, values: np.ndarray) -> str:
    """The canonical tensor holding TFLite tensor `index`, whose int8 `values` were folded at import, written by
    a constant op (named after the `consumer` operator that first reads it)."""
    out = tx._activation(index)
    t = tx.tensor(out)
    q = np.asarray(values, np.int8)
    tx.emit("constant_tensor", consumer, [], out, arrays={"values": q.reshape(-1)}, part=f":{out}",
            float_values=((q.astype(np.float32) - t.zero_point) * t.scale).reshape(t.shape))
    return out


OPS = [OpDef("constant_tensor", "movement", _given, float_constant, sensitivity=False)]
KERNELS = [Kernel("edgec_constant_s8", ("constant_tensor",), REFERENCE, c_constant, run=run_constant, code_bytes=40)]
ONNX: dict = {}
