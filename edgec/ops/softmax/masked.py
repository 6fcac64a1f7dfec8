"""`masked_softmax`: a Softmax over the last axis of [rows][cols] whose input had a constant attention mask added
(or chosen in by a Where) before it, the mask folded into the op: masked positions take no part in the row's max
or sum and their probability is exactly 0 (-128 at the output's fixed scale 1/256, zero point -128); the kept ones
are edgec's LUT softmax (edgec/ops/softmax/__init__.py softmax_s8) over the kept positions alone. Kernel
`edgec_masked_softmax_s8` in runtime_c/edgec_softmax.c.

What is folded (`import_masked`, called by softmax.import_softmax): the Softmax's input is an `Add(scores, M)` or
`Where(C, scores, M)` / `Where(C, M, scores)` read by the Softmax alone (through an Identity or a float Cast, as
ONNX's opset-23 `Attention` body writes it), with M (and C) constants (after folding:
a causal mask built from Shape / Range / Trilu / Where is one), every element of the additive M either exactly 0
(kept) or a mask value (-inf, or at most -1e4: torch's finfo.min, -1e9, BERT's -10000; exp of those is 0 in float
too), the mask broadcasting to the scores' shape. A constant that also holds other values (a relative-position
bias with a mask) is not a mask: the Add stays an Add. The keep bits are stored once per period of rows (row r
reads mask row r % mask_rows: a causal [T, T] mask over B x H heads stores T rows).

Integer semantics: x int8 scores, keep 0/1; m = max of the kept x; e_i = exp_table[m - x_i] if kept else 0 (the
softmax's Q24 table of the scores' scale); S = sum of e_i; y_i = min((e_i * 512 + S) // (2 S), 255) - 128. A row
whose every position is masked (S = 0) is all -128 (probability 0; float softmax of a row of -inf is NaN, of a row
of finfo.min uniform): the float twin gives 0 there too.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.ops.softmax.axes import rows_innermost
from edgec.ops.softmax.table import softmax_table

MASKED_AT = -1e4         # an additive mask value: -inf, or at most this


# ---- the mask ---------------------------------------------------------------------------------
def additive_keep(value) -> np.ndarray | None:
    """Keep bits (True: attended) of an additive mask constant, or None when it is not one (module doc)."""
    a = np.asarray(value)
    if a.dtype.kind != "f" or a.size == 0:
        return None
    masked = (a == -np.inf) | (np.isfinite(a) & (a <= MASKED_AT))
    if not masked.any() or not np.all(masked | (a == 0)):
        return None
    return ~masked


def period(keep: np.ndarray) -> np.ndarray:
    """The fewest leading rows of keep [rows][cols] that repeat to all of it (row r = row r % len)."""
    rows = keep.shape[0]
    for p in range(1, rows + 1):
        if rows % p == 0 and np.array_equal(keep.reshape(rows // p, p, -1), np.broadcast_to(keep[:p], (rows // p,) +
                                                                                             keep[:p].shape)):
            return keep[:p]
    return keep


def tiled(op: Op, rows: int) -> np.ndarray:
    """The op's keep bits for all its rows, [rows][cols] bool."""
    keep = np.asarray(op.attrs["keep"], bool)
    return np.tile(keep, (rows // keep.shape[0], 1))


# ---- quantize ---------------------------------------------------------------------------------
def quantize_masked_softmax(op: Op, ins: list[Tensor], out: Tensor) -> None:
    keep = np.asarray(op.attrs["keep"], bool)
    op.params.update(rows=op.attrs["rows"], cols=op.attrs["cols"], mask_rows=int(keep.shape[0]))
    op.arrays["keep"] = keep.astype(np.int8)
    op.arrays["exp_table"] = np.asarray(softmax_table(ins[0].scale), np.uint32)


# ---- NumPy integer twin -------------------------------------------------------------------------
def masked_softmax_s8(p: dict, x, keep, exp_table) -> np.ndarray:
    """The int8 masked softmax (module doc); keep [mask_rows][cols] 0/1."""
    rows, cols = int(p["rows"]), int(p["cols"])
    x2 = np.asarray(x, np.int8).reshape(rows, cols).astype(np.int64)
    k = np.tile(np.asarray(keep, np.int64).reshape(-1, cols) != 0, (rows // int(p["mask_rows"]), 1))
    m = np.where(k, x2, -128).max(axis=1, keepdims=True)
    e = np.where(k, np.asarray(exp_table, np.int64)[np.where(k, m - x2, 0)], 0)
    s = e.sum(axis=1, keepdims=True)
    q = (e * 512 + s) // np.maximum(2 * s, 1)
    return np.minimum(q - 128, 127).astype(np.int8).reshape(-1)


def run_masked_softmax(op: Op, inputs: list) -> np.ndarray:
    return masked_softmax_s8(op.params, inputs[0], op.arrays["keep"], op.arrays["exp_table"])


def float_masked_softmax(op: Op, ins: list) -> np.ndarray:
    rows, cols = int(op.attrs["rows"]), int(op.attrs["cols"])
    x = np.asarray(ins[0], np.float64).reshape(rows, cols)
    k = tiled(op, rows)
    m = np.where(k, x, -np.inf).max(axis=1, keepdims=True)
    e = np.where(k, np.exp(np.where(k, x - np.where(np.isfinite(m), m, 0), 0)), 0.0)
    s = e.sum(axis=1, keepdims=True)
    return (e / np.where(s > 0, s, 1)).astype(np.float32).reshape(np.shape(ins[0]))


# ---- C ------------------------------------------------------------------------------------------
def c_masked_softmax(op: Op, low, site: CallSite) -> str:
    a = site.arrays
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {a['keep']}, {a['exp_table']}, {site.output});"
    return cemit.with_params("edgec_masked_softmax_params", op.params, call, only_fields=True)


OPS = [OpDef("masked_softmax", "softmax", quantize_masked_softmax, float_masked_softmax, distribution=True,
             qparams="fixed", fixed_qparams=lambda op: (1.0 / 256.0, -128))]
KERNELS = [Kernel("edgec_masked_softmax_s8", ("masked_softmax",), REFERENCE, c_masked_softmax,
                  run=run_masked_softmax, code_bytes=560)]
ONNX: dict = {}


# ---- ONNX import (the Softmax importer, __init__.py, asks first) ---------------------------------------------
def _producer(cx, value: str):
    return next((n for _, n in cx.nodes if value in n.output), None)


def _split(cx, node) -> tuple[str, np.ndarray] | None:
    """(scores value, keep bits in the scores' ONNX shape) when the Softmax's input is a constant mask applied to
    scores (module doc), else None."""
    x = node.input[0]
    if x not in cx.shapes:
        return None
    shape = tuple(cx.shape(x, node))
    p = _producer(cx, x)
    while p is not None and cx.single_use(x) and (p.op_type == "Identity" or p.op_type == "Cast" and
                                                   cx.attr(p, "to") == 1):     # (Attention's float Cast)
        x = p.input[0]
        p = _producer(cx, x)
    if p is None or not cx.single_use(x):
        return None
    if p.op_type == "Add" and len(p.input) == 2:
        pairs = [(p.input[0], p.input[1]), (p.input[1], p.input[0])]
        for scores, mask in pairs:
            if scores not in cx.consts and mask in cx.consts and scores in cx.values:
                keep = additive_keep(cx.consts[mask])
                break
        else:
            return None
    elif p.op_type == "Where" and len(p.input) == 3 and p.input[0] in cx.consts:
        cond = np.asarray(cx.consts[p.input[0]]) != 0
        c_x, c_y = (v in cx.consts for v in p.input[1:])
        if c_x == c_y:
            return None
        scores, mask = (p.input[2], p.input[1]) if c_x else (p.input[1], p.input[2])
        fill = additive_keep(cx.consts[mask])
        if fill is None or fill.any() or scores not in cx.values:     # the value chosen in: a mask value only
            return None
        keep = ~cond if c_x else cond
    else:
        return None
    if keep is None or tuple(cx.shape(scores, node)) != shape:
        return None
    try:
        keep = np.broadcast_to(keep.reshape((1,) * (len(shape) - keep.ndim) + keep.shape), shape)
    except ValueError:
        return None
    return scores, keep


def import_masked(cx, node) -> bool:
    """Build the Softmax `node` as a masked_softmax when a constant mask feeds it (module doc); False if not."""
    found = _split(cx, node)
    if found is None:
        return False
    scores, keep = found
    tensor, perm, shape, cols = rows_innermost(cx, scores, node)
    rows = int(np.prod(shape, dtype=np.int64)) // cols
    bits = np.ascontiguousarray(np.transpose(keep, perm)).reshape(rows, cols)
    y = node.output[0]
    out = cx.new_tensor(y, cx.graph.tensors[tensor].shape, y)
    cx.emit("masked_softmax", node, [tensor], out, rows=rows, cols=cols, keep=period(bits))
    cx.values[y] = (out, perm)
    return True
