"""Bit-exactness of runtime_c/edgec_kernels_ext.c against edgec/kernels_ext.py on random cases."""
from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from conftest import host_compiler
from edgec import elementwise
from edgec import kernels_ext as KX
from edgec import kernels_ref as K
from test_kernels import CONV_FIELDS, FC_FIELDS, KERNELS_C, WARN

I32 = ctypes.c_int32


def _struct(fields):
    out = []
    for f in fields:
        name, _, n = f.partition("*")
        out.append((name, I32 * int(n)) if n else (name, I32))
    return type("P", (ctypes.Structure,), {"_fields_": out})


STRUCTS = {
    "lut": _struct("n count inner".split()),
    "binary": _struct(["op", "dims*6", "a_stride*6", "b_stride*6"] + "a_zp a_mult a_shift b_zp b_mult b_shift "
                      "left_shift out_mult out_shift out_zp act_min act_max".split()),
    "remap": _struct(["dims*6", "start*6", "pad_value"]),
    "concat": _struct("outer chunk out_stride out_offset".split()),
    "reduce": _struct("outer n inner kind select_last input_zp mult shift output_zp act_min act_max".split()),
    "conv": _struct(CONV_FIELDS), "fc": _struct(FC_FIELDS),
    "matmul": _struct("batch m k n a_batch_stride b_batch_stride a_zp b_zp mult shift output_zp act_min act_max".split()),
    "log_softmax": _struct("rows cols k_in k_ln output_zp".split()),
    "resize": _struct("in_h in_w c out_h out_w".split()),
}


def _mk(kind, p):
    cls = STRUCTS[kind]
    vals = []
    for name, typ in cls._fields_:
        v = p[name]
        vals.append(typ(*[int(i) for i in v]) if isinstance(v, (list, tuple)) else int(v))
    return cls(*vals)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    d = tmp_path_factory.mktemp("kx")
    so = d / "libkx.so"
    subprocess.run([host_compiler(), *WARN, "-O1", "-shared", "-fPIC", "-fsanitize=undefined",
                    "-fno-sanitize-recover=all", *KERNELS_C, "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def _p(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def _i8(rng, n):
    return rng.integers(-128, 128, n).astype(np.int8)


rng = np.random.default_rng(3)
SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_lut(lib, seed):
    r = np.random.default_rng(seed)
    count, inner, outer = int(r.integers(1, 5)), int(r.integers(1, 6)), int(r.integers(1, 4))
    p = dict(n=count * inner * outer, count=count, inner=inner)
    fn = ["sigmoid", "tanh", "mul_c", "prelu", "exp"][seed % 5]
    table = elementwise.table(fn, {}, r.standard_normal(count), 0.05, int(r.integers(-20, 20)), 0.02, -3)
    x = _i8(r, p["n"])
    out = np.zeros(p["n"], np.int8)
    lib.edgec_lut_s8(ctypes.byref(_mk("lut", p)), _p(table), _p(x), _p(out))
    assert np.array_equal(out, KX.lut_s8(p, table, x))


@pytest.mark.parametrize("seed", SEEDS)
def test_binary(lib, seed):
    r = np.random.default_rng(seed)
    dims = [int(d) for d in r.integers(1, 4, 6)]
    sa = [d if r.random() < 0.7 else 1 for d in dims]
    sb = [d if r.random() < 0.7 else 1 for d in dims]
    op = list(KX.BINARY_OPS)[seed % 6]
    s1, s2, so = (float(v) for v in r.uniform(0.01, 0.2, 3))
    z1, z2, zo = (int(v) for v in r.integers(-30, 30, 3))
    p = dict(op=KX.BINARY_OPS[op], dims=dims, a_stride=_strides(sa), b_stride=_strides(sb), a_zp=z1, b_zp=z2,
             a_mult=0, a_shift=0, b_mult=0, b_shift=0, left_shift=20, out_zp=zo, act_min=-128, act_max=127)
    if op in ("add", "sub", "max", "min"):
        ap = K.add_params(s1, z1, s2, z2, so, zo)
        p.update(a_mult=ap["input1_mult"], a_shift=ap["input1_shift"], b_mult=ap["input2_mult"],
                 b_shift=ap["input2_shift"], out_mult=ap["output_mult"], out_shift=ap["output_shift"])
    elif op == "mul":
        p["out_mult"], p["out_shift"] = K.quantize_multiplier(s1 * s2 / so)
    else:
        p["out_mult"], p["out_shift"] = K.quantize_multiplier(s1 / (s2 * so * 65536))
    a, b = _i8(r, int(np.prod(sa))), _i8(r, int(np.prod(sb)))
    if op == "div":
        b[::3] = z2        # division by a real zero
    out = np.zeros(int(np.prod(dims)), np.int8)
    lib.edgec_binary_s8(ctypes.byref(_mk("binary", p)), _p(a), _p(b), _p(out))
    assert np.array_equal(out, KX.binary_s8(p, a, b))


def _strides(shape):
    st, acc = [0] * 6, 1
    for k in range(5, -1, -1):
        st[k] = acc if shape[k] > 1 else 0
        acc *= shape[k]
    return st


@pytest.mark.parametrize("seed", SEEDS)
def test_remap_and_concat(lib, seed):
    r = np.random.default_rng(seed)
    n_in = int(r.integers(5, 40))
    dims = [int(d) for d in r.integers(1, 4, 6)]
    tables = [np.where(r.random(d) < 0.2, KX.INVALID, r.integers(0, n_in // 6 + 1, d)) for d in dims]
    start = np.cumsum([0] + dims[:-1]).tolist()
    p = dict(dims=dims, start=start, pad_value=int(r.integers(-128, 128)))
    offsets = np.concatenate(tables).astype(np.int32)
    x = _i8(r, n_in)
    out = np.zeros(int(np.prod(dims)), np.int8)
    lib.edgec_remap_s8(ctypes.byref(_mk("remap", p)), _p(offsets), _p(x), _p(out))
    assert np.array_equal(out, KX.remap_s8(p, offsets, x))
    outer, c1, c2 = (int(v) for v in r.integers(1, 5, 3))
    table = _i8(r, 256)
    got, want = np.zeros(outer * (c1 + c2), np.int8), np.zeros(outer * (c1 + c2), np.int8)
    for k, (chunk, off, t) in enumerate(((c1, 0, None), (c2, c1, table))):
        q = dict(outer=outer, chunk=chunk, out_stride=c1 + c2, out_offset=off)
        xi = _i8(r, outer * chunk)
        lib.edgec_concat_part_s8(ctypes.byref(_mk("concat", q)), _p(t) if t is not None else None, _p(xi), _p(got))
        KX.concat_part_s8(q, t, xi, want)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("seed", SEEDS)
def test_reduce(lib, seed):
    r = np.random.default_rng(seed)
    outer, n, inner = (int(v) for v in r.integers(1, 6, 3))
    kind = seed % 5
    mult, shift = K.quantize_multiplier(float(r.uniform(0.01, 2)) / (n if kind == 0 else 1))
    p = dict(outer=outer, n=n, inner=inner, kind=kind, select_last=seed % 2, input_zp=int(r.integers(-10, 10)),
             mult=mult, shift=shift, output_zp=int(r.integers(-10, 10)), act_min=-128, act_max=127)
    x = rng.integers(-3, 3, outer * n * inner).astype(np.int8)   # ties for argmax/argmin
    out = np.zeros(outer * inner, np.int8)
    lib.edgec_reduce_s8(ctypes.byref(_mk("reduce", p)), _p(x), _p(out))
    assert np.array_equal(out, KX.reduce_s8(p, x))


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_group_conv_fc_rows_matmul(lib, seed):
    r = np.random.default_rng(seed)
    g = int(r.integers(2, 4))
    ic, oc = g * int(r.integers(1, 3)), g * int(r.integers(1, 3))
    p = dict(in_h=5, in_w=4, in_c=ic, out_h=3, out_w=2, out_c=oc, k_h=3, k_w=2, stride_h=2, stride_w=2,
             dil_h=1, dil_w=2, pad_top=1, pad_left=1, input_zp=3, output_zp=-2, act_min=-100, act_max=127,
             depth_multiplier=1, groups=g)
    x, w = _i8(r, 5 * 4 * ic), _i8(r, oc * 3 * 2 * (ic // g))
    bias = r.integers(-500, 500, oc).astype(np.int32)
    mult, shift = zip(*(K.quantize_multiplier(float(s)) for s in r.uniform(0.001, 0.01, oc)))
    mult, shift = np.array(mult, np.int32), np.array(shift, np.int32)
    out = np.zeros(3 * 2 * oc, np.int8)
    lib.edgec_group_conv2d_s8(ctypes.byref(_mk("conv", p)), g, _p(x), _p(w), _p(bias), _p(mult), _p(shift), _p(out))
    assert np.array_equal(out, KX.group_conv2d_s8(p, x, w, bias, mult, shift).reshape(-1))
    rows, nin, nout = 3, 7, 5
    q = dict(in_features=nin, out_features=nout, input_zp=1, output_zp=0, act_min=-128, act_max=127)
    x, w = _i8(r, rows * nin), _i8(r, nout * nin)
    out = np.zeros(rows * nout, np.int8)
    fb, fm, fs = r.integers(-500, 500, nout).astype(np.int32), mult[:1].repeat(nout), shift[:1].repeat(nout)
    lib.edgec_fully_connected_rows_s8(ctypes.byref(_mk("fc", q)), rows, _p(x), _p(w), _p(fb), _p(fm), _p(fs), _p(out))
    want = KX.fully_connected_rows_s8(q, rows, x, w, fb, fm, fs)
    assert np.array_equal(out, want.reshape(-1))
    mm_mult, mm_shift = K.quantize_multiplier(0.002)
    m = dict(batch=2, m=3, k=4, n=2, a_batch_stride=12, b_batch_stride=0, a_zp=-5, b_zp=7, mult=mm_mult,
             shift=mm_shift, output_zp=1, act_min=-128, act_max=127)
    a, b = _i8(r, 24), _i8(r, 8)
    out = np.zeros(12, np.int8)
    lib.edgec_matmul_s8(ctypes.byref(_mk("matmul", m)), _p(a), _p(b), _p(out))
    assert np.array_equal(out, KX.matmul_s8(m, a, b))


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_log_softmax_and_resize(lib, seed):
    r = np.random.default_rng(seed)
    s_in, s_out = float(r.uniform(0.02, 0.2)), float(r.uniform(0.02, 0.1))
    p = dict(rows=3, cols=int(r.integers(2, 40)), k_in=round(s_in / s_out * 65536), k_ln=round(65536 / s_out),
             output_zp=60)
    x = _i8(r, 3 * p["cols"])
    et, lt = np.asarray(K.softmax_table(s_in), np.uint32), KX.log2_table()
    out = np.zeros(x.size, np.int8)
    lib.edgec_log_softmax_s8(ctypes.byref(_mk("log_softmax", p)), _p(et), _p(lt), _p(x), _p(out))
    want = KX.log_softmax_s8(p, et, lt, x)
    assert np.array_equal(out, want)
    z = x.reshape(3, -1).astype(np.float64) * s_in           # and it is a log-softmax
    ref = z - z.max(1, keepdims=True) - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
    assert np.max(np.abs((want.reshape(3, -1).astype(np.float64) - 60) * s_out - np.clip(ref, (-128 - 60) * s_out, 0))) \
        <= s_out + 0.01
    q = dict(in_h=3, in_w=4, c=2, out_h=5, out_w=7)
    idx = np.concatenate([r.integers(0, 3, 5), r.integers(0, 3, 5), r.integers(0, 4, 7), r.integers(0, 4, 7)])
    idx, frac = idx.astype(np.int32), r.integers(0, 1025, 12).astype(np.int32)
    x = _i8(r, 24)
    out = np.zeros(70, np.int8)
    lib.edgec_resize_linear_s8(ctypes.byref(_mk("resize", q)), _p(idx), _p(frac), _p(x), _p(out))
    assert np.array_equal(out, KX.resize_linear_s8(q, idx, frac, x))
