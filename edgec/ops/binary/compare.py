"""ONNX comparisons (Greater, GreaterOrEqual, Less, LessOrEqual, Equal) as the package's `binary` kind: TFLite's
comparison arithmetic, a bool mask out (one byte, 0 or 1, never quantized) that a Where reads (edgec/ops/where.py)."""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import NO_ACT
from edgec.ops.movement import RANK, in_layout

OPS: list = []      # no kind of its own: the kinds are the package's (__init__.py)
KERNELS: list = []

COMPARE = {"Greater": "greater", "GreaterOrEqual": "greater_equal", "Less": "less", "LessOrEqual": "less_equal",
           "Equal": "equal"}


def import_compare(cx, node):
    """Greater / Less / ... / Equal of two activations or of an activation and a constant: the binary family's
    TFLite comparison (both operands rescaled, then compared; `common_scale`: their multipliers taken relative to
    the larger scale, so any two grids compare), a bool output (one byte, 0 or 1, never quantized) that a Where
    reads as its mask."""
    a, b = node.input
    out = node.output[0]
    yshape = tuple(cx.shape(out, node))
    r = len(yshape)
    if r > RANK:
        raise node_error(node, f"broadcasting over {r} dimensions is not supported (at most {RANK})")
    if a in cx.consts and b in cx.consts:
        raise node_error(node, "both operands are constants (nothing computed at run time)")
    acts = [v for v in (a, b) if v not in cx.consts]
    if any(cx.graph.tensors[cx.activation(v, node)[0]].dtype == "bool" for v in acts):
        raise node_error(node, f"{node.op_type} of a bool tensor is not supported (of values)")
    full = [v for v in acts if len(cx.shape(v, node)) == r]
    perm = cx.activation(full[0], node)[1] if full else tuple(range(r))
    inputs, shapes, const, first = [], [], None, False
    for k, v in enumerate((a, b)):
        shape = (1,) * (r - len(cx.shape(v, node))) + tuple(cx.shape(v, node))
        if v in cx.consts:
            const = np.asarray(cx.consts[v], np.float32).reshape(shape).transpose(perm)
            first = k == 0
        else:
            inputs.append(in_layout(cx, v, r, perm, node))
        shapes.append(tuple(shape[p] for p in perm))
    t = cx.new_tensor(out, tuple(yshape[p] for p in perm) or (1,), out)
    cx.graph.retensor(t, dtype="bool", scale=1.0, zero_point=0)
    cx.emit("binary", node, inputs, t, op=COMPARE[node.op_type], a_shape=shapes[0], b_shape=shapes[1],
            const=const, const_first=first, act=NO_ACT, common_scale=True)
    cx.values[out] = (t, perm)


ONNX = {k: import_compare for k in COMPARE}
