"""The TFLite INT8 quantization scheme, as arithmetic: what every operator's quantizer and NumPy twin uses.

Activations: asymmetric int8 (scale, zero point) per tensor, or symmetric int16 for 16x8 layers.
Weights: symmetric int8 per output channel. Bias: int32 at scale input_scale * weight_scale[c].
Requantization: a Q31 multiplier and a power-of-two shift (TFLite's QuantizeMultiplier and
MultiplyByQuantizedMultiplier, double rounding).
"""
from __future__ import annotations

import math

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import DTYPES, Op, Tensor

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


class MultiplierRangeError(ValueError):
    """A real multiplier outside what a Q31 multiplier and a shift <= 30 can express."""


def qparams_from_range(lo: float, hi: float) -> tuple[float, int]:
    """Scale and zero point covering [lo, hi] (widened to include 0) with int8."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-12:
        return 1.0, -128 if lo == 0.0 else 0
    scale = (hi - lo) / 255.0
    zp = int(np.clip(round(-128 - lo / scale), -128, 127))
    return scale, zp


def qparams16(lo: float, hi: float) -> tuple[float, int]:
    """Symmetric int16 scale (zero point 0) covering [lo, hi]."""
    m = max(abs(float(lo)), abs(float(hi)))
    return (m / 32767.0, 0) if m >= 1e-12 else (1.0, 0)


def quantize_input(t: Tensor, x: np.ndarray) -> np.ndarray:
    """Float input data -> int8 (int16 for an int16 tensor) with the tensor's quantization (as the host sends it).

    The one rule, which the generated C's NAME_quantize_input() follows bit for bit (runtime_c/edgec_nn.h,
    edgec_quantize_f32) for float32 data (data files are loaded as float32): q = clip(round_half_to_even(x /
    float32(scale)) + zero_point), one float32 division (NumPy keeps a float32 array's type against a Python float
    scale, which it rounds to float32) and NumPy's round, half to even."""
    if t.dtype == "bool":      # a comparison's mask (edgec/ops/where.py): the values' truth, one byte
        return np.asarray(x) != 0
    info = np.iinfo(DTYPES[t.dtype])
    return np.clip(np.round(x / t.scale) + t.zero_point, info.min, info.max).astype(DTYPES[t.dtype])


def dequantize(t: Tensor, q: np.ndarray) -> np.ndarray:
    """Integer output -> float32: (float32(q) - zero_point) * float32(scale), as NAME_dequantize_output() in C."""
    return (q.astype(np.float32) - t.zero_point) * np.float32(t.scale)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real ~= mult * 2**(shift - 31), mult in [2**30, 2**31)."""
    if real == 0.0:
        return 0, 0
    if not math.isfinite(real):
        raise MultiplierRangeError(f"multiplier {real} is not finite")
    q, e = math.frexp(real)
    v = q * float(1 << 31)  # exact (power-of-two scaling)
    q_fixed = int(math.copysign(math.floor(abs(v) + 0.5), v))  # std::round: half away from zero
    if q_fixed == (1 << 31):
        q_fixed //= 2
        e += 1
    if e < -31:
        return 0, 0
    if e > 30:
        raise MultiplierRangeError(f"multiplier {real:.6g} is too large for a Q31 multiplier with shift <= 30")
    return q_fixed, e


ONE_ROUNDING_RIGHT = 10   # (a right shift of more than 10 bits: the second rounding moves less than 2^-11 of a level)


def quantize_multiplier_one_rounding(real: float) -> tuple[int, int]:
    """(mult, shift) for the same MultiplyByQuantizedMultiplier with one rounding instead of two where that is
    closer: a real in [2^-10, 1) as mult = round(real * 2^31) with shift 0 (a Q31 multiplier below 2^30, at least
    2^21, so the product is rounded once, with no rounding right shift after it). TFLite's normalized form rounds
    the product to 31 - r fractional bits and then shifts right by r bits with a second rounding: for a right shift
    of a few bits (a mean of 64 values, scale ratio 0.077: r = 3) that lands one level above the exact value for
    fractions in [1/2 - 2^-(r+1), 1/2) (6 % of a uniform spread at r = 3), where ONNX Runtime's float requantization
    rounds down. Otherwise quantize_multiplier's. Used for a QDQ file's ops (op.attrs['one_rounding'],
    edgec/quant/quantize.py), whose reference is ONNX Runtime's float requantization."""
    mult, shift = quantize_multiplier(real)
    if -ONE_ROUNDING_RIGHT <= shift < 0 and real > 0:
        return int(math.floor(real * float(1 << 31) + 0.5)), 0
    return mult, shift


def requantize(acc, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier (double rounding); mult/shift broadcast over the last axis."""
    x = np.asarray(acc, dtype=np.int64)
    m = np.asarray(mult, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    x = (x << left).astype(np.int32).astype(np.int64)  # int32 wrap, as the C cast
    ab = x * m
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    hi = np.where(t >= 0, t >> 31, -((-t) >> 31))  # C division: truncation toward zero
    hi = np.where((x == INT32_MIN) & (m == INT32_MIN), INT32_MAX, hi)
    mask = (np.int64(1) << right) - 1
    threshold = (mask >> 1) + (hi < 0)
    out = (hi >> right) + ((hi & mask) > threshold)
    return out.astype(np.int32)


def finish(acc, mult, shift, p) -> np.ndarray:
    """Requantize an int32 accumulator, add the output zero point and clamp to the int8 activation range."""
    out = requantize(acc, mult, shift).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def requantize64(acc, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier(int64 x, int32 mult, int shift), shift in [-31, 7] (16x8 layers)."""
    x = np.asarray(acc, np.int64)
    m = np.asarray(mult, np.int64)
    s = np.asarray(shift, np.int64)
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - s
    r = (x * reduced + (np.int64(1) << (total - 1))) >> total        # floor shift, as the C
    return (r + (1 << 31)) % (1 << 32) - (1 << 31)    # its int32 result, wrapped as TFLite's and the C's cast


def finish16(acc, mult, shift, p) -> np.ndarray:
    out = requantize64(acc, mult, shift)
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int16)


def finish16_b32(acc, mult, shift, p) -> np.ndarray:
    """A 16x8 layer with an int32 bias (TFLite's AccumScalar int32): the sum wrapped to int32, the 32-bit
    requantization."""
    acc = (np.asarray(acc, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)
    return np.clip(requantize(acc, mult, shift), int(p["act_min"]), int(p["act_max"])).astype(np.int16)


def act_range(op: Op, out: Tensor) -> dict:
    """The int8 clamp of an op's fused activation (op.attrs['act'] = (lo, hi) in float)."""
    lo, hi = op.attrs.get("act", (-math.inf, math.inf))
    qmin = -128 if lo == -math.inf else max(-128, out.zero_point + int(round(lo / out.scale)))
    qmax = 127 if hi == math.inf else min(127, out.zero_point + int(round(hi / out.scale)))
    return {"act_min": qmin, "act_max": max(qmin, qmax)}


def act_range16(op: Op, out: Tensor) -> dict:
    """The int16 clamp of an op's fused activation (zero point 0)."""
    lo, hi = op.attrs.get("act", (-math.inf, math.inf))
    qmin = -32768 if lo == -math.inf else max(-32768, int(round(lo / out.scale)))
    qmax = 32767 if hi == math.inf else min(32767, int(round(hi / out.scale)))
    return {"act_min": qmin, "act_max": max(qmin, qmax)}


def quantize_weights(w: np.ndarray, channel_axis: int, per_channel: bool = True,
                     qmax: int = 127) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights in [-qmax, qmax] and their scale for every output channel (one shared scale if
    not per_channel); qmax 7 for int4 weights."""
    w = np.asarray(w, np.float64)
    axes = tuple(a for a in range(w.ndim) if a != channel_axis % w.ndim)
    wmax = np.max(np.abs(w), axis=axes)
    if not per_channel:
        wmax = np.full_like(wmax, np.max(wmax))
    w_scale = np.where(wmax > 0, wmax / float(qmax), 1.0)
    shape = [1] * w.ndim
    shape[channel_axis] = -1
    return np.clip(np.round(w / w_scale.reshape(shape)), -qmax, qmax).astype(np.int8), w_scale


def weighted(op: Op, inp: Tensor, out: Tensor, channel_axis: int) -> None:
    """op.arrays weights (int8), bias (int32), mult and shift (per output channel) of a weighted op.
    An op with attrs['weight_bits'] 4 gets int4 weights instead: in [-7, 7], packed two per byte
    (op.arrays['weights4'], pack_int4); a QDQ file's 4-bit weights (attrs['file_weight_bits'] 4) keep the file's
    integers in [-8, 7] and scales.  A .tflite's op keeps the file's integers (edgec/frontend/tflite.py):
    nothing is derived from its float weights (a copy 8x their size)."""
    if op.attrs.get("tflite") and "weights" in op.arrays and "mult" in op.arrays:
        return
    if not np.all(np.isfinite(op.attrs["weights"])):
        raise EdgecError(f"node '{op.name}': weights contain NaN or Inf")
    four = op.attrs.get("weight_bits", 8) == 4 and out.dtype == "int8"     # (a 16x8 layer: int8 weights)
    own = "weight_scale" in op.attrs and (not four or op.attrs.get("file_weight_bits") == 4)
    if own:      # a QDQ model's own weight scales (edgec/frontend/qdq.py), its int8 or 4-bit integers
        w_scale = np.asarray(op.attrs["weight_scale"], np.float64)
        shape = [1] * op.attrs["weights"].ndim
        shape[channel_axis] = -1
        wq = np.clip(np.round(op.attrs["weights"] / w_scale.reshape(shape)), -128, 127).astype(np.int8)
        four = four and wq.min() >= -8 and wq.max() <= 7     # (a BatchNorm's sign flip of a -8: int8, still exact)
    elif four:        # (a QDQ model's int8 weight scales do not apply to 4-bit weights)
        wq, w_scale = quantize_weights(op.attrs["weights"], channel_axis, op.attrs.get("per_channel", True), 7)
    else:
        wq, w_scale = quantize_weights(op.attrs["weights"], channel_axis, op.attrs.get("per_channel", True))
    bias_scale = inp.scale * w_scale
    one = op.attrs.get("one_rounding") and inp.dtype == out.dtype == "int8"    # (16x8: TFLite's Q15 multiplier)
    mult, shift = zip(*((quantize_multiplier_one_rounding if one else quantize_multiplier)(s / out.scale)
                        for s in bias_scale))
    bq = accumulator_safe_bias(wq, channel_axis, op.attrs["bias"].astype(np.float64) / bias_scale, mult)
    op.arrays.update(weights=wq, bias=bq, mult=np.array(mult, np.int32), shift=np.array(shift, np.int32))
    op.arrays.pop("weights4", None)
    if four:
        op.arrays["weights4"] = pack_int4(op.arrays.pop("weights"))


def pack_int4(w: np.ndarray) -> np.ndarray:
    """int4 values (in [-8, 7], any shape) packed two per byte in their flattened order, TFLite's
    PackInt4ValuesDensely layout: value 2i in the low nibble of byte i, value 2i+1 in the high one (an
    odd count leaves the last high nibble 0)."""
    v = np.asarray(w, np.int64).reshape(-1)
    if v.size % 2:
        v = np.append(v, 0)
    nib = (v & 0xF).astype(np.uint8)
    return (nib[0::2] | (nib[1::2] << 4)).view(np.int8)


def unpack_int4(packed: np.ndarray, count: int) -> np.ndarray:
    """The first `count` int4 values of pack_int4's bytes, as int8 (sign-extended nibbles)."""
    b = np.asarray(packed, np.int8).view(np.uint8).reshape(-1)
    nib = np.stack([b & 0xF, b >> 4], axis=1).reshape(-1)[:count].astype(np.int16)
    return ((nib ^ 8) - 8).astype(np.int8)


def accumulator_safe_bias(wq: np.ndarray, channel_axis: int, bias: np.ndarray, mult) -> np.ndarray:
    """The int32 bias of a weighted op, such that `acc += bias` can never overflow the int32 accumulator
    (undefined behaviour in C): |sum((x - zp) * w)| <= 255 * sum|w| per channel, so the bias is clamped to
    what is left of the int32 range (it only ever differs from round(bias) when the quantizer would have
    saturated it anyway). A channel whose multiplier is 0 outputs its zero point whatever it accumulates:
    its bias is 0 (as the fast kernels'). A channel so deep that its products alone could overflow (tens of
    thousands of taps) keeps the plain saturated bias and gets numerics.py's warning instead."""
    axes = tuple(a for a in range(wq.ndim) if a != channel_axis % wq.ndim)
    reach = 255 * np.abs(wq.astype(np.int64)).sum(axis=axes)
    room = np.where(reach < 2**31 - 1, (2**31 - 1) - reach, 2**31 - 1)
    bq = np.clip(np.nan_to_num(np.round(bias)), -room, room)
    return np.where(np.asarray(mult) == 0, 0, bq).astype(np.int32)


BIAS16_LIMIT = (1 << 40) - 1
MAX_SHIFT16 = 7               # edgec_requantize64 takes shifts -31..7


def weighted16(op: Op, ins: list[Tensor], out: Tensor, channel_axis: int) -> None:
    """Turn an int8 weighted op's parameters into TFLite 16x8 ones: int64 bias, zero points 0, int16 clamp."""
    _, w_scale = quantize_weights(op.attrs["weights"], channel_axis, op.attrs.get("per_channel", True))
    w_scale = np.asarray(op.attrs.get("weight_scale", w_scale), np.float64)   # a QDQ file's own (weighted's)
    bias = np.round(op.attrs["bias"].astype(np.float64) / (ins[0].scale * w_scale))
    op.arrays["bias"] = np.clip(bias, -BIAS16_LIMIT, BIAS16_LIMIT).astype(np.int64)
    shift = np.asarray(op.arrays["shift"])
    if np.any(shift > MAX_SHIFT16):
        raise EdgecError(f"node '{op.name}': its int16 output range is too narrow for its inputs "
                         f"(requantization shift {int(shift.max())} > {MAX_SHIFT16}); run it in int8")
    op.params.update(input_zp=0, output_zp=0, **act_range16(op, out))


def requant_table(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The 256-entry int8 table taking a value from one quantization to another (entry q + 128)."""
    x = (np.arange(-128, 128, dtype=np.float64) - in_zp) * in_scale
    y = np.nan_to_num(x, nan=0.0, posinf=1e30, neginf=-1e30)
    return np.clip(np.round(y / out_scale) + out_zp, -128, 127).astype(np.int8)
