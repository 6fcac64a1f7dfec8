"""The `.tflite` importers of the float tail (edgec/ops/float_tail/__init__.py): a DEQUANTIZE of an activation
into float32, TFLM's float-only builtins on float32 tensors, SOFTMAX / LOG_SOFTMAX of a float32 tensor, and
EMBEDDING_LOOKUP."""
from __future__ import annotations

import numpy as np

from edgec.ir import Tensor
from edgec.ops.float_tail import BINARY, DETECTION, IN_CODE, RANK, UNARY, bits

FLOAT32, INT8, INT32 = 0, 9, 2
BIG = float(np.finfo(np.float32).max)
RANGES = {0: (-BIG, BIG), 1: (0.0, BIG), 2: (-1.0, 1.0), 3: (0.0, 6.0)}   # TFLM's float activation ranges


def _float_out(tx, op, shape: tuple[int, ...], k: int = 0) -> str:
    """A new float32 tensor for the operator's output k."""
    t = tx.sg.Tensors(op.Outputs(k))
    if t.Type() != FLOAT32:
        raise tx.unsupported("an output that is not float32 (a float tail ends in float32 outputs)")
    base = name = tx._tname(op.Outputs(k))
    j = 1
    while name in tx.graph.tensors:
        name, j = f"{base}_{j}", j + 1
    tx.graph.tensors[name] = Tensor(name=name, shape=tuple(shape) or (1,), source=name, scale=1.0, zero_point=0,
                                    dtype="float32")
    tx.values[op.Outputs(k)] = name
    return name


def _float_in(tx, op, k: int = 0) -> str:
    i = op.Inputs(k)
    if i not in tx.values or tx.graph.tensors[tx.values[i]].dtype != "float32":
        raise tx.unsupported(f"input {k} is not a float32 tensor computed by the model (edgec runs these operators "
                             "on a float tail: after a DEQUANTIZE)")
    return tx.values[i]


def takes(tx, op) -> bool:
    """Whether an operator computes in float: a DEQUANTIZE of an activation read by other than the detection
    post-processing (which takes its DEQUANTIZEs itself), or an operator whose first input is float32."""
    if tx.op_name(op) == "DEQUANTIZE":
        readers = [tx.op_name(tx.sg.Operators(i)) for i in range(tx.sg.OperatorsLength())
                   if op.Outputs(0) in tx.sg.Operators(i).InputsAsNumpy()]
        return op.Inputs(0) in tx.values and any(r != DETECTION for r in readers)
    i = op.Inputs(1 if tx.op_name(op) == "SPLIT" else 0)      # (SPLIT: axis, then the tensor)
    return i in tx.values and tx.graph.tensors[tx.values[i]].dtype == "float32"


def import_dequantize(tx, op):
    name = tx.values[op.Inputs(0)]
    x = tx.graph.tensors[name]
    if x.dtype not in IN_CODE:
        raise tx.unsupported(f"DEQUANTIZE of a {x.dtype} tensor (edgec dequantizes int8, int16 and uint8)")
    out = _float_out(tx, op, x.shape)
    tx.emit("float_dequantize", op, [name], out, params=dict(n=x.size, in_code=IN_CODE[x.dtype], zp=x.zero_point,
                                                             scale_bits=bits(x.scale)))


def import_quantize(tx, op):
    """QUANTIZE of a float32 tensor into int8, int16 or uint8 (per tensor), leaving the float tail."""
    name = _float_in(tx, op)
    x = tx.graph.tensors[name]
    out = tx.output(op, x.shape, dtypes=tuple(IN_CODE))
    t = tx.graph.tensors[out]
    tx.emit("float_quantize", op, [name], out, params=dict(n=x.size, out_code=IN_CODE[t.dtype], zp=t.zero_point,
                                                           scale_bits=bits(t.scale)))


def import_unary(tx, op):
    name = _float_in(tx, op)
    x = tx.graph.tensors[name]
    tx.emit("float_unary", op, [name], _float_out(tx, op, x.shape),
            params=dict(n=x.size, code=UNARY[tx.op_name(op)]))


def _strides(shape: tuple[int, ...], out: tuple[int, ...]) -> np.ndarray:
    """Element strides of `shape` over the output's dimensions (0 where it is broadcast), padded to RANK."""
    s = (1,) * (len(out) - len(shape)) + tuple(shape)
    st, acc = [0] * len(out), 1
    for d in range(len(out) - 1, -1, -1):
        st[d] = acc if s[d] != 1 else 0
        acc *= s[d]
    return np.asarray([0] * (RANK - len(out)) + st, np.int32)


def import_binary(tx, op):
    a = _float_in(tx, op)
    b_const = None if op.Inputs(1) in tx.values else tx.const(op, 1)
    b = None if b_const is not None else _float_in(tx, op, 1)
    a_shape = tx.graph.tensors[a].shape
    b_shape = tuple(np.shape(b_const)) if b_const is not None else tx.graph.tensors[b].shape
    try:
        out_shape = tuple(int(d) for d in np.broadcast_shapes(a_shape, b_shape))
    except ValueError:
        raise tx.unsupported(f"shapes {a_shape} and {b_shape} that do not broadcast") from None
    if len(out_shape) > RANK:
        raise tx.unsupported(f"a {len(out_shape)}-D operation (edgec broadcasts over up to {RANK} dimensions)")
    if b_const is not None and b_const.dtype != np.float32:
        raise tx.unsupported("a constant divisor that is not float32")
    dims = np.asarray([1] * (RANK - len(out_shape)) + list(out_shape), np.int32)
    arrays = {"dims": dims, "a_strides": _strides(a_shape, out_shape), "b_strides": _strides(b_shape, out_shape)}
    if b_const is not None:
        arrays["b"] = np.ascontiguousarray(b_const, np.float32).reshape(-1)
    tx.emit("float_binary", op, [a] if b is None else [a, b], _float_out(tx, op, out_shape), arrays=arrays,
            params=dict(code=BINARY[tx.op_name(op)]))


def import_softmax(tx, op):
    name = _float_in(tx, op)
    shape = tx.graph.tensors[name].shape
    o = tx.options(op)
    log = tx.op_name(op) == "LOG_SOFTMAX"
    beta = 1.0 if log or o is None else float(o.Beta())
    tx.emit("float_softmax", op, [name], _float_out(tx, op, shape),
            params=dict(rows=int(np.prod(shape[:-1], dtype=np.int64)), cols=int(shape[-1]), log=int(log),
                        beta_bits=bits(beta)))


def import_l2_pool(tx, op):
    name = _float_in(tx, op)
    shape = tx.graph.tensors[name].shape
    out_shape = tx.shape(op.Outputs(0))
    if len(shape) != 4 or len(out_shape) != 4:
        raise tx.unsupported("L2_POOL_2D of other than a 4-D tensor")
    o = tx.options(op)
    if o.FusedActivationFunction() not in RANGES:
        raise tx.unsupported(f"fused activation #{o.FusedActivationFunction()}")
    w = tx.window(o, shape[1:3], out_shape[1:3], (o.FilterHeight(), o.FilterWidth()))
    lo, hi = RANGES[o.FusedActivationFunction()]
    tx.emit("float_l2_pool", op, [name], _float_out(tx, op, out_shape),
            params=dict(batch=shape[0], in_h=shape[1], in_w=shape[2], channels=shape[3], out_h=out_shape[1],
                        out_w=out_shape[2], k_h=o.FilterHeight(), k_w=o.FilterWidth(), stride_h=w["stride"][0],
                        stride_w=w["stride"][1], pad_h=w["pad"][0], pad_w=w["pad"][1], lo_bits=bits(lo),
                        hi_bits=bits(hi)))


def import_embedding_lookup(tx, op):
    ids = tx.values.get(op.Inputs(0))
    table = tx.const(op, 1)
    if ids is None or tx.graph.tensors[ids].dtype != "int32" or len(tx.graph.tensors[ids].shape) != 1:
        raise tx.unsupported("ids that are not a 1-D int32 tensor the model computes or takes as input")
    if table is None or table.dtype != np.int8 or table.ndim < 2:
        raise tx.unsupported("a table that is not a constant int8 tensor of 2 or more dimensions")
    n = tx.graph.tensors[ids].shape[0]
    shape = (n, *table.shape[1:])
    hybrid = tx.sg.Tensors(op.Outputs(0)).Type() == FLOAT32
    scale = 1.0
    if hybrid:
        s, z, _ = tx.qparams(op.Inputs(1))
        if s.size != 1 or int(z[0]) != 0:
            raise tx.unsupported("a table with a scale per row or a zero point (TFLM dequantizes with one scale, "
                                 "zero point 0)")
        scale = float(s[0])
        out = _float_out(tx, op, shape)
    else:
        out = tx.output(op, shape)
    rows = int(table.shape[0])
    tx.emit("embedding_lookup", op, [ids], out, arrays={"table": np.ascontiguousarray(table).reshape(rows, -1)},
            params=dict(ids=n, rows=rows, cols=int(table.size // rows), hybrid=int(hybrid), scale_bits=bits(scale)))


def import_split(tx, op):
    """SPLIT / SPLIT_V of a float32 tensor along a constant axis (TFLM copies the parts; an unrolled Keras LSTM
    after DEQUANTIZE): one float_slice per output."""
    v = tx.op_name(op) == "SPLIT_V"
    name = _float_in(tx, op, 0 if v else 1)
    shape = tx.graph.tensors[name].shape
    axis, sizes = tx.const(op, 2 if v else 0), tx.const(op, 1) if v else None
    if axis is None or (v and sizes is None):
        raise tx.unsupported("a constant axis (and size_splits)")
    a = int(np.asarray(axis).reshape(-1)[0]) % len(shape)
    parts = op.OutputsLength()
    sizes = [int(d) for d in np.asarray(sizes).reshape(-1)] if v else [shape[a] // parts] * parts
    if v and sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = shape[a] - sum(d for d in sizes if d != -1)
    if sum(sizes) != shape[a] or len(sizes) != parts or min(sizes) < 0:
        raise tx.unsupported(f"sizes {sizes} do not split axis {a} of size {shape[a]}")
    outer, inner = int(np.prod(shape[:a], dtype=np.int64)), int(np.prod(shape[a + 1:], dtype=np.int64))
    start = 0
    for k, n in enumerate(sizes):
        out = _float_out(tx, op, (*shape[:a], n, *shape[a + 1:]), k)
        tx.emit("float_slice", op, [name], out, params=dict(outer=outer, row=shape[a] * inner, start=start * inner,
                                                              n=n * inner))
        start += n


def computed_indices(tx, op) -> bool:
    """Whether a GATHER reads indices the model computes or takes as input (token ids): a lookup, here."""
    return op.InputsLength() > 1 and op.Inputs(1) in tx.values


def import_gather(tx, op):
    """GATHER of a constant int8 table at int32 indices computed at run time (Keras' Embedding over token ids):
    the lookup of EMBEDDING_LOOKUP, its rows the slices along `axis` (the axes before it of size 1), the
    indices of any shape; an index outside the table fails the invoke, as TFLite Micro's Invoke fails."""
    ids, table, o = tx.values[op.Inputs(1)], tx.const(op, 0), tx.options(op)
    if tx.graph.tensors[ids].dtype != "int32":
        raise tx.unsupported(f"{tx.graph.tensors[ids].dtype} indices (TFLite Micro's GATHER takes int32)")
    if table is None or table.dtype != np.int8:
        raise tx.unsupported("computed indices into other than a constant int8 table (edgec looks rows up in a "
                             "constant table; an activation gathered at computed indices is not taken)")
    axis = (o.Axis() if o is not None else 0) % max(table.ndim, 1)
    if (o is not None and o.BatchDims()) or int(np.prod(table.shape[:axis], dtype=np.int64)) != 1:
        raise tx.unsupported("GATHER at computed indices with batch_dims, or along an axis after one of size > 1")
    n, rows = tx.graph.tensors[ids].size, int(table.shape[axis])
    shape = (*table.shape[:axis], *tx.shape(op.Inputs(1)), *table.shape[axis + 1:])
    out = tx.output(op, shape)
    tx.emit("embedding_lookup", op, [ids], out, arrays={"table": np.ascontiguousarray(table).reshape(rows, -1)},
            params=dict(ids=n, rows=rows, cols=int(table.size // max(rows, 1)), hybrid=0, scale_bits=bits(1.0)))


TFLITE = {**{k: import_unary for k in UNARY}, **{k: import_binary for k in BINARY}, "L2_POOL_2D": import_l2_pool,
          "EMBEDDING_LOOKUP": import_embedding_lookup}
# builtin operators other families import when they compute on int8: handed here when `takes` (registry)
TFLITE_FLOAT = {"SPLIT": import_split, "SPLIT_V": import_split, "DEQUANTIZE": import_dequantize,
                "QUANTIZE": import_quantize, "SOFTMAX": import_softmax,
                "LOG_SOFTMAX": import_softmax}
