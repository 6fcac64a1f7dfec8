"""The reductions (runtime_c/edgec_reduce.c) against its NumPy twin (edgec/ops/reduce.py), bit for bit: sum/mean, max, min, argmax,
argmin (ties: first or last)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import make, ptr
from edgec.ops import reduce
from edgec.fixedpoint import scheme

rng = np.random.default_rng(3)


@pytest.mark.parametrize("seed", range(12))
def test_reduce(ck, seed):
    r = np.random.default_rng(seed)
    outer, n, inner = (int(v) for v in r.integers(1, 6, 3))
    kind = seed % 5
    mult, shift = scheme.quantize_multiplier(float(r.uniform(0.01, 2)) / (n if kind == 0 else 1))
    p = dict(outer=outer, n=n, inner=inner, kind=kind, select_last=seed % 2, input_zp=int(r.integers(-10, 10)),
             mult=mult, shift=shift, output_zp=int(r.integers(-10, 10)), act_min=-128, act_max=127)
    x = rng.integers(-3, 3, outer * n * inner).astype(np.int8)   # ties for argmax/argmin
    out = np.zeros(outer * inner, np.int8)
    ck.lib.edgec_reduce_s8(ctypes.byref(make("edgec_reduce_params", p)), ptr(x), ptr(out))
    assert np.array_equal(out, reduce.reduce_s8(p, x))


def test_a_float_models_mean_rounds_once_to_the_nearest_level(ck):
    """The mean of a float .onnx model (a global average pool with its own output scale, 3x finer than its
    input's: tv_mobilenet_v3_small_96's squeeze-excitation pools, 9 values, multiplier 0.38) is requantized once.
    TFLite's normalized multiplier (shift -1) rounded the product to half levels and then again, putting a quarter
    of the means a level above the nearest (ONNX Runtime's float requantization of the same int8 values); one
    rounding gives the nearest level, in the NumPy twin and the C kernel alike."""
    from edgec.ir import Tensor
    x_t = Tensor("x", (1, 3, 3, 64), "x", 0.011730838640063418, -96)
    out_t = Tensor("m", (1, 1, 1, 64), "m", 0.00344348058981054, -42)
    op = reduce.mean_of("pool", "x", "m", 1, 9, 64)
    reduce.quantize_reduce(op, [x_t], out_t)
    x = np.random.default_rng(7).integers(-125, -45, 9 * 64).astype(np.int8)   # means inside the output grid
    mean = ((x.astype(np.float64) - x_t.zero_point) * x_t.scale).reshape(9, 64).mean(0)
    nearest = np.clip(np.round(mean / out_t.scale) + out_t.zero_point, -128, 127)
    got = reduce.reduce_s8(op.params, x)
    assert np.array_equal(got, nearest)
    out = np.zeros(64, np.int8)
    ck.lib.edgec_reduce_s8(ctypes.byref(make("edgec_reduce_params", op.params)), ptr(x), ptr(out))
    assert np.array_equal(out, got)


@pytest.mark.parametrize("n", [1, 3, 4, 7, 36, 577])
def test_reduce_mean_four_values_a_pass(ck, n):
    """The mean's sum four values a pass and then the rest (a global average pool: n pixels, inner channels), on
    the int8 extremes and zero points at the int8 limits."""
    r = np.random.default_rng(n)
    inner, outer = int(r.integers(1, 20)), int(r.integers(1, 3))
    mult, shift = scheme.quantize_multiplier(float(r.uniform(0.2, 1.5)) / n)
    for zp, x in ((-128, np.full(outer * n * inner, 127, np.int8)), (127, np.full(outer * n * inner, -128, np.int8)),
                  (int(r.integers(-128, 128)), r.integers(-128, 128, outer * n * inner).astype(np.int8))):
        p = dict(outer=outer, n=n, inner=inner, kind=0, select_last=0, input_zp=zp, mult=mult, shift=shift,
                 output_zp=int(r.integers(-128, 128)), act_min=-128, act_max=127)
        out = np.zeros(outer * inner, np.int8)
        ck.lib.edgec_reduce_s8(ctypes.byref(make("edgec_reduce_params", p)), ptr(x), ptr(out))
        assert np.array_equal(out, reduce.reduce_s8(p, x))
        out16 = np.zeros(outer * inner, np.int16)
        x16 = x.astype(np.int16) * 200
        ck.lib.edgec_reduce_s16(ctypes.byref(make("edgec_reduce_params", dict(p, input_zp=0, output_zp=0,
                                                                              act_min=-32768, act_max=32767))),
                                ptr(x16), ptr(out16))
        assert np.array_equal(out16, reduce.reduce_s8(dict(p, input_zp=0, output_zp=0, act_min=-32768,
                                                           act_max=32767), x16, np.int16))


def test_an_int16_mean_clamps_to_int16_not_int8(ck):
    """quantize_reduce of an int16 mean (a QDQ file's 16x8 ReduceMean, TFLite's 16x8 MEAN) gives int16's clamp:
    it clamped to [-128, 127] whatever the output type, so every int16 mean outside it came out saturated."""
    from edgec.ir import Tensor
    x_t = Tensor("x", (1, 1, 8, 16), "x", 1 / 4096, 0, dtype="int16")
    out_t = Tensor("m", (1, 1, 1, 16), "m", 1 / 8192, 0, dtype="int16")
    op = reduce.mean_of("pool", "x", "m", 1, 8, 16)
    reduce.quantize_reduce(op, [x_t], out_t)
    assert (op.params["act_min"], op.params["act_max"]) == (-32768, 32767)
    x = np.random.default_rng(11).integers(-12000, 12000, 8 * 16).astype(np.int16)
    mean = x.astype(np.float64).reshape(8, 16).mean(0) * 2       # on the output's grid (half the step)
    got = reduce.reduce_s8(op.params, x, np.int16)
    assert np.abs(got.astype(np.float64) - mean).max() <= 1 and np.abs(got).max() > 127
    out = np.zeros(16, np.int16)
    ck.lib.edgec_reduce_s16(ctypes.byref(make("edgec_reduce_params", op.params)), ptr(x), ptr(out))
    assert np.array_equal(out, got)
