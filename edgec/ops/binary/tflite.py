"""The TFLite import of the elementwise ops of two operands (edgec/ops/binary/__init__.py's kinds `add` and `binary`):
ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM and SQUARED_DIFFERENCE of two activations or of an activation and a constant tensor (a BatchNorm
left as MUL + ADD by the converter: a per-channel constant), with broadcasting over up to 6 dimensions.

TFLite Micro's arithmetic: ADD/SUB rescale both operands after a left shift of 20 and requantize the sum (three
multipliers; SQUARED_DIFFERENCE squares the difference after a left shift of 7), MUL requantizes the product
(one), DIV multiplies by gemmlowp's reciprocal of the divisor (binary's `div_tflite`), MAXIMUM/MINIMUM compare the int8 values themselves (the
converter gives inputs and output one quantization; nothing is rescaled). A constant operand keeps the file's
int8 values and its own scale and zero point, as TFLite Micro reads it.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import NO_ACT, Op, Tensor
from edgec.ops.binary import BINARY_OPS, binary_s8, quantize_binary
from edgec.ops.binary.int16 import import_binary16
from edgec.ops.lut import tflite as lut_tflite
from edgec.ops.movement import RANK

OPS: list = []      # no kind of its own: the kinds are the package's (__init__.py)
ONNX: dict = {}
KINDS = {"ADD": "add", "SUB": "sub", "MUL": "mul", "MAXIMUM": "max_raw", "MINIMUM": "min_raw",
         "SQUARED_DIFFERENCE": "sqdiff", "DIV": "div_tflite", "EQUAL": "equal", "NOT_EQUAL": "not_equal",
         "GREATER": "greater", "GREATER_EQUAL": "greater_equal", "LESS": "less", "LESS_EQUAL": "less_equal",
         "LOGICAL_AND": "logical_and", "LOGICAL_OR": "logical_or"}
BOOLEAN = {"EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "LOGICAL_AND", "LOGICAL_OR"}


def bool_output(tx, op, dtype: str = "bool") -> str:
    """A new canonical bool tensor (one byte, 0 or 1; scale 1, zero point 0) for the operator's output (or, for a
    CAST, an unquantized int8 one)."""
    i = op.Outputs(0)
    raw = tx.sg.Tensors(i).Name()
    name = base = raw.decode(errors="replace") if raw else f"#{i}"
    k = 1
    while name in tx.graph.tensors:
        name, k = f"{base}_{k}", k + 1
    tx.graph.tensors[name] = Tensor(name=name, shape=tx.shape(i) or (1,), source=name, scale=1.0, zero_point=0,
                                    dtype=dtype)
    tx.values[i] = name
    return name


def _inputs_typed(tx, op, name: str) -> None:
    """Comparisons take int8 (scale below 1: TFLite's rescaling is undefined beyond) or bool activations, the
    logical operators bool ones."""
    for k in range(2):
        i = op.Inputs(k)
        if i not in tx.values:
            continue
        t = tx.tensor(tx.values[i])
        want = ("bool",) if name.startswith("LOGICAL") else ("int8", "bool")
        if t.dtype == "int16" and name == "GREATER":
            raise tx.unsupported("int16 inputs: TFLite Micro's Prepare sets the comparison's rescaling for int8 only, "
                                 "so its int16 GREATER rescales with multipliers it never set (its answer depends on "
                                 "what the arena held; TF Lite's compares the raw values, scales ignored): no defined "
                                 "result to match")
        if t.dtype not in want:
            raise tx.unsupported(f"input {k} is {t.dtype}; {name} takes {' or '.join(want)} here")
        if t.dtype == "int8" and t.scale >= 1.0:
            raise tx.unsupported(f"input {k} has scale {t.scale} (TFLite's comparison rescaling needs one below 1)")


def _operand(tx, op, k: int):
    """(canonical tensor, None) of an activation input, or (None, Tensor) of a constant one (its int8 values in
    `data`, its file quantization)."""
    i = op.Inputs(k)
    if i in tx.values:
        return tx.values[i], None
    data = tx.const(op, k)
    if data is None or data.dtype != np.int8:
        raise tx.unsupported(f"input {k} must be an int8 activation or an int8 constant")
    scales, zps, _ = tx.qparams(i)
    if scales.size != 1:
        raise tx.unsupported(f"constant input {k} has a scale per channel (TFLite's kernel takes one)")
    t = Tensor(name=f"constant{k}", shape=data.shape or (1,), source="", scale=float(scales[0]),
               zero_point=int(zps[0]))
    return None, (t, np.ascontiguousarray(data))


def import_tflite_binary(tx, op):
    """ADD / SUB / MUL / MAXIMUM / MINIMUM / SQUARED_DIFFERENCE (see the module doc); same-shape ADD of two activations is the `add`
    kind (its fast kernel), the others broadcast (`binary`)."""
    name, o = tx.op_name(op), tx.options(op)
    if name in BOOLEAN:
        _inputs_typed(tx, op, name)
    a, b = (tx.values.get(op.Inputs(k)) for k in (0, 1))
    if any(t is not None and tx.tensor(t).dtype == "int16" for t in (a, b)):
        return import_binary16(tx, op, name, KINDS[name], a, b)      # 16x8 (binary/int16.py)
    (a, ca), (b, cb) = _operand(tx, op, 0), _operand(tx, op, 1)
    if ca is not None and cb is not None:
        raise tx.unsupported("both operands are constants (nothing computed at run time)")
    out = bool_output(tx, op) if name in BOOLEAN else tx.output(op)
    const = ca if ca is not None else cb
    if name in BOOLEAN and const is not None and const[0].scale >= 1.0:
        raise tx.unsupported("a constant of scale 1 or more (TFLite's comparison rescaling needs one below 1)")
    fused = o.FusedActivationFunction() if o is not None and hasattr(o, "FusedActivationFunction") else 0
    act = tx.act_range(op, out, fused)
    sa = tx.tensor(a).shape if ca is None else ca[0].shape
    sb = tx.tensor(b).shape if cb is None else cb[0].shape
    if len(sa) > RANK or len(sb) > RANK:
        raise tx.unsupported(f"broadcasting over more than {RANK} dimensions")
    if name == "ADD" and ca is None and cb is None and sa == sb:
        return tx.emit("add", op, [a, b], out, None, act)
    kind = KINDS[name]
    attrs = dict(op=kind, a_shape=sa, b_shape=sb, const=None, const_first=False)
    if ca is None and cb is None:
        if kind == "div_tflite":
            probe = Op(kind="binary", name="probe", inputs=(), output=out, attrs={**attrs, "act": NO_ACT})
            quantize_binary(probe, [tx.tensor(a), tx.tensor(b)], tx.tensor(out))
            _check_div(tx, probe.params)
        if kind.endswith("_raw"):
            tx.same_qparams(a, out, name)
            tx.same_qparams(b, out, name)
        return tx.emit("binary", op, [a, b], out, None, act, **attrs)
    (t, data), first = (ca, True) if ca is not None else (cb, False)
    x = b if first else a
    if kind.endswith("_raw"):
        tx.same_qparams(x, out, name)
        if (t.scale, t.zero_point) != (tx.tensor(out).scale, tx.tensor(out).zero_point):
            raise tx.unsupported(f"{name} of a constant quantized unlike the output")
    ins = [t, tx.tensor(x)] if first else [tx.tensor(x), t]
    probe = Op(kind="binary", name="probe", inputs=(), output=out, attrs={**attrs, "act": NO_ACT})
    quantize_binary(probe, ins, tx.tensor(out))          # the params of the file's two quantizations
    _check_div(tx, probe.params)
    params = {**probe.params, **act, "_const_first": first}
    real = ((data.astype(np.float64) - t.zero_point) * t.scale).astype(np.float32)
    if _as_tables(tx, op, x, out, t, data, first, params, kind):   # a fused activation is in the tables (params)
        return
    tx.emit("binary", op, [x], out, {"const": data}, params, **{**attrs, "const": real, "const_first": first})


TABLE_FNS = {("add", False): "add_c", ("add", True): "add_c", ("sub", False): "sub_c", ("sub", True): "rsub_c",
             ("mul", False): "mul_c", ("mul", True): "mul_c", ("max_raw", False): "max_c", ("max_raw", True): "max_c",
             ("min_raw", False): "min_c", ("min_raw", True): "min_c"}
MAX_TABLES = 64     # tables (256 bytes each) before a constant operand is kept for the broadcasting kernel


def _as_tables(tx, op, x: str, out: str, t, data: np.ndarray, first: bool, params: dict, kind: str) -> bool:
    """x (op) constant, where the output has x's shape and the constant varies along one run of axes at most
    (a Keras Rescaling's scalar MUL and ADD, a BatchNorm's per-channel ones): TFLite's own integer result of
    every int8 x and each constant value, as tables (edgec/ops/lut), bit for bit the broadcasting kernel's
    (binary_s8 computes them) at a table read an element."""
    fn, shape = TABLE_FNS.get((kind, first)), tx.tensor(x).shape
    if fn is None or tuple(tx.tensor(out).shape) != tuple(shape) or data.ndim > len(shape):
        return False
    cshape = (1,) * (len(shape) - data.ndim) + data.shape
    varying = [k for k in range(len(shape)) if cshape[k] > 1]
    lo, hi = (varying[0], varying[-1]) if varying else (0, -1)
    if any(cshape[k] not in (1, shape[k]) or (cshape[k] == 1 and shape[k] > 1) for k in range(lo, hi + 1)):
        return False                           # broadcast inside the run: not one table per index
    count = int(np.prod(shape[lo:hi + 1], dtype=np.int64)) if varying else 1
    if count > MAX_TABLES:
        return False
    values = data.reshape(cshape)[tuple(slice(None) if lo <= k <= hi else slice(0, 1)
                                        for k in range(len(shape)))].reshape(-1)
    one = {**params, "dims": [1] * (RANK - 1) + [256], "a_stride": [0] * (RANK - 1) + [1],
           "b_stride": [0] * RANK}
    xs = np.arange(-128, 128).astype(np.int8)
    if first:       # the constant is operand a: a broadcast, x the run
        one.update(a_stride=one["b_stride"], b_stride=one["a_stride"])
    tables = np.concatenate([binary_s8(one, *((np.full(1, v, np.int8), xs) if first else (xs, np.full(1, v, np.int8))))
                             for v in values])
    real = ((values.astype(np.float64) - t.zero_point) * t.scale).astype(np.float32)
    lut_tflite.emit_tables(tx, op, x, out, tables, fn, real, count,
                           int(np.prod(shape[hi + 1:], dtype=np.int64)) if varying else None)
    return True


def _check_div(tx, p: dict) -> None:
    """TFLite's DIV requantizes by output_shift - (its reciprocal's shift) - (the numerator's headroom, 23 or more):
    a right shift only while output_shift <= 23."""
    if p["op"] == BINARY_OPS["div_tflite"] and p["out_shift"] > 23:
        raise tx.unsupported("DIV whose output scale is below 2^-23 of the input scales' ratio (outside TFLite's "
                             "arithmetic)")


def _with_constant(tx, op, x: str, out: str, kind: str, value: int) -> None:
    """The binary kernel's `kind` of x and a one-value constant (scale 1, zero point 0)."""
    c = Tensor(name="constant", shape=(1,), source="", scale=1.0, zero_point=0)
    attrs = dict(op=kind, a_shape=tx.tensor(x).shape, b_shape=(1,), const=None, const_first=False)
    probe = Op(kind="binary", name="probe", inputs=(), output=out, attrs={**attrs, "act": NO_ACT})
    quantize_binary(probe, [tx.tensor(x), c], tx.tensor(out))
    tx.emit("binary", op, [x], out, {"const": np.full(1, value, np.int8)}, {**probe.params, "a_zp": 0,
            "_const_first": False}, **{**attrs, "const": np.full(1, value, np.float32)})


def import_tflite_logical_not(tx, op):
    """LOGICAL_NOT of a bool activation: NOT_EQUAL to a constant true (the binary kernel on bool bytes)."""
    _with_constant(tx, op, tx.input(op, 0, dtypes=("bool",)), bool_output(tx, op), "not_equal", 1)


def import_tflite_cast(tx, op):
    """CAST between bool and int8 (TFLite Micro converts the values, whatever the quantization): int8 -> bool is
    x != 0 (LOGICAL_OR with a constant false, of the raw bytes), bool -> int8 the 0 / 1 bytes (an int8 output
    without quantization: scale 1, zero point 0)."""
    x = tx.input(op, 0, dtypes=("int8", "bool"))
    t = tx.sg.Tensors(op.Outputs(0)).Type()
    to = {6: "bool", 9: "int8"}.get(t)
    if to is None or to == tx.tensor(x).dtype:
        raise tx.unsupported("CAST other than between bool and int8 (edgec's activations are int8)")
    q = tx.sg.Tensors(op.Outputs(0)).Quantization()
    out = tx.output(op) if to == "int8" and q is not None and q.ScaleLength() else bool_output(tx, op, to)
    _with_constant(tx, op, x, out, "logical_or", 0)


def import_tflite_fill(tx, op):
    """FILL of constant dims with a constant int8 value: evaluated here, its tensor a constant the operators after
    it read as one (an elementwise operator's constant operand); nothing runs on the device."""
    dims, value = tx.const(op, 0), tx.const(op, 1)
    if dims is None or value is None or dims.dtype.kind not in "iu" or value.dtype != np.int8 or value.size != 1:
        raise tx.unsupported("FILL needs constant dims and one constant int8 value")
    tx.static[op.Outputs(0)] = np.full([int(d) for d in dims.reshape(-1)], value.reshape(-1)[0], np.int8)


def import_tflite_broadcast_args(tx, op):
    """BROADCAST_ARGS of two constant (or folded) shapes: the broadcast shape, evaluated here as a constant (what a
    BROADCAST_TO after it reads)."""
    a, b = tx.const(op, 0), tx.const(op, 1)
    if a is None or b is None or a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        raise tx.unsupported("BROADCAST_ARGS needs two constant integer shapes")
    try:
        shape = np.broadcast_shapes(tuple(int(v) for v in a.reshape(-1)), tuple(int(v) for v in b.reshape(-1)))
    except ValueError:
        raise tx.unsupported(f"shapes {a.tolist()} and {b.tolist()} do not broadcast together") from None
    tx.static[op.Outputs(0)] = np.asarray(shape, a.dtype)


def import_tflite_shape(tx, op):
    """SHAPE is folded by the importer core (edgec/frontend/tflite_fold.py) wherever the file fixes the shape; it
    reaches here only when it cannot be."""
    raise tx.unsupported("SHAPE of a tensor whose shape is not static, or with a quantized output")


TFLITE = {name: import_tflite_binary for name in KINDS}
TFLITE.update(FILL=import_tflite_fill, BROADCAST_ARGS=import_tflite_broadcast_args, SHAPE=import_tflite_shape)
TFLITE["LOGICAL_NOT"] = import_tflite_logical_not
TFLITE["CAST"] = import_tflite_cast
