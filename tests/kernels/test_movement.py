"""The data movement family (runtime_c/edgec_movement.c) against its NumPy twins, bit for bit: transpose, the
separable index map (slice, pad, gather, ...) and concatenation."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import eq, i8, i8_uniform, make, ptr
from edgec.ops import concat, movement


def test_transpose_random(ck):
    rng = np.random.default_rng(60)
    for _ in range(200):
        r = int(rng.integers(1, 5))
        x = i8(rng, tuple(int(v) for v in rng.integers(1, 7, size=r)), 3)
        perm = rng.permutation(r)
        want = np.transpose(x, perm)
        eq(movement.transpose_s8(x, perm), want)
        eq(ck.transpose_s8(x, perm), want)


@pytest.mark.parametrize("seed", range(12))
def test_remap_and_concat(ck, seed):
    r = np.random.default_rng(seed)
    n_in = int(r.integers(5, 40))
    dims = [int(d) for d in r.integers(1, 4, 6)]
    tables = [np.where(r.random(d) < 0.2, movement.INVALID, r.integers(0, n_in // 6 + 1, d)) for d in dims]
    start = np.cumsum([0] + dims[:-1]).tolist()
    p = dict(dims=dims, start=start, pad_value=int(r.integers(-128, 128)))
    offsets = np.concatenate(tables).astype(np.int32)
    x = i8_uniform(r, n_in)
    out = np.zeros(int(np.prod(dims)), np.int8)
    ck.lib.edgec_remap_s8(ctypes.byref(make("edgec_remap_params", p)), ptr(x), ptr(offsets), ptr(out))
    assert np.array_equal(out, movement.remap_s8(p, offsets, x))
    outer, c1, c2 = (int(v) for v in r.integers(1, 5, 3))
    table = i8_uniform(r, 256)
    got, want = np.zeros(outer * (c1 + c2), np.int8), np.zeros(outer * (c1 + c2), np.int8)
    for k, (chunk, off, t) in enumerate(((c1, 0, None), (c2, c1, table))):
        q = dict(outer=outer, chunk=chunk, out_stride=c1 + c2, out_offset=off)
        xi = i8_uniform(r, outer * chunk)
        ck.lib.edgec_concat_part_s8(ctypes.byref(make("edgec_concat_params", q)), ptr(xi),
                                    ptr(t) if t is not None else None, ptr(got))
        concat.concat_part_s8(q, t, xi, want)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(8))
def test_remap_moves_runs_of_rows(ck, seed):
    """A remap whose innermost table reads a row (PAD, SLICE, nearest resize of NHWC: the kernel copies runs of
    rows and fills padded ones): random paddings, crops, repeats and steps of an image, int8 and int16."""
    from ckernels import i16

    r = np.random.default_rng(300 + seed)
    for _ in range(20):
        h, w, c = (int(v) for v in r.integers(1, 9, 3))
        strides = [h * w * c, w * c, c, 1]
        tables = []
        for n, s in zip((2, h, w), strides[:3]):
            kind = r.integers(0, 3)
            if kind == 0:            # padded both sides
                j = np.arange(n + int(r.integers(0, 4)) + int(r.integers(0, 4))) - int(r.integers(0, 4))
            elif kind == 1:          # a crop, maybe strided
                j = np.arange(int(r.integers(0, n)), n, int(r.integers(1, 3)))
            else:                    # nearest upsampling: each index repeated
                j = np.repeat(np.arange(n), int(r.integers(1, 3)))
            tables.append(np.where((j >= 0) & (j < n), j * s, movement.INVALID))
        lo = int(r.integers(0, c))
        tables.append(np.arange(lo, c) if r.random() < 0.8 else r.permutation(c))    # a row, or not
        dims = [1, 1] + [len(t) for t in tables]
        tables = [np.zeros(1, np.int64)] * 2 + tables
        p = dict(dims=dims, start=np.cumsum([0] + dims[:-1]).tolist(), pad_value=int(r.integers(-128, 128)))
        offsets = np.concatenate(tables).astype(np.int32)
        for dtype, fn, x in ((np.int8, ck.lib.edgec_remap_s8, i8_uniform(r, 2 * h * w * c)),
                             (np.int16, ck.lib.edgec_remap_s16, i16(r, (2 * h * w * c,)))):
            got = np.zeros(int(np.prod(dims)), dtype)
            fn(ctypes.byref(make("edgec_remap_params", p)), ptr(x), ptr(offsets), ptr(got))
            assert np.array_equal(got, movement.remap_s8(p, offsets, x, dtype))


@pytest.mark.parametrize("seed", range(6))
def test_transpose_and_remap_s16(ck, seed):
    """The int16 transpose and remap (between two int16 layers) against their twins, int16 extremes included."""
    from ckernels import i16

    r = np.random.default_rng(100 + seed)
    for _ in range(30):
        rank = int(r.integers(1, 5))
        x = i16(r, tuple(int(v) for v in r.integers(1, 7, size=rank)))
        perm = r.permutation(rank)
        dims = np.array([1] * (4 - rank) + list(x.shape), np.int32)
        perm4 = np.array(list(range(4 - rank)) + [int(q) + 4 - rank for q in perm], np.int32)
        got = np.zeros(int(np.prod(dims)), np.int16)
        ck.lib.edgec_transpose_s16(ctypes.byref(make("edgec_transpose_params", dict(dims=dims, perm=perm4))),
                                   ptr(np.ascontiguousarray(x)), ptr(got))
        want = movement.transpose_s8(x, perm, np.int16)
        assert want.dtype == np.int16 and np.array_equal(got, want.reshape(-1))
    n_in = int(r.integers(5, 40))
    dims = [int(d) for d in r.integers(1, 4, 6)]
    tables = [np.where(r.random(d) < 0.2, movement.INVALID, r.integers(0, n_in // 6 + 1, d)) for d in dims]
    p = dict(dims=dims, start=np.cumsum([0] + dims[:-1]).tolist(), pad_value=int(r.integers(-32768, 32768)))
    offsets = np.concatenate(tables).astype(np.int32)
    x = i16(r, (n_in,))
    got = np.zeros(int(np.prod(dims)), np.int16)
    ck.lib.edgec_remap_s16(ctypes.byref(make("edgec_remap_params", p)), ptr(x), ptr(offsets), ptr(got))
    want = movement.remap_s8(p, offsets, x, np.int16)
    assert want.dtype == np.int16 and np.array_equal(got, want)


def test_concat_s16(ck):
    """The int16 concat between two int16 layers (edgec/ops/concat.py): parts copied (mult 0) or requantized to
    the output's grid (scale ratios 1/1000 to 2, int16 extremes saturating), C and twin bit for bit."""
    from ckernels import i16
    from edgec.fixedpoint import scheme
    rng = np.random.default_rng(44)
    for _ in range(60):
        outer, c1, c2, c3 = (int(v) for v in rng.integers(1, 7, 4))
        total = c1 + c2 + c3
        got, want = np.zeros(outer * total, np.int16), np.zeros(outer * total, np.int16)
        off = 0
        for chunk in (c1, c2, c3):
            q = dict(outer=outer, chunk=chunk, out_stride=total, out_offset=off)
            mult, shift = (0, 0) if rng.random() < 0.3 else scheme.quantize_multiplier(
                float(np.exp(rng.uniform(np.log(1e-3), np.log(2.0)))))
            xi = i16(rng, outer * chunk)
            ck.lib.edgec_concat_part_s16(ctypes.byref(make("edgec_concat_params", q)), ptr(xi), ctypes.c_int32(mult),
                                         ctypes.c_int32(shift), ptr(got))
            concat.concat_part_s16(q, mult, shift, xi, want)
            off += chunk
        np.testing.assert_array_equal(got, want)
