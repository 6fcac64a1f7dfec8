"""Bit-exactness of runtime_c/edgec_kernels.c against edgec/kernels_ref.py (and TFLite's scalar formulas)."""
from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from edgec import kernels_ref as K

RUNTIME = Path(__file__).resolve().parent.parent / "runtime_c"
KERNELS_C = sorted(str(p) for p in RUNTIME.glob("*.c"))   # the portable kernel families
WARN = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

SHIM = r"""
#include "edgec_nn.h"
int32_t edgec_test_requantize64(int64_t acc, int32_t mult, int32_t shift)
{
    return edgec_requantize64(acc, mult, shift);
}
void edgec_test_requantize(int32_t n, const int32_t *acc, const int32_t *mult, const int32_t *shift,
                           int32_t *out)
{
    int32_t i;
    for (i = 0; i < n; ++i) out[i] = edgec_requantize(acc[i], mult[i], shift[i]);
}
"""

I32 = ctypes.c_int32


def _struct(name, fields):
    return type(name, (ctypes.Structure,), {"_fields_": [(f, I32) for f in fields]})


CONV_FIELDS = ("in_h in_w in_c out_h out_w out_c k_h k_w stride_h stride_w dil_h dil_w pad_top pad_left "
               "input_zp output_zp act_min act_max depth_multiplier").split()
FC_FIELDS = "in_features out_features input_zp output_zp act_min act_max".split()
POOL_FIELDS = "in_h in_w c out_h out_w k_h k_w stride_h stride_w pad_top pad_left act_min act_max".split()
ADD_FIELDS = ("n input1_zp input1_mult input1_shift input2_zp input2_mult input2_shift output_mult "
              "output_shift output_zp left_shift act_min act_max").split()
ConvP, FcP, PoolP, AddP = (_struct(n, f) for n, f in
                           [("ConvP", CONV_FIELDS), ("FcP", FC_FIELDS), ("PoolP", POOL_FIELDS), ("AddP", ADD_FIELDS)])


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def _mk(cls, p):
    return cls(*[int(p[f]) for f, _ in cls._fields_])


class CKernels:
    """ctypes front-end with the same signatures as kernels_ref."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))

    def _wb(self, name, p, cls, x, w, bias, mult, shift, out_shape):
        x, w = (np.ascontiguousarray(a, np.int8) for a in (x, w))
        bias, mult, shift = (np.ascontiguousarray(a, np.int32) for a in (bias, mult, shift))
        out = np.zeros(out_shape, np.int8)
        getattr(self.lib, name)(ctypes.byref(_mk(cls, p)), _ptr(x), _ptr(w), _ptr(bias), _ptr(mult), _ptr(shift), _ptr(out))
        return out

    def conv2d_s8(self, p, *a):
        return self._wb("edgec_conv2d_s8", p, ConvP, *a, (p["out_h"], p["out_w"], p["out_c"]))

    def depthwise_conv2d_s8(self, p, *a):
        return self._wb("edgec_depthwise_conv2d_s8", p, ConvP, *a, (p["out_h"], p["out_w"], p["out_c"]))

    def fully_connected_s8(self, p, *a):
        return self._wb("edgec_fully_connected_s8", p, FcP, *a, (p["out_features"],))

    def _pool(self, name, p, x):
        x = np.ascontiguousarray(x, np.int8)
        out = np.zeros((p["out_h"], p["out_w"], p["c"]), np.int8)
        getattr(self.lib, name)(ctypes.byref(_mk(PoolP, p)), _ptr(x), _ptr(out))
        return out

    def max_pool_s8(self, p, x):
        return self._pool("edgec_max_pool_s8", p, x)

    def avg_pool_s8(self, p, x):
        return self._pool("edgec_avg_pool_s8", p, x)

    def add_s8(self, p, a, b):
        a, b = (np.ascontiguousarray(v, np.int8) for v in (a, b))
        out = np.zeros_like(a)
        self.lib.edgec_add_s8(ctypes.byref(_mk(AddP, dict(p, n=a.size))), _ptr(a), _ptr(b), _ptr(out))
        return out

    def softmax_s8(self, x, table):
        x = np.ascontiguousarray(x, np.int8)
        table = np.ascontiguousarray(table, np.uint32)
        out = np.zeros_like(x)
        self.lib.edgec_softmax_s8(I32(x.shape[0]), I32(x.shape[1]), _ptr(table), _ptr(x), _ptr(out))
        return out

    def transpose_s8(self, x, perm):
        x = np.ascontiguousarray(x, np.int8)
        r = x.ndim
        dims = np.array([1] * (4 - r) + list(x.shape), np.int32)
        perm4 = np.array(list(range(4 - r)) + [int(q) + 4 - r for q in perm], np.int32)
        out = np.zeros(dims[perm4], np.int8)
        self.lib.edgec_transpose_s8(_ptr(dims), _ptr(perm4), _ptr(x), _ptr(out))
        return out.reshape([x.shape[q] for q in perm])

    def requantize(self, acc, mult, shift):
        acc = np.ascontiguousarray(acc, np.int32)
        mult = np.ascontiguousarray(np.broadcast_to(mult, acc.shape), np.int32)
        shift = np.ascontiguousarray(np.broadcast_to(shift, acc.shape), np.int32)
        out = np.zeros_like(acc)
        self.lib.edgec_test_requantize(I32(acc.size), _ptr(acc), _ptr(mult), _ptr(shift), _ptr(out))
        return out


@pytest.fixture(scope="session")
def ck(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernels_so")
    (d / "shim.c").write_text(SHIM)
    so = d / "libedgec_kernels.so"
    cmd = ["gcc", "-O2", *WARN, "-fPIC", "-shared", f"-I{RUNTIME}", *KERNELS_C, str(d / "shim.c"), "-o", str(so)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    return CKernels(so)


# ---------------------------------------------------------------- random cases

def _i8(rng, shape, extreme=None):
    mode = extreme if extreme is not None else rng.choice(4, p=[0.08, 0.08, 0.09, 0.75])
    if mode == 0:
        return np.full(shape, -128, np.int8)
    if mode == 1:
        return np.full(shape, 127, np.int8)
    if mode == 2:
        return rng.choice(np.array([-128, 127], np.int8), size=shape)
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def _requant_params(rng, n, acc_scale=None):
    """Per-channel (mult, shift); with acc_scale ~ typical |acc|, outputs mostly land inside int8."""
    if acc_scale is None:
        reals = np.exp(rng.uniform(math.log(1e-5), math.log(0.5), size=n))
    else:
        reals = np.exp(rng.uniform(math.log(1.0), math.log(60.0), size=n)) / acc_scale
    ms = [K.quantize_multiplier(float(r)) for r in reals]
    return np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)


def _act(rng, zp):
    c = rng.choice(3, p=[0.6, 0.2, 0.2])
    if c == 0:
        return -128, 127
    if c == 1:
        return max(zp, -128), 127
    lo = int(rng.integers(-128, 128))
    return lo, int(rng.integers(lo, 128))


def _window(rng, in_h, in_w, kmax=5, dilate=True):
    """Random window geometry (asymmetric padding, strides 1/2, dilation); None if it does not fit."""
    k_h, k_w = (int(v) for v in rng.integers(1, kmax + 1, size=2))
    s_h, s_w = (int(v) for v in rng.integers(1, 3, size=2))
    d_h, d_w = (int(v) for v in rng.integers(1, 4, size=2)) if dilate and rng.random() < 0.4 else (1, 1)
    pt, pb = (int(v) for v in rng.integers(0, (k_h - 1) * d_h + 1, size=2))
    pl, pr = (int(v) for v in rng.integers(0, (k_w - 1) * d_w + 1, size=2))
    out_h = (in_h + pt + pb - (k_h - 1) * d_h - 1) // s_h + 1
    out_w = (in_w + pl + pr - (k_w - 1) * d_w - 1) // s_w + 1
    if out_h < 1 or out_w < 1:
        return None
    return dict(k_h=k_h, k_w=k_w, stride_h=s_h, stride_w=s_w, dil_h=d_h, dil_w=d_w,
                pad_top=pt, pad_left=pl, out_h=out_h, out_w=out_w)


def _conv_case(rng, depthwise):
    while True:
        in_h, in_w = (int(v) for v in rng.integers(1, 13, size=2))
        win = _window(rng, in_h, in_w)
        if win is not None:
            break
    in_c = int(rng.integers(1, 10))
    dm = int(rng.integers(1, 4)) if depthwise else 1
    out_c = in_c * dm if depthwise else int(rng.integers(1, 10))
    in_zp, out_zp = (int(v) for v in rng.integers(-128, 128, size=2))
    lo, hi = _act(rng, out_zp)
    p = dict(win, in_h=in_h, in_w=in_w, in_c=in_c, out_c=out_c, input_zp=in_zp, output_zp=out_zp,
             act_min=lo, act_max=hi, depth_multiplier=dm)
    x = _i8(rng, (in_h, in_w, in_c))
    w = _i8(rng, (win["k_h"], win["k_w"], out_c) if depthwise else (out_c, win["k_h"], win["k_w"], in_c))
    taps = win["k_h"] * win["k_w"] * (1 if depthwise else in_c)
    acc_scale = 5500.0 * math.sqrt(taps)
    bias = rng.integers(-int(acc_scale), int(acc_scale) + 1, size=out_c).astype(np.int32)
    mult, shift = _requant_params(rng, out_c, acc_scale if rng.random() < 0.8 else None)
    return p, x, w, bias, mult, shift


def _eq(a, b):
    assert a.dtype == b.dtype == np.int8 and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- scalar numerics

def _tflite_requantize(x, m, s):
    """Literal scalar port of TFLite MultiplyByQuantizedMultiplier on Python ints."""
    left, right = max(s, 0), max(-s, 0)
    x = ((x << left) + (1 << 31)) % (1 << 32) - (1 << 31)
    if x == m == -(1 << 31):
        hi = (1 << 31) - 1
    else:
        ab = x * m
        t = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
        hi = t // (1 << 31) if t >= 0 else -((-t) // (1 << 31))
    mask = (1 << right) - 1
    return (hi >> right) + (1 if (hi & mask) > (mask >> 1) + (1 if hi < 0 else 0) else 0)


def test_quantize_multiplier():
    assert K.quantize_multiplier(0.0) == (0, 0)
    assert K.quantize_multiplier(0.5) == (1 << 30, 0)
    assert K.quantize_multiplier(1.0) == (1 << 30, 1)
    assert K.quantize_multiplier(1.0 - 2.0 ** -40) == (1 << 30, 1)  # q_fixed rounds up to 2**31
    assert K.quantize_multiplier(2.0 ** -40) == (0, 0)
    assert K.quantize_multiplier(3.0 * 2 ** 20) == (3 << 29, 22)
    # half away from zero: q*2**31 = 2**30 + 0.5 -> 2**30 + 1
    assert K.quantize_multiplier((2 ** 30 + 0.5) / 2 ** 31) == (2 ** 30 + 1, 0)
    rng = np.random.default_rng(0)
    for r in np.exp(rng.uniform(math.log(1e-9), math.log(1e8), size=500)):
        m, s = K.quantize_multiplier(float(r))
        assert (1 << 30) <= m < (1 << 31) and -31 <= s <= 30
        assert abs(m * 2.0 ** (s - 31) - r) <= r * 2.0 ** -30


def test_requantize_matches_tflite_and_c(ck):
    rng = np.random.default_rng(1)
    n = 20000
    acc = rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64).astype(np.int32)
    acc[: n // 2] >>= rng.integers(0, 31, size=n // 2).astype(np.int32)  # many magnitudes
    mult = rng.integers(1 << 30, 1 << 31, size=n, dtype=np.int64).astype(np.int32)
    shift = rng.integers(-31, 31, size=n).astype(np.int32)
    acc[:8] = [-(1 << 31), (1 << 31) - 1, 0, -1, 1, -(1 << 31), 3 << 29, -(3 << 29)]
    mult[:8] = [-(1 << 31), (1 << 31) - 1, 1 << 30, 1 << 30, 1 << 30, -(1 << 31), 1 << 30, 1 << 30]
    shift[:8] = [0, 0, -5, -1, -1, 0, -31, -31]
    # exact halves at the final rounding (x * 2**30 / 2**31 = x/2, then / 2**right)
    acc[8:40] = np.arange(-16, 16)
    mult[8:40] = 1 << 30
    shift[8:40] = -2
    ref = K.requantize(acc, mult, shift)
    np.testing.assert_array_equal(ref, ck.requantize(acc, mult, shift))
    for i in range(0, n, 7):
        assert int(ref[i]) == _tflite_requantize(int(acc[i]), int(mult[i]), int(shift[i])), i
    # per-channel broadcasting over the last axis
    a2 = acc[:600].reshape(20, 30)
    np.testing.assert_array_equal(K.requantize(a2, mult[:30], shift[:30]),
                                  ck.requantize(a2.ravel(), np.tile(mult[:30], 20), np.tile(shift[:30], 20)).reshape(20, 30))


# ---------------------------------------------------------------- kernels, random

@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_random(ck, depthwise):
    rng = np.random.default_rng(10 + depthwise)
    name = "depthwise_conv2d_s8" if depthwise else "conv2d_s8"
    for _ in range(1000):
        case = _conv_case(rng, depthwise)
        _eq(getattr(K, name)(*case), getattr(ck, name)(*case))


def test_conv_implicit_crop(ck):
    """out_h/out_w smaller than the padding allows: bottom/right rows simply unused."""
    rng = np.random.default_rng(3)
    p = dict(in_h=9, in_w=7, in_c=3, out_h=2, out_w=3, out_c=4, k_h=3, k_w=3, stride_h=2, stride_w=1,
             dil_h=1, dil_w=2, pad_top=1, pad_left=0, input_zp=-3, output_zp=5, act_min=-128, act_max=127,
             depth_multiplier=1)
    x, w = _i8(rng, (9, 7, 3), 3), _i8(rng, (4, 3, 3, 3), 3)
    bias = rng.integers(-1000, 1000, size=4).astype(np.int32)
    mult, shift = _requant_params(rng, 4)
    _eq(K.conv2d_s8(p, x, w, bias, mult, shift), ck.conv2d_s8(p, x, w, bias, mult, shift))


def test_conv_matches_float_math():
    """Sanity of the reference itself: exact integer conv == float conv of (x - zp) * w before requant."""
    rng = np.random.default_rng(4)
    p, x, w, bias, _, _ = _conv_case(rng, False)
    p.update(output_zp=0, act_min=-128, act_max=127)
    one = np.full(p["out_c"], 1 << 30, np.int32)  # multiplier 0.5 * 2**1 = 1.0 exactly
    got = K.conv2d_s8(p, x, w, np.zeros_like(bias), one, np.ones_like(one)).astype(np.int64)
    xz = np.pad(x.astype(np.int64) - p["input_zp"], ((p["pad_top"], 40), (p["pad_left"], 40), (0, 0)))
    exp = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for oy in range(p["out_h"]):
        for ox in range(p["out_w"]):
            for ky in range(p["k_h"]):
                for kx in range(p["k_w"]):
                    v = xz[oy * p["stride_h"] + ky * p["dil_h"], ox * p["stride_w"] + kx * p["dil_w"]]
                    exp[oy, ox] += w[:, ky, kx, :].astype(np.int64) @ v
    np.testing.assert_array_equal(got, np.clip(exp, -128, 127))


def test_fully_connected_random(ck):
    rng = np.random.default_rng(20)
    for _ in range(500):
        n_in, n_out = int(rng.integers(1, 300)), int(rng.integers(1, 40))
        zi, zo = (int(v) for v in rng.integers(-128, 128, size=2))
        lo, hi = _act(rng, zo)
        p = dict(in_features=n_in, out_features=n_out, input_zp=zi, output_zp=zo, act_min=lo, act_max=hi)
        acc_scale = 5500.0 * math.sqrt(n_in)
        mult, shift = _requant_params(rng, n_out, acc_scale if rng.random() < 0.8 else None)
        case = (p, _i8(rng, n_in), _i8(rng, (n_out, n_in)),
                rng.integers(-int(acc_scale), int(acc_scale) + 1, size=n_out).astype(np.int32), mult, shift)
        _eq(K.fully_connected_s8(*case), ck.fully_connected_s8(*case))


@pytest.mark.parametrize("kind", ["max_pool_s8", "avg_pool_s8"])
def test_pool_random(ck, kind):
    rng = np.random.default_rng(30 + len(kind))
    for _ in range(800):
        in_h, in_w = (int(v) for v in rng.integers(1, 14, size=2))
        win = _window(rng, in_h, in_w, kmax=5, dilate=False)
        if win is None:
            continue
        for k in ("dil_h", "dil_w"):
            del win[k]
        lo, hi = _act(rng, int(rng.integers(-128, 128)))
        p = dict(win, in_h=in_h, in_w=in_w, c=int(rng.integers(1, 10)), act_min=lo, act_max=hi)
        x = _i8(rng, (in_h, in_w, p["c"]))
        _eq(getattr(K, kind)(p, x), getattr(ck, kind)(p, x))


def test_avg_pool_rounding(ck):
    """Half-way averages round away from zero (TFLite's (sum +- count/2) / count)."""
    p = dict(in_h=1, in_w=2, c=4, out_h=1, out_w=1, k_h=1, k_w=2, stride_h=1, stride_w=1,
             pad_top=0, pad_left=0, act_min=-128, act_max=127)
    x = np.array([[[1, -1, 2, -128], [0, 0, 1, -127]]], np.int8)
    want = np.array([[[1, -1, 2, -128]]], np.int8)  # 0.5->1, -0.5->-1, 1.5->2, -127.5->-128
    _eq(K.avg_pool_s8(p, x), want)
    _eq(ck.avg_pool_s8(p, x), want)


def test_add_random(ck):
    rng = np.random.default_rng(40)
    for _ in range(300):
        s1, s2, so = np.exp(rng.uniform(math.log(1e-3), math.log(1.0), size=3))
        z1, z2, zo = (int(v) for v in rng.integers(-128, 128, size=3))
        p = K.add_params(float(s1), z1, float(s2), z2, float(so), zo)
        p["act_min"], p["act_max"] = _act(rng, zo)
        n = int(rng.integers(1, 200))
        a, b = _i8(rng, n), _i8(rng, n)
        got = K.add_s8(p, a, b)
        _eq(got, ck.add_s8(p, a, b))
        if p["act_min"] == -128 and p["act_max"] == 127:  # close to the float sum
            f = (s1 * (a.astype(float) - z1) + s2 * (b.astype(float) - z2)) / so + zo
            assert np.all(np.abs(np.clip(np.round(f), -128, 127) - got) <= 1)


def test_softmax_random(ck):
    rng = np.random.default_rng(50)
    for _ in range(100):
        scale = float(np.exp(rng.uniform(math.log(1e-3), math.log(1.0))))
        table = K.softmax_table(scale, beta=float(rng.choice([1.0, 0.5, 2.0])))
        assert table[0] == 1 << 24 and np.all(np.diff(table.astype(np.int64)) <= 0)
        x = _i8(rng, (int(rng.integers(1, 8)), int(rng.integers(1, 300))))
        got = K.softmax_s8(x, table)
        _eq(got, ck.softmax_s8(x, table))
    # uniform rows: exactly (512 + cols) // (2 * cols) - 128, incl. exact halves (cols 2, 512) rounding up
    table = K.softmax_table(0.05)
    for cols in (1, 2, 3, 5, 64, 255, 256, 511, 512, 513, 1000):
        x = np.full((2, cols), np.int8(int(rng.integers(-128, 128))))
        want = np.full(x.shape, min((512 + cols) // (2 * cols) - 128, 127), np.int8)
        _eq(K.softmax_s8(x, table), want)
        _eq(ck.softmax_s8(x, table), want)
    # close to float softmax
    scale = 0.1
    x = rng.integers(-128, 128, size=(4, 10), dtype=np.int8)
    xi = x.astype(np.int64)
    f = np.exp(scale * (xi - xi.max(axis=1, keepdims=True)))
    f = f / f.sum(axis=1, keepdims=True)
    got = (K.softmax_s8(x, K.softmax_table(scale)).astype(float) + 128) / 256
    assert np.max(np.abs(got - np.minimum(f, 255 / 256))) <= 1 / 256 + 1e-6


def test_transpose_random(ck):
    rng = np.random.default_rng(60)
    for _ in range(200):
        r = int(rng.integers(1, 5))
        x = _i8(rng, tuple(int(v) for v in rng.integers(1, 7, size=r)), 3)
        perm = rng.permutation(r)
        want = np.transpose(x, perm)
        _eq(K.transpose_s8(x, perm), want)
        _eq(ck.transpose_s8(x, perm), want)


def test_reference_speed():
    rng = np.random.default_rng(70)
    p = dict(in_h=96, in_w=96, in_c=8, out_h=96, out_w=96, out_c=8, k_h=3, k_w=3, stride_h=1, stride_w=1,
             dil_h=1, dil_w=1, pad_top=1, pad_left=1, input_zp=-5, output_zp=3, act_min=-128, act_max=127,
             depth_multiplier=1)
    x, w = _i8(rng, (96, 96, 8), 3), _i8(rng, (8, 3, 3, 8), 3)
    mult, shift = _requant_params(rng, 8)
    t = time.perf_counter()
    K.conv2d_s8(p, x, w, np.zeros(8, np.int32), mult, shift)
    K.depthwise_conv2d_s8(p, x, w[0], np.zeros(8, np.int32), mult, shift)
    assert time.perf_counter() - t < 1.0


# ---------------------------------------------------------------- other compilers, sanitizers

def test_builds_with_clang_and_arm(tmp_path):
    builds = []
    if shutil.which("clang"):
        builds.append(["clang", "-O2", *WARN, "-Wshadow", "-Wcast-qual"])
    if shutil.which("arm-none-eabi-gcc"):
        builds.append(["arm-none-eabi-gcc", "-O2", *WARN, "-mcpu=cortex-m4", "-mthumb"])
    if not builds:
        pytest.skip("neither clang nor arm-none-eabi-gcc installed")
    for cmd in builds:
        for src in KERNELS_C:
            r = subprocess.run([*cmd, f"-I{RUNTIME}", "-c", src, "-o", str(tmp_path / "k.o")],
                               capture_output=True, text=True)
            assert r.returncode == 0 and not r.stderr, (cmd[0], r.stderr)


def _c_array(name, ctype, a):
    vals = ",".join(str(int(v)) for v in np.asarray(a).ravel()) or "0"
    return f"static const {ctype} {name}[] = {{{vals}}};\n"


def _c_params(ctype, name, p, fields):
    return f"static const {ctype} {name} = {{{', '.join(str(int(p[f])) for f in fields)}}};\n"


def test_sanitizers(tmp_path):
    """clang -fsanitize=address,undefined on a driver that runs every kernel on fixed data."""
    if not shutil.which("clang"):
        pytest.skip("clang not installed")
    rng = np.random.default_rng(80)
    src, body, expected = ['#include <stdio.h>\n#include "edgec_nn.h"\n'], [], []

    def emit(out_name, n, want):
        src.append(f"static int8_t {out_name}[{n}];\n")
        body.append(f"dump({out_name}, {n});")
        expected.append(np.asarray(want, np.int8).ravel())

    for i, dw in enumerate([False, True, False, True]):
        p, x, w, bias, mult, shift = _conv_case(rng, dw)
        src += [_c_params("edgec_conv_params", f"cp{i}", p, CONV_FIELDS), _c_array(f"cx{i}", "int8_t", x),
                _c_array(f"cw{i}", "int8_t", w), _c_array(f"cb{i}", "int32_t", bias),
                _c_array(f"cm{i}", "int32_t", mult), _c_array(f"cs{i}", "int32_t", shift)]
        fn = "edgec_depthwise_conv2d_s8" if dw else "edgec_conv2d_s8"
        want = (K.depthwise_conv2d_s8 if dw else K.conv2d_s8)(p, x, w, bias, mult, shift)
        body.append(f"{fn}(&cp{i}, cx{i}, cw{i}, cb{i}, cm{i}, cs{i}, co{i});")
        emit(f"co{i}", want.size, want)
    pf = dict(in_features=37, out_features=5, input_zp=7, output_zp=-9, act_min=-128, act_max=127)
    fm, fs = _requant_params(rng, 5)
    fx, fw, fb = _i8(rng, 37, 3), _i8(rng, (5, 37), 3), rng.integers(-999, 999, size=5).astype(np.int32)
    src += [_c_params("edgec_fully_connected_params", "fp", pf, FC_FIELDS), _c_array("fx", "int8_t", fx), _c_array("fw", "int8_t", fw),
            _c_array("fb", "int32_t", fb), _c_array("fm", "int32_t", fm), _c_array("fs", "int32_t", fs)]
    body.append("edgec_fully_connected_s8(&fp, fx, fw, fb, fm, fs, fo);")
    emit("fo", 5, K.fully_connected_s8(pf, fx, fw, fb, fm, fs))
    pp = dict(in_h=7, in_w=6, c=3, out_h=4, out_w=3, k_h=3, k_w=3, stride_h=2, stride_w=2, pad_top=1,
              pad_left=1, act_min=-100, act_max=120)
    px = _i8(rng, (7, 6, 3), 3)
    src += [_c_params("edgec_pool_params", "pp", pp, POOL_FIELDS), _c_array("px", "int8_t", px)]
    body += ["edgec_max_pool_s8(&pp, px, mo);", "edgec_avg_pool_s8(&pp, px, ao);"]
    emit("mo", 36, K.max_pool_s8(pp, px))
    emit("ao", 36, K.avg_pool_s8(pp, px))
    pa = dict(K.add_params(0.05, 3, 0.02, -7, 0.06, 1), n=50)
    a, b = _i8(rng, 50, 2), _i8(rng, 50, 3)
    src += [_c_params("edgec_add_params", "pa", pa, ADD_FIELDS), _c_array("aa", "int8_t", a), _c_array("ab", "int8_t", b)]
    body.append("edgec_add_s8(&pa, aa, ab, ad);")
    emit("ad", 50, K.add_s8(pa, a, b))
    tab, sx = K.softmax_table(0.07), _i8(rng, (3, 11), 3)
    src += [_c_array("tab", "uint32_t", tab), _c_array("sx", "int8_t", sx)]
    body.append("edgec_softmax_s8(3, 11, tab, sx, so);")
    emit("so", 33, K.softmax_s8(sx, tab))
    tx = _i8(rng, (2, 3, 4, 5), 3)
    src += [_c_array("tx", "int8_t", tx), "static const int32_t td[4] = {2, 3, 4, 5}, tp[4] = {3, 1, 0, 2};\n"]
    body.append("edgec_transpose_s8(td, tp, tx, to);")
    emit("to", 120, K.transpose_s8(tx, [3, 1, 0, 2]))
    src.append("static void dump(const int8_t *v, int n) { int i; for (i = 0; i < n; ++i) printf(\"%d \", v[i]); printf(\"\\n\"); }\n")
    src.append("int main(void) {\n" + "\n".join(body) + "\nreturn 0;\n}\n")
    (tmp_path / "driver.c").write_text("".join(src))
    exe = tmp_path / "driver"
    cmd = ["clang", "-O1", "-g", *WARN, "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
           "-fno-omit-frame-pointer", f"-I{RUNTIME}", *KERNELS_C, str(tmp_path / "driver.c"), "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.strip().split("\n")
    assert len(lines) == len(expected)
    for line, want in zip(lines, expected):
        np.testing.assert_array_equal(np.array(line.split(), np.int64), want.astype(np.int64))
