"""The fast 16x8 matrix product (edgec/ops/matmul.py MATMUL_FAST16, runtime_c/fast/edgec_matmul_fast_s16.c) against
the NumPy twin of TFLite's BatchMatMul<int16_t, int64_t>, bit for bit, on the portable and the DSP path: every
layout of the operands (rows or columns contiguous, interleaved heads, a broadcast batch, a transposed output), so
each of its loops (kk, kn, any; the product transposed or not), odd and unit sizes, extreme values (int64 sums
beyond int32), every total shift TFLite's 16x8 requantization takes, a clamp narrower than int16. The kernel
takes no scratch: it must not write outside the output, nor read outside its operands (the buffers are exact
numpy arrays under UBSan; the output has guards)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import make, ptr
from edgec.fixedpoint.scheme import quantize_multiplier, requantize64
from edgec.ir import Op
from edgec.ops import matmul, select


def _layout(rng, rows: int, cols: int, batch: int, broadcast: bool):
    """(batch, row, column strides, size) of a [batch][rows][cols] operand: row-major, column-major, or one of two
    heads interleaved ([rows][2][cols]: a column stride of 1, a row stride of 2 cols) or ([cols][2][rows])."""
    kind = int(rng.integers(0, 4))
    heads = 2 if kind >= 2 else 1
    if kind in (0, 2):
        rs, cs = heads * cols, 1
    else:
        rs, cs = 1, heads * rows
    nb = 1 if broadcast else batch
    size = nb * rows * cols * heads
    bs = 0 if broadcast else rows * cols * heads
    return bs, rs, cs, size


def _case(rng):
    batch, m, n = int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    k = int(rng.integers(1, 40))
    p = dict(batch=batch, m=m, k=k, n=n)
    a_bc, b_bc = rng.random() < 0.2, rng.random() < 0.2
    abs_, ars, acs, asize = _layout(rng, m, k, batch, a_bc)
    bbs, brs, bcs, bsize = _layout(rng, k, n, batch, b_bc)
    p.update(a_batch_stride=abs_, a_row_stride=ars, a_col_stride=acs, b_batch_stride=bbs, b_row_stride=brs,
             b_col_stride=bcs)
    if rng.random() < 0.5:
        p.update(out_batch_stride=m * n, out_row_stride=n, out_col_stride=1)
    else:
        p.update(out_batch_stride=n, out_row_stride=batch * n, out_col_stride=1)
    scale = float(rng.choice([rng.uniform(1e-5, 1e-3), rng.uniform(0.01, 4.0), rng.uniform(3e-10, 1e-7)]))
    mult, shift = quantize_multiplier(scale)
    lo = int(rng.integers(-32768, 0)) if rng.random() < 0.3 else -32768
    hi = int(rng.integers(0, 32768)) if rng.random() < 0.2 else 32767
    p.update(a_zp=0, b_zp=0, output_zp=0, mult=mult, shift=shift, act_min=lo, act_max=hi)
    extreme = rng.random() < 0.3
    a, b = ((rng.choice(np.array([-32768, 32767, -32767], np.int16), size=s) if extreme
             else rng.integers(-32768, 32768, s).astype(np.int16)) for s in (asize, bsize))
    return p, a, b


def _fast(lib, p, a, b):
    low = select.fast(Op("matmul", "mm", (), "y", params=p), ("int16", "int16", "int16"))
    if p["shift"] > 0:      # a multiplier of 1 or more (T = 15 - shift < 15): the reference kernel's
        assert low is None or low.kernel is not matmul.MATMUL_FAST16
        return None, None
    assert low is not None and low.kernel is matmul.MATMUL_FAST16 and low.scratch_bytes == 0
    size = p["batch"] * p["m"] * p["n"]
    out = np.full(size + 8, 0x5A5A, np.uint16).view(np.int16)
    first, second = (b, a) if low.params["swapped"] else (a, b)
    lib.edgec_matmul_fast_s16(ctypes.byref(make("edgec_matmul_fast_s16_params", low.params)), ptr(first),
                              ptr(second), ptr(out[4:]))
    assert np.all(out[:4].view(np.uint16) == 0x5A5A) and np.all(out[-4:].view(np.uint16) == 0x5A5A), \
        "the kernel wrote outside its output"
    return out[4:-4], low


@pytest.mark.parametrize("path", ["ck", "ck_dsp"])
def test_matmul_fast_s16_is_the_16x8_reference(request, path):
    lib = request.getfixturevalue(path).lib
    rng = np.random.default_rng(21)
    seen = set()
    for _ in range(300):
        p, a, b = _case(rng)
        out, low = _fast(lib, p, a, b)
        if low is None:
            continue
        seen.add((low.params["mode"], low.params["swapped"]))
        assert np.array_equal(out, matmul.matmul_s16(p, a, b)), p
    # (kk transposed cannot be: kk reads both operands along k, the transposed product too)
    assert {(matmul.MM16_KK, 0), (matmul.MM16_KN, 0), (matmul.MM16_KN, 1), (matmul.MM16_ANY, 0)} <= seen, seen


def test_matmul_fast_s16_sums_beyond_int32(ck_dsp):
    """Every value -32768: each product 2^30, the sum k 2^30 (an int32 sum would wrap); the multiplier small
    enough that the output is inside int16, and large enough that TFLite's int32 truncation wraps it."""
    for scale, k in ((2.0 ** -30, 38), (3e-5, 9), (0.5, 7), (2.0 ** -17, 5)):
        mult, shift = quantize_multiplier(scale)
        p = dict(batch=1, m=2, k=k, n=3, a_batch_stride=0, a_row_stride=k, a_col_stride=1, b_batch_stride=0,
                 b_row_stride=3, b_col_stride=1, out_batch_stride=0, out_row_stride=3, out_col_stride=1, a_zp=0,
                 b_zp=0, output_zp=0, mult=mult, shift=shift, act_min=-32768, act_max=32767)
        a, b = np.full(2 * k, -32768, np.int16), np.full(3 * k, -32768, np.int16)
        out, _ = _fast(ck_dsp.lib, p, a, b)
        assert np.array_equal(out, matmul.matmul_s16(p, a, b)), scale


def test_matmul_fast_s16_lowering_declines_what_it_cannot_run():
    p = dict(batch=1, m=2, k=4, n=2, a_batch_stride=0, a_row_stride=4, a_col_stride=1, b_batch_stride=0,
             b_row_stride=2, b_col_stride=1, out_batch_stride=0, out_row_stride=2, out_col_stride=1, a_zp=0, b_zp=0,
             output_zp=0, mult=1 << 30, shift=-3, act_min=-32768, act_max=32767)
    assert matmul.lower_matmul16(Op("matmul", "mm", (), "y", params=p)) is not None
    for change in (dict(a_zp=3), dict(output_zp=-1), dict(k=matmul.MM16_MAX_K), dict(shift=1), dict(mult=-5)):
        assert matmul.lower_matmul16(Op("matmul", "mm", (), "y", params={**p, **change})) is None, change


def test_rq16_words_is_tflites_64_bit_requantization():
    """The one-UMLAL form against edgec_requantize64's twin for every total shift it takes (15..46), sums up to
    40 x 2^30 and beyond int32 (the int32 truncation of the result included)."""
    rng = np.random.default_rng(5)
    for shift in range(-31, 1):
        mult = int(rng.integers(1 << 30, (1 << 31) - 1))
        w = matmul.rq16_words(mult, shift)
        acc = np.concatenate([rng.integers(-(40 << 30), 40 << 30, 200), [0, -1, 1, 40 << 30, -(40 << 30)]])
        r = (acc.astype(object) * (w["rq_mult"] % (1 << 32)) + (w["rq_round_hi"] % (1 << 32) << 32)
             + w["rq_round_lo"] % (1 << 32)) % (1 << 64)
        hi = np.array([(v >> 32) - (1 << 32) if v >> 63 else v >> 32 for v in r], np.int64)
        assert np.array_equal(hi >> w["rq_shift"], requantize64(acc, mult, shift)), shift
    assert matmul.rq16_words(1 << 30, 1) is None and matmul.rq16_words(1 << 30, 0) is not None


def test_mm16_mode_reads_the_strides():
    base = dict(m=4, k=6, n=5)
    assert matmul.mm16_mode({**base, "a_col_stride": 1, "b_row_stride": 1, "b_col_stride": 6}) == matmul.MM16_KK
    assert matmul.mm16_mode({**base, "a_col_stride": 1, "b_row_stride": 5, "b_col_stride": 1}) == matmul.MM16_KN
    assert matmul.mm16_mode({**base, "a_col_stride": 4, "b_row_stride": 5, "b_col_stride": 1}) == matmul.MM16_ANY
    assert matmul.mm16_mode({**base, "k": 1, "a_col_stride": 4, "b_row_stride": 5, "b_col_stride": 1}) == \
        matmul.MM16_KK
