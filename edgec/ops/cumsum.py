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

MAX_N = 1 << 23      # |sum of n (x - zero point)| < 2^31 in the int32 accumulator


# ---- quantize ---------------------------------------------------------------------------------
def quantize_cumsum(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
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


def run_cumsum(op: Op, inputs: list) -> np.ndarray:
    return cumsum_s8(op.params, inputs[0])


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


OPS = [OpDef("cumsum", "cumsum", quantize_cumsum, float_cumsum)]
KERNELS = [Kernel("edgec_cumsum_s8", ("cumsum",), REFERENCE, c_cumsum, run=run_cumsum, code_bytes=300)]


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
