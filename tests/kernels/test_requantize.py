"""Requantization, the numerics every kernel shares: edgec_requantize (TFLite's MultiplyByQuantizedMultiplier)
against a literal scalar port of TFLite, edgec_requantize64 of the 16x8 kernels against the real multiplier,
and the fast kernels' one-multiply requantization (edgec_rq records) against TFLite's two rounding steps."""
from __future__ import annotations

import ctypes
import math

import numpy as np

from ckernels import I32
from edgec.ops import fast
from edgec.fixedpoint import scheme


def _tflite_requantize(x, m, s):
    """Literal scalar port of TFLite MultiplyByQuantizedMultiplier on Python ints."""
    left, right = max(s, 0), max(-s, 0)
    x = ((x << left) + (1 << 31)) % (1 << 32) - (1 << 31)
    if x == m == -(1 << 31):
        hi = (1 << 31) - 1
    else:
        ab = x * m
        t = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
        hi = t // (1 << 31) if t >= 0 else -((-t) // (1 << 31))
    mask = (1 << right) - 1
    return (hi >> right) + (1 if (hi & mask) > (mask >> 1) + (1 if hi < 0 else 0) else 0)


def test_quantize_multiplier():
    assert scheme.quantize_multiplier(0.0) == (0, 0)
    assert scheme.quantize_multiplier(0.5) == (1 << 30, 0)
    assert scheme.quantize_multiplier(1.0) == (1 << 30, 1)
    assert scheme.quantize_multiplier(1.0 - 2.0 ** -40) == (1 << 30, 1)  # q_fixed rounds up to 2**31
    assert scheme.quantize_multiplier(2.0 ** -40) == (0, 0)
    assert scheme.quantize_multiplier(3.0 * 2 ** 20) == (3 << 29, 22)
    # half away from zero: q*2**31 = 2**30 + 0.5 -> 2**30 + 1
    assert scheme.quantize_multiplier((2 ** 30 + 0.5) / 2 ** 31) == (2 ** 30 + 1, 0)
    rng = np.random.default_rng(0)
    for r in np.exp(rng.uniform(math.log(1e-9), math.log(1e8), size=500)):
        m, s = scheme.quantize_multiplier(float(r))
        assert (1 << 30) <= m < (1 << 31) and -31 <= s <= 30
        assert abs(m * 2.0 ** (s - 31) - r) <= r * 2.0 ** -30


def test_requantize_matches_tflite_and_c(ck):
    rng = np.random.default_rng(1)
    n = 20000
    acc = rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64).astype(np.int32)
    acc[: n // 2] >>= rng.integers(0, 31, size=n // 2).astype(np.int32)  # many magnitudes
    mult = rng.integers(1 << 30, 1 << 31, size=n, dtype=np.int64).astype(np.int32)
    shift = rng.integers(-31, 31, size=n).astype(np.int32)
    acc[:8] = [-(1 << 31), (1 << 31) - 1, 0, -1, 1, -(1 << 31), 3 << 29, -(3 << 29)]
    mult[:8] = [-(1 << 31), (1 << 31) - 1, 1 << 30, 1 << 30, 1 << 30, -(1 << 31), 1 << 30, 1 << 30]
    shift[:8] = [0, 0, -5, -1, -1, 0, -31, -31]
    # exact halves at the final rounding (x * 2**30 / 2**31 = x/2, then / 2**right)
    acc[8:40] = np.arange(-16, 16)
    mult[8:40] = 1 << 30
    shift[8:40] = -2
    ref = scheme.requantize(acc, mult, shift)
    np.testing.assert_array_equal(ref, ck.requantize(acc, mult, shift))
    for i in range(0, n, 7):
        assert int(ref[i]) == _tflite_requantize(int(acc[i]), int(mult[i]), int(shift[i])), i
    # per-channel broadcasting over the last axis
    a2 = acc[:600].reshape(20, 30)
    np.testing.assert_array_equal(scheme.requantize(a2, mult[:30], shift[:30]),
                                  ck.requantize(a2.ravel(), np.tile(mult[:30], 20), np.tile(shift[:30], 20)).reshape(20, 30))


def test_requantize64_matches_the_real_multiplier(ck):
    rng = np.random.default_rng(9)
    acc = rng.integers(-(1 << 46), 1 << 46, size=2000, dtype=np.int64)
    for real in (3e-9, 1e-5, 0.3, 0.99, 5.0, 100.0):
        m, s = scheme.quantize_multiplier(real)
        want = scheme.requantize64(acc, m, s)
        keep = np.abs(acc * real) < 2**31 - 2          # the result fits int32 (beyond: wrapped, as TFLite's cast)
        got = np.array([ck.lib.edgec_test_requantize64(ctypes.c_int64(int(a)), I32(m), I32(s)) for a in acc[:200]])
        assert np.array_equal(got, want[:200])
        assert np.all(np.abs(want[keep] - acc[keep] * real) <= np.abs(acc[keep] * real) * 2e-5 + 1), real


def test_requantize64_wraps_a_result_beyond_int32_as_tflite():
    """TFLite's MultiplyByQuantizedMultiplier(int64) returns static_cast<int32_t> of its 64-bit result (what a 16x8
    layer with a saturated int64 bias gives TFLite Micro): the twin wraps it likewise."""
    m, s = scheme.quantize_multiplier(0.5)
    big = np.array([(1 << 33) + 6, -(1 << 33) - 6, 3 << 31], np.int64)
    assert scheme.requantize64(big, m, s).tolist() == [3, -3, -(1 << 30)]


def test_one_multiply_requantization_is_tflite_exact():
    rng = np.random.default_rng(1)
    for t in range(300):
        mult = int(rng.integers((1 << 30) + 1, 1 << 31)) if t % 5 else ((1 << 31) - 1 if t % 10 else 1 << 30)
        shift = -int(rng.integers(0, fast.MAX_RIGHT_SHIFT + 1))
        zp = int(rng.integers(-128, 128))
        acc = np.concatenate([rng.integers(-(1 << 30) + 1, 1 << 30, 1000), np.arange(-600, 600)])
        rq = fast.rq_records(np.zeros(1), np.array([mult]), np.array([shift]), zp)
        np.testing.assert_array_equal(fast.run_rq(acc, rq[0]), scheme.requantize(acc, mult, shift) + zp)


def test_right_shifts_past_22_are_exact_where_the_accumulator_bound_allows():
    """A layer that knows its accumulator bound (fast.conv_like: |bias| + 128 x sum |w|) takes right shifts up to 31
    (TinyEngine's MCUNet files have 23): the record is TFLite-exact on accumulators up to the bound, and the high
    word plus khi the kernels add in 32 bits stays inside int32; past the bound the record is declined."""
    rng = np.random.default_rng(23)
    for e in range(23, 32):
        for zp in (-128, -1, 0, 127):
            khi = (1 << (e - 1)) + zp * (1 << e)
            bound = (1 << 31) - 3 - abs(khi)
            assert fast.rq_records(np.zeros(1), np.array([1 << 30 | 5]), np.array([-e]), zp, bound + 1) is None
            if bound <= 0:
                continue
            mult = int(rng.integers((1 << 30) + 1, 1 << 31))
            rq = fast.rq_records(np.zeros(1), np.array([mult]), np.array([-e]), zp, bound)
            assert rq is not None, (e, zp)
            acc = np.concatenate([rng.integers(-bound, bound + 1, 2000), [-bound, bound], np.arange(-300, 300)])
            np.testing.assert_array_equal(fast.run_rq(acc, rq[0]), scheme.requantize(acc, mult, -e) + zp)
            hi = (2 * acc * mult + (int(rq[0][2]) << 32) + (1 << 31)) >> 32
            assert hi.min() - 1 >= -(1 << 31) and hi.max() < 1 << 31, (e, zp)
    assert fast.rq_records(np.zeros(1), np.array([1 << 30 | 5]), np.array([-23])) is None    # no bound: 22 at most


def test_multipliers_outside_the_fast_path_are_declined():
    assert fast.rq_records(np.zeros(1), np.array([1 << 30 | 5]), np.array([2])) is None  # left shift
    assert fast.rq_records(np.zeros(1), np.array([1 << 30 | 5]), np.array([-30])) is None


def test_one_rounding_multiplier_rounds_once_in_the_c_and_the_fast_records(ck):
    """A QDQ file's requantization (scheme.quantize_multiplier_one_rounding: shift 0, a multiplier below 2^30) is the
    same MultiplyByQuantizedMultiplier in the C and in the fast kernels' records, rounded once: within half a level
    (plus the multiplier's own error) of acc x real, where TFLite's normalized form lands a level above. The mean of
    64 values of tests/corpus/tiny13_kj_ic_resnet_qdq's average pool (scale ratio 0.09396 / 0.01918): a sum of 58 is
    4.44 levels, 5 with two roundings, 4 with one."""
    real = 0.09395794570446014 / 0.019176993519067764 / 64
    assert scheme.requantize(58, *scheme.quantize_multiplier(real)) == 5
    m, s = scheme.quantize_multiplier_one_rounding(real)
    assert s == 0 and (1 << 21) <= m < (1 << 30) and scheme.requantize(58, m, s) == 4
    rng = np.random.default_rng(29)
    for real in np.exp(rng.uniform(math.log(2.0 ** -10), math.log(0.999), size=40)):
        m, s = scheme.quantize_multiplier_one_rounding(float(real))
        acc = np.concatenate([rng.integers(-(1 << 24), 1 << 24, 2000), np.arange(-300, 300)]).astype(np.int32)
        got = scheme.requantize(acc, m, s)
        np.testing.assert_array_equal(ck.requantize(acc, m, s), got)
        assert np.all(np.abs(got - acc * real) <= 0.5 + np.abs(acc) * 2.0 ** -31 + 1e-9), real
        rq = fast.rq_records(np.zeros(1), np.array([m]), np.array([s]), 7)
        np.testing.assert_array_equal(fast.run_rq(acc, rq[0]), got + 7)
    assert scheme.quantize_multiplier_one_rounding(0.3 * 2.0 ** -11) == scheme.quantize_multiplier(0.3 * 2.0 ** -11)
    assert scheme.quantize_multiplier_one_rounding(3.0) == scheme.quantize_multiplier(3.0)
