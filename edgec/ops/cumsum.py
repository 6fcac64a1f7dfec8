"""cumsum: running sums along one axis (ONNX CumSum, with its `exclusive` and `reverse` attributes) of
[outer][n][inner], requantized from the input's scale to the output's; kernel in runtime_c/edgec_cumsum.c.

This module is the worked example of docs/design.md, "Adding an operator": everything Python knows about
the kind is here, the kernel is one C file, the test is tests/kernels/test_cumsum.py.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.fixedpoint.scheme import act_range, quantize_multiplier, requantize
from edgec.ops.add_n import finished, rescaled, start, sum_params

MAX_N = 1 << 23      # |sum of n (x - zero point)| < 2^31 in the int32 accumulator


# ---- quantize ---------------------------------------------------------------------------------
def quantize_cumsum(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    if a.get("arithmetic") == "tflite":          # TFLite's CUMSUM: ADD_N's rescaling (edgec/ops/add_n.py)
        op.params.update(outer=a["outer"], n=a["n"], inner=a["inner"], exclusive=a["exclusive"],
                         reverse=a["reverse"], input_zp=x.zero_point, **sum_params(x.scale, out.scale),
                         output_zp=out.zero_point, **act_range(op, out))
        return
    mult, shift = quantize_multiplier(x.scale / out.scale)
    op.params.update(outer=a["outer"], n=a["n"], inner=a["inner"], exclusive=a["exclusive"], reverse=a["reverse"],
                     input_zp=x.zero_point, mult=mult, shift=shift, output_zp=out.zero_point, **act_range(op, out))


# ---- NumPy integer twin (bit-exact with the C) ----------------------------------------------------
def cumsum_s8(p: dict, x) -> np.ndarray:
    """Running int32 sums of (x - input_zp) along n, each requantized, plus output_zp, clamped."""
    v = np.asarray(x, np.int8).reshape(int(p["outer"]), int(p["n"]), int(p["inner"])).astype(np.int64)
    v = v - int(p["input_zp"])
    if p["reverse"]:
        v = v[:, ::-1]
    acc = np.cumsum(v, axis=1)
    if p["exclusive"]:
        acc = acc - v
    if p["reverse"]:
        acc = acc[:, ::-1]
    out = requantize(acc.astype(np.int32), p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8).reshape(-1)


def cumsum_tflite_s8(p: dict, x) -> np.ndarray:
    """TFLite's quantized CumSum: running int32 sums (wrapping, from ADD_N's `start`) of the values as ADD_N
    rescales them, each requantized (edgec/ops/add_n.py's `finished`)."""
    v = rescaled(p, x).reshape(int(p["outer"]), int(p["n"]), int(p["inner"]))
    if p["reverse"]:
        v = v[:, ::-1]
    acc = start(p) + np.cumsum(v, axis=1) - (v if p["exclusive"] else 0)
    if p["reverse"]:
        acc = acc[:, ::-1]
    return finished(p, acc).reshape(-1)


def run_cumsum(op: Op, inputs: list) -> np.ndarray:
    return cumsum_s8(op.params, inputs[0])


def run_cumsum_tflite(op: Op, inputs: list) -> np.ndarray:
    return cumsum_tflite_s8(op.params, inputs[0])


def _tflite(op: Op) -> bool:
    return "left_shift" in op.params


# ---- float --------------------------------------------------------------------------------------
def float_cumsum(op: Op, inputs: list):
    a = op.attrs
    v = np.asarray(inputs[0], np.float64).reshape(a["outer"], a["n"], a["inner"])
    if a["reverse"]:
        v = v[:, ::-1]
    acc = np.cumsum(v, axis=1) - (v if a["exclusive"] else 0)
    return acc[:, ::-1] if a["reverse"] else acc


# ---- C ------------------------------------------------------------------------------------------
def c_cumsum(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_cumsum_params", op.params, call)


def c_cumsum_tflite(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_cumsum_tflite_params", op.params, call)


OPS = [OpDef("cumsum", "cumsum", quantize_cumsum, float_cumsum)]
KERNELS = [Kernel("edgec_cumsum_s8", ("cumsum",), REFERENCE, c_cumsum, applies=lambda op: not _tflite(op),
                  run=run_cumsum, code_bytes=300),
           Kernel("edgec_cumsum_tflite_s8", ("cumsum",), REFERENCE, c_cumsum_tflite, applies=_tflite,
                  run=run_cumsum_tflite, code_bytes=300)]


# ---- ONNX import
def import_cumsum(cx, node):
    x, y = node.input[0], node.output[0]
    shape = cx.shape(x, node)
    axis = np.asarray(cx.const_input(node, 1)).reshape(-1)
    if axis.size != 1:
        raise node_error(node, "its axis must be one integer")
    axis = int(axis[0]) % len(shape)
    tensor, perm = cx.activation(x, node)       # the output keeps the input's physical layout
    k = list(perm).index(axis)
    phys = [shape[a] for a in perm]
    n = int(shape[axis])
    if n >= MAX_N:
        raise node_error(node, f"a running sum over {n} values could overflow its int32 accumulator")
    out = cx.new_tensor(y, tuple(phys), y)
    cx.emit("cumsum", node, [tensor], out, outer=int(np.prod(phys[:k], dtype=np.int64)), n=n,
            inner=int(np.prod(phys[k + 1:], dtype=np.int64)), exclusive=int(cx.attr(node, "exclusive", 0)),
            reverse=int(cx.attr(node, "reverse", 0)))
    cx.values[y] = (out, perm)


ONNX = {"CumSum": import_cumsum}


# ---- TFLite import
def import_tflite_cumsum(tx, op):
    """CUMSUM along a constant axis, exclusive / reverse, TFLite's arithmetic (`arithmetic="tflite"`)."""
    x, out = tx.input(op, 0), tx.output(op)
    shape = tx.tensor(x).shape
    axis = tx.const(op, 1)
    if axis is None or axis.size != 1 or axis.dtype.kind not in "iu":
        raise tx.unsupported("its axis (input 1) must be one constant integer")
    a = int(axis.reshape(-1)[0])
    if not -len(shape) <= a < len(shape):
        raise tx.unsupported(f"axis {a} of a rank-{len(shape)} tensor")
    a %= len(shape)
    if sum_params(tx.tensor(x).scale, tx.tensor(out).scale)["shift"] > 0:
        raise tx.unsupported("output scale below 2^-19 of the input's (TFLite's multiplier must be below one)")
    o = tx.options(op)
    tx.emit("cumsum", op, [x], out, outer=int(np.prod(shape[:a], dtype=np.int64)), n=int(shape[a]),
            inner=int(np.prod(shape[a + 1:], dtype=np.int64)), exclusive=int(bool(o and o.Exclusive())),
            reverse=int(bool(o and o.Reverse())), arithmetic="tflite")


TFLITE = {"CUMSUM": import_tflite_cumsum}
