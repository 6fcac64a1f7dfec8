"""The softmax family (runtime_c/edgec_softmax.c) against its NumPy twins, bit for bit, and against float:
softmax and log-softmax."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from ckernels import eq, i8, i16, log_softmax_resize_cases, make, ptr
from edgec.ir import Op, Tensor
from edgec.ops import softmax
from edgec.ops.softmax import log_softmax16


def test_softmax_random(ck):
    rng = np.random.default_rng(50)
    for _ in range(100):
        scale = float(np.exp(rng.uniform(math.log(1e-3), math.log(1.0))))
        table = softmax.softmax_table(scale, beta=float(rng.choice([1.0, 0.5, 2.0])))
        assert table[0] == 1 << 24 and np.all(np.diff(table.astype(np.int64)) <= 0)
        x = i8(rng, (int(rng.integers(1, 8)), int(rng.integers(1, 300))))
        got = softmax.softmax_s8(x, table)
        eq(got, ck.softmax_s8(x, table))
    # uniform rows: exactly (512 + cols) // (2 * cols) - 128, incl. exact halves (cols 2, 512) rounding up
    table = softmax.softmax_table(0.05)
    for cols in (1, 2, 3, 5, 64, 255, 256, 511, 512, 513, 1000):
        x = np.full((2, cols), np.int8(int(rng.integers(-128, 128))))
        want = np.full(x.shape, min((512 + cols) // (2 * cols) - 128, 127), np.int8)
        eq(softmax.softmax_s8(x, table), want)
        eq(ck.softmax_s8(x, table), want)
    # close to float softmax
    scale = 0.1
    x = rng.integers(-128, 128, size=(4, 10), dtype=np.int8)
    xi = x.astype(np.int64)
    f = np.exp(scale * (xi - xi.max(axis=1, keepdims=True)))
    f = f / f.sum(axis=1, keepdims=True)
    got = (softmax.softmax_s8(x, softmax.softmax_table(scale)).astype(float) + 128) / 256
    assert np.max(np.abs(got - np.minimum(f, 255 / 256))) <= 1 / 256 + 1e-6


def test_softmax_division_by_row_reciprocal(ck):
    """The C kernel divides by one reciprocal per row with a one-step correction (32-bit for rows summing below
    2^32, 64-bit beyond): the same quotient as the twin's division for any table (not only monotone exp
    tables: every rounding case of the reciprocal), short and long rows,
    and sums whose quotient lands exactly on an integer (a table entry of 0 next to the maximum's 2^24)."""
    rng = np.random.default_rng(51)
    for cols in (1, 2, 3, 8, 17, 255, 4000):
        table = rng.integers(0, (1 << 24) + 1, 256).astype(np.uint32)
        table[0] = 1 << 24
        table[rng.integers(1, 256, 20)] = 0
        x = i8(rng, (max(2, 3000 // cols), cols))
        eq(ck.softmax_s8(x, table), softmax.softmax_s8(x, table))


def test_softmax_s16(ck):
    """The int16 softmax (int16 in, Q0.15 out): C and twin bit for bit on random scales, shapes and values (all
    equal, extremes), and within 2^-14 of float softmax of the int16 input."""
    rng = np.random.default_rng(52)
    for k in range(60):
        scale = float(np.exp(rng.uniform(math.log(1e-5), math.log(1e-2))))
        hi, lo = softmax.exp16_tables(scale)
        x = i16(rng, (int(rng.integers(1, 6)), int(rng.integers(1, 700 if k % 10 else 5000))))
        want = softmax.softmax_s16(x, hi, lo)
        got = np.zeros_like(x)
        ck.lib.edgec_softmax_s16(ctypes.byref(make("edgec_softmax_params", dict(rows=x.shape[0], cols=x.shape[1]))),
                                 ptr(x), ptr(hi), ptr(lo), ptr(got))
        np.testing.assert_array_equal(got, want)
        z = scale * (x.astype(np.float64) - x.max(axis=1, keepdims=True))
        f = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        assert np.abs(want / 32768.0 - np.minimum(f, 32767 / 32768)).max() <= 2.0 ** -14


@pytest.mark.parametrize("seed", range(6))
def test_log_softmax(ck, seed):
    (p, s_in, s_out, x, et, lt), _ = log_softmax_resize_cases(seed)
    out = np.zeros(x.size, np.int8)
    ck.lib.edgec_log_softmax_s8(ctypes.byref(make("edgec_log_softmax_params", p)), ptr(x), ptr(et), ptr(lt), ptr(out))
    want = softmax.log_softmax_s8(p, et, lt, x)
    assert np.array_equal(out, want)
    z = x.reshape(3, -1).astype(np.float64) * s_in           # and it is a log-softmax
    ref = z - z.max(1, keepdims=True) - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
    assert np.max(np.abs((want.reshape(3, -1).astype(np.float64) - 60) * s_out - np.clip(ref, (-128 - 60) * s_out, 0))) \
        <= s_out + 0.01


def test_log_softmax_s16(ck):
    """The int16 LogSoftmax of an int16 tail (edgec/ops/softmax/log_softmax16.py): C and twin bit for bit on random scales,
    shapes (up to its 4095 values per row) and values (all equal, extremes), parameters as its quantizer makes them;
    within 2 output steps of the float log-softmax of the int16 input where that lies on the output grid."""
    rng = np.random.default_rng(53)
    for k in range(60):
        rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 300 if k % 10 else 4096))
        s_in = float(np.exp(rng.uniform(math.log(1e-5), math.log(1e-2))))
        x = i16(rng, (rows, cols))
        if k % 7 == 0:
            x[0] = x[0, 0]                                     # a row of equal scores: -ln(cols) everywhere
        z = s_in * (x.astype(np.float64) - x.max(axis=1, keepdims=True))
        f = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        s_out = float(rng.choice([1.0, 0.25])) * max(-f.min(), 1e-3) / 32767
        op = Op("log_softmax", "ls", ("x",), "y", attrs=dict(rows=rows, cols=cols))
        log_softmax16.quantize(op, [Tensor("x", x.shape, "x", s_in, 0)], Tensor("y", x.shape, "y", s_out, 0),
                               softmax.exp16_tables)
        want = log_softmax16.run(op, [x])
        got = np.zeros(x.size, np.int16)
        ck.lib.edgec_log_softmax_s16(ctypes.byref(make("edgec_log_softmax16_params", op.params)), ptr(x),
                                     ptr(op.arrays["exp_hi"]), ptr(op.arrays["exp_lo"]), ptr(got))
        np.testing.assert_array_equal(got, want, err_msg=str(k))
        inside = f.reshape(-1) >= -32767 * s_out            # (s_out a quarter of the range: some values clip)
        err, f_in = np.abs(want * s_out - f.reshape(-1))[inside], np.abs(f.reshape(-1)[inside])
        assert not inside.any() or err.max() <= 2 * s_out + 2e-4 * f_in.max(), k
