"""Build-time packing shared by the fast kernels (runtime_c/fast/): each op family packs its own ops for its
kernels (the `lower` of its kernel records, edgec/ops/kernel.py) with these helpers; edgec/lower/lowering.py
runs the lowering after quantization.

For each op a fast kernel can run bit-exactly, the kernel's `lower(op)` returns the C params struct's fields and
the constant arrays (weights padded and reordered for the inner loops, one requantization record per output
channel, lookup tables); ops it returns None for keep the portable reference kernels.

What moves from run time to build time:
- the input zero point: sum((x - zp) * w) + bias == sum(x * w) + (bias - zp * sum(w)), with padded
  taps holding zp itself, so the inner loops multiply raw int8 values;
- requantization: TFLite's SaturatingRoundingDoublingHighMul followed by RoundingDivideByPOT is,
  for a multiplier m in [2^30, 2^31) and a right shift e >= 0, exactly
      (((2*acc*m + 2^31 + [e>0] * 2^(31+e)) >> 32) - [e>0][acc<0]) >> e
  (both roundings folded into one constant, see `rq_records`): SMMLAR, ADD and a shift on Arm;
- Add's two input rescalings: a 256-entry table per input.

The lowering needs |accumulator| < 2^30 (so 2*acc fits in int32); `folded_bias` checks the bound from
the weights and bias and declines layers that could exceed it.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.fixedpoint.scheme import pack_int4, requantize

ACC_LIMIT = 1 << 30
MAX_RIGHT_SHIFT = 22     # keeps |hi word + zp * 2^shift| < 2^31 for any |acc| < 2^30 (rq_records)


def k4(n: int) -> int:
    """n rounded up to whole words."""
    return (n + 3) // 4 * 4


def rq_records(bias: np.ndarray, mult: np.ndarray, shift: np.ndarray, zp=0, acc_bound=None) -> np.ndarray | None:
    """[n, 5] int32 edgec_rq records (bias, mult, khi, neg, shift), or None if a multiplier/shift is
    outside the fast path.

    The output zero point (one, or one per channel) is folded in: (v >> e) + zp == (v + zp * 2^e) >> e.
    The kernels add khi to the high word of 2 * acc * mult (|high word| <= |acc| + 1) in 32 bits. Without
    acc_bound (any accumulator the fast kernels take, |acc| < 2^30) a right shift e is taken up to MAX_RIGHT_SHIFT;
    with acc_bound (one, or one per channel, bounding |acc|: conv_like's, from the weights and bias) up to 31
    while |khi| + acc_bound + 2 < 2^31: the larger shifts of small scales (TinyEngine's MCUNet files have 23).
    A multiplier of exactly 2^30 (a scale ratio of a power of two) is exact too: 2 * acc * 2^30 >> 32 is acc / 2
    rounded up, as SaturatingRoundingDoublingHighMul gives it, and the one accumulator whose sign differs from that
    product's (-1, rounded to 0) gets the same result from the `neg` correction (tests/kernels/test_requantize.py)."""
    bias = np.asarray(bias, np.int64)
    mult = np.asarray(mult, np.int64)
    shift = np.asarray(shift, np.int64)
    if np.any(shift > 0) or np.any(shift < (-MAX_RIGHT_SHIFT if acc_bound is None else -31)) or np.any(mult < 0):
        return None
    e = -shift
    khi_pos = np.where(e > 0, np.left_shift(1, np.maximum(e - 1, 0)), 0) + np.asarray(zp, np.int64) * np.left_shift(1, e)
    neg = -(e > 0).astype(np.int64)
    bound = np.asarray(ACC_LIMIT if acc_bound is None else acc_bound, np.int64)
    if np.any(np.abs(bias) >= ACC_LIMIT) or np.any(np.abs(khi_pos) + bound + 2 >= 1 << 31):
        return None
    return np.stack([bias, mult, khi_pos, neg, e], axis=1).astype(np.int32)


def folded_bias(bias, w2d: np.ndarray, zp: int, mult) -> np.ndarray | None:
    """bias - zp * sum(w) per output row of w2d [out][k]; None if |acc| could reach 2^30.

    A channel with multiplier 0 (all-zero weights) outputs the zero point whatever its accumulator:
    its bias becomes 0 (the quantizer may have saturated it)."""
    w = w2d.astype(np.int64)
    live = np.asarray(mult, np.int64) != 0
    b = np.where(live, np.asarray(bias, np.int64) - int(zp) * w.sum(axis=1), 0)
    if np.any(np.abs(b) + 128 * np.abs(w).sum(axis=1) >= ACC_LIMIT):
        return None
    return b


def words(a: np.ndarray) -> np.ndarray:
    """Bytes (int8 or int16 data, C order) as little-endian uint32 words."""
    raw = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    assert raw.size % 4 == 0
    return raw.view("<u4").astype(np.uint32)


# ---- fast/edgec_rows16.h: int16 weight rows and TFLite's requantization of any int32 sum (the fast SVDF, the fully
# connected layer with large biases)
def rq_any(mult: int, shift: int, bound: int) -> tuple[int, int, int] | None:
    """(mult, left, right) of TFLite's multiplier and shift for edgec_rq_any (fast/edgec_rows16.h), or None outside
    its range: its rounding sum saturates where the result is at least 2^(31 - right) - 1, the same after a clamp
    to values up to `bound` only while that is at least `bound`."""
    left, right = max(int(shift), 0), max(-int(shift), 0)
    ok = mult >= 0 and left <= 30 and right <= 31 and (1 << (31 - right)) - 1 >= bound
    return (int(mult), left, right) if ok else None


def wrapped(v) -> np.ndarray:
    """int64 values modulo 2^32, as int32 (TFLite's wrapping int32 sums)."""
    return ((np.asarray(v, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def rows16_words(w: np.ndarray) -> np.ndarray:
    """int8 weights [rows][k] as fast/edgec_rows16.h reads them: rows padded to 4 and k to a multiple of 4 with
    zeros, int16, [block of 4 rows][group of 4 inputs][row][w0 w2 w1 w3], as little-endian words."""
    rows, k = w.shape
    r4, k4 = -(-rows // 4) * 4, -(-k // 4) * 4
    wp = np.zeros((r4, k4), np.int16)
    wp[:rows, :k] = w
    g = wp.reshape(r4 // 4, 4, k4 // 4, 4).transpose(0, 2, 1, 3)[..., [0, 2, 1, 3]]
    return np.ascontiguousarray(g).reshape(-1).view("<u4").astype(np.uint32)


def conv_like(op: Op, w2d: np.ndarray) -> tuple[dict, np.ndarray] | None:
    """The clamp and the requantization records of a weighted op with weights w2d [out][k].

    A channel whose weights are all zero outputs a constant, its requantized bias (TFLite files keep such
    dead channels with saturated biases and multipliers far outside the fast path): its record gives that
    constant directly (multiplier 0, the constant as its zero point). Where the records of the other channels are
    outside the fast path too, so do the channels whose output is one value over every int8 input
    (`constant_channels`: a bias so far below zero that the clamp holds them at act_min, as dead ReLU units of
    trained files have, with right shifts of 24 to 26 whose output zero point times 2^shift no record folds:
    AmbiqAI's HAR model). Only there: a constant record has no rounding correction (neg 0), which sends the
    kernels whose loops count on every channel's (blocked4, window4) to slower ones."""
    p = op.params
    w = np.asarray(w2d)
    got = _records(op, w, ~np.any(w != 0, axis=1), None)
    if got is None:
        const, value = constant_channels(w, *(op.arrays[k] for k in ("bias", "mult", "shift")), p)
        got = _records(op, w, const, value)
    return None if got is None else ({k: int(p[k]) for k in ("output_zp", "act_min", "act_max")}, got)


def _records(op: Op, w2d: np.ndarray, dead: np.ndarray, value) -> np.ndarray | None:
    """conv_like's records with the channels `dead` as constants (`value`, else their requantized bias), or None."""
    p = op.params
    bias, mult, shift = (np.asarray(op.arrays[k], np.int64) for k in ("bias", "mult", "shift"))
    zp = np.full(len(dead), int(p["output_zp"]), np.int64)
    if np.any(dead):
        if value is None:
            value = requantize(bias, mult, shift).astype(np.int64) + int(p["output_zp"])
        zp[dead] = np.clip(np.asarray(value)[dead], -129, 128)   # the kernel's clamp to the activation range follows
        bias, mult, shift = (np.where(dead, 0, v) for v in (bias, mult, shift))
    bias = folded_bias(bias, w2d, p["input_zp"], mult)
    bound = None if bias is None else np.abs(bias) + 128 * np.abs(np.asarray(w2d, np.int64)).sum(axis=1)
    return None if bias is None else rq_records(bias, mult, shift, zp, bound)


def constant_channels(w2d: np.ndarray, bias, mult, shift, p) -> tuple[np.ndarray, np.ndarray]:
    """(which output channels hold one value whatever the int8 input, that value before the clamp to the activation
    range, output zero point added) of a weighted op with weights w2d [out][k]: its all-zero weight rows (their
    requantized bias), and the rows whose accumulator bias + sum((x - input_zp) * w), over every x in [-128, 127]
    (a padded tap adds 0, inside that range), requantizes to the same clamped value at both of its ends
    (TFLite's requantization is monotone for a multiplier >= 0 where its left shift does not wrap)."""
    w = np.asarray(w2d, np.int64)
    bias, mult, shift = (np.asarray(v, np.int64) for v in (bias, mult, shift))
    zp_in, out_zp = int(p["input_zp"]), int(p["output_zp"])
    lo = bias + np.where(w > 0, w * (-128 - zp_in), w * (127 - zp_in)).sum(axis=1)
    hi = bias + np.where(w > 0, w * (127 - zp_in), w * (-128 - zp_in)).sum(axis=1)
    room = np.left_shift(1, 31 - np.clip(shift, 0, 31))     # |acc << left| inside int32: no wrap
    fits = (mult >= 0) & (lo >= -room) & (hi < room)
    lo, hi = np.where(fits, lo, 0), np.where(fits, hi, 0)
    dead = ~np.any(w != 0, axis=1)
    v_lo = requantize(np.where(dead, bias, lo), mult, shift).astype(np.int64) + out_zp
    v_hi = requantize(hi, mult, shift).astype(np.int64) + out_zp
    a, b = int(p["act_min"]), int(p["act_max"])
    const = fits & (np.clip(v_lo, a, b) == np.clip(v_hi, a, b))
    value = np.where(dead, v_lo, np.clip(v_lo, a, b))
    return dead | const, value


def run_rq(acc: np.ndarray, rq: np.ndarray) -> np.ndarray:
    """NumPy model of edgec_out()'s requantization and output zero point (before the clamp), for tests."""
    acc = np.asarray(acc, np.int64)
    mult, khi, neg, sh = (rq[..., i].astype(np.int64) for i in range(1, 5))
    hi = ((2 * acc * mult + (khi << 32) + (1 << 31)) >> 32) + np.where(acc < 0, neg, 0)
    return (hi >> sh).astype(np.int32)


# nibble k of a word of 8 holds input PERM8[k] of its group of 8: the int16 pairs edgec_widen makes of the
# inputs, (x0, x2), (x1, x3), (x4, x6), (x5, x7), meet the nibble pairs SXTB16 unpacks, (n0, n4) ... (n3, n7)
PERM8 = np.array([0, 1, 4, 5, 2, 3, 6, 7])


def nibble_words(w: np.ndarray) -> np.ndarray:
    """Rows of int4 values [rows][k] as rows of k rounded up to 8 in PERM8 order, 8 nibbles a word."""
    rows, k = w.shape
    k8 = (k + 7) // 8 * 8
    wp = np.zeros((rows, k8), np.int8)
    wp[:, :k] = w
    return words(pack_int4(wp.reshape(rows, k8 // 8, 8)[:, :, PERM8]))


# ---- the register-blocked speed variants (conv blocked4, fully connected rows8) ---------------------------------
# Both double the int16 weights and the biases at build time (|acc| < 2^30, so 2 * acc fits an int32): the
# accumulators then hold the doubled sum the requantization's SMMLAR takes. Both pad the last block of outputs
# with copies of the last output, its requantization record included (the kernels never store the copies).

def padded(a: np.ndarray, n: int) -> np.ndarray:
    """a with its last row repeated up to n rows."""
    return np.concatenate([a, np.repeat(a[-1:], n - len(a), axis=0)]) if n > len(a) else a


def doubled_words(v: np.ndarray) -> np.ndarray:
    """int16 values (doubled int8 weights) as little-endian words, C order."""
    return words(np.ascontiguousarray(2 * v.astype(np.int16)))


def blocks(w: np.ndarray, rq: np.ndarray, block: int, pair_order) -> tuple[np.ndarray, np.ndarray]:
    """The word stream of `block`-output blocks: per block the doubled biases, then per group of 4 inputs the
    doubled int16 weights in `pair_order` (an index array over [group][output][4] -> the kernel's order)."""
    n = (len(w) + block - 1) // block * block
    w, rq = padded(w, n), padded(rq, n)
    groups = w.shape[1] // 4
    bias = (2 * rq[:, 0].astype(np.int64)).astype(np.int32).reshape(-1, block).view(np.uint32)
    g = w.reshape(-1, block, groups, 4).transpose(0, 2, 1, 3)               # [block][group][output][4]
    body = doubled_words(pair_order(g)).reshape(n // block, -1)
    return np.concatenate([bias, body], axis=1).reshape(-1), np.ascontiguousarray(rq)
