"""The int4 fast convolutions (edgec/ops/conv/im2col.py, depthwise3x3.py;
runtime_c/fast/edgec_conv2d_im2col.c, edgec_depthwise_conv2d_3x3.c):
lowered the way a build lowers them, run on both inner-loop paths (portable C, and the Arm DSP path with its
intrinsics emulated in C) on random shapes with odd tap counts (words half full), padding, strides, narrowed
activation ranges, guard bytes after scratch and output; bit for bit with the NumPy twin of the int4 layer."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import conv_case, i8, make, ptr, requant_params, window
from edgec.ir import Op
from edgec.ops import select
from edgec.fixedpoint import scheme

GUARD, CANARY = 64, 0x5A


@pytest.fixture(params=["portable", "dsp-emulated"])
def lib(request):
    return request.getfixturevalue("ck" if request.param == "portable" else "ck_dsp").lib


def _guarded(n: int):
    raw = np.full(n + GUARD + 16, CANARY, np.int8)
    start = (-raw.ctypes.data) % 16
    return raw[start:start + n], raw[start:start + n + GUARD]


def _run(lib, kind, p, x, w, bias, mult, shift):
    """(the lowered kernel's name, its output, the int4 layer's NumPy twin output), or None if not lowered."""
    op = Op(kind, "case", ("x",), "y", params=p,
            arrays=dict(weights4=scheme.pack_int4(w), bias=bias, mult=mult, shift=shift))
    low = select.fast(op)
    if low is None:
        return None
    want = select.twin(op)(op, [x]).reshape(-1)
    out, out_full = _guarded(want.size)
    scratch, scratch_full = _guarded(low.scratch_bytes)
    lib[low.kernel.name](ctypes.byref(make(low.struct, low.params)), ptr(np.ascontiguousarray(x, np.int8)),
                         ptr(np.ascontiguousarray(low.arrays["fw"], np.uint32)),
                         ptr(np.ascontiguousarray(low.arrays["rq"], np.int32)), ptr(scratch), ptr(out))
    assert np.all(scratch_full[scratch.size:] == CANARY) and np.all(out_full[out.size:] == CANARY), low.kernel.name
    return low.kernel.name, out.copy(), want


def test_conv_im2col_s4_bit_exact(lib):
    rng = np.random.default_rng(1704)
    ran = 0
    for _ in range(120):
        p, x, _, bias, mult, shift = conv_case(rng, False, max_c=24, max_macs=60000)
        p = dict(p, dil_h=1, dil_w=1, depth_multiplier=1)
        w = rng.integers(-8, 8, size=(p["out_c"], p["k_h"], p["k_w"], p["in_c"])).astype(np.int8)
        if (p["out_h"] - 1) * p["stride_h"] + p["k_h"] > p["in_h"] + p["k_h"] - 1 or \
                (p["out_w"] - 1) * p["stride_w"] + p["k_w"] > p["in_w"] + p["k_w"] - 1:
            continue            # (conv_case drew the window with dilation)
        got = _run(lib, "conv2d", p, x, w, bias, mult, shift)
        if got is None:
            continue
        kernel, out, want = got
        assert kernel == "edgec_conv2d_im2col_s4"
        assert np.array_equal(out, want), p
        ran += 1
    assert ran > 60


def test_depthwise_3x3_s4_bit_exact(lib):
    rng = np.random.default_rng(1705)
    ran = 0
    for _ in range(80):
        c = 4 * int(rng.integers(1, 17))
        in_h, in_w = (int(v) for v in rng.integers(1, 14, size=2))
        s = int(rng.integers(1, 3))
        win = None
        while win is None or win["k_h"] != 3 or win["k_w"] != 3:
            win = window(rng, in_h, in_w, kmax=3, dilate=False)
            if win is not None:
                win = dict(win, stride_w=s, stride_h=s)
                win["out_h"] = (in_h + 2 * win["pad_top"] - 3) // s + 1
                win["out_w"] = (in_w + 2 * win["pad_left"] - 3) // s + 1
                win = win if win["out_h"] > 0 and win["out_w"] > 0 else None
        zi, zo = (int(v) for v in rng.integers(-128, 128, size=2))
        p = dict(win, in_h=in_h, in_w=in_w, in_c=c, out_c=c, input_zp=zi, output_zp=zo, act_min=-128 + int(
            rng.integers(0, 40)), act_max=127, depth_multiplier=1)
        x, w = i8(rng, (in_h, in_w, c)), rng.integers(-8, 8, size=(3, 3, c)).astype(np.int8)
        mult, shift = requant_params(rng, c, 5500.0 * 3)
        bias = rng.integers(-16000, 16000, size=c).astype(np.int32)
        got = _run(lib, "depthwise_conv2d", p, x, w, bias, mult, shift)
        if got is None:
            continue
        kernel, out, want = got
        assert kernel == "edgec_depthwise_conv2d_3x3_s4"
        assert np.array_equal(out, want), p
        ran += 1
    assert ran > 50
