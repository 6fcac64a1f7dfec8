"""gemmlowp's fixed-point arithmetic (int32 raw values, vectorized over int64 arrays), as TFLite's kernels use it:
the building blocks of TFLite's softmax (edgec/ops/softmax/__init__.py) and their C twins in
runtime_c/edgec_softmax.c."""
from __future__ import annotations

import numpy as np

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(v):
    """int32 wrap-around of an int64 array (C's int32 addition on the two's complement targets)."""
    v = np.asarray(v, np.int64)
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    hi = np.where(t >= 0, t >> 31, -((-t) >> 31))       # C division by 2**31: toward zero
    return np.where((a == I32_MIN) & (b == I32_MIN), I32_MAX, hi)


def rdivpot(x, exponent):
    """RoundingDivideByPOT (round half away from zero)."""
    x, e = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    mask = (np.int64(1) << e) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + ((x & mask) > threshold)


def sat_shl(x, exponent: int):
    """SaturatingRoundingMultiplyByPOT with a positive exponent: a left shift saturated to int32."""
    x = np.asarray(x, np.int64)
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, I32_MAX, np.where(x < -threshold, I32_MIN, wrap32(x << exponent)))


def exp_on_interval(a):
    """exp_on_interval_between_negative_one_quarter_and_0_excl (Q0.31 in, Q0.31 out)."""
    x = wrap32(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdivpot(x4, 2)
    poly = rdivpot(wrap32(srdhm(wrap32(x4_over_4 + x3), 715827883) + x2), 1)
    return wrap32(1895147668 + srdhm(1895147668, wrap32(x + poly)))


EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
              (4, 242))


def exp_on_negative_values(a, integer_bits: int):
    """exp of a Q(integer_bits).(31 - integer_bits) value <= 0, in Q0.31."""
    frac = 31 - integer_bits
    a = np.asarray(a, np.int64)
    quarter = 1 << (frac - 2)
    a_mod = wrap32((a & (quarter - 1)) - quarter)
    result = exp_on_interval(sat_shl(a_mod, integer_bits))
    remainder = wrap32(a_mod - a)
    for exponent, mult in EXP_BARREL:
        if integer_bits > exponent:
            result = np.where(remainder & (1 << (frac + exponent)), srdhm(result, mult), result)
    return np.where(a == 0, I32_MAX, result)


def _newton_reciprocal(a):
    """The Newton-Raphson core both of gemmlowp's 1/(1+x) helpers share (x in Q0.31): three steps towards
    1/(1+x) in Q2.29."""
    a = np.asarray(a, np.int64)
    s = a + I32_MAX
    half = np.where(s >= 0, (s + 1) // 2, -((-s + 1) // 2))
    x = wrap32(1515870810 + srdhm(half, -1010580540))
    for _ in range(3):
        one_minus = wrap32((1 << 29) - srdhm(half, x))
        x = wrap32(x + sat_shl(srdhm(x, one_minus), 2))
    return x


def one_over_one_plus_x(a):
    """one_over_one_plus_x_for_x_in_0_1 (Q0.31 in and out): Newton-Raphson, three steps."""
    return sat_shl(_newton_reciprocal(a), 1)


def one_minus_x_over_one_plus_x(a):
    """one_minus_x_over_one_plus_x_for_x_in_0_1 (Q0.31 in and out)."""
    return sat_shl(wrap32(_newton_reciprocal(a) - (1 << 29)), 2)


def logistic(a, integer_bits: int):
    """gemmlowp::logistic of a Q(integer_bits) value, in Q0.31."""
    a = np.asarray(a, np.int64)
    pos = one_over_one_plus_x(exp_on_negative_values(-np.abs(a), integer_bits))
    return np.where(a == 0, 1 << 30, np.where(a > 0, pos, wrap32(I32_MAX - pos)))


def tanh(a, integer_bits: int):
    """gemmlowp::tanh of a Q(integer_bits) value, in Q0.31 (the exp of -2|a| read as Q(integer_bits + 1))."""
    a = np.asarray(a, np.int64)
    t = one_minus_x_over_one_plus_x(exp_on_negative_values(-np.abs(a), integer_bits + 1))
    return np.where(a == 0, 0, np.where(a < 0, -t, t))


def clz32(x):
    """CountLeadingZeros of the uint32 bit pattern (32 for 0)."""
    u = np.asarray(x, np.int64) & 0xFFFFFFFF
    return 32 - np.frexp(u.astype(np.float64))[1].astype(np.int64)


def sat_pot(x, exponent):
    """TFLite's SaturatingRoundingMultiplyByPOTParam with exponents >= 0 (array or int): x << e saturated."""
    x, e = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    threshold = (np.int64(1) << (31 - e)) - 1
    out = np.where(x > threshold, I32_MAX, np.where(x < -threshold, I32_MIN, wrap32(x << e)))
    return np.where(e == 0, x, out)


def rounding_half_sum(a, b):
    """RoundingHalfSum: (a + b + sign) / 2, truncating."""
    s = np.asarray(a, np.int64) + np.asarray(b, np.int64)
    s = s + np.where(s >= 0, 1, -1)
    return np.where(s >= 0, s // 2, -((-s) // 2))


LOG_2, SQRT_SQRT_HALF, SQRT_HALF, QUARTER = 1488522236, 1805811301, 1518500250, 536870912
ALPHA_N, ALPHA_D, ALPHA_I, ALPHA_F = 117049297, 127690142, 1057819769, 638450708


def log_x_ge_1(a, input_bits: int, output_bits: int):
    """TFLite's log_x_for_x_greater_than_or_equal_to_1_impl: ln of a Q(input_bits) value >= 1 in Q(output_bits),
    a Pade-like quotient after splitting off the power of two (accumulated in Q(output_bits + 1))."""
    accum = output_bits + 1
    quarter = rdivpot(QUARTER, accum)
    z_a = np.asarray(a, np.int64)
    a_hp1 = clz32(z_a)
    r_a = sat_pot(srdhm(sat_pot(z_a, a_hp1 - 1), SQRT_HALF), 1)
    a_adj = np.clip(sat_pot(input_bits - a_hp1, 31 - accum) + quarter, I32_MIN, I32_MAX)
    b_h = clz32(srdhm(z_a, SQRT_HALF)) - 1
    r_b = sat_pot(z_a, b_h)
    b_adj = np.clip(sat_pot(input_bits - b_h, 31 - accum) - quarter, I32_MIN, I32_MAX)
    r, adj = np.minimum(r_a, r_b), np.maximum(a_adj, b_adj)
    p = rounding_half_sum(r, SQRT_SQRT_HALF)
    q = wrap32(2 * wrap32(r - SQRT_SQRT_HALF))
    sq = srdhm(q, q)
    num = wrap32(srdhm(q, r) + srdhm(srdhm(q, sq), ALPHA_N))
    denom = wrap32(srdhm(p, wrap32(wrap32(ALPHA_I + q) + srdhm(ALPHA_D, sq))) + srdhm(ALPHA_F, q))
    total = wrap32(srdhm(adj, LOG_2) + srdhm(rdivpot(num, accum), one_over_one_plus_x(denom)))
    return sat_pot(total, accum - output_bits)
