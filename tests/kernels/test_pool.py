"""The pooling family (runtime_c/edgec_pool.c) against its NumPy twins (edgec/ops/pool.py), bit for bit. The fast global average
pooling runs in the generated models of tests/kernels/test_fast_models.py."""
from __future__ import annotations

import numpy as np
import pytest

from ckernels import act, act16, eq, i8, i16, window
from edgec.ops import pool


@pytest.mark.parametrize("kind", ["max_pool_s8", "avg_pool_s8"])
def test_pool_random(ck, kind):
    rng = np.random.default_rng(30 + len(kind))
    for _ in range(800):
        in_h, in_w = (int(v) for v in rng.integers(1, 14, size=2))
        win = window(rng, in_h, in_w, kmax=5, dilate=False)
        if win is None:
            continue
        for k in ("dil_h", "dil_w"):
            del win[k]
        lo, hi = act(rng, int(rng.integers(-128, 128)))
        p = dict(win, in_h=in_h, in_w=in_w, c=int(rng.integers(1, 10)), act_min=lo, act_max=hi)
        x = i8(rng, (in_h, in_w, p["c"]))
        eq(getattr(pool, kind)(p, x), getattr(ck, kind)(p, x))


@pytest.mark.parametrize("kind", ["max_pool_s8", "avg_pool_s8"])
def test_pool_random_large_shapes(ck, kind):
    """Images up to 64x64 and channels up to 128, windows up to 9x9."""
    rng = np.random.default_rng(40 + len(kind))
    done = 0
    while done < 60:
        in_h, in_w = (int(v) for v in rng.integers(1, 65, size=2))
        win = window(rng, in_h, in_w, kmax=9, dilate=False)
        c = int(rng.integers(1, 129 if in_h * in_w < 400 else 17))
        if win is None:
            continue
        for k in ("dil_h", "dil_w"):
            del win[k]
        lo, hi = act(rng, int(rng.integers(-128, 128)))
        p = dict(win, in_h=in_h, in_w=in_w, c=c, act_min=lo, act_max=hi)
        x = i8(rng, (in_h, in_w, c))
        eq(getattr(pool, kind)(p, x), getattr(ck, kind)(p, x))
        done += 1


def test_avg_pool_rounding(ck):
    """Half-way averages round away from zero (TFLite's (sum +- count/2) / count)."""
    p = dict(in_h=1, in_w=2, c=4, out_h=1, out_w=1, k_h=1, k_w=2, stride_h=1, stride_w=1,
             pad_top=0, pad_left=0, act_min=-128, act_max=127)
    x = np.array([[[1, -1, 2, -128], [0, 0, 1, -127]]], np.int8)
    want = np.array([[[1, -1, 2, -128]]], np.int8)  # 0.5->1, -0.5->-1, 1.5->2, -127.5->-128
    eq(pool.avg_pool_s8(p, x), want)
    eq(ck.avg_pool_s8(p, x), want)


@pytest.mark.parametrize("kind", ["max_pool", "avg_pool"])
def test_pool_s16_random(ck, kind):
    """The int16 pools (between two int16 layers): extremes of int16, padding, activation clamps."""
    rng = np.random.default_rng(50 + len(kind))
    done = 0
    while done < 400:
        in_h, in_w = (int(v) for v in rng.integers(1, 14, size=2))
        win = window(rng, in_h, in_w, kmax=5, dilate=False)
        if win is None:
            continue
        for k in ("dil_h", "dil_w"):
            del win[k]
        lo, hi = act16(rng)
        p = dict(win, in_h=in_h, in_w=in_w, c=int(rng.integers(1, 10)), act_min=lo, act_max=hi)
        x = i16(rng, (in_h, in_w, p["c"]))
        twin = pool.max_pool_s8 if kind == "max_pool" else pool.avg_pool_s8
        want, got = twin(p, x, np.int16), getattr(ck, f"{kind}_s16")(p, x)
        assert want.dtype == got.dtype == np.int16 and want.shape == got.shape
        np.testing.assert_array_equal(want, got)
        done += 1
