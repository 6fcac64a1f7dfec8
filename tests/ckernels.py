"""The C runtime behind ctypes, for the kernel tests (tests/kernels/, tests/test_planner.py); not a test module.

`build_library` compiles every runtime file (runtime_c/*.c and fast/) plus a shim exporting the inline
requantization helpers of edgec_nn_support.h into one shared library, warning-free and under UBSan; the session
fixture `ck` (tests/conftest.py) holds it as a `CKernels`, whose methods have the NumPy twins' signatures
(edgec/ops/) and whose `.lib` calls any kernel directly. Parameter structs are built from the
layout edgec_nn.h itself declares (edgec/cheader.py). Below: the random cases the families' tests share.
"""
from __future__ import annotations

import ctypes
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

import hostcc
from edgec import cheader
from edgec.fixedpoint import scheme
from edgec.ops import softmax

RUNTIME = Path(__file__).resolve().parent.parent / "runtime_c"
WARN = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
I32 = ctypes.c_int32

SHIM = r"""
#include "edgec_nn_support.h"
void edgec_test_requantize(int32_t n, const int32_t *acc, const int32_t *mult, const int32_t *shift,
                           int32_t *out)
{
    int32_t i;
    for (i = 0; i < n; ++i) out[i] = edgec_requantize(acc[i], mult[i], shift[i]);
}
int32_t edgec_test_requantize64(int64_t acc, int32_t mult, int32_t shift)
{
    return edgec_requantize64(acc, mult, shift);
}
"""


def runtime_sources() -> list[str]:
    """Every .c file of the runtime a model library ships (the kernel families and fast/)."""
    return [str(RUNTIME / f) for f in cheader.runtime_files() if f.endswith(".c")]


def build_library(folder: Path, flags: tuple[str, ...] = ()) -> Path:
    """The runtime and the shim as one shared library (gcc -O2, -Wall -Wextra -Werror, UBSan); `flags` picks a
    fast-kernel path (-DEDGEC_EMULATE_DSP: the Arm DSP inner loops with their intrinsics emulated in C)."""
    (folder / "shim.c").write_text(SHIM)
    so = folder / "libedgec_runtime.so"
    return hostcc.build([*runtime_sources(), folder / "shim.c"], RUNTIME, so, "gcc",
                        ["-O2", *WARN, *flags, "-fPIC", "-fsanitize=undefined", "-fno-sanitize-recover=all",
                         f"-I{RUNTIME}"], link_flags=("-shared",))


# ---------------------------------------------------------------- parameter structs, pointers

@lru_cache(maxsize=None)
def struct(name: str) -> type:
    """A ctypes Structure with the fields of edgec_nn.h's `name` (int32_t, arrays as int32_t[n])."""
    fields = [(f, I32 * n if n > 1 else I32) for f, n in cheader.struct_fields(name)]
    return type(name, (ctypes.Structure,), {"_fields_": fields})


def make(name: str, p: dict):
    """The struct `name` filled from the dict p (keys beyond its fields are ignored)."""
    cls = struct(name)
    vals = []
    for field, typ in cls._fields_:
        v = p[field]
        vals.append(typ(*[int(i) for i in v]) if isinstance(v, (list, tuple, np.ndarray)) else int(v))
    return cls(*vals)


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


class CKernels:
    """ctypes front-end with the same signatures as the NumPy twins (edgec/ops/)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))

    def _wb(self, name, p, struct_name, x, w, bias, mult, shift, out_shape):
        x, w = (np.ascontiguousarray(a, np.int8) for a in (x, w))
        bias, mult, shift = (np.ascontiguousarray(a, np.int32) for a in (bias, mult, shift))
        out = np.zeros(out_shape, np.int8)
        getattr(self.lib, name)(ctypes.byref(make(struct_name, p)), ptr(x), ptr(w), ptr(bias), ptr(mult), ptr(shift),
                                ptr(out))
        return out

    def conv2d_s8(self, p, *a):
        return self._wb("edgec_conv2d_s8", p, "edgec_conv_params", *a, (p["out_h"], p["out_w"], p["out_c"]))

    def depthwise_conv2d_s8(self, p, *a):
        return self._wb("edgec_depthwise_conv2d_s8", p, "edgec_conv_params", *a, (p["out_h"], p["out_w"], p["out_c"]))

    def fully_connected_s8(self, p, *a):
        return self._wb("edgec_fully_connected_s8", p, "edgec_fully_connected_params", *a, (p["out_features"],))

    def _pool(self, name, p, x, dtype=np.int8):
        x = np.ascontiguousarray(x, dtype)
        out = np.zeros((p["out_h"], p["out_w"], p["c"]), dtype)
        getattr(self.lib, name)(ctypes.byref(make("edgec_pool_params", p)), ptr(x), ptr(out))
        return out

    def max_pool_s8(self, p, x):
        return self._pool("edgec_max_pool_s8", p, x)

    def avg_pool_s8(self, p, x):
        return self._pool("edgec_avg_pool_s8", p, x)

    def avg_pool_trunc_s8(self, p, x, rounding: int):
        x = np.ascontiguousarray(x, np.int8)
        out = np.zeros((p["out_h"], p["out_w"], p["c"]), np.int8)
        self.lib.edgec_avg_pool_trunc_s8(ctypes.byref(make("edgec_pool_params", p)), ctypes.c_int32(rounding), ptr(x),
                                         ptr(out))
        return out

    def max_pool_s16(self, p, x):
        return self._pool("edgec_max_pool_s16", p, x, np.int16)

    def avg_pool_s16(self, p, x):
        return self._pool("edgec_avg_pool_s16", p, x, np.int16)

    def add_s8(self, p, a, b):
        a, b = (np.ascontiguousarray(v, np.int8) for v in (a, b))
        out = np.zeros_like(a)
        self.lib.edgec_add_s8(ctypes.byref(make("edgec_add_params", dict(p, n=a.size))), ptr(a), ptr(b), ptr(out))
        return out

    def add_s16(self, p, a, b):
        a, b = (np.ascontiguousarray(v, np.int16) for v in (a, b))
        out = np.zeros_like(a)
        self.lib.edgec_add_s16(ctypes.byref(make("edgec_add_params", dict(p, n=a.size))), ptr(a), ptr(b), ptr(out))
        return out

    def softmax_s8(self, x, table):
        x = np.ascontiguousarray(x, np.int8)
        table = np.ascontiguousarray(table, np.uint32)
        out = np.zeros_like(x)
        self.lib.edgec_softmax_s8(ctypes.byref(make("edgec_softmax_params", dict(rows=x.shape[0], cols=x.shape[1]))),
                                  ptr(x), ptr(table), ptr(out))
        return out

    def transpose_s8(self, x, perm):
        x = np.ascontiguousarray(x, np.int8)
        r = x.ndim
        dims = np.array([1] * (4 - r) + list(x.shape), np.int32)
        perm4 = np.array(list(range(4 - r)) + [int(q) + 4 - r for q in perm], np.int32)
        out = np.zeros(dims[perm4], np.int8)
        self.lib.edgec_transpose_s8(ctypes.byref(make("edgec_transpose_params", dict(dims=dims, perm=perm4))), ptr(x),
                                    ptr(out))
        return out.reshape([x.shape[q] for q in perm])

    def requantize(self, acc, mult, shift):
        acc = np.ascontiguousarray(acc, np.int32)
        mult = np.ascontiguousarray(np.broadcast_to(mult, acc.shape), np.int32)
        shift = np.ascontiguousarray(np.broadcast_to(shift, acc.shape), np.int32)
        out = np.zeros_like(acc)
        self.lib.edgec_test_requantize(I32(acc.size), ptr(acc), ptr(mult), ptr(shift), ptr(out))
        return out


# ---------------------------------------------------------------- random int8 cases

def i8(rng, shape, extreme=None):
    """int8 values, a quarter of the time all -128, all 127 or a mix of the two (extreme 0, 1, 2; 3 = uniform)."""
    mode = extreme if extreme is not None else rng.choice(4, p=[0.08, 0.08, 0.09, 0.75])
    if mode == 0:
        return np.full(shape, -128, np.int8)
    if mode == 1:
        return np.full(shape, 127, np.int8)
    if mode == 2:
        return rng.choice(np.array([-128, 127], np.int8), size=shape)
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def i8_uniform(rng, n):
    return rng.integers(-128, 128, n).astype(np.int8)


def requant_params(rng, n, acc_scale=None):
    """Per-channel (mult, shift); with acc_scale ~ typical |acc|, outputs mostly land inside int8."""
    if acc_scale is None:
        reals = np.exp(rng.uniform(math.log(1e-5), math.log(0.5), size=n))
    else:
        reals = np.exp(rng.uniform(math.log(1.0), math.log(60.0), size=n)) / acc_scale
    ms = [scheme.quantize_multiplier(float(r)) for r in reals]
    return np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)


def act(rng, zp):
    c = rng.choice(3, p=[0.6, 0.2, 0.2])
    if c == 0:
        return -128, 127
    if c == 1:
        return max(zp, -128), 127
    lo = int(rng.integers(-128, 128))
    return lo, int(rng.integers(lo, 128))


def window(rng, in_h, in_w, kmax=5, dilate=True):
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


def conv_case(rng, depthwise, max_hw=12, max_c=9, max_macs=None):
    """A random conv (or depthwise) case: H, W up to max_hw, channels up to max_c, and with max_macs, at most
    that many multiply-accumulates (large images with few channels, or many channels on small ones)."""
    while True:
        in_h, in_w = (int(v) for v in rng.integers(1, max_hw + 1, size=2))
        win = window(rng, in_h, in_w)
        in_c = int(rng.integers(1, max_c + 1))
        dm = int(rng.integers(1, 4)) if depthwise else 1
        out_c = in_c * dm if depthwise else int(rng.integers(1, max_c + 1))
        if win is not None and (max_macs is None or win["out_h"] * win["out_w"] * out_c * win["k_h"] * win["k_w"]
                                * (1 if depthwise else in_c) <= max_macs):
            break
    in_zp, out_zp = (int(v) for v in rng.integers(-128, 128, size=2))
    lo, hi = act(rng, out_zp)
    p = dict(win, in_h=in_h, in_w=in_w, in_c=in_c, out_c=out_c, input_zp=in_zp, output_zp=out_zp,
             act_min=lo, act_max=hi, depth_multiplier=dm)
    x = i8(rng, (in_h, in_w, in_c))
    w = i8(rng, (win["k_h"], win["k_w"], out_c) if depthwise else (out_c, win["k_h"], win["k_w"], in_c))
    taps = win["k_h"] * win["k_w"] * (1 if depthwise else in_c)
    acc_scale = 5500.0 * math.sqrt(taps)
    bias = rng.integers(-int(acc_scale), int(acc_scale) + 1, size=out_c).astype(np.int32)
    mult, shift = requant_params(rng, out_c, acc_scale if rng.random() < 0.8 else None)
    return p, x, w, bias, mult, shift


def eq(a, b):
    assert a.dtype == b.dtype == np.int8 and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def group_conv_fc_rows_matmul_cases(seed):
    """One random stream, drawn in this order: a grouped conv, then `rows` rows through a fully connected layer
    (reusing the conv's first multiplier), then a batched matmul. Returns (group conv (p, x, w, bias, mult, shift),
    fc rows (q, rows, x, w, bias, mult, shift), matmul (m, a, b)); tests/kernels/test_conv.py checks the first,
    test_fully_connected.py the other two."""
    r = np.random.default_rng(seed)
    g = int(r.integers(2, 4))
    ic, oc = g * int(r.integers(1, 3)), g * int(r.integers(1, 3))
    p = dict(in_h=5, in_w=4, in_c=ic, out_h=3, out_w=2, out_c=oc, k_h=3, k_w=2, stride_h=2, stride_w=2,
             dil_h=1, dil_w=2, pad_top=1, pad_left=1, input_zp=3, output_zp=-2, act_min=-100, act_max=127,
             depth_multiplier=1, groups=g)
    x, w = i8_uniform(r, 5 * 4 * ic), i8_uniform(r, oc * 3 * 2 * (ic // g))
    bias = r.integers(-500, 500, oc).astype(np.int32)
    mult, shift = zip(*(scheme.quantize_multiplier(float(s)) for s in r.uniform(0.001, 0.01, oc)))
    mult, shift = np.array(mult, np.int32), np.array(shift, np.int32)
    group_conv = (p, x, w, bias, mult, shift)
    rows, nin, nout = 3, 7, 5
    q = dict(in_features=nin, out_features=nout, input_zp=1, output_zp=0, act_min=-128, act_max=127)
    x, w = i8_uniform(r, rows * nin), i8_uniform(r, nout * nin)
    fb, fm, fs = r.integers(-500, 500, nout).astype(np.int32), mult[:1].repeat(nout), shift[:1].repeat(nout)
    fc_rows = (q, rows, x, w, fb, fm, fs)
    mm_mult, mm_shift = scheme.quantize_multiplier(0.002)
    m = dict(batch=2, m=3, k=4, n=2, a_batch_stride=12, a_row_stride=4, a_col_stride=1, b_batch_stride=0,
             b_row_stride=2, b_col_stride=1, out_batch_stride=6, out_row_stride=2, out_col_stride=1, a_zp=-5, b_zp=7, mult=mm_mult,
             shift=mm_shift, output_zp=1, act_min=-128, act_max=127)
    a, b = i8_uniform(r, 24), i8_uniform(r, 8)
    return group_conv, fc_rows, (m, a, b)


def log_softmax_resize_cases(seed):
    """One random stream: a log-softmax case (p, s_in, s_out, x, exp_table, log_table), then a linear resize case
    (q, idx, frac, x); tests/kernels/test_softmax.py checks the first, test_resize.py the second."""
    r = np.random.default_rng(seed)
    s_in, s_out = float(r.uniform(0.02, 0.2)), float(r.uniform(0.02, 0.1))
    p = dict(rows=3, cols=int(r.integers(2, 40)), k_in=round(s_in / s_out * 65536), k_ln=round(65536 / s_out),
             output_zp=60)
    x = i8_uniform(r, 3 * p["cols"])
    et, lt = np.asarray(softmax.softmax_table(s_in), np.uint32), softmax.log2_table()
    log_softmax = (p, s_in, s_out, x, et, lt)
    q = dict(in_h=3, in_w=4, c=2, out_h=5, out_w=7)
    idx = np.concatenate([r.integers(0, 3, 5), r.integers(0, 3, 5), r.integers(0, 4, 7), r.integers(0, 4, 7)])
    idx, frac = idx.astype(np.int32), r.integers(0, 1025, 12).astype(np.int32)
    x = i8_uniform(r, 24)
    return log_softmax, (q, idx, frac, x)


# ---------------------------------------------------------------- random 16x8 cases

def as_c(a, t):
    return np.ascontiguousarray(a, t)


def requant_params16(rng, n, acc_scale):
    reals = np.exp(rng.uniform(math.log(100.0), math.log(30000.0), size=n)) / acc_scale
    ms = [scheme.quantize_multiplier(float(r)) for r in reals]
    return np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)


def i16(rng, shape):
    mode = rng.choice(3, p=[0.1, 0.1, 0.8])
    if mode == 0:
        return np.full(shape, -32768, np.int16)
    if mode == 1:
        return rng.choice(np.array([-32768, 32767], np.int16), size=shape)
    return rng.integers(-32768, 32768, size=shape, dtype=np.int16)


def act16(rng):
    if rng.random() < 0.6:
        return -32768, 32767
    lo = int(rng.integers(-32768, 1))
    return lo, int(rng.integers(max(lo, 0), 32768))


def fully_connected_s16_and_conversion_cases(seed=5, n=40):
    """n rounds of one random stream, each a 16x8 fully connected case (p, x, w, bias, mult, shift) then the
    int8 <-> int16 conversions at the boundary of an int16 region ((x8, zp, m, s) up, (x16, zp, m, s) down);
    tests/kernels/test_fully_connected.py checks the first, test_convert.py the second."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        n_in, n_out = (int(v) for v in rng.integers(1, 64, size=2))
        lo, hi = act16(rng)
        p = dict(in_features=n_in, out_features=n_out, input_zp=0, output_zp=0, act_min=lo, act_max=hi)
        x, w = i16(rng, (n_in,)), rng.integers(-127, 128, size=(n_out, n_in), dtype=np.int8)
        acc_scale = 20000.0 * 70 * math.sqrt(n_in)
        bias = rng.integers(-int(acc_scale), int(acc_scale) + 1, size=n_out).astype(np.int64)
        mult, shift = requant_params16(rng, n_out, acc_scale)
        fc = (p, x, w, bias, mult, shift)
        x8 = rng.integers(-128, 128, size=50, dtype=np.int8)
        zp = int(rng.integers(-128, 128))
        m, s = scheme.quantize_multiplier(float(np.exp(rng.uniform(math.log(1.0), math.log(256.0)))))
        up = (x8, zp, m, s)
        m, s = scheme.quantize_multiplier(float(np.exp(rng.uniform(math.log(1 / 300.0), math.log(1.0)))))
        x16 = i16(rng, (50,))
        yield fc, (up, (x16, zp, m, s))


C_BYTES = {"int8_t": 1, "int16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8}


def declared_bytes(c_text: str) -> dict[str, int]:
    """Bytes of every `static const T name[N]` constant array in a generated model.c, by name."""
    rq = ctypes.sizeof(struct("edgec_rq"))
    return {name: int(n) * (rq if t == "edgec_rq" else C_BYTES[t])
            for t, name, n in re.findall(r"static const (\w+) (\w+)\[(\d+)\]", c_text)}
