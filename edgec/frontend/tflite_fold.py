"""Run-time shape computations of a .tflite file folded at import, when the shapes are static.

A Keras `Reshape` of a model whose batch is None exports as SHAPE(x) -> STRIDED_SLICE (the batch) -> PACK (with
the other dimensions) -> RESHAPE(x, that): integer tensors computed at run time from a shape the file fixes
anyway (a Keras Dense on a 3-D input: SHAPE -> GATHER -> REDUCE_PROD -> PACK). `fold(tx, op)` evaluates such
an operator with NumPy when every input is a constant or already folded (or, for SHAPE, has a static shape) and
its outputs are integer tensors without quantization; its values then stand as constants for the operators that
read them (`tx.const`), and nothing of it runs on the device. Quantized (int8) tensors are folded only through
pure data movement (`MOVES`: an SSD's anchors, a constant TILEd, reshaped and concatenated into a graph output)
where every int8 input has the output's quantization, so the bytes are the file's exactly; their arithmetic is
the importers'. Where an operator or a graph output reads such a folded int8 value as an activation,
`materialize` writes it there (edgec/ops/constant.py).
"""
from __future__ import annotations

import numpy as np

INTEGER_TYPES = {2: np.int32, 4: np.int64, 6: np.bool_}      # tflite.TensorType INT32, INT64, BOOL
INT8 = 9                                                     # tflite.TensorType INT8
MOVES = {"TILE", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CONCATENATION", "TRANSPOSE", "PACK", "STRIDED_SLICE",
         "GATHER", "BROADCAST_TO"}                                           # foldable on int8 values: they only move bytes
ELEMENTWISE = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "FLOOR_DIV": np.floor_divide,
               "MAXIMUM": np.maximum, "MINIMUM": np.minimum}
REDUCTIONS = {"REDUCE_PROD": np.prod, "SUM": np.sum, "REDUCE_MAX": np.max, "REDUCE_MIN": np.min}


def fold(tx, op) -> bool:
    """Whether `op` was evaluated at build time (its outputs recorded in tx.static)."""
    name = tx.op_name(op)
    outs = [int(t) for t in op.OutputsAsNumpy()]
    moved = bool(outs) and name in MOVES and all(tx.sg.Tensors(t).Type() == INT8 and _quantized(tx, t) for t in outs)
    if not outs or not moved and any(tx.sg.Tensors(t).Type() not in INTEGER_TYPES or _quantized(tx, t) for t in outs):
        return False
    if moved and not all(_same_qparams(tx, op.Inputs(k), outs[0]) for k in range(op.InputsLength())
                         if op.Inputs(k) >= 0 and tx.sg.Tensors(op.Inputs(k)).Type() == INT8):
        return False
    if name == "SHAPE":            # the file's shape (a batch of None is 1 in it, as TFLite Micro runs it)
        return op.Inputs(0) >= 0 and _set(tx, outs, [np.array(tx.shape(op.Inputs(0)), np.int64)])
    ins = []
    for k in range(op.InputsLength()):
        i = op.Inputs(k)
        if i < 0:
            ins.append(None)
        elif i in tx.static:
            ins.append(tx.static[i])
        elif not tx._computed(i):
            try:
                ins.append(tx.const(op, k))
            except type(tx.unsupported("")):      # not a numeric constant
                return False
        else:
            return False
    try:
        value = _evaluate(tx, op, name, ins)
    except (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError):
        return False
    return value is not None and _set(tx, outs, value)


def _evaluate(tx, op, name: str, ins: list) -> list | None:
    o = tx.options(op) if op.BuiltinOptionsType() else None
    if name == "STRIDED_SLICE":
        return [_strided_slice(o, *ins[:4])]
    if name == "PACK":
        return [np.stack(ins, axis=o.Axis())]
    if name == "CONCATENATION":
        return [np.concatenate([np.atleast_1d(v) for v in ins], axis=o.Axis())]
    if name == "GATHER":
        if o is not None and o.BatchDims() != 0:
            return None
        return [np.take(ins[0], ins[1], axis=o.Axis() if o is not None else 0)]
    if name == "TILE":
        return [np.tile(ins[0], np.asarray(ins[1]).reshape(-1).tolist())]
    if name == "BROADCAST_TO":           # keras.io's ViT class token: a weight broadcast to the (folded) batch
        return [np.broadcast_to(ins[0], np.asarray(ins[1]).reshape(-1).tolist())]
    if name == "TRANSPOSE":
        return [np.transpose(ins[0], np.asarray(ins[1]).reshape(-1).tolist())]
    if name in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CAST"):
        return [ins[0]]                    # reshaped and typed by _set
    if name in ELEMENTWISE:
        return [ELEMENTWISE[name](ins[0], ins[1])]
    if name in REDUCTIONS:               # Keras's Flatten/Dense on a shape: the product of its dimensions
        axes = tuple(int(a) % max(np.ndim(ins[0]), 1) for a in np.atleast_1d(ins[1]).tolist())
        return [REDUCTIONS[name](ins[0], axis=axes, keepdims=bool(o is not None and o.KeepDims()))]
    return None


def _strided_slice(o, x, begin, end, strides):
    if o.EllipsisMask() or o.NewAxisMask():
        return None
    strides = np.ones(len(begin), np.int64) if strides is None else strides
    offset = bool(o.Offset()) if hasattr(o, "Offset") else False
    index = []
    for k, (b, e, s) in enumerate(zip(begin.tolist(), end.tolist(), strides.tolist())):
        if o.ShrinkAxisMask() >> k & 1:
            index.append(int(b))
            continue
        e = b + e if offset else e
        index.append(slice(None if o.BeginMask() >> k & 1 else int(b), None if o.EndMask() >> k & 1 else int(e),
                           int(s)))
    return np.asarray(x)[tuple(index)]


def _set(tx, outs: list[int], values: list) -> bool:
    for t, v in zip(outs, values):
        if v is None:
            return False
        shape = tx.shape(t)
        kind = tx.sg.Tensors(t).Type()
        v = np.asarray(v).astype(np.int8 if kind == INT8 else INTEGER_TYPES[kind])
        tx.static[t] = v.reshape(shape) if shape and int(np.prod(shape)) == v.size else v
    return True


def materialize(tx, consumer, index: int) -> bool:
    """Whether TFLite tensor `index` is an int8 value folded at import, now written into an activation by a
    constant op (for the `consumer` operator, or a graph output)."""
    value = tx.static.get(index)
    if value is None or value.dtype != np.int8 or index in tx.values:
        return False
    from edgec.ops import constant

    constant.emit(tx, consumer, index, value)
    return True


def _same_qparams(tx, a: int, b: int) -> bool:
    qa, qb = tx.sg.Tensors(a).Quantization(), tx.sg.Tensors(b).Quantization()
    return (qa is not None and qa.ScaleLength() == 1 and qb.ScaleLength() == 1 and qa.Scale(0) == qb.Scale(0)
            and (qa.ZeroPoint(0) if qa.ZeroPointLength() else 0) == (qb.ZeroPoint(0) if qb.ZeroPointLength() else 0))


def _quantized(tx, t: int) -> bool:
    q = tx.sg.Tensors(t).Quantization()
    return q is not None and q.ScaleLength() > 0



def run_batch_shape(tx, op, k: int = 0) -> tuple[int, ...] | None:
    """The shape operator output k runs with where the file leaves its batch to run time (a shape signature of
    [-1, ...]: a Keras batch of None) and input 0 carries another batch than the file's placeholder (behind a
    SPACE_TO_BATCH_ND: Keras's dilated Conv1D/Conv2D): the file's shape with that batch, as TF Lite resizes it;
    None elsewhere (the file's shape stands)."""
    t = tx.sg.Tensors(op.Outputs(k))
    sig = t.ShapeSignatureAsNumpy() if t.ShapeSignatureLength() else ()
    i = op.Inputs(0) if op.InputsLength() else -1
    if len(sig) < 2 or sig[0] != -1 or -1 in sig[1:] or i < 0 or i not in tx.values or not tx.shape(i):
        return None
    batch = tx.tensor(tx.values[i]).shape[0]
    given = tx.shape(op.Outputs(k))
    return None if batch == tx.shape(i)[0] or not given else (int(batch), *given[1:])
