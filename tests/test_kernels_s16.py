"""16x8 kernels (int16 activations, int8 weights): runtime_c/edgec_kernels_s16.c against
edgec/kernels_ref_s16.py, bit for bit on random shapes and values, and against float."""
from __future__ import annotations

import ctypes
import math
import subprocess

import numpy as np
import pytest

from edgec import kernels_ref as K
from edgec import kernels_ref_s16 as K16
from test_kernels import KERNELS_C, RUNTIME, SHIM, WARN, ConvP, FcP, _mk, _ptr, _window

I32 = ctypes.c_int32


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    d = tmp_path_factory.mktemp("s16")
    so = d / "libs16.so"
    (d / "shim.c").write_text(SHIM)
    cmd = ["gcc", "-O2", *WARN, "-fPIC", "-shared", f"-I{RUNTIME}", *KERNELS_C, str(d / "shim.c"), "-o", str(so)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    return ctypes.CDLL(str(so))


def _c(a, t):
    return np.ascontiguousarray(a, t)


def _requant(rng, n, acc_scale):
    reals = np.exp(rng.uniform(math.log(100.0), math.log(30000.0), size=n)) / acc_scale
    ms = [K.quantize_multiplier(float(r)) for r in reals]
    return np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)


def _i16(rng, shape):
    mode = rng.choice(3, p=[0.1, 0.1, 0.8])
    if mode == 0:
        return np.full(shape, -32768, np.int16)
    if mode == 1:
        return rng.choice(np.array([-32768, 32767], np.int16), size=shape)
    return rng.integers(-32768, 32768, size=shape, dtype=np.int16)


def _act16(rng):
    if rng.random() < 0.6:
        return -32768, 32767
    lo = int(rng.integers(-32768, 1))
    return lo, int(rng.integers(max(lo, 0), 32768))


@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_s16_bit_exact(lib, depthwise):
    rng = np.random.default_rng(11 + depthwise)
    for _ in range(60):
        in_h, in_w = (int(v) for v in rng.integers(1, 10, size=2))
        win = _window(rng, in_h, in_w)
        if win is None:
            continue
        in_c = int(rng.integers(1, 8))
        dm = int(rng.integers(1, 3)) if depthwise else 1
        out_c = in_c * dm if depthwise else int(rng.integers(1, 8))
        lo, hi = _act16(rng)
        p = dict(win, in_h=in_h, in_w=in_w, in_c=in_c, out_c=out_c, input_zp=0, output_zp=0, act_min=lo,
                 act_max=hi, depth_multiplier=dm)
        x = _i16(rng, (in_h, in_w, in_c))
        w = rng.integers(-127, 128, size=(win["k_h"], win["k_w"], out_c) if depthwise else
                         (out_c, win["k_h"], win["k_w"], in_c), dtype=np.int8)
        taps = win["k_h"] * win["k_w"] * (1 if depthwise else in_c)
        acc_scale = 20000.0 * 70 * math.sqrt(taps)
        bias = rng.integers(-int(acc_scale), int(acc_scale) + 1, size=out_c).astype(np.int64)
        mult, shift = _requant(rng, out_c, acc_scale)
        fn = K16.depthwise_conv2d_s16 if depthwise else K16.conv2d_s16
        want = fn(p, x, w, bias, mult, shift)
        got = np.zeros((p["out_h"], p["out_w"], out_c), np.int16)
        name = "edgec_depthwise_conv2d_s16" if depthwise else "edgec_conv2d_s16"
        getattr(lib, name)(ctypes.byref(_mk(ConvP, p)), _ptr(_c(x, np.int16)), _ptr(_c(w, np.int8)),
                           _ptr(_c(bias, np.int64)), _ptr(_c(mult, np.int32)), _ptr(_c(shift, np.int32)), _ptr(got))
        assert np.array_equal(got, want), p


def test_fully_connected_and_conversions_bit_exact(lib):
    rng = np.random.default_rng(5)
    for _ in range(40):
        n_in, n_out = (int(v) for v in rng.integers(1, 64, size=2))
        lo, hi = _act16(rng)
        p = dict(in_features=n_in, out_features=n_out, input_zp=0, output_zp=0, act_min=lo, act_max=hi)
        x, w = _i16(rng, (n_in,)), rng.integers(-127, 128, size=(n_out, n_in), dtype=np.int8)
        acc_scale = 20000.0 * 70 * math.sqrt(n_in)
        bias = rng.integers(-int(acc_scale), int(acc_scale) + 1, size=n_out).astype(np.int64)
        mult, shift = _requant(rng, n_out, acc_scale)
        got = np.zeros(n_out, np.int16)
        lib.edgec_fully_connected_s16(ctypes.byref(_mk(FcP, p)), _ptr(x), _ptr(w), _ptr(bias), _ptr(mult),
                                      _ptr(shift), _ptr(got))
        assert np.array_equal(got, K16.fully_connected_s16(p, x, w, bias, mult, shift))
        # int8 <-> int16 at the boundary of an int16 region, both directions
        x8 = rng.integers(-128, 128, size=50, dtype=np.int8)
        zp = int(rng.integers(-128, 128))
        m, s = K.quantize_multiplier(float(np.exp(rng.uniform(math.log(1.0), math.log(256.0)))))
        up = np.zeros(50, np.int16)
        lib.edgec_requantize_s8_s16(I32(50), _ptr(x8), I32(zp), I32(m), I32(s), _ptr(up))
        assert np.array_equal(up, K16.requantize_s8_s16(x8, zp, m, s))
        m, s = K.quantize_multiplier(float(np.exp(rng.uniform(math.log(1 / 300.0), math.log(1.0)))))
        down = np.zeros(50, np.int8)
        x16 = _i16(rng, (50,))
        lib.edgec_requantize_s16_s8(I32(50), _ptr(x16), I32(zp), I32(m), I32(s), _ptr(down))
        assert np.array_equal(down, K16.requantize_s16_s8(x16, zp, m, s))


def test_requantize64_matches_the_real_multiplier(lib):
    rng = np.random.default_rng(9)
    acc = rng.integers(-(1 << 46), 1 << 46, size=2000, dtype=np.int64)
    for real in (3e-9, 1e-5, 0.3, 0.99, 5.0, 100.0):
        m, s = K.quantize_multiplier(real)
        want = K16.requantize64(acc, m, s)
        keep = np.abs(want) < 2**31 - 1
        got = np.array([lib.edgec_test_requantize64(ctypes.c_int64(int(a)), I32(m), I32(s)) for a in acc[keep][:200]])
        assert np.array_equal(got, want[keep][:200])
        assert np.all(np.abs(want[keep] - acc[keep] * real) <= np.abs(acc[keep] * real) * 2e-5 + 1), real


def test_16x8_conv_is_far_closer_to_float_than_int8(lib):
    """The point of the escape hatch: int16 activations lose ~256x less than int8 ones."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 6, 4)) * np.array([0.05, 1, 20, 0.5])    # one wide channel
    w = rng.standard_normal((5, 3, 3, 4)) * 0.3
    p = dict(in_h=6, in_w=6, in_c=4, out_h=6, out_w=6, out_c=5, k_h=3, k_w=3, stride_h=1, stride_w=1, dil_h=1,
             dil_w=1, pad_top=1, pad_left=1, input_zp=0, output_zp=0, act_min=-32768, act_max=32767,
             depth_multiplier=1)
    from edgec.kernels_ref import _pad_windows
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
        ms = [K.quantize_multiplier(s_in * sw / s_out) for sw in s_w]
        mult, shift = np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)
        if bits == 16:
            q = K16.conv2d_s16(p, xq.astype(np.int16), wq, np.zeros(5, np.int64), mult, shift)
        else:
            q = K.conv2d_s8(dict(p, act_min=-128, act_max=127), xq.astype(np.int8), wq, np.zeros(5, np.int32), mult,
                            shift)
        errs[bits] = np.sum((q * s_out - y) ** 2) / np.sum(y ** 2)
    assert errs[16] * 1000 < errs[8], errs
