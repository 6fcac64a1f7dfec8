"""The elementwise family (runtime_c/edgec_elementwise.c) against its NumPy twins, bit for bit: add, the
broadcasting binary ops (add, sub, max, min, mul, div) and lookup tables. The fast add runs in the generated
models of tests/kernels/test_fast_models.py."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from ckernels import act, eq, i8, i8_uniform, make, ptr
from edgec.ops import binary
from edgec.ops import lut
from edgec.fixedpoint import scheme

SEEDS = range(12)


def test_add_random(ck):
    rng = np.random.default_rng(40)
    for _ in range(300):
        s1, s2, so = np.exp(rng.uniform(math.log(1e-3), math.log(1.0), size=3))
        z1, z2, zo = (int(v) for v in rng.integers(-128, 128, size=3))
        p = binary.add_params(float(s1), z1, float(s2), z2, float(so), zo)
        p["act_min"], p["act_max"] = act(rng, zo)
        n = int(rng.integers(1, 200))
        a, b = i8(rng, n), i8(rng, n)
        got = binary.add_s8(p, a, b)
        eq(got, ck.add_s8(p, a, b))
        if p["act_min"] == -128 and p["act_max"] == 127:  # close to the float sum
            f = (s1 * (a.astype(float) - z1) + s2 * (b.astype(float) - z2)) / so + zo
            assert np.all(np.abs(np.clip(np.round(f), -128, 127) - got) <= 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_lut(ck, seed):
    r = np.random.default_rng(seed)
    count, inner, outer = int(r.integers(1, 5)), int(r.integers(1, 6)), int(r.integers(1, 4))
    p = dict(n=count * inner * outer, count=count, inner=inner)
    fn = ["sigmoid", "tanh", "mul_c", "prelu", "exp"][seed % 5]
    table = lut.table(fn, {}, r.standard_normal(count), 0.05, int(r.integers(-20, 20)), 0.02, -3)
    x = i8_uniform(r, p["n"])
    out = np.zeros(p["n"], np.int8)
    ck.lib.edgec_lut_s8(ctypes.byref(make("edgec_lut_params", p)), ptr(x), ptr(table), ptr(out))
    assert np.array_equal(out, lut.lut_s8(p, table, x))


@pytest.mark.parametrize("count,outer", [(2, 1), (3, 5), (32, 49)])
def test_lut_table_per_channel_in_place(ck, count, outer):
    """edgec_lut_s8's per-channel path (inner 1: a table per channel, channels innermost, as keras_tcn_kws's MUL and
    ADD by a per-channel constant) in place, every channel on its own table."""
    r = np.random.default_rng(count * 100 + outer)
    p = dict(n=count * outer, count=count, inner=1)
    tables = lut.table("mul_c", {}, r.standard_normal(count), 0.05, 3, 0.02, -3)
    x = i8_uniform(r, p["n"])
    buf = x.copy()
    ck.lib.edgec_lut_s8(ctypes.byref(make("edgec_lut_params", p)), ptr(buf), ptr(tables), ptr(buf))
    assert np.array_equal(buf, lut.lut_s8(p, tables, x))
    assert len({tuple(t) for t in np.asarray(tables).reshape(count, 256)}) > 1


@pytest.mark.parametrize("n", [1, 3, 4, 7, 64, 1001])
def test_lut_one_table_four_at_a_time_in_place(ck, n):
    """edgec_lut_s8's flat path (count 1: four values a pass, then the rest) in place, as the planner may run it,
    and a table per channel after it over the same buffer."""
    r = np.random.default_rng(n)
    table = lut.table("hard_swish", {}, None, 0.05, -7, 0.03, 5)
    x = i8_uniform(r, n)
    buf = x.copy()
    ck.lib.edgec_lut_s8(ctypes.byref(make("edgec_lut_params", dict(n=n, count=1, inner=1))), ptr(buf), ptr(table),
                        ptr(buf))
    assert np.array_equal(buf, lut.lut_s8(dict(n=n, count=1, inner=1), table, x))
    p = dict(n=n, count=n, inner=1)
    tables = lut.table("mul_c", {}, r.standard_normal(n), 0.05, 3, 0.02, -3)
    out = np.zeros(n, np.int8)
    ck.lib.edgec_lut_s8(ctypes.byref(make("edgec_lut_params", p)), ptr(x), ptr(tables), ptr(out))
    assert np.array_equal(out, lut.lut_s8(p, tables, x))


@pytest.mark.parametrize("seed", SEEDS)
def test_binary(ck, seed):
    r = np.random.default_rng(seed)
    dims = [int(d) for d in r.integers(1, 4, 6)]
    sa = [d if r.random() < 0.7 else 1 for d in dims]
    sb = [d if r.random() < 0.7 else 1 for d in dims]
    op = list(binary.BINARY_OPS)[seed % 6]
    s1, s2, so = (float(v) for v in r.uniform(0.01, 0.2, 3))
    z1, z2, zo = (int(v) for v in r.integers(-30, 30, 3))
    p = dict(op=binary.BINARY_OPS[op], dims=dims, a_stride=_strides(sa), b_stride=_strides(sb), a_zp=z1, b_zp=z2,
             a_mult=0, a_shift=0, b_mult=0, b_shift=0, left_shift=20, out_zp=zo, act_min=-128, act_max=127)
    if op in ("add", "sub", "max", "min"):
        ap = binary.add_params(s1, z1, s2, z2, so, zo)
        p.update(a_mult=ap["input1_mult"], a_shift=ap["input1_shift"], b_mult=ap["input2_mult"],
                 b_shift=ap["input2_shift"], out_mult=ap["output_mult"], out_shift=ap["output_shift"])
    elif op == "mul":
        p["out_mult"], p["out_shift"] = scheme.quantize_multiplier(s1 * s2 / so)
    else:
        p["out_mult"], p["out_shift"] = scheme.quantize_multiplier(s1 / (s2 * so * 65536))
    a, b = i8_uniform(r, int(np.prod(sa))), i8_uniform(r, int(np.prod(sb)))
    if op == "div":
        b[::3] = z2        # division by a real zero
    out = np.zeros(int(np.prod(dims)), np.int8)
    ck.lib.edgec_binary_s8(ctypes.byref(make("edgec_binary_params", p)), ptr(a), ptr(b), ptr(out))
    assert np.array_equal(out, binary.binary_s8(p, a, b))


@pytest.mark.parametrize("seed", range(4))
def test_absdiff_c_equals_twin_and_is_the_magnitude_of_sub(ck, seed):
    """BINARY_OPS["absdiff"] (|a - b|, a Sub read by an Abs alone): the C kernel equals the twin bit for bit, and
    each output is within one step of |the float difference| on the output's own grid (one rounding)."""
    r = np.random.default_rng(60 + seed)
    dims = [1, 1, 1, int(r.integers(1, 4)), int(r.integers(1, 5)), int(r.integers(1, 40))]
    s1, s2 = (float(v) for v in r.uniform(0.01, 0.2, 2))
    so = float(r.uniform(0.5, 1.0)) * max(s1, s2)          # |a - b|'s grid: finer than a signed difference's
    z1, z2, zo = int(r.integers(-30, 30)), int(r.integers(-30, 30)), -128
    ap = binary.add_params(s1, z1, s2, z2, so, zo)
    p = dict(op=binary.BINARY_OPS["absdiff"], dims=dims, a_stride=_strides(dims), b_stride=_strides(dims),
             a_zp=z1, b_zp=z2, a_mult=ap["input1_mult"], a_shift=ap["input1_shift"], b_mult=ap["input2_mult"],
             b_shift=ap["input2_shift"], out_mult=ap["output_mult"], out_shift=ap["output_shift"], left_shift=20,
             out_zp=zo, act_min=-128, act_max=127)
    n = int(np.prod(dims))
    a, b = i8_uniform(r, n), i8_uniform(r, n)
    out = np.zeros(n, np.int8)
    ck.lib.edgec_binary_s8(ctypes.byref(make("edgec_binary_params", p)), ptr(a), ptr(b), ptr(out))
    got = binary.binary_s8(p, a, b)
    assert np.array_equal(out, got)
    f = np.abs(s1 * (a.astype(float) - z1) - s2 * (b.astype(float) - z2)) / so + zo
    assert np.all(np.abs(np.clip(np.round(f), -128, 127) - got) <= 1)


def test_a_sub_read_by_an_abs_alone_is_one_absdiff_rounded_once(tmp_path):
    """A Siamese distance, Abs(Sub(a, b)) of two activations: one binary op |a - b| on the Abs's grid (twice as
    fine as the signed difference's, which a Sub then an Abs table rounds to first), closer to ONNX Runtime's float
    than the two ops (the same model with a Mul by 1 between them keeps them apart: a Sub, then one table);
    the float run is ONNX Runtime's, the generated C bit-exact (torch_siamese_anomaly_op17)."""
    from onnx import helper
    from conftest import check_generated_c, make_model
    from edgec.frontend import canonicalize
    from edgec.quant import calibrate, floatref, quantize, reference
    rng = np.random.default_rng(12)
    inits = {"wa": rng.normal(0, 0.4, (16, 24)), "wb": rng.normal(0, 0.4, (16, 24)), "one": np.ones(1)}
    x = rng.uniform(-1, 1, (32, 16)).astype(np.float32)
    errors = []
    for apart in (False, True):
        nodes = [helper.make_node("MatMul", ["x", "wa"], ["ea"], name="enc_a"),
                 helper.make_node("MatMul", ["x", "wb"], ["eb"], name="enc_b"),
                 helper.make_node("Sub", ["ea", "eb"], ["d"], name="sub"),
                 *([helper.make_node("Mul", ["d", "one"], ["d1"], name="keep_apart")] if apart else []),
                 helper.make_node("Abs", ["d1" if apart else "d"], ["y"], name="abs")]
        model = make_model(nodes, ("x", [1, 16]), ("y", [1, 24]), inits)
        graph = canonicalize.canonicalize(model, "absdiff_model")
        assert [op.attrs.get("op") for op in graph.ops if op.kind == "binary"] == ["sub" if apart else "absdiff"]
        assert len([op for op in graph.ops if lut.is_table(op)]) == int(apart)
        want = calibrate.run_float(model, x)
        got = np.stack([floatref.output(graph, xi) for xi in x]).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        q = quantize.quantize(graph, calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()]))
        tout = q.tensors[q.output]
        deq = np.stack([scheme.dequantize(tout, reference.run(q, scheme.quantize_input(q.tensors[q.input], xi)))
                        for xi in x]).reshape(want.shape)
        errors.append(float(np.mean((deq - want) ** 2)))
        if not apart:
            check_generated_c(q, x[:4], tmp_path)
    assert errors[0] < 0.8 * errors[1], errors


def _strides(shape):
    st, acc = [0] * 6, 1
    for k in range(5, -1, -1):
        st[k] = acc if shape[k] > 1 else 0
        acc *= shape[k]
    return st


def test_tables_in_a_chain_become_one(tmp_path):
    """Conv -> Squeeze -> Mul, Add by per-channel constants -> Relu (tf2onnx's Conv1D then BatchNorm): the three
    tables compose into one (edgec/ops/lut emit_lut), rounded to int8 once; the float run is ONNX Runtime's, and the
    generated C bit-exact with the reference."""
    from onnx import helper
    from conftest import check_generated_c, make_model
    from edgec.frontend import canonicalize
    from edgec.quant import calibrate, floatref, quantize, reference
    rng = np.random.default_rng(8)
    c = 5
    inits = {"w": rng.normal(0, 0.5, (c, 3, 1, 3)), "b": rng.normal(0, 0.1, c), "ax": np.array([2], np.int64),
             "s": rng.uniform(0.5, 3, (c, 1)), "t": rng.normal(0, 1, (c, 1))}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["h"], name="conv", pads=[0, 1, 0, 1]),
             helper.make_node("Squeeze", ["h", "ax"], ["q"], name="squeeze"),
             helper.make_node("Mul", ["q", "s"], ["m"], name="bn_mul"),
             helper.make_node("Add", ["m", "t"], ["a"], name="bn_add"),
             helper.make_node("Relu", ["a"], ["y"], name="relu")]
    model = make_model(nodes, ("x", [1, 3, 1, 16]), ("y", [1, c, 16]), inits)
    graph = canonicalize.canonicalize(model, "chain_model")
    tables = [op for op in graph.ops if lut.is_table(op)]
    assert len(tables) == 1 and tables[0].attrs["fn"] == "chain" and len(tables[0].attrs["fparams"]["steps"]) == 3
    x = rng.uniform(-1, 1, (16, 3, 1, 16)).astype(np.float32)
    want = calibrate.run_float(model, x)
    got = np.stack([floatref.output(graph, xi) for xi in x]).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    q = quantize.quantize(graph, calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()]))
    tout = q.tensors[q.output]
    deq = scheme.dequantize(tout, reference.run(q, scheme.quantize_input(q.tensors[q.input], x[0])))
    assert np.abs(deq.reshape(want[0].shape) - want[0]).max() <= 3 * tout.scale
    check_generated_c(q, x[:4], tmp_path)


def test_add_s16_random(ck):
    """TFLite's 16x8 Add (edgec/ops/binary/add16.py): the C kernel equals the twin bit for bit over int16 extremes,
    scales up to 1000x apart and activation clamps, and within one step of the float sum when unclamped."""
    from ckernels import act16, i16
    from edgec.ir import Op, Tensor
    from edgec.ops.binary import add16
    rng = np.random.default_rng(41)
    for _ in range(300):
        n = int(rng.integers(1, 200))
        s1, s2, so = np.exp(rng.uniform(math.log(1e-4), math.log(1e-1), size=3))
        ins = [Tensor(name=k, shape=(n,), source=k, dtype="int16", scale=float(s), zero_point=0)
               for k, s in (("a", s1), ("b", s2))]
        out = Tensor(name="y", shape=(n,), source="y", dtype="int16", scale=float(so), zero_point=0)
        op = Op("add", "add", ("a", "b"), "y")
        add16.quantize_add16(op, ins, out)
        p = op.params
        p["act_min"], p["act_max"] = act16(rng)
        a, b = i16(rng, n), i16(rng, n)
        got = add16.add_s16(p, a, b)
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, ck.add_s16(p, a, b))
        if (p["act_min"], p["act_max"]) == (-32768, 32767):
            f = (s1 * a.astype(float) + s2 * b.astype(float)) / so
            assert np.all(np.abs(np.clip(np.round(f), -32768, 32767) - got) <= 1)


def test_add_s16_matches_tflite_micro():
    """The 16x8 Add twin (edgec/ops/binary/add16.py) equals TFLite Micro's int16 ADD bit for bit (single-op
    .tflite files, tests/tflite_oracle.py), with and without a fused ReLU."""
    from ckernels import i16
    from tflite_oracle import Case, Node, T, tflm, write
    from edgec.ir import Op, Tensor
    from edgec.ops.binary import add16
    rng = np.random.default_rng(42)
    for k in range(12):
        n = int(rng.integers(1, 64))
        s1, s2, so = (float(v) for v in np.exp(rng.uniform(math.log(1e-4), math.log(1e-1), size=3)).astype(np.float32))
        relu = k % 2
        case = Case("add16", [T((1, n), [s1], [0], 7), T((1, n), [s2], [0], 7), T((1, n), [so], [0], 7)],
                    [Node("ADD", [0, 1], 2, ("AddOptions", dict(FusedActivationFunction=relu)))], [0, 1], 2)
        a, b = i16(rng, (8, 1, n)), i16(rng, (8, 1, n))
        want = tflm(write(case), [a, b])
        ins = [Tensor(name=t, shape=(n,), source=t, dtype="int16", scale=s, zero_point=0)
               for t, s in (("a", s1), ("b", s2))]
        op = Op("add", "add", ("a", "b"), "y", attrs={"act": (0.0, math.inf) if relu else (-math.inf, math.inf)})
        add16.quantize_add16(op, ins, Tensor(name="y", shape=(n,), source="y", dtype="int16", scale=so, zero_point=0))
        got = np.stack([add16.add_s16(op.params, a[i], b[i]) for i in range(len(a))])
        np.testing.assert_array_equal(got, want.reshape(got.shape))


def test_div16_c_equals_twin_and_tracks_float(ck):
    """A QDQ file's int16 Div (edgec/ops/binary/int16.py `_div16` / `div16`, op 19 of edgec_binary_s16: TFLite has
    no int16 DIV): the C kernel equals the twin bit for bit over int16 extremes, divisors of 0 and +-1, broadcast
    divisors and scale ratios from 1e-4 to 1e4, and the twin is within one output step of the float quotient where
    the divisor is not 0 (the quotient's own rounding is below 2^-16 of a step)."""
    from ckernels import i16
    from edgec.ir import NO_ACT, Op, Tensor
    rng = np.random.default_rng(47)
    for k in range(300):
        n, m = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        sa, sb, so = np.exp(rng.uniform(math.log(1e-5), math.log(1e-1), size=3))
        ins = [Tensor(name="a", shape=(m, n), source="a", dtype="int16", scale=float(sa), zero_point=0),
               Tensor(name="b", shape=(m, 1), source="b", dtype="int16", scale=float(sb), zero_point=0)]
        out = Tensor(name="y", shape=(m, n), source="y", dtype="int16", scale=float(so), zero_point=0)
        op = Op("binary", "div", ("a", "b"), "y", attrs=dict(op="div", a_shape=(m, n), b_shape=(m, 1), const=None,
                                                              const_first=False, act=NO_ACT))
        binary.quantize_binary(op, ins, out)
        binary.quantize_binary16(op, ins, out)
        p = op.params
        assert p["op"] == binary.BINARY_OPS["div16"] and 0 <= p["left_shift"] <= 46
        a, b = i16(rng, m * n), i16(rng, m)
        b[0] = [0, 1, -1, -32768][k % 4]
        a[0] = [-32768, 32767, 0, 1][k // 4 % 4]
        got = binary.binary_s8(p, a, b, dtype=np.int16)
        want = np.zeros(m * n, np.int16)
        ck.lib.edgec_binary_s16(ctypes.byref(make("edgec_binary_params", p)), ptr(a), ptr(b), ptr(want))
        np.testing.assert_array_equal(got, want)
        bb = np.repeat(b, n).astype(np.float64)
        ok = bb != 0
        f = np.clip(np.round(sa * a[ok].astype(np.float64) / (sb * bb[ok]) / so), p["act_min"], p["act_max"])
        assert np.all(np.abs(f - got[ok]) <= 1), (k, np.abs(f - got[ok]).max())


@pytest.mark.parametrize("op", ["max_raw", "min_raw"])
def test_maximum_and_minimum_of_contiguous_rows_and_broadcasts(ck, op):
    """TFLite's MAXIMUM / MINIMUM (of the int8 values themselves): rows contiguous in both inputs take the loop
    without a call per element (runtime_c/edgec_elementwise.c; keras_grouped_shuffle_cifar's 8x8x64 MAXIMUM, 41 -> 16
    instructions an element on qemu-cortex-m4), broadcast innermost axes the call; both against the NumPy twin at
    the int8 limits and random."""
    r = np.random.default_rng(66)
    for dims, sa, sb in (([1, 1, 1, 8, 8, 64], None, None), ([1, 1, 2, 3, 5, 7], None, [1, 1, 2, 3, 5, 1]),
                         ([1, 1, 1, 1, 3, 9], [1, 1, 1, 1, 1, 9], None), ([1, 1, 1, 1, 1, 1], None, None)):
        sa, sb = sa or dims, sb or dims
        p = dict(op=binary.BINARY_OPS[op], dims=dims, a_stride=_strides(sa), b_stride=_strides(sb), a_zp=3, b_zp=3,
                 a_mult=0, a_shift=0, b_mult=0, b_shift=0, left_shift=0, out_mult=0, out_shift=0, out_zp=3,
                 act_min=-128, act_max=127)
        for a, b in ((i8_uniform(r, int(np.prod(sa))), i8_uniform(r, int(np.prod(sb)))),
                     (np.full(int(np.prod(sa)), -128, np.int8), np.full(int(np.prod(sb)), 127, np.int8))):
            out = np.zeros(int(np.prod(dims)), np.int8)
            ck.lib.edgec_binary_s8(ctypes.byref(make("edgec_binary_params", p)), ptr(a), ptr(b), ptr(out))
            assert np.array_equal(out, binary.binary_s8(p, a, b)), (op, dims)
