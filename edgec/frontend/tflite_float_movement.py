"""The float TFLite operators that move or select values, and the integer shape arithmetic around them, for
edgec/frontend/tflite_float.py (one translation function each, `tx` its Translator, as in tflite_float_ops.py):
STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK, PACK, GATHER, TILE, BROADCAST_TO, REVERSE_V2. Each works in the file's
(channels-last) order of axes.

`fold`: an operator whose output is an integer tensor (a shape, an index) and whose inputs are all constant, or a
SHAPE of a tensor whose shape is static, or a float constant moved (FILL, RESHAPE, TILE...: a recurrent layer's
zero state of a batch of None), is computed here with NumPy, as TF Lite computes it, and read as a
constant by what follows: Keras' run-time shape subgraphs (SHAPE -> STRIDED_SLICE -> PACK of a batch of None,
SHAPE -> GATHER -> REDUCE_PROD -> CONCATENATION in a MultiHeadAttention, the multiples of an UpSampling2D's TILE,
the shape of a class token's BROADCAST_TO) fold away when the file's shapes are static."""
from __future__ import annotations

import numpy as np
from onnx import helper

from edgec.frontend.tflite_float_ops import Untranslatable, _ins, _out

INTEGER = {2: np.int32, 4: np.int64, 6: np.bool_, 9: np.int8, 3: np.uint8, 7: np.int16}      # tflite.TensorType
_END = -(2 ** 62)           # an ONNX Slice end before index 0 (a negative step)


def _outs(op) -> list[int]:
    return [int(k) for k in op.OutputsAsNumpy()]


def _ints(tx, k: int) -> np.ndarray:
    if not tx.is_const(k):
        raise Untranslatable(f"'{tx.tname(k)}' (an index or shape operand) is computed at run time")
    return np.asarray(tx.raw(k)).astype(np.int64)


def _i64(tx, values, base: str) -> str:
    return tx.initializer(np.asarray(values, np.int64).reshape(-1), base)


# ---- STRIDED_SLICE and SLICE: one spec, run by NumPy (fold) or written as an ONNX Slice ----------------------------
def strided_slice_spec(tx, op, shape) -> list[tuple[int, int, int, bool]]:
    """(start, stop, step, dropped) per input axis, TF Lite's StridedSlice (begin / end / shrink-axis masks,
    offset; negative indices from the end, clamped as Python clamps a slice). stop < 0: through index 0."""
    o = tx.options(op, "StridedSliceOptions")
    x_k, b_k, e_k, s_k = _ins(op)[:4]
    begin, end, strides = _ints(tx, b_k).reshape(-1), _ints(tx, e_k).reshape(-1), _ints(tx, s_k).reshape(-1)
    if o is not None and (o.EllipsisMask() or o.NewAxisMask()):
        raise Untranslatable("an ellipsis or new-axis mask")
    bm, em, sm = (o.BeginMask(), o.EndMask(), o.ShrinkAxisMask()) if o is not None else (0, 0, 0)
    offset = bool(o is not None and o.Offset())
    spec = []
    for a, dim in enumerate(shape):
        if a >= len(begin):
            spec.append((0, dim, 1, False))
            continue
        step = int(strides[a])
        if step == 0:
            raise Untranslatable("a stride of 0")
        if sm >> a & 1:
            b = int(begin[a]) + (dim if begin[a] < 0 else 0)
            spec.append((b, b + 1, 1, True))
            continue
        b = None if bm >> a & 1 else int(begin[a])
        e = None if em >> a & 1 else int(end[a]) + (int(begin[a]) if offset else 0)
        start, stop, step = slice(b, e, step).indices(dim)
        spec.append((start, stop, step, False))
    return spec


def slice_spec(tx, op, shape) -> list[tuple[int, int, int, bool]]:
    begin, size = (_ints(tx, k).reshape(-1) for k in _ins(op)[1:3])
    return [(int(b), dim if s < 0 else int(b + s), 1, False) for b, s, dim in zip(begin, size, shape)]


def _spec(tx, op, shape):
    return strided_slice_spec(tx, op, shape) if tx.op_name(op) == "STRIDED_SLICE" else slice_spec(tx, op, shape)


def _numpy_slice(x: np.ndarray, spec) -> np.ndarray:
    y = x[tuple(slice(b, e if e >= 0 else None, s) for b, e, s, _ in spec)]
    return y.reshape([d for d, (*_, dropped) in zip(y.shape, spec) if not dropped])


def slicing(tx, op):
    """STRIDED_SLICE, SLICE: an ONNX Slice (the axes it changes), then a Reshape where axes are dropped."""
    x_k, y_k = _ins(op)[0], _out(op)
    shape = tx.shape(x_k)
    spec = _spec(tx, op, shape)
    base = tx.tname(y_k)
    moved = [a for a, (b, e, s, _) in enumerate(spec) if (b, e, s) != (0, shape[a], 1)]
    y = tx.value(x_k)
    if moved:
        starts, ends, steps = ([spec[a][i] if i != 1 or spec[a][1] >= 0 else _END for a in moved] for i in range(3))
        y = tx.node("Slice", [y, _i64(tx, starts, f"{base}_starts"), _i64(tx, ends, f"{base}_ends"),
                              _i64(tx, moved, f"{base}_axes"), _i64(tx, steps, f"{base}_steps")],
                    base if not any(d for *_, d in spec) else f"{base}_sliced")
    out = _numpy_slice(np.zeros(shape, np.int8), spec).shape
    if any(d for *_, d in spec) or not moved:
        y = tx.node("Reshape", [y, _i64(tx, out, f"{base}_shape")], base)
    tx.set(y_k, y, shape=out)


# ---- SPLIT, SPLIT_V, UNPACK, PACK -----------------------------------------------------------------------------
def _split_node(tx, x: str, sizes: list[int], axis: int, names: list[str]) -> list[str]:
    """An ONNX Split of x into `sizes` along `axis`, its outputs fresh names from `names`."""
    names = [tx.fresh(n) for n in names]
    tx.nodes.append(helper.make_node("Split", [x, _i64(tx, sizes, f"{names[0]}_sizes")], names,
                                     name=tx.fresh(f"Split_{names[0]}"), axis=axis))
    return names


def split(tx, op):
    """SPLIT (axis, x; num_splits equal parts) and SPLIT_V (x, sizes with at most one -1, axis)."""
    ins, outs = _ins(op), _outs(op)
    if tx.op_name(op) == "SPLIT":
        axis_k, x_k = ins[:2]
        n = tx.options(op, "SplitOptions").NumSplits()
    else:
        x_k, sizes_k, axis_k = ins[:3]
        n = len(outs)
    shape = tx.shape(x_k)
    axis = int(_ints(tx, axis_k).reshape(-1)[0]) % len(shape)
    if tx.op_name(op) == "SPLIT":
        sizes = [shape[axis] // n] * n
    else:
        sizes = [int(s) for s in _ints(tx, sizes_k).reshape(-1)]
        if -1 in sizes:
            sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    names = _split_node(tx, tx.value(x_k), sizes, axis, [tx.tname(k) for k in outs])
    for k, name, size in zip(outs, names, sizes):
        tx.set(k, name, shape=tuple(size if a == axis else d for a, d in enumerate(shape)))


def unpack(tx, op):
    """UNPACK: an ONNX Split into ones along the axis, each reshaped without it."""
    x_k, outs = _ins(op)[0], _outs(op)
    shape = tx.shape(x_k)
    axis = tx.options(op, "UnpackOptions").Axis() % len(shape)
    out_shape = tuple(d for a, d in enumerate(shape) if a != axis)
    parts = _split_node(tx, tx.value(x_k), [1] * shape[axis], axis, [f"{tx.tname(k)}_one" for k in outs])
    for k, part in zip(outs, parts):
        base = tx.tname(k)
        tx.set(k, tx.node("Reshape", [part, _i64(tx, out_shape, f"{base}_shape")], base), shape=out_shape)


def pack(tx, op):
    """PACK of activations: each reshaped with the new axis, then an ONNX Concat along it."""
    ins, y_k = [k for k in _ins(op) if k >= 0], _out(op)
    shape = tx.shape(ins[0])
    axis = tx.options(op, "PackOptions").Axis() % (len(shape) + 1)
    one = shape[:axis] + (1,) + shape[axis:]
    base = tx.tname(y_k)
    parts = [tx.node("Reshape", [tx.operand(k, "nhwc", len(shape)), _i64(tx, one, f"{base}_one")], f"{base}_{i}")
             for i, k in enumerate(ins)]
    out = shape[:axis] + (len(ins),) + shape[axis:]
    tx.set(y_k, tx.node("Concat", parts, base, axis=axis), shape=out)


# ---- GATHER, TILE, BROADCAST_TO -------------------------------------------------------------------------------------
def gather(tx, op):
    """GATHER of an activation at constant indices (batch_dims 0): an ONNX Gather."""
    x_k, i_k = _ins(op)[:2]
    y_k = _out(op)
    o = tx.options(op, "GatherOptions")
    if o is not None and o.BatchDims():
        raise Untranslatable(f"batch_dims {o.BatchDims()}")
    shape, idx = tx.shape(x_k), _ints(tx, i_k)
    axis = (o.Axis() if o is not None else 0) % len(shape)
    base = tx.tname(y_k)
    y = tx.node("Gather", [tx.value(x_k), tx.initializer(idx, f"{base}_indices")], base, axis=axis)
    tx.set(y_k, y, shape=shape[:axis] + idx.shape + shape[axis + 1:])


def reverse(tx, op):
    """REVERSE_V2: an ONNX Slice with step -1 along each axis named (what a Bidirectional layer writes)."""
    x_k, a_k = _ins(op)[:2]
    y_k, shape = _out(op), tx.shape(x_k)
    axes = sorted({int(a) % len(shape) for a in _ints(tx, a_k).reshape(-1)})
    base = tx.tname(y_k)
    y = tx.node("Slice", [tx.value(x_k), _i64(tx, [-1] * len(axes), f"{base}_starts"),
                          _i64(tx, [_END] * len(axes), f"{base}_ends"), _i64(tx, axes, f"{base}_axes"),
                          _i64(tx, [-1] * len(axes), f"{base}_steps")], base)
    tx.set(y_k, y, shape=shape)


def tile(tx, op):
    x_k, m_k = _ins(op)[:2]
    y_k, reps = _out(op), _ints(tx, m_k).reshape(-1)
    base = tx.tname(y_k)
    tx.set(y_k, tx.node("Tile", [tx.value(x_k), _i64(tx, reps, f"{base}_repeats")], base),
           shape=tuple(int(d * r) for d, r in zip(tx.shape(x_k), reps)))


def broadcast_to(tx, op):
    x_k, s_k = _ins(op)[:2]
    y_k, shape = _out(op), tuple(int(d) for d in _ints(tx, s_k).reshape(-1))
    base = tx.tname(y_k)
    out = np.broadcast_shapes(tx.shape(x_k), shape)
    tx.set(y_k, tx.node("Expand", [tx.value(x_k), _i64(tx, shape, f"{base}_shape")], base), shape=out)


OPS = {"STRIDED_SLICE": slicing, "SLICE": slicing, "SPLIT": split, "SPLIT_V": split, "UNPACK": unpack,
       "PACK": pack, "GATHER": gather, "TILE": tile, "BROADCAST_TO": broadcast_to, "REVERSE_V2": reverse}


# ---- build-time integer arithmetic ----------------------------------------------------------------------------------
def _reduce_axes(tx, op, x):
    return tuple(sorted({int(a) % x.ndim for a in _ints(tx, _ins(op)[1]).reshape(-1)}))


def _binary(fn):
    return lambda tx, op, v: fn(v[0], v[1])


FOLD = {
    "SHAPE": lambda tx, op, v: np.array(tx.shape(_ins(op)[0])),
    "STRIDED_SLICE": lambda tx, op, v: _numpy_slice(v[0], _spec(tx, op, v[0].shape)),
    "SLICE": lambda tx, op, v: _numpy_slice(v[0], _spec(tx, op, v[0].shape)),
    "PACK": lambda tx, op, v: np.stack(v, tx.options(op, "PackOptions").Axis()),
    "CONCATENATION": lambda tx, op, v: np.concatenate(v, tx.options(op, "ConcatenationOptions").Axis()),
    "GATHER": lambda tx, op, v: np.take(v[0], v[1], (o.Axis() if (o := tx.options(op, "GatherOptions")) else 0)),
    "REDUCE_PROD": lambda tx, op, v: np.prod(v[0], _reduce_axes(tx, op, v[0]),
                                             keepdims=bool(tx.options(op, "ReducerOptions").KeepDims())),
    "SUM": lambda tx, op, v: np.sum(v[0], _reduce_axes(tx, op, v[0]),
                                    keepdims=bool(tx.options(op, "ReducerOptions").KeepDims())),
    "ADD": _binary(np.add), "SUB": _binary(np.subtract), "MUL": _binary(np.multiply),
    "FLOOR_DIV": _binary(np.floor_divide), "MAXIMUM": _binary(np.maximum), "MINIMUM": _binary(np.minimum),
    "DIV": _binary(lambda a, b: np.trunc(a / b)),
    "CAST": lambda tx, op, v: v[0],
    "RESHAPE": lambda tx, op, v: v[0].reshape(tx.shape(_out(op))),
    "SQUEEZE": lambda tx, op, v: v[0].reshape(tx.shape(_out(op))),
    "EXPAND_DIMS": lambda tx, op, v: v[0].reshape(tx.shape(_out(op))),
    "FILL": lambda tx, op, v: np.full([int(d) for d in v[0].reshape(-1)], v[1]),
    "RANGE": lambda tx, op, v: np.arange(v[0], v[1], v[2]),
    "TILE": lambda tx, op, v: np.tile(v[0], v[1].reshape(-1)),
    "BROADCAST_TO": lambda tx, op, v: np.broadcast_to(v[0], v[1].reshape(-1)),
    "TRANSPOSE": lambda tx, op, v: np.transpose(v[0], v[1].reshape(-1)),
    # a WHILE's condition on its counters (tflite_float_while.py)
    "LESS": _binary(np.less), "LESS_EQUAL": _binary(np.less_equal), "GREATER": _binary(np.greater),
    "GREATER_EQUAL": _binary(np.greater_equal), "EQUAL": _binary(np.equal), "NOT_EQUAL": _binary(np.not_equal),
    "LOGICAL_AND": _binary(np.logical_and), "LOGICAL_OR": _binary(np.logical_or),
}


MOVES = {"FILL", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "PACK", "CONCATENATION", "TILE", "BROADCAST_TO", "TRANSPOSE",
         "STRIDED_SLICE", "SLICE", "GATHER"}


def fold(tx, op) -> bool:
    """Compute an integer operator of constants (or a SHAPE) now: its output becomes a constant (tx.folded).
    False where it is not one (then it is translated, or named)."""
    kind, outs = tx.op_name(op), _outs(op)
    if kind not in FOLD or len(outs) != 1:
        return False
    dtype = tx.sg.Tensors(outs[0]).Type()
    if dtype not in INTEGER and not (dtype == 0 and kind in MOVES):       # float: values moved, not computed
        return False
    ins = [k for k in _ins(op) if k >= 0]
    if kind != "SHAPE" and not all(tx.is_const(k) for k in ins):
        return False
    values = [np.asarray(tx.raw(k)) for k in ins] if kind != "SHAPE" else []
    try:
        y = np.asarray(FOLD[kind](tx, op, values))
    except (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError):
        return False
    tx.folded[outs[0]] = y.astype(INTEGER.get(dtype, np.float32))
    tx.shapes[outs[0]] = tuple(int(d) for d in y.shape)
    return True
