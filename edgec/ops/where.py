"""where: out = cond ? x : y elementwise, broadcasting the three over up to 6 dimensions (TFLite's SELECT_V2, ONNX's
Where; cond a bool tensor, one byte 0 or 1, or a stored constant; x or y may be stored constants too). The bytes of x or y are copied as they are (TFLite Micro
requantizes nothing); kernel in runtime_c/edgec_elementwise.c. TFLite's DYNAMIC_UPDATE_SLICE with constant start
indices is one: the update spread to the operand's shape (a remap), then a constant mask of its region.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.fixedpoint.scheme import quantize_input
from edgec.ir import SYNTHETIC, Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.movement import RANK, offsets
from edgec.ops.opdef import CallSite, OpDef
from edgec.ops.tflite16 import ACTIVATIONS, like


def strides6(shape, out_shape) -> list[int]:
    """Element strides of `shape` read as the 6-D broadcast `out_shape` (0 along broadcast axes)."""
    shape = [1] * (RANK - len(shape)) + [int(d) for d in shape]
    strides, acc = [0] * RANK, 1
    for k in range(RANK - 1, -1, -1):
        strides[k] = acc if shape[k] > 1 else 0
        acc *= shape[k]
    return strides


# ---- quantize ---------------------------------------------------------------------------------
def quantize_where(op: Op, ins: list[Tensor], out: Tensor) -> None:
    shapes = op.attrs["shapes"]
    if op.attrs.get("cond") is not None:
        op.arrays["cond"] = np.asarray(op.attrs["cond"], np.int8)     # 0 or 1 bytes
    for k in ("x", "y"):      # an ONNX Where's constant value: stored on the output's grid
        if op.attrs.get(k) is not None:
            op.arrays[k] = quantize_input(out, np.asarray(op.attrs[k], np.float32))
    dims = tuple(np.broadcast_shapes(*shapes))
    op.params.update(dims=[1] * (RANK - len(dims)) + list(dims),
                     **{f"{k}_stride": strides6(s, dims) for k, s in zip(("c", "x", "y"), shapes)})


# ---- NumPy integer twin (bit-exact with the C) ----------------------------------------------------
def where_s8(p: dict, cond, x, y, dtype=np.int8) -> np.ndarray:
    """out = cond ? x : y over the broadcast dims; int16 values (16x8) with dtype."""
    dims = [int(d) for d in p["dims"]]
    c = np.asarray(cond).astype(np.int8).reshape(-1)[offsets(dims, p["c_stride"])]
    xv = np.asarray(x, dtype).reshape(-1)[offsets(dims, p["x_stride"])]
    yv = np.asarray(y, dtype).reshape(-1)[offsets(dims, p["y_stride"])]
    return np.where(c != 0, xv, yv).astype(dtype).reshape(-1)


def operands(stored, inputs: list) -> list:
    """cond, x, y: each a stored constant (`stored` maps "cond" / "x" / "y" to it) or the next run-time input."""
    rest = iter(inputs)
    return [stored[k] if stored.get(k) is not None else next(rest) for k in ("cond", "x", "y")]


def run_where(op: Op, inputs: list) -> np.ndarray:
    return where_s8(op.params, *operands(op.arrays, inputs))


def run_where16(op: Op, inputs: list) -> np.ndarray:
    return where_s8(op.params, *operands(op.arrays, inputs), dtype=np.int16)


def float_where(op: Op, inputs: list):
    c, x, y = (np.asarray(v).reshape(s) for v, s in zip(operands(op.attrs, inputs), op.attrs["shapes"]))
    return np.where(c != 0, x, y)


# ---- C ------------------------------------------------------------------------------------------
def c_where(op: Op, low, site: CallSite, cast=lambda pointer, const=False: pointer) -> str:
    c, x, y = operands(site.arrays, site.inputs)
    call = (f"{low.kernel.name}(&p, (const uint8_t *)(const void *)({c}), {cast(x, const=True)}, "
            f"{cast(y, const=True)}, {cast(site.output)});")
    return cemit.with_params("edgec_where_params", op.params, call)


OPS = [OpDef("where", "elementwise", quantize_where, float_where)]
KERNELS = [Kernel("edgec_where_s8", ("where",), REFERENCE, c_where, run=run_where, code_bytes=300),
           Kernel("edgec_where_s16", ("where",), REFERENCE, lambda op, low, site: c_where(op, low, site, cemit.i16),
                  precision=INT16, run=run_where16)]      # TFLite's 16x8 SELECT_V2 / DYNAMIC_UPDATE_SLICE


# ---- ONNX import
def import_where(cx, node):
    """Where(cond, x, y): cond a comparison's bool output (edgec/ops/binary) or a constant; x and y activations,
    each requantized to the output's grid by a table (its tensor calibrated as the output's value, so the bytes
    copied are on the output's grid), or constants stored on that grid."""
    from edgec.ops.lut import emit_lut
    from edgec.ops.movement import in_layout

    c, x, y = node.input
    out = node.output[0]
    yshape = tuple(cx.shape(out, node))
    r = len(yshape)
    if r > RANK:
        raise node_error(node, f"broadcasting over {r} dimensions is not supported (at most {RANK})")
    acts = [v for v in (x, y, c) if v not in cx.consts]
    if x in cx.consts and y in cx.consts and c in cx.consts:
        raise node_error(node, "the condition and both values are constants (nothing computed from an input)")
    full = [v for v in acts if len(cx.shape(v, node)) == r]
    perm = cx.activation(full[0], node)[1] if full else tuple(range(r))
    if c not in cx.consts and cx.graph.tensors[cx.activation(c, node)[0]].dtype != "bool":
        raise node_error(node, "the condition must be a comparison (Greater, Less, Equal...) or a constant")
    inputs, attrs, shapes = [], {}, []
    for key, v in (("cond", c), ("x", x), ("y", y)):
        shape = (1,) * (r - len(cx.shape(v, node))) + tuple(cx.shape(v, node))
        if v in cx.consts:
            value = np.asarray(cx.consts[v]).reshape(shape).transpose(perm)
            attrs[key] = (value != 0).astype(np.uint8) if key == "cond" else value.astype(np.float32)
        else:
            if key != "cond":       # onto the output's grid: a table whose tensor is calibrated as the output
                mid = f"{SYNTHETIC}{out}__{key}"
                cx.shapes[mid] = cx.shape(v, node)
                emit_lut(cx, node, v, mid, "mul_c", consts=np.array([1.0]))
                cx.graph.retensor(cx.values[mid][0], source=out)
                v = mid
            inputs.append(in_layout(cx, v, r, perm, node))
            attrs.setdefault(key, None)
        shapes.append(tuple(shape[p] for p in perm))
    t = cx.new_tensor(out, tuple(yshape[p] for p in perm) or (1,), out)
    cx.emit("where", node, inputs, t, shapes=tuple(shapes), **attrs)
    cx.values[out] = (t, perm)


ONNX = {"Where": import_where}


# ---- TFLite import
def import_tflite_select(tx, op):
    """SELECT_V2 of a bool condition and two int8 (16x8: int16) activations, all three broadcast to the output."""
    c = tx.input(op, 0, dtypes=("bool",))
    x = tx.input(op, 1, ACTIVATIONS)
    y = tx.input(op, 2, like(tx, x))
    shapes = [tx.tensor(t).shape for t in (c, x, y)]
    if max(len(s) for s in shapes) > RANK:
        raise tx.unsupported(f"broadcasting over more than {RANK} dimensions")
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise tx.unsupported(f"shapes {[list(s) for s in shapes]} do not broadcast together") from None
    tx.emit("where", op, [c, x, y], tx.output(op, dtypes=like(tx, x)), shapes=tuple(shapes))


def import_tflite_dynamic_update_slice(tx, op):
    """DYNAMIC_UPDATE_SLICE with constant start indices (TFLite clamps them so that the update fits): the update's
    bytes spread over the operand's shape (a remap), then where(the update's region, those, the operand)."""
    from edgec.ops.rearrange import tflite_remap, tflite_scratch

    x = tx.input(op, 0, ACTIVATIONS)
    update = tx.input(op, 1, like(tx, x))
    shape, ushape = tx.tensor(x).shape, tx.tensor(update).shape
    start = tx.const(op, 2)
    if start is None or start.dtype.kind not in "iu" or start.size != len(shape) or len(ushape) != len(shape):
        raise tx.unsupported("start indices (input 2) must be a constant, one per axis of operand and update")
    if any(u > n for u, n in zip(ushape, shape)):
        raise tx.unsupported(f"update {list(ushape)} larger than the operand {list(shape)}")
    begin = [min(max(int(b), 0), n - u) for b, n, u in zip(start.reshape(-1), shape, ushape)]
    spread = tflite_scratch(tx, update, shape, "spread")
    axes = []
    for a, (b, n, u) in enumerate(zip(begin, shape, ushape)):
        i = np.arange(n) - b
        axes.append((np.where((i >= 0) & (i < u), i, -1), a))
    tflite_remap(tx, op, update, spread, axes, fill=0)
    cond = np.zeros(shape, np.uint8)
    cond[tuple(slice(b, b + u) for b, u in zip(begin, ushape))] = 1
    tx.emit("where", op, [spread, x], tx.output(op, dtypes=like(tx, x)), shapes=(tuple(shape),) * 3, cond=cond)


TFLITE = {"SELECT_V2": import_tflite_select, "DYNAMIC_UPDATE_SLICE": import_tflite_dynamic_update_slice}
