"""The fast 16x8 convolutions (edgec/ops/conv/s16.py, runtime_c/fast/edgec_conv2d_fast_s16.c and
edgec_depthwise_conv2d_fast_s16.c) against the NumPy twin of TFLite's 16x8 reference (run_conv16), bit for bit,
on the portable path and on the Arm DSP path (intrinsics emulated), and the bound that keeps their int32 sums exact."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from ckernels import act16, as_c, i16, make, ptr, requant_params16, window
from edgec.ir import Op
from edgec.ops.conv import s16
from edgec.ops.conv.twins import run_conv16


def case(rng, depthwise: bool, extreme: bool = False, pointwise: bool = False):
    """A random 16x8 conv (or depthwise) op with an int64 bias, and its int16 input; pointwise: a 1x1, stride-1,
    unpadded convolution of channels a multiple of 4 (read in place)."""
    while True:
        in_h, in_w = (int(v) for v in rng.integers(1, 10, size=2))
        win = window(rng, in_h, in_w)
        if pointwise:
            win = dict(k_h=1, k_w=1, stride_h=1, stride_w=1, dil_h=1, dil_w=1, pad_top=0, pad_left=0, out_h=in_h,
                       out_w=in_w)
        if win is not None:
            break
    in_c = 2 * int(rng.integers(1, 6)) if depthwise else int(rng.integers(1, 10))
    in_c = 4 * int(rng.integers(1, 5)) if pointwise else in_c
    out_c = in_c if depthwise else int(rng.integers(1, 10))
    lo, hi = act16(rng)
    p = dict(win, in_h=in_h, in_w=in_w, in_c=in_c, out_c=out_c, input_zp=0, output_zp=0, act_min=lo, act_max=hi,
             depth_multiplier=1)
    shape = (win["k_h"], win["k_w"], out_c) if depthwise else (out_c, win["k_h"], win["k_w"], in_c)
    w = (rng.choice(np.array([-128, 127], np.int8), size=shape) if extreme
         else rng.integers(-127, 128, size=shape, dtype=np.int8))
    taps = win["k_h"] * win["k_w"] * (1 if depthwise else in_c)
    acc_scale = 20000.0 * 70 * math.sqrt(taps)
    bias = rng.integers(-int(acc_scale), int(acc_scale) + 1, size=out_c).astype(np.int64)
    # a small scale ratio takes the one-multiply requantization (SMMULR), a large one the two-word shift
    mult, shift = requant_params16(rng, out_c, acc_scale if rng.random() < 0.6 else acc_scale / 4000)
    op = Op("depthwise_conv2d" if depthwise else "conv2d", "c", ("x",), "y", params=p,
            arrays={"weights": w, "bias": bias, "mult": mult, "shift": shift})
    x = np.full((in_h, in_w, in_c), -32768, np.int16) if extreme else i16(rng, (in_h, in_w, in_c))
    return op, x


def run_c(lib, op, x) -> np.ndarray:
    kernel = s16.DEPTHWISE if op.kind == "depthwise_conv2d" else s16.CONV2D
    low = kernel.lowering(op)
    assert low is not None
    p = low.params
    got = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int16)
    scratch = np.zeros(max(low.scratch_bytes // 2, 1) + 8, np.int16)
    args = [ptr(as_c(low.arrays["fw"], np.uint32)), ptr(as_c(low.arrays["rq16"], np.int32))]
    args += [ptr(got)] if kernel is s16.DEPTHWISE else [ptr(scratch), ptr(got)]     # the depthwise: no scratch
    getattr(lib, kernel.name)(ctypes.byref(make(s16.STRUCT, dict(p))), ptr(as_c(x, np.int16)), *args)
    return got


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("path", ["ck", "ck_dsp"])
def test_fast_s16_is_the_16x8_reference(request, path, depthwise):
    lib = request.getfixturevalue(path).lib
    rng = np.random.default_rng(40 + depthwise)
    forms = set()
    places = set()
    for i in range(80):
        op, x = case(rng, depthwise, extreme=i % 10 == 9, pointwise=not depthwise and i % 4 == 1)
        assert np.array_equal(run_c(lib, op, x), run_conv16(op, [x])), op.params
        forms |= {int(t) == 0 for t in s16.records(op, np.zeros((op.params["out_c"], 1)))[2::3]}
        places.add(not depthwise and s16.CONV2D.lowering(op).params["in_place"] == 1)
    assert forms == {True, False}         # both requantizations ran
    assert places == ({True, False} if not depthwise else {False})      # and both ways of reading the pixels


def test_fast_s16_declines_what_int32_cannot_hold():
    """A layer whose worst-case sum could leave int32 (here 64 taps of -128 times 32768 plus a bias) stays on the
    reference kernel's int64 sum; so does an int32-bias layer (TFLite's wrapping ConvPerChannel<int32_t>)."""
    rng = np.random.default_rng(3)
    op, _ = case(rng, False)
    p = dict(op.params, in_c=256, k_h=2, k_w=2)
    w = np.full((p["out_c"], 2, 2, 256), -128, np.int8)      # 1024 * 128 * 32768 = 2^32
    big = Op("conv2d", "c", ("x",), "y", params=p, arrays={**op.arrays, "weights": w})
    assert s16.CONV2D.lowering(big) is None
    w[...] = 0
    w[:, 0, 0, :4] = 127                                     # small: taken
    assert s16.CONV2D.lowering(Op("conv2d", "c", ("x",), "y", params=p, arrays={**op.arrays, "weights": w}))
    b32 = Op("conv2d", "c", ("x",), "y", params=p,
             arrays={**op.arrays, "weights": w, "bias": op.arrays["bias"].astype(np.int32)})
    assert s16.CONV2D.lowering(b32) is None
    assert s16.records(big, np.zeros((p["out_c"], 1), np.int8)) is not None
    huge = Op("conv2d", "c", ("x",), "y", params=p, arrays={**op.arrays, "bias": np.full(p["out_c"], 1 << 31)})
    assert s16.records(huge, np.zeros((p["out_c"], 1), np.int8)) is None
    tiny = Op("conv2d", "c", ("x",), "y", params=p, arrays={**op.arrays, "shift": np.full(p["out_c"], -17)})
    assert s16.records(tiny, np.zeros((p["out_c"], 1), np.int8)) is None     # a total shift of 32


def test_fast_s16_depthwise_needs_an_even_channel_count():
    op, _ = case(np.random.default_rng(5), True)
    p = dict(op.params, in_c=3, out_c=3)
    w = np.ones((p["k_h"], p["k_w"], 3), np.int8)
    odd = Op("depthwise_conv2d", "c", ("x",), "y", params=p, arrays={**op.arrays, "weights": w,
             "bias": op.arrays["bias"][:1].repeat(3), "mult": op.arrays["mult"][:1].repeat(3),
             "shift": op.arrays["shift"][:1].repeat(3)})
    assert s16.DEPTHWISE.lowering(odd) is None


@pytest.mark.parametrize("path", ["ck", "ck_dsp"])
def test_fast_s16_fully_connected_is_the_16x8_reference(request, path):
    """edgec_fully_connected_fast_s16 (edgec/ops/dense.py FAST_16, the convolution's 1x1 case) against the 16x8
    fully connected twin of one row and of several."""
    from edgec.ops import dense
    lib = request.getfixturevalue(path).lib
    rng = np.random.default_rng(9)
    for i in range(40):
        rows, n_in, n_out = int(rng.integers(1, 6)), int(rng.integers(1, 40)), int(rng.integers(1, 12))
        lo, hi = act16(rng)
        p = dict(in_features=n_in, out_features=n_out, input_zp=0, output_zp=0, act_min=lo, act_max=hi, rows=rows)
        acc_scale = 20000.0 * 70 * math.sqrt(n_in)
        arrays = {"weights": rng.integers(-127, 128, size=(n_out, n_in), dtype=np.int8),
                  "bias": rng.integers(-int(acc_scale), int(acc_scale) + 1, size=n_out).astype(np.int64)}
        arrays["mult"], arrays["shift"] = requant_params16(rng, n_out, acc_scale if i % 2 else acc_scale / 4000)
        op = Op("fully_connected_rows", "fc", ("x",), "y", params=p, arrays=arrays)
        x = i16(rng, (rows, n_in))
        low = dense.FAST_16.lowering(op)
        got = np.zeros((rows, n_out), np.int16)
        scratch = np.zeros(low.scratch_bytes // 2 + 8, np.int16)
        getattr(lib, dense.FAST_16.name)(ctypes.byref(make(dense.FAST_16.struct, dict(low.params))),
                                         ptr(as_c(x, np.int16)), ptr(as_c(low.arrays["fw"], np.uint32)),
                                         ptr(as_c(low.arrays["rq16"], np.int32)), ptr(scratch), ptr(got))
        assert np.array_equal(got, dense.run_fc_rows16(op, [x])), p
