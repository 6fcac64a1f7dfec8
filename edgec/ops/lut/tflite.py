"""The TFLite import of more elementwise int8 functions as tables (edgec/ops/lut/__init__.py's `lut` kind): ABS,
LEAKY_RELU, PRELU (a constant alpha; one table per alpha along its axis), ELU, GELU and RSQRT, each table the output TFLite
Micro's int8 kernel computes for each of the 256 inputs (its own integer or float32 arithmetic, below)."""
from __future__ import annotations

import numpy as np

from edgec.fixedpoint.scheme import quantize_multiplier, requantize
from edgec.ops.lut.int16 import int16_or

OPS: list = []      # no kind of its own: tables of the package's `lut` kind
ONNX: dict = {}
MAX_TABLES = 256    # PRELU: tables (256 bytes each) before an alpha varying along too many values is refused
_X = np.arange(-128, 128, dtype=np.int64)


def _clip8(v) -> np.ndarray:
    return np.clip(v, -128, 127).astype(np.int8)


def abs_table(s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """TFLite Micro's AbsEvalQuantized: |x - zp| rescaled (a multiplier from the float32 scale ratio) unless the
    scales are equal."""
    v = np.abs(_X - zp_in)
    if np.float32(s_in) != np.float32(s_out):
        mult, shift = quantize_multiplier(float(np.float32(s_in) / np.float32(s_out)))
        v = requantize(v, mult, shift).astype(np.int64)
    return _clip8(v + zp_out)


def leaky_relu_table(s_in: float, zp_in: int, s_out: float, zp_out: int, alpha: float) -> np.ndarray:
    """TFLite Micro's QuantizeLeakyRelu: x - zp >= 0 rescaled by s_in / s_out, below by s_in * alpha / s_out (both
    products in float32, as its Prepare computes them)."""
    f = np.float32
    mi, si = quantize_multiplier(float(f(s_in) / f(s_out)))
    ma, sa = quantize_multiplier(abs(float(f(f(s_in) * f(alpha)) / f(s_out))))
    v = _X - zp_in
    neg = requantize(v, ma, sa).astype(np.int64) * (-1 if alpha < 0 else 1)
    return _clip8(zp_out + np.where(v >= 0, requantize(v, mi, si).astype(np.int64), neg))


def prelu_tables(s_in: float, zp_in: int, alpha_q: np.ndarray, s_a: float, zp_a: int, s_out: float,
                 zp_out: int) -> np.ndarray:
    """TFLite Micro's BroadcastPrelu4DSlow, one table per alpha value: x - zp >= 0 rescaled by s_in / s_out,
    below (x - zp) * (alpha - zp_a) by s_in * s_a / s_out (double)."""
    m1, s1 = quantize_multiplier(float(s_in) / float(s_out))
    m2, s2 = quantize_multiplier(float(s_in) * float(s_a) / float(s_out))
    v = _X.reshape(1, -1) - zp_in
    a = np.asarray(alpha_q, np.int64).reshape(-1, 1) - zp_a
    pos = np.broadcast_to(requantize(v, m1, s1).astype(np.int64), (a.shape[0], 256))
    neg = requantize(v * a, m2, s2).astype(np.int64)
    return _clip8(zp_out + np.where(v >= 0, pos, neg)).reshape(-1)


def elu_table(s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """TFLite Micro's int8 ELU (PopulateLookupTable): float32 dequantize, exp(x) - 1 below zero, TfLiteRound of
    the value over the output scale, plus the zero point."""
    f = np.float32
    x = f(s_in) * (_X - zp_in).astype(f)
    y = np.where(x < 0, np.exp(np.minimum(x, f(0))).astype(f) - f(1), x).astype(f)
    r = y * (f(1) / f(s_out))
    r = np.sign(r) * np.floor(np.abs(r) + f(0.5))
    return _clip8(r.astype(np.int64) + zp_out)


def gelu_table(s_in: float, zp_in: int, s_out: float, zp_out: int, approximate: bool) -> np.ndarray:
    """TF Lite's int8 GELU (gelu.cc PopulateLookupTable, LUTPopulate; TFLite Micro registers no GELU): float32
    dequantize, 0.5 x (1 + erf(x / sqrt 2)) or the tanh approximation, TfLiteRound of the value over the output
    scale, plus the zero point."""
    import math

    f = np.float32
    x = f(s_in) * (_X - zp_in).astype(f)
    if approximate:
        inner = (f(math.sqrt(2 / math.pi)) * (x + f(0.044715) * x * x * x)).astype(f)
        y = f(0.5) * x * (f(1) + np.tanh(inner).astype(f))
    else:
        erf = np.array([math.erf(float(v)) for v in (x * f(1 / math.sqrt(2))).astype(f)], f)
        y = f(0.5) * x * (f(1) + erf)
    r = y.astype(f) * (f(1) / f(s_out))
    r = np.sign(r) * np.floor(np.abs(r) + f(0.5))
    return _clip8(r.astype(np.int64) + zp_out)


def inv_sqrt_multiplier(v: int) -> tuple[int, int]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(v, reverse_shift -1): 1 / sqrt(v) as a Q31 multiplier and a
    left shift, by gemmlowp's Newton-Raphson iteration in Q3.28 (F3) fixed point."""
    from edgec.fixedpoint.gemmlowp import rdivpot, sat_shl, srdhm, wrap32

    if v <= 1:
        return (1 << 31) - 1, 0
    shift = 11
    while v >= 1 << 29:
        v //= 4
        shift += 1
    pairs = (32 - int(v).bit_length() - 1) // 2 - 1      # CountLeadingZeros(v) - 1, in bit pairs, less one
    shift -= pairs
    v <<= 2 * pairs
    half_input = int(rdivpot(v >> 1, 1))
    x = 1 << 28                                            # F3 one
    for _ in range(5):
        x3 = int(sat_shl(srdhm(srdhm(x, x), x), 6))          # Rescale<3>(x * x * x): F9 -> F3
        x = int(sat_shl(wrap32(srdhm((1 << 28) + (1 << 27), x) - srdhm(half_input, x3)), 3))
    x = int(srdhm(x, 1518500250))                          # times sqrt(2) / 2 (F0)
    if shift < 0:
        x, shift = int(wrap32(x << -shift)), 0
    return x, -shift


def rsqrt_table(s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """TFLite Micro's RsqrtEvalQuantized: 0 -> 127; else 1 / sqrt(x - zp) (inv_sqrt_multiplier, shifted 20 bits
    up), requantized by 1 / (sqrt(s_in) * s_out) (float32 product). Inputs below the zero point, which TFLite
    Micro refuses at run time, give 127 too."""
    f = np.float32
    mult, shift = quantize_multiplier(1.0 / float(f(np.sqrt(f(s_in))) * f(s_out)))
    out = []
    for v in (_X - zp_in).tolist():
        if v <= 0:
            out.append(127)
            continue
        m, e = inv_sqrt_multiplier(v)
        data = int(requantize(np.int64(1), m, e + 20))
        out.append(int(requantize(np.int64(data), mult, shift - 20)) + zp_out)
    return _clip8(np.asarray(out))


def emit_tables(tx, op, x: str, out: str, tables: np.ndarray, fn: str, consts=None, count: int = 1,
                inner: int | None = None) -> None:
    """out = tables[index along the run of axes][x] for another family's TFLite importer (a constant operand of an
    elementwise operator, edgec/ops/binary/tflite.py): `count` tables of 256 int8 entries, each for `inner`
    elements in a row; `fn` and `consts` the float function the tables stand for (FUNCTIONS)."""
    tx.emit("lut", op, [x], out, {"table": np.asarray(tables, np.int8).reshape(-1)}, fn=fn, fparams={}, consts=consts,
            count=count, inner=tx.tensor(x).size if inner is None else inner)


def _unary(tx, op):
    x, out = tx.input(op, 0), tx.output(op)
    return x, out, tx.tensor(x), tx.tensor(out)


def import_tflite_abs(tx, op):
    x, out, xt, t = _unary(tx, op)
    tx.emit("lut", op, [x], out, {"table": abs_table(xt.scale, xt.zero_point, t.scale, t.zero_point)}, fn="abs",
            fparams={}, consts=None, count=1, inner=xt.size)


def import_tflite_leaky_relu(tx, op):
    x, out, xt, t = _unary(tx, op)
    alpha = float(np.float32(tx.options(op).Alpha()))
    try:
        table = leaky_relu_table(xt.scale, xt.zero_point, t.scale, t.zero_point, alpha)
    except ValueError as exc:
        raise tx.unsupported(str(exc)) from None
    tx.emit("lut", op, [x], out, {"table": table}, fn="leaky_relu", fparams={"alpha": alpha}, consts=None, count=1,
            inner=xt.size)


def import_tflite_elu(tx, op):
    x, out, xt, t = _unary(tx, op)
    tx.emit("lut", op, [x], out, {"table": elu_table(xt.scale, xt.zero_point, t.scale, t.zero_point)}, fn="elu",
            fparams={"alpha": 1.0}, consts=None, count=1, inner=xt.size)


def import_tflite_gelu(tx, op):
    x, out, xt, t = _unary(tx, op)
    approximate = bool(tx.options(op).Approximate()) if op.BuiltinOptionsType() else False
    tx.emit("lut", op, [x], out, {"table": gelu_table(xt.scale, xt.zero_point, t.scale, t.zero_point, approximate)},
            fn="gelu", fparams={"approximate": "tanh" if approximate else "none"}, consts=None, count=1,
            inner=xt.size)


def import_tflite_prelu(tx, op):
    """PRELU with a constant int8 alpha broadcast to the input (a Keras PReLU: per channel, or shared over the
    image): one table per alpha value along the run of axes it varies over; an int16 input (16x8): binary/int16.py."""
    i = op.Inputs(0)
    if i in tx.values and tx.tensor(tx.values[i]).dtype == "int16":
        from edgec.ops.binary.int16 import import_prelu16

        return import_prelu16(tx, op)
    x, out, xt, t = _unary(tx, op)
    alpha = tx.const(op, 1)
    if alpha is None or alpha.dtype != np.int8:
        raise tx.unsupported("alpha (input 1) must be a constant int8 tensor")
    s_a, zp_a, _ = tx.qparams(op.Inputs(1))
    if s_a.size != 1:
        raise tx.unsupported("alpha has a scale per channel (TFLite's kernel takes one)")
    shape = xt.shape
    try:
        full = np.broadcast_to(alpha.reshape((1,) * (len(shape) - alpha.ndim) + alpha.shape), shape)
    except ValueError:
        raise tx.unsupported(f"alpha of shape {list(alpha.shape)} does not broadcast to {list(shape)}") from None
    varying = [k for k in range(len(shape)) if alpha.ndim > len(shape) - 1 - k >= 0 and
               alpha.shape[k - (len(shape) - alpha.ndim)] > 1 and shape[k] > 1]
    lo, hi = (varying[0], varying[-1]) if varying else (0, -1)
    count = int(np.prod(shape[lo:hi + 1], dtype=np.int64)) if varying else 1
    if count > MAX_TABLES:
        raise tx.unsupported(f"alpha varies over {count} values (edgec makes at most {MAX_TABLES} tables)")
    inner = int(np.prod(shape[hi + 1:], dtype=np.int64)) if varying else xt.size
    values = full[tuple(slice(None) if lo <= k <= hi else slice(0, 1) for k in range(len(shape)))].reshape(-1)
    tables = prelu_tables(xt.scale, xt.zero_point, values, float(s_a[0]), int(zp_a[0]), t.scale, t.zero_point)
    real = ((values.astype(np.float64) - int(zp_a[0])) * float(s_a[0])).astype(np.float32)
    tx.emit("lut", op, [x], out, {"table": tables}, fn="prelu", fparams={}, consts=real, count=count, inner=inner)


def import_tflite_rsqrt(tx, op):
    x, out, xt, t = _unary(tx, op)
    try:
        table = rsqrt_table(xt.scale, xt.zero_point, t.scale, t.zero_point)
    except ValueError as exc:
        raise tx.unsupported(str(exc)) from None
    tx.emit("lut", op, [x], out, {"table": table}, fn="rsqrt", fparams={}, consts=None, count=1, inner=xt.size)


TFLITE = {"RSQRT": import_tflite_rsqrt, "ABS": int16_or(import_tflite_abs), "LEAKY_RELU": int16_or(import_tflite_leaky_relu), "ELU": import_tflite_elu,
          "PRELU": import_tflite_prelu, "GELU": import_tflite_gelu}
