"""`softmax` and `log_softmax` over the last axis of [rows][cols] (the reduced axes brought innermost by a layout
change when they are not), with a build-time exp table: edgec's LUT softmax, output fixed at scale 1/256 and zero
point -128 like TFLite's; kernels in runtime_c/edgec_softmax.c. A constant attention mask before a Softmax is
folded into a `masked_softmax` (masked.py); the exp table is table.py's.

The int16 variant (`--int16 NODE` on a Softmax, edgec/quant/int16.py): int16 scores (symmetric) in, probabilities
out in Q0.15 (scale 1/32768, zero point 0). The exp of the difference d = max - x (0..65535) is the product of two
build-time Q15 tables, exp_hi[d >> 8] * exp_lo[d & 255] (exp(-(256 h + l) s) = exp(-256 h s) exp(-l s)), the row's
sum S of those Q15 exps (>= 2^15: the max's is 2^15) one reciprocal floor(2^46 / S) per row, each output
(e * recip + 2^30) >> 31, at most 32767.
"""
from __future__ import annotations

import math
import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.softmax import axes, log_softmax16, masked
from edgec.ops.softmax.table import softmax_table
from edgec.fixedpoint import gemmlowp
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.fixedpoint.scheme import quantize_multiplier, requantize


SCALED_DIFF_BITS = 5     # TFLite softmax: integer bits of the rescaled input difference (Q5.26)
ACCUM_BITS = 12          # and of the sum of exps (Q12.19)
LOG_Q = 16
LN2_Q16 = 45426  # round(ln 2 * 2**16)


# ---- quantize ---------------------------------------------------------------------------------
def log2_table() -> np.ndarray:
    """log2(1 + (i + 0.5) / 256) in Q16 for the 8 mantissa bits after the leading one."""
    return np.round(np.log2(1 + (np.arange(256) + 0.5) / 256) * (1 << LOG_Q)).astype(np.int32)


def quantize_softmax(op: Op, ins: list[Tensor], out: Tensor) -> None:
    op.params.update(rows=op.attrs["rows"], cols=op.attrs["cols"])
    if op.attrs.get("arithmetic") == "tflite16":     # TFLite's int16 SoftmaxInt16: the importer's params and tables
        return
    if op.attrs.get("arithmetic") == "tflite":       # a .tflite model's softmax: TFLite's own fixed-point one
        mult, shift, diff_min = tflite_softmax_scaling(ins[0].scale, op.attrs.get("beta", 1.0))
        op.params["diff_min"] = diff_min
        op.arrays["exp_table"] = tflite_exp_table(mult, shift, diff_min)
        return
    op.arrays["exp_table"] = np.asarray(softmax_table(ins[0].scale), np.uint32)


def tflite_softmax_scaling(input_scale: float, beta: float) -> tuple[int, int, int]:
    """TFLite's PreprocessSoftmaxScaling and CalculateInputRadius (5 integer bits of the scaled difference)."""
    real = min(float(beta) * float(input_scale) * (1 << (31 - SCALED_DIFF_BITS)), (1 << 31) - 1.0)
    mult, shift = quantize_multiplier(real)
    if shift < 0:
        raise EdgecError(f"softmax input scale {input_scale} x beta {beta} is too small for TFLite's softmax")
    radius = math.floor(((1 << SCALED_DIFF_BITS) - 1) * (1 << (31 - SCALED_DIFF_BITS)) / (1 << shift))
    return mult, shift, -radius


def tflite_exp_table(mult: int, shift: int, diff_min: int) -> np.ndarray:
    """TFLite's exp of every int8 difference from the row's max, d = 0..255 (x = max - d), in Q0.31: what
    reference_ops::Softmax computes per element (the rescale into Q5.26, gemmlowp's exp_on_negative_values),
    done at build time; 0 where -d < diff_min (TFLite skips those)."""
    diff = -np.arange(256, dtype=np.int64)
    used = diff >= diff_min
    e = gemmlowp.exp_on_negative_values(gemmlowp.srdhm(np.where(used, diff, 0) << shift, mult), SCALED_DIFF_BITS)
    return np.where(used, e, 0).astype(np.int32)


def exp16_tables(input_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(exp_hi, exp_lo): round(exp(-256 h s) * 2^15) and round(exp(-l s) * 2^15), h, l = 0..255, as uint16."""
    k = np.arange(256, dtype=np.float64)
    hi = np.round(np.exp(-256.0 * k * float(input_scale)) * 32768.0)
    lo = np.round(np.exp(-k * float(input_scale)) * 32768.0)
    return hi.astype(np.uint16), lo.astype(np.uint16)


def quantize_softmax16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The int16 variant: tables from the int16 input's scale; the output is Q0.15 (Int16.fixed_qparams)."""
    if op.attrs.get("arithmetic") == "tflite16":     # a .tflite's 16x8 softmax: the importer's params and tables
        return
    if int(op.attrs["cols"]) > 1 << 16:     # the row's sum of Q15 exps stays within 32 bits
        raise EdgecError(f"node '{op.name}': an int16 softmax over {op.attrs['cols']} values (at most 65536)")
    op.params.clear()
    op.params.update(rows=op.attrs["rows"], cols=op.attrs["cols"])
    op.arrays.pop("exp_table", None)
    op.arrays["exp_hi"], op.arrays["exp_lo"] = exp16_tables(ins[0].scale)


def tflite_log_softmax_tables(input_scale: float) -> tuple[dict, np.ndarray, np.ndarray]:
    """TFLite Micro's LOG_SOFTMAX Prepare (PreprocessLogSoftmaxScalingExp, beta 1, CalculateInputRadius) as the
    params, and per difference d = 0..255 from the row's max its rescaled value in Q5.26 and its exp rescaled
    into the Q12.19 sum (0 below diff_min)."""
    mult, shift, diff_min = tflite_softmax_scaling(input_scale, 1.0)
    rev_mult, rev_shift = quantize_multiplier((1 << (31 - shift)) / float(mult))
    diff = -np.arange(256, dtype=np.int64)
    q5 = requantize(diff, mult, shift).astype(np.int64)
    e = gemmlowp.rdivpot(gemmlowp.exp_on_negative_values(q5, SCALED_DIFF_BITS), ACCUM_BITS)
    params = dict(diff_min=int(diff_min), rev_mult=int(rev_mult), rev_shift=int(rev_shift))
    return params, q5.astype(np.int32), np.where(diff >= diff_min, e, 0).astype(np.int32)


def quantize_log_softmax(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    if a.get("arithmetic") == "tflite":
        params, op.arrays["q5_table"], op.arrays["exp_table"] = tflite_log_softmax_tables(x.scale)
        op.params.update(rows=a["rows"], cols=a["cols"], **params)
        return
    k_in, k_ln = round(x.scale / out.scale * 65536), round(65536 / out.scale)
    if max(abs(k_in), k_ln) >= 2 ** 31:
        raise EdgecError(f"node '{op.name}': LogSoftmax output range too narrow for int8 (scale {out.scale})")
    op.params.update(rows=a["rows"], cols=a["cols"], k_in=int(k_in), k_ln=int(k_ln), output_zp=out.zero_point)
    op.arrays["exp_table"] = np.asarray(softmax_table(x.scale), np.uint32)
    op.arrays["log_table"] = log2_table()


# ---- NumPy integer twins ------------------------------------------------------------------------
def softmax_s8(x, exp_table) -> np.ndarray:
    """edgec LUT softmax over the last axis (not TFLite's); output scale 1/256, zero point -128."""
    x = np.asarray(x, np.int8)
    x2 = x.reshape(-1, x.shape[-1]).astype(np.int64)
    e = np.asarray(exp_table, np.uint64)[x2.max(axis=1, keepdims=True) - x2]
    s = e.sum(axis=1, keepdims=True, dtype=np.uint64)
    q = (e * np.uint64(512) + s) // (np.uint64(2) * s)
    out = q.astype(np.int64) - 128
    return np.clip(out, -128, 127).astype(np.int8).reshape(x.shape)


def softmax_s16(x, exp_hi, exp_lo) -> np.ndarray:
    """The int16 softmax over the last axis: int16 in, Q0.15 out (see the module's docstring)."""
    x = np.asarray(x, np.int16)
    x2 = x.reshape(-1, x.shape[-1]).astype(np.int64)
    d = x2.max(axis=1, keepdims=True) - x2
    e = (np.asarray(exp_hi, np.int64)[d >> 8] * np.asarray(exp_lo, np.int64)[d & 255] + (1 << 14)) >> 15
    recip = (np.int64(1) << 46) // e.sum(axis=1, keepdims=True)
    y = (e * recip + (1 << 30)) >> 31
    return np.minimum(y, 32767).astype(np.int16).reshape(x.shape)


def softmax_tflite_s8(p: dict, exp_table, x, out_bits: int = 8) -> np.ndarray:
    """TFLite reference_ops::Softmax (int8 -> int8, as TFLM runs it): gemmlowp's fixed-point exp of the
    rescaled difference from the row's max (exp_table, tflite_exp_table), a Q12 sum, its reciprocal by
    Newton-Raphson, output scale 1/256; out_bits=16: Softmax<int8_t, int16_t> (output scale 1/65536, zero point
    -32768), the same arithmetic rounded to 16 bits."""
    x = np.asarray(x, np.int8).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64)
    diff = x - x.max(axis=1, keepdims=True)
    used = diff >= int(p["diff_min"])
    e = np.asarray(exp_table, np.int64)[-diff]                                 # Q0.31
    total = np.where(used, gemmlowp.rdivpot(e, ACCUM_BITS), 0).sum(axis=1, keepdims=True)
    total = gemmlowp.wrap32(total)
    headroom = 32 - np.frexp(np.maximum(total, 1).astype(np.float64))[1].astype(np.int64)   # leading zeros
    bits_over_unit = ACCUM_BITS - headroom
    shifted = gemmlowp.wrap32((total << headroom) - (1 << 31))
    recip = gemmlowp.one_over_one_plus_x(shifted)
    low, high = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    out = gemmlowp.rdivpot(gemmlowp.srdhm(recip, e), bits_over_unit + 31 - out_bits) + low
    return np.where(used, np.clip(out, low, high), low).astype(np.int16 if out_bits == 16 else np.int8).reshape(-1)


def _round_div_pot(v, bits):
    """Round half away from zero of v / 2**bits (int64)."""
    half = np.int64(1) << (bits - 1)
    return np.where(v >= 0, (v + half) >> bits, -((-v + half) >> bits))


def log_softmax_s8(p: dict, exp_table, log_table, x) -> np.ndarray:
    """y = (x - max) * s_in - ln(sum exp) over the last axis; exp_table as softmax's (Q24),
    ln from an integer log2 (leading bit + 8 mantissa bits through log_table)."""
    x = np.asarray(x, np.int8).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64)
    m = x.max(axis=1, keepdims=True)
    s = np.asarray(exp_table, np.int64)[m - x].sum(axis=1, keepdims=True)   # >= 2**24
    e = np.floor(np.log2(s.astype(np.float64))).astype(np.int64)
    e = np.where((np.int64(1) << (e + 1)) <= s, e + 1, np.where((np.int64(1) << e) > s, e - 1, e))
    idx = (s >> (e - 8)) - 256
    l2 = (e - 24) * (1 << LOG_Q) + np.asarray(log_table, np.int64)[idx]
    ln = (l2 * LN2_Q16) >> LOG_Q                                             # ln(sum) in Q16, >= 0
    y16 = (x - m) * int(p["k_in"]) - ((ln * int(p["k_ln"])) >> LOG_Q)      # y / s_out in Q16
    out = _round_div_pot(y16, LOG_Q) + int(p["output_zp"])
    return np.clip(out, -128, 127).astype(np.int8).reshape(-1)


def log_softmax_tflite_s8(p: dict, q5_table, exp_table, x) -> np.ndarray:
    """TFLite's LogSoftmaxQuantized (int8, output 16/256 with zero point 127): the Q12.19 sum of the rescaled exps
    of the differences from the row's max, its log in Q5.26 (gemmlowp.log_x_ge_1), each difference minus that
    log shifted down to the output; differences at or below the adjusted diff_min give -128."""
    x = np.asarray(x, np.int8).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64)
    d = x.max(axis=1, keepdims=True) - x
    total = gemmlowp.wrap32(np.asarray(exp_table, np.int64)[d].sum(axis=1, keepdims=True))
    log_sum = gemmlowp.log_x_ge_1(total, ACCUM_BITS, SCALED_DIFF_BITS)
    floor = requantize(gemmlowp.wrap32(log_sum + gemmlowp.I32_MIN), p["rev_mult"], p["rev_shift"]).astype(np.int64)
    adjusted = np.maximum(int(p["diff_min"]) - 1, floor)
    out = gemmlowp.rdivpot(gemmlowp.wrap32(np.asarray(q5_table, np.int64)[d] - log_sum), 31 - SCALED_DIFF_BITS - 4)
    return np.where(-d > adjusted, np.clip(out + 127, -128, 127), -128).astype(np.int8).reshape(-1)


def run_log_softmax_tflite(op: Op, inputs: list) -> np.ndarray:
    return log_softmax_tflite_s8(op.params, op.arrays["q5_table"], op.arrays["exp_table"], inputs[0])


def run_softmax(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return softmax_s8(inputs[0].reshape(p["rows"], p["cols"]), op.arrays["exp_table"])


def run_softmax_tflite(op: Op, inputs: list) -> np.ndarray:
    return softmax_tflite_s8(op.params, op.arrays["exp_table"], inputs[0])


def run_softmax_tflite_s16(op: Op, inputs: list) -> np.ndarray:
    return softmax_tflite_s8(op.params, op.arrays["exp_table"], inputs[0], out_bits=16)


def run_softmax16(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return softmax_s16(np.asarray(inputs[0]).reshape(p["rows"], p["cols"]), op.arrays["exp_hi"], op.arrays["exp_lo"])


def run_log_softmax(op: Op, inputs: list) -> np.ndarray:
    return log_softmax_s8(op.params, op.arrays["exp_table"], op.arrays["log_table"], inputs[0])


# ---- float --------------------------------------------------------------------------------------
def _float(op: Op, x, log: bool):
    x = x.reshape(op.attrs["rows"], op.attrs["cols"])
    z = x - x.max(axis=1, keepdims=True)
    ls = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return ls if log else np.exp(ls)


# ---- C ------------------------------------------------------------------------------------------
def c_softmax(op: Op, low, site: CallSite) -> str:
    p = op.params
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.arrays['exp_table']}, {site.output});"
    return cemit.with_params("edgec_softmax_params", p, call, only_fields=True)


def c_softmax_tflite(op: Op, low, site: CallSite) -> str:
    return cemit.with_params("edgec_softmax_tflite_params", op.params, f"{low.kernel.name}(&p, "
                             f"{site.inputs[0]}, {site.arrays['exp_table']}, {site.output});")


def c_softmax_tflite_s16(op: Op, low, site: CallSite) -> str:
    return cemit.with_params("edgec_softmax_tflite_params", op.params, f"{low.kernel.name}(&p, "
                             f"{site.inputs[0]}, {site.arrays['exp_table']}, {cemit.i16(site.output)});")


def c_softmax16(op: Op, low, site: CallSite) -> str:
    p, a = op.params, site.arrays
    call = (f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {a['exp_hi']}, {a['exp_lo']},\n"
            f"        {cemit.i16(site.output)});")
    return cemit.with_params("edgec_softmax_params", p, call, only_fields=True)


def c_log_softmax(op: Op, low, site: CallSite) -> str:
    n = site.arrays
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {n['exp_table']}, {n['log_table']}, {site.output});"
    return cemit.with_params("edgec_log_softmax_params", op.params, call)


def c_log_softmax_tflite(op: Op, low, site: CallSite) -> str:
    n = site.arrays
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {n['q5_table']}, {n['exp_table']}, {site.output});"
    return cemit.with_params("edgec_log_softmax_tflite_params", op.params, call)


def _tflite_log(op: Op) -> bool:
    """A log_softmax with TFLite's arithmetic (`arithmetic="tflite"`, its importer's choice)."""
    return "rev_mult" in op.params


def _tflite(op: Op) -> bool:
    """A softmax with TFLite's arithmetic (`arithmetic="tflite"`, its importer's choice)."""
    return "diff_min" in op.params


def _tflite16(op: Op) -> bool:
    """A softmax with TFLite's int16 arithmetic (`arithmetic="tflite16"`: SoftmaxInt16)."""
    return "input_mult" in op.params


# ---- TFLite's int16 softmax (reference_ops::SoftmaxInt16, TFLite Micro's softmax_common.cc Prepare) -------------
def lut16(fn, input_scale, input_zp: int, output_scale) -> np.ndarray:
    """TFLite's LUTPopulate<int16_t> (float32 arithmetic, in its order): 513 samples of fn over the int16 input
    range, each less half its midpoint's interpolation error."""
    f = np.float32

    def round_half_away(v):       # TfLiteRound of float32 values (std::round), exact in float64
        v = np.asarray(v, f).astype(np.float64)
        return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(f)
    s_in, s_out = f(input_scale), f(output_scale)
    in_min, in_max = s_in * f(-32768 - input_zp), s_in * f(32767 - input_zp)
    out_min, out_max = s_out * f(-32768), s_out * f(32767)
    step = (in_max - in_min) / f(512)
    half = step / f(2)
    inv = f(65536) / (out_max - out_min)
    i = np.arange(512).astype(f)
    val, mid, nxt = fn(in_min + i * step), fn(in_min + i * step + half), fn(in_min + (i + f(1)) * step)
    sample = round_half_away(val * inv)
    interp = round_half_away((nxt * inv + round_half_away(val * inv)) / f(2))
    bias = round_half_away((interp - round_half_away(mid * inv)) / f(2))
    last = round_half_away(fn(np.array([in_max], f)) * inv)
    return np.clip(np.concatenate([sample - bias, last]), -32768, 32767).astype(np.int16)


def softmax16_tables() -> tuple[np.ndarray, np.ndarray]:
    """(exp LUT over [-10, 0], 1 / (1 + x) LUT over [0, 1]) as TFLite Micro's Prepare fills them."""
    from edgec.ops.float_tail import libm

    f = np.float32
    rng = 65535
    exp = lut16(lambda v: libm("expf", v), f(10.0) / f(rng), 32767, f(2.0) / f(rng))
    recip = lut16(lambda v: f(1.0) / (f(1.0) + v), f(1.0) / f(rng), -32768, f(2.0) / f(rng))
    return exp, recip


def lut16_lookup(v, lut) -> np.ndarray:
    """TFLite's LUTLookup of int16 values: the entry at 256 + (v >> 7), interpolated over the low 7 bits."""
    v = np.asarray(v, np.int64)
    idx = 256 + (v >> 7)
    lut = np.asarray(lut, np.int64)
    base, slope = lut[idx], lut[idx + 1] - lut[idx]
    return (base + ((slope * (v & 0x7F) + 64) >> 7) + 32768) % 65536 - 32768


def softmax_tflite_s16(p: dict, exp_lut, recip_lut, x) -> np.ndarray:
    """TFLite's SoftmaxInt16 over each row: exps of the rescaled differences from the max (the exp LUT), their
    Q16.15 sum normalized (its leading zeros), 1 / sum by the reciprocal LUT, each exp times it, rounded."""
    x = np.asarray(x, np.int16).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64)
    diff = x - x.max(axis=1, keepdims=True)
    scaled = requantize(diff, p["input_mult"], p["input_shift"]).astype(np.int64) + 32767
    e = lut16_lookup(np.clip(scaled, -32768, 32767), exp_lut)
    total = e.sum(axis=1, keepdims=True)
    clz = 32 - np.frexp(total.astype(np.float64))[1].astype(np.int64)       # CountLeadingZeros (total > 0)
    shifted = ((total << (clz - 1)) + (1 << 13)) >> 14
    recip = lut16_lookup(np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767), recip_lut)
    rs = 31 - clz
    out = (e * recip + (np.int64(1) << (rs - 1))) >> rs
    return np.clip(out, 0, 32767).astype(np.int16).reshape(-1)


def run_softmax_tflite16(op: Op, inputs: list) -> np.ndarray:
    return softmax_tflite_s16(op.params, op.arrays["exp_lut"], op.arrays["recip_lut"], inputs[0])


def c_softmax_tflite16(op: Op, low, site: CallSite) -> str:
    a = site.arrays
    call = (f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {a['exp_lut']}, {a['recip_lut']},\n"
            f"        {cemit.i16(site.output)});")
    return cemit.with_params("edgec_softmax_tflite16_params", op.params, call, only_fields=True)


OPS = [
    OpDef("softmax", "softmax", quantize_softmax, lambda op, ins: _float(op, ins[0], False), in_place=True,
          distribution=True, qparams="fixed", fixed_qparams=lambda op: (1.0 / 256.0, -128),
          int16=Int16(quantize_softmax16, layer=True, fixed_qparams=(1.0 / 32768.0, 0), qdq=always,
                      tail8=lambda op: op.attrs.get("arithmetic") is None and int(op.attrs["cols"]) <= 1 << 16)),
    OpDef("log_softmax", "softmax", quantize_log_softmax, lambda op, ins: _float(op, ins[0], True), distribution=True,
          int16=Int16(lambda op, ins, out: log_softmax16.quantize(op, ins, out, exp16_tables), layer=True,
                      tail=log_softmax16.takes)),
]
KERNELS = [
    Kernel("edgec_softmax_s8", ("softmax",), REFERENCE, c_softmax, applies=lambda op: not _tflite(op), run=run_softmax,
           code_bytes=920),
    Kernel("edgec_softmax_tflite_s8", ("softmax",), REFERENCE, c_softmax_tflite, applies=_tflite,
           run=run_softmax_tflite, code_bytes=920),
    Kernel("edgec_softmax_tflite_s8_s16", ("softmax",), REFERENCE, c_softmax_tflite_s16, precision=INT16,
           applies=_tflite, run=run_softmax_tflite_s16),
    Kernel("edgec_softmax_tflite_s16", ("softmax",), REFERENCE, c_softmax_tflite16, precision=INT16,
           applies=_tflite16, run=run_softmax_tflite16),
    Kernel("edgec_softmax_s16", ("softmax",), REFERENCE, c_softmax16, precision=INT16,   # (224 B, gcc -O2 M4)
           applies=lambda op: not _tflite(op) and not _tflite16(op), run=run_softmax16, code_bytes=224),
    Kernel("edgec_log_softmax_s8", ("log_softmax",), REFERENCE, c_log_softmax,
           applies=lambda op: not _tflite_log(op), run=run_log_softmax),
    Kernel("edgec_log_softmax_tflite_s8", ("log_softmax",), REFERENCE, c_log_softmax_tflite, applies=_tflite_log,
           run=run_log_softmax_tflite),
    Kernel("edgec_log_softmax_s16", ("log_softmax",), REFERENCE, log_softmax16.c_call, precision=INT16,
           run=log_softmax16.run),
]


# ---- ONNX import
def import_softmax(cx, node):
    if masked.import_masked(cx, node):      # a constant attention mask before it: folded in
        return
    _softmax_general(cx, node, "softmax")


def _softmax_general(cx, node, kind):
    """Softmax/LogSoftmax over any axes: bring them innermost (a remap) when they are not."""
    x, y = node.input[0], node.output[0]
    tensor, perm, shape, cols = axes.rows_innermost(cx, x, node)
    out = cx.new_tensor(y, cx.graph.tensors[tensor].shape, y)
    cx.emit(kind, node, [tensor], out, rows=int(np.prod(shape, dtype=np.int64)) // cols, cols=cols)
    cx.values[y] = (out, perm)


def import_log_softmax(cx, node):
    _softmax_general(cx, node, "log_softmax")


ONNX = {"Softmax": import_softmax, "LogSoftmax": import_log_softmax}


# ---- TFLite import (edgec/frontend/tflite.py)
def import_tflite_softmax(tx, op):
    """SOFTMAX over the last axis, TFLite's arithmetic (`arithmetic="tflite"`): int8 in; out int8 of scale 1/256
    and zero point -128, or int16 of scale 1/65536 (within TFLite Micro's 0.1 %) and zero point -32768, as TFLite
    Micro requires."""
    x = tx.input(op, 0, ("int8", "int16"))
    if tx.tensor(x).dtype == "int16":
        return import_tflite_softmax16(tx, op, x)
    out = tx.output(op, dtypes=("int8", "int16"))
    shape = tx.tensor(x).shape
    t = tx.tensor(out)
    if t.dtype == "int16":
        if t.zero_point != -32768 or abs(t.scale - 1.0 / 65536) > 0.001 / 65536:
            raise tx.unsupported(f"int16 softmax output quantized ({t.scale}, {t.zero_point}), not "
                                 "(1/65536, -32768)")
    elif (t.scale, t.zero_point) != (1.0 / 256.0, -128):
        raise tx.unsupported(f"int8 softmax output quantized ({t.scale}, {t.zero_point}), not (1/256, -128)")
    if shape[-1] > 511:     # beyond, TFLite's sum of exps outgrows its Q12 accumulator (shifts past 31 bits)
        raise tx.unsupported(f"softmax over {shape[-1]} values (edgec follows TFLite's arithmetic up to 511)")
    tx.emit("softmax", op, [x], out, rows=int(np.prod(shape[:-1], dtype=np.int64)), cols=int(shape[-1]),
            beta=float(tx.options(op).Beta()), arithmetic="tflite")


def import_tflite_softmax16(tx, op, x: str):
    """SOFTMAX of int16 scores (16x8) into int16 probabilities (scale 1/32768 within 0.1 %, zero point 0), TFLite's
    SoftmaxInt16: the input rescaled by beta * scale / (10 / 65535), its two LUTs stored with the op."""
    out = tx.output(op, dtypes=("int16",))
    t, shape = tx.tensor(out), tx.tensor(x).shape
    if tx.tensor(x).zero_point != 0 or t.zero_point != 0 or abs(t.scale - 1.0 / 32768) > 0.001 / 32768:
        raise tx.unsupported(f"int16 softmax of zero point {tx.tensor(x).zero_point} into ({t.scale}, "
                             f"{t.zero_point}) (TFLite Micro takes zero points 0 and an output scale of 1/32768)")
    if shape[-1] > 1 << 15:          # the row's sum of Q0.15 exps within int32
        raise tx.unsupported(f"int16 softmax over {shape[-1]} values (at most 32768)")
    beta = float(np.float32(tx.options(op).Beta()))
    mult, shift = quantize_multiplier(float(np.float32(tx.tensor(x).scale)) * beta / (10.0 / 65535.0))
    exp, recip = softmax16_tables()
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    tx.emit("softmax", op, [x], out, {"exp_lut": exp, "recip_lut": recip},
            dict(rows=rows, cols=int(shape[-1]), input_mult=mult, input_shift=shift), rows=rows,
            cols=int(shape[-1]), beta=beta, arithmetic="tflite16")


def import_tflite_log_softmax(tx, op):
    """LOG_SOFTMAX over the last axis, TFLite's arithmetic; output scale 16/256, zero point 127 as TFLite Micro
    requires."""
    x, out = tx.input(op, 0), tx.output(op)
    shape, t = tx.tensor(x).shape, tx.tensor(out)
    if (t.scale, t.zero_point) != (16.0 / 256.0, 127):
        raise tx.unsupported(f"int8 log-softmax output quantized ({t.scale}, {t.zero_point}), not (16/256, 127)")
    try:
        tflite_softmax_scaling(tx.tensor(x).scale, 1.0)
    except EdgecError as exc:
        raise tx.unsupported(str(exc)) from None
    tx.emit("log_softmax", op, [x], out, rows=int(np.prod(shape[:-1], dtype=np.int64)), cols=int(shape[-1]),
            arithmetic="tflite")


TFLITE = {"SOFTMAX": import_tflite_softmax, "LOG_SOFTMAX": import_tflite_log_softmax}
