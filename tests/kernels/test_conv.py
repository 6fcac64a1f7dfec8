"""The convolution family (runtime_c/edgec_conv.c, fast/edgec_conv2d_im2col.c, fast/edgec_depthwise_conv2d_3x3*.c)
against its NumPy twins, bit for bit:
conv2d and depthwise (int8 and 16x8) and grouped conv on random shapes, and the fast depthwise 3x3 through
generated models on both inner-loop paths (the fast im2col conv: tests/kernels/test_fast_models.py)."""
from __future__ import annotations

import ctypes
import math
import time

import numpy as np
import pytest

from ckernels import (act16, as_c, conv_case, eq, group_conv_fc_rows_matmul_cases, i8, i16, make, ptr,
                      requant_params, requant_params16, window)
from conftest import SANITIZE, check_generated_c
from synthetic_models import quantized
from edgec.ops import conv
from edgec import pipeline
from edgec.fixedpoint import scheme

PATHS = {"portable": ("-O2",), "dsp-emulated": ("-O2", "-DEDGEC_EMULATE_DSP")}


# ---------------------------------------------------------------- int8

@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_random(ck, depthwise):
    rng = np.random.default_rng(10 + depthwise)
    name = "depthwise_conv2d_s8" if depthwise else "conv2d_s8"
    for _ in range(1000):
        case = conv_case(rng, depthwise)
        eq(getattr(conv, name)(*case), getattr(ck, name)(*case))


@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_random_large_shapes(ck, depthwise):
    """Beyond the small sweep: images up to 48x48, channels up to 128 (mostly not multiples of 4)."""
    rng = np.random.default_rng(12 + depthwise)
    name = "depthwise_conv2d_s8" if depthwise else "conv2d_s8"
    seen = []
    for _ in range(60):
        case = conv_case(rng, depthwise, max_hw=48, max_c=128, max_macs=400_000)
        seen.append((max(case[0]["in_h"], case[0]["in_w"]), case[0]["out_c"]))
        eq(getattr(conv, name)(*case), getattr(ck, name)(*case))
    assert max(hw for hw, _ in seen) > 30 and max(c for _, c in seen) > 64


def test_conv_implicit_crop(ck):
    """out_h/out_w smaller than the padding allows: bottom/right rows simply unused."""
    rng = np.random.default_rng(3)
    p = dict(in_h=9, in_w=7, in_c=3, out_h=2, out_w=3, out_c=4, k_h=3, k_w=3, stride_h=2, stride_w=1,
             dil_h=1, dil_w=2, pad_top=1, pad_left=0, input_zp=-3, output_zp=5, act_min=-128, act_max=127,
             depth_multiplier=1)
    x, w = i8(rng, (9, 7, 3), 3), i8(rng, (4, 3, 3, 3), 3)
    bias = rng.integers(-1000, 1000, size=4).astype(np.int32)
    mult, shift = requant_params(rng, 4)
    eq(conv.conv2d_s8(p, x, w, bias, mult, shift), ck.conv2d_s8(p, x, w, bias, mult, shift))


def test_conv_matches_float_math():
    """Sanity of the reference itself: exact integer conv == float conv of (x - zp) * w before requant."""
    rng = np.random.default_rng(4)
    p, x, w, bias, _, _ = conv_case(rng, False)
    p.update(output_zp=0, act_min=-128, act_max=127)
    one = np.full(p["out_c"], 1 << 30, np.int32)  # multiplier 0.5 * 2**1 = 1.0 exactly
    got = conv.conv2d_s8(p, x, w, np.zeros_like(bias), one, np.ones_like(one)).astype(np.int64)
    xz = np.pad(x.astype(np.int64) - p["input_zp"], ((p["pad_top"], 40), (p["pad_left"], 40), (0, 0)))
    exp = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for oy in range(p["out_h"]):
        for ox in range(p["out_w"]):
            for ky in range(p["k_h"]):
                for kx in range(p["k_w"]):
                    v = xz[oy * p["stride_h"] + ky * p["dil_h"], ox * p["stride_w"] + kx * p["dil_w"]]
                    exp[oy, ox] += w[:, ky, kx, :].astype(np.int64) @ v
    np.testing.assert_array_equal(got, np.clip(exp, -128, 127))


def test_reference_speed():
    rng = np.random.default_rng(70)
    p = dict(in_h=96, in_w=96, in_c=8, out_h=96, out_w=96, out_c=8, k_h=3, k_w=3, stride_h=1, stride_w=1,
             dil_h=1, dil_w=1, pad_top=1, pad_left=1, input_zp=-5, output_zp=3, act_min=-128, act_max=127,
             depth_multiplier=1)
    x, w = i8(rng, (96, 96, 8), 3), i8(rng, (8, 3, 3, 8), 3)
    mult, shift = requant_params(rng, 8)
    t = time.perf_counter()
    conv.conv2d_s8(p, x, w, np.zeros(8, np.int32), mult, shift)
    conv.depthwise_conv2d_s8(p, x, w[0], np.zeros(8, np.int32), mult, shift)
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize("seed", range(6))
def test_group_conv(ck, seed):
    (p, x, w, bias, mult, shift), _, _ = group_conv_fc_rows_matmul_cases(seed)
    out = np.zeros(3 * 2 * p["out_c"], np.int8)
    ck.lib.edgec_group_conv2d_s8(ctypes.byref(make("edgec_group_conv2d_params", p)), ptr(x), ptr(w), ptr(bias),
                                 ptr(mult), ptr(shift), ptr(out))
    assert np.array_equal(out, conv.group_conv2d_s8(p, x, w, bias, mult, shift).reshape(-1))


# ---------------------------------------------------------------- 16x8

@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_s16_bit_exact(ck, depthwise):
    rng = np.random.default_rng(11 + depthwise)
    for _ in range(60):
        in_h, in_w = (int(v) for v in rng.integers(1, 10, size=2))
        win = window(rng, in_h, in_w)
        if win is None:
            continue
        in_c = int(rng.integers(1, 8))
        dm = int(rng.integers(1, 3)) if depthwise else 1
        out_c = in_c * dm if depthwise else int(rng.integers(1, 8))
        lo, hi = act16(rng)
        p = dict(win, in_h=in_h, in_w=in_w, in_c=in_c, out_c=out_c, input_zp=0, output_zp=0, act_min=lo,
                 act_max=hi, depth_multiplier=dm)
        x = i16(rng, (in_h, in_w, in_c))
        w = rng.integers(-127, 128, size=(win["k_h"], win["k_w"], out_c) if depthwise else
                         (out_c, win["k_h"], win["k_w"], in_c), dtype=np.int8)
        taps = win["k_h"] * win["k_w"] * (1 if depthwise else in_c)
        acc_scale = 20000.0 * 70 * math.sqrt(taps)
        bias = rng.integers(-int(acc_scale), int(acc_scale) + 1, size=out_c).astype(np.int64)
        mult, shift = requant_params16(rng, out_c, acc_scale)
        fn = conv.depthwise_conv2d_s16 if depthwise else conv.conv2d_s16
        want = fn(p, x, w, bias, mult, shift)
        got = np.zeros((p["out_h"], p["out_w"], out_c), np.int16)
        name = "edgec_depthwise_conv2d_s16" if depthwise else "edgec_conv2d_s16"
        getattr(ck.lib, name)(ctypes.byref(make("edgec_conv_params", p)), ptr(as_c(x, np.int16)),
                              ptr(as_c(w, np.int8)), ptr(as_c(bias, np.int64)), ptr(as_c(mult, np.int32)),
                              ptr(as_c(shift, np.int32)), ptr(got))
        assert np.array_equal(got, want), p


def test_16x8_conv_is_far_closer_to_float_than_int8():
    """The point of the escape hatch: int16 activations lose ~256x less than int8 ones."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 6, 4)) * np.array([0.05, 1, 20, 0.5])    # one wide channel
    w = rng.standard_normal((5, 3, 3, 4)) * 0.3
    p = dict(in_h=6, in_w=6, in_c=4, out_h=6, out_w=6, out_c=5, k_h=3, k_w=3, stride_h=1, stride_w=1, dil_h=1,
             dil_w=1, pad_top=1, pad_left=1, input_zp=0, output_zp=0, act_min=-32768, act_max=32767,
             depth_multiplier=1)
    from edgec.ops.conv import pad_windows as _pad_windows
    tap = _pad_windows(x, p, 0.0)
    y = sum(tap(i, j) @ w[:, i, j, :].T for i in range(3) for j in range(3))
    s_w = np.abs(w).max(axis=(1, 2, 3)) / 127
    wq = np.round(w / s_w[:, None, None, None]).astype(np.int8)
    wd = wq * s_w[:, None, None, None]    # compare against float with the same int8 weights: activations only
    y = sum(tap(i, j) @ wd[:, i, j, :].T for i in range(3) for j in range(3))
    errs = {}
    for bits in (8, 16):
        top = 2 ** (bits - 1) - 1
        s_in, s_out = np.abs(x).max() / top, np.abs(y).max() / top
        xq = np.round(x / s_in)
        ms = [scheme.quantize_multiplier(s_in * sw / s_out) for sw in s_w]
        mult, shift = np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)
        if bits == 16:
            q = conv.conv2d_s16(p, xq.astype(np.int16), wq, np.zeros(5, np.int64), mult, shift)
        else:
            q = conv.conv2d_s8(dict(p, act_min=-128, act_max=127), xq.astype(np.int8), wq, np.zeros(5, np.int32), mult,
                            shift)
        errs[bits] = np.sum((q * s_out - y) ** 2) / np.sum(y ** 2)
    assert errs[16] * 1000 < errs[8], errs


# ---------------------------------------------------------------- fast: depthwise 3x3

@pytest.mark.parametrize("path", sorted(PATHS))
def test_depthwise_3x3_strides_orientations_and_clamps_sanitized(path, tmp_path):
    """A chain of depthwise 3x3 layers covering the fast kernel's cases: stride 1 and 2, a wide image
    (swept along its rows) and tall ones (swept down the columns, weights transposed), symmetric,
    asymmetric and no padding, odd output lengths (the single-output tail), 12 channels (3 groups of
    4), and a narrowed activation range (the clamping requantization loop), under ASan/UBSan."""
    import onnx
    from onnx import helper
    from conftest import make_model
    rng = np.random.default_rng(11)
    c = 12
    layers = [(1, [1, 1, 1, 1]),      # 6x13 -> 6x13, wide
              (2, [0, 0, 1, 1]),      # -> 3x6 (TF 'SAME' stride 2)
              (1, [2, 0, 2, 0]),      # -> 5x4, tall
              (2, [1, 0, 1, 0]),      # -> 3x1, tall, stride 2
              (1, [1, 1, 1, 1])]      # -> 3x1
    nodes, inits, prev = [], {}, "x"
    for i, (stride, pads) in enumerate(layers):
        inits[f"w{i}"] = rng.normal(0, .5, (c, 1, 3, 3)).astype(np.float32)
        inits[f"b{i}"] = rng.normal(0, .2, c).astype(np.float32)
        nodes.append(helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"d{i}"], group=c,
                                      strides=[stride, stride], pads=pads))
        nodes.append(helper.make_node("Relu", [f"d{i}"], [f"r{i}"]))
        prev = f"r{i}"
    nodes[-1] = helper.make_node("Identity", [f"d{len(layers) - 1}"], ["y"])
    model = make_model(nodes, ("x", [1, c, 6, 13]), ("y", [1, c, 3, 1]), inits)
    onnx.checker.check_model(model)
    graph, x = quantized(model, (c, 6, 13), n=16)
    dws = [op for op in graph.ops if op.kind == "depthwise_conv2d"]
    assert len(dws) == len(layers)
    dws[1].params.update(act_min=-100, act_max=20)   # narrower than int8: the C and the reference clamp
    graph = pipeline.lower(graph)
    lowered = [op.lowering for op in graph.ops if op.kind == "depthwise_conv2d"]
    # the default (--optimize speed) variant: requantization fused into the store (edgec/ops/conv/depthwise3x3.py)
    assert all(low.kernel.name == "edgec_depthwise_conv2d_3x3_fused_s8" for low in lowered)
    assert [low.params["stride"] for low in lowered] == [1, 2, 1, 2, 1]
    # input (rows, cols) in the sweep orientation: the tall images' are transposed
    assert [(low.params["rows"], low.params["cols"]) for low in lowered] == [(6, 13), (6, 13), (6, 3), (4, 5),
                                                                                    (1, 3)]
    check_generated_c(graph, x, tmp_path, flags=SANITIZE + PATHS[path][1:])
