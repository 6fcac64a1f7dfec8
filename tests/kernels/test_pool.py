"""The pooling family (runtime_c/edgec_pool.c) against its NumPy twins (edgec/ops/pool.py), bit for bit. The fast global average
pooling runs in the generated models of tests/kernels/test_fast_models.py."""
from __future__ import annotations

import numpy as np
import pytest

from ckernels import act, act16, eq, i8, i16, window
from edgec.ops import pool


def random_pools(rng, n: int):
    """n draws of a random int8 pooling case (params, input): windows with padding, activation clamps; draws
    whose window does not fit are skipped."""
    for _ in range(n):
        in_h, in_w = (int(v) for v in rng.integers(1, 14, size=2))
        win = window(rng, in_h, in_w, kmax=5, dilate=False)
        if win is None:
            continue
        for k in ("dil_h", "dil_w"):
            del win[k]
        lo, hi = act(rng, int(rng.integers(-128, 128)))
        p = dict(win, in_h=in_h, in_w=in_w, c=int(rng.integers(1, 10)), act_min=lo, act_max=hi)
        yield p, i8(rng, (in_h, in_w, p["c"]))


@pytest.mark.parametrize("kind", ["max_pool_s8", "avg_pool_s8"])
def test_pool_random(ck, kind):
    rng = np.random.default_rng(30 + len(kind))
    for p, x in random_pools(rng, 800):
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


@pytest.mark.parametrize("rounding", sorted(pool.ROUNDINGS))
def test_avg_pool_trunc_random(ck, rounding):
    """QONNX's Trunc after an average pool (edgec/frontend/qonnx.py): sum / count rounded half to even, down or up,
    on random windows with padding, negative sums, activation clamps."""
    rng = np.random.default_rng(50 + len(rounding))
    for p, x in random_pools(rng, 400):
        eq(pool.avg_pool_s8(p, x, rounding=rounding), ck.avg_pool_trunc_s8(p, x, pool.ROUNDINGS[rounding]))


def test_avg_pool_trunc_rounding(ck):
    """Sums of 4 taps: 2/4 and 6/4 (half to even: 0, 2), -2/4 and -6/4 (0, -2), 3/4, -3/4; floor and ceil."""
    p = dict(in_h=1, in_w=4, c=6, out_h=1, out_w=1, k_h=1, k_w=4, stride_h=1, stride_w=1,
             pad_top=0, pad_left=0, act_min=-128, act_max=127)
    sums = np.array([2, 6, -2, -6, 3, -3])
    x = np.zeros((1, 4, 6), np.int8)
    x[0, 0] = sums
    want = {"even": [0, 2, 0, -2, 1, -1], "floor": [0, 1, -1, -2, 0, -1], "ceil": [1, 2, 0, -1, 1, 0]}
    for rounding, code in pool.ROUNDINGS.items():
        eq(pool.avg_pool_s8(p, x, rounding=rounding).reshape(-1), np.array(want[rounding], np.int8))
        eq(ck.avg_pool_trunc_s8(p, x, code).reshape(-1), np.array(want[rounding], np.int8))


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


def _relu_pool_model(pool_op):
    """Conv -> Relu -> a global mean (GlobalAveragePool or ReduceMean) -> Flatten -> Gemm: a ReLU image spanning
    several units whose channel means span a few tenths."""
    from onnx import helper
    from conftest import make_model
    rng = np.random.default_rng(3)
    inits = {"w": rng.normal(0, 0.5, (6, 3, 3, 3)), "b": rng.normal(0, 0.1, 6), "fw": rng.normal(0, 0.5, (4, 6)),
             "fb": np.zeros(4), "axes": np.array([2, 3], np.int64)}
    mean = (helper.make_node("GlobalAveragePool", ["r"], ["m"], name="gap") if pool_op == "GlobalAveragePool" else
            helper.make_node("ReduceMean", ["r", "axes"], ["m"], name="gap", keepdims=1))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"), mean,
             helper.make_node("Flatten", ["m"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1)]
    return make_model(nodes, ("x", [1, 3, 10, 10]), ("y", [1, 4]), inits, opset=18)


@pytest.mark.parametrize("pool_op", ["GlobalAveragePool", "ReduceMean"])
def test_global_mean_takes_its_own_scale(pool_op, tmp_path):
    """A global average pool whose output range is much narrower than its input's is quantized as a mean with its
    own output scale (pool.own_scale, quantize.own_scales): closer to float than with its input's scale, as ONNX
    Runtime quantizes it, and the generated C bit-exact with the reference."""
    from conftest import check_generated_c
    from edgec.frontend import canonicalize
    from edgec.quant import calibrate, quantize, reference
    from edgec.fixedpoint import scheme
    model = _relu_pool_model(pool_op)
    x = np.random.default_rng(4).uniform(-1, 1, (32, 3, 10, 10)).astype(np.float32)
    graph = canonicalize.canonicalize(model, "gap_model")
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()])
    own = quantize.quantize(graph, ranges)
    pooled = [op for op in graph.ops if op.kind == "avg_pool"]
    assert len(pooled) == 1 and not any(op.kind == "avg_pool" for op in own.ops)
    mean = next(op for op in own.ops if op.name == pooled[0].name)
    src, out = own.tensors[mean.inputs[0]], own.tensors[mean.output]
    assert out.scale < src.scale / pool.NARROW             # its own, finer grid

    kept = quantize.quantize(graph, {**ranges, graph.tensors[pooled[0].output].source: ranges[src.source]})
    assert any(op.kind == "avg_pool" for op in kept.ops)   # the same output range as its input: kept as it was
    want = calibrate.run_float(model, x).reshape(len(x), -1)

    def error(g):
        t = g.tensors[g.output]
        xq = scheme.quantize_input(g.tensors[g.input], x)
        got = np.stack([scheme.dequantize(t, reference.run(g, q)).reshape(-1) for q in xq])
        return float(np.mean((got - want) ** 2))
    assert error(own) < error(kept)
    check_generated_c(own, x[:8], tmp_path)


def test_own_scale_declines():
    """Not a global pool, a fused activation, or an output range about as wide as the input's: None."""
    from edgec.ir import NO_ACT, Op
    glob = dict(in_hwc=(4, 4, 3), out_hwc=(1, 1, 3), kernel=(4, 4), stride=(1, 1), pad=(0, 0), act=NO_ACT)
    op = Op("avg_pool", "p", ("x",), "y", attrs=glob)
    assert pool.own_scale(op, (0.0, 4.0), (0.1, 0.5)) is not None
    assert pool.own_scale(op, (0.0, 4.0), (0.0, 3.0)) is None
    assert pool.own_scale(Op("avg_pool", "p", ("x",), "y", attrs={**glob, "act": (0.0, 6.0)}),
                          (0.0, 4.0), (0.1, 0.5)) is None
    assert pool.own_scale(Op("avg_pool", "p", ("x",), "y", attrs={**glob, "out_hwc": (2, 2, 3), "kernel": (2, 2),
                                                                  "stride": (2, 2)}), (0.0, 4.0), (0.1, 0.5)) is None
