"""Dead channels (edgec/ops/conv/dead_channels.py, run by edgec/lower/lowering.py): a conv2d's all-zero channels
dropped with the depthwise and 1x1 layers after them, the constants folded into the 1x1 layer's bias, or with the
global average pool and fully connected layer after them, the pooled constants folded into its bias: the same
integers out, bit for bit, on MLPerf Tiny's VWW (whose TFLite file has them: 21 to 234 dead channels a layer) and on
KWS with channels made dead here."""
from __future__ import annotations

import dataclasses

import numpy as np

from conftest import MLPERF, require_mlperf
from edgec.fixedpoint import scheme
from edgec.frontend import tflite
from edgec.lower import lowering
from edgec.ops.conv import dead_channels
from edgec.quant import reference


def _graph(name: str):
    path = MLPERF / f"{name}.tflite"
    require_mlperf(path)
    return tflite.load(path, name)


def _inputs(graph, key: str, n_random: int = 3):
    data = MLPERF / "data" / f"golden_{key}.npz"
    require_mlperf(data)
    g = np.load(data)
    rng = np.random.default_rng(0)
    x = list(g["x_int8"]) + [rng.integers(-128, 128, g["x_int8"].shape[1:]).astype(np.int8) for _ in range(n_random)]
    return x, g["y_int8_tflm"].reshape(len(g["x_int8"]), -1)


def _same_outputs(a, b, xs) -> None:
    """every tensor the pruning left at its shape (the graph's output among them) identical on every input"""
    for x in xs:
        ta, tb = reference.run(a, x, keep_all=True), reference.run(b, x, keep_all=True)
        for name, v in ta.items():
            if v.shape == tb[name].shape:
                assert np.array_equal(v, tb[name]), name


def test_vww_dead_channels_dropped_bit_exact():
    g = _graph("vww_mobilenetv1_025_int8")
    p = dead_channels.prune(g)
    changed = [(a, b) for a, b in zip(g.ops, p.ops) if a is not b]
    # layers 12-26: 7 conv -> depthwise -> 1x1 chains, each 1x1 the next one's start; then layer 26 -> the global
    # average pool -> (reshape) -> the fully connected layer: 234 of 256 channels dead, 24 kept
    assert len(changed) == 17 and [b.kind for _, b in changed[-2:]] == ["avg_pool", "fully_connected"]
    assert p.ops[26].params["out_c"] == p.ops[27].params["c"] == p.ops[29].params["in_features"] == 24
    assert p.tensors[p.ops[28].output].shape == (1, 24) and p.ops[29].arrays["weights"].shape == (2, 24)
    for a, b in changed:
        if b.kind in ("conv2d", "depthwise_conv2d"):
            assert b.arrays["weights"].shape[0 if b.kind == "conv2d" else -1] % 4 == 0
        assert g.tensors[b.output].shape[-1] >= p.tensors[b.output].shape[-1]
    # MACs of the 1x1 layers on 6x6 and 3x3: about a third of them left
    macs = lambda graph: sum(op.arrays["weights"].size * np.prod(graph.tensors[op.output].shape[1:3])
                             for op in graph.ops[12:27] if op.kind == "conv2d")
    assert macs(p) < 0.4 * macs(g)
    # the constants of dropped depthwise channels went into the next bias (not only zeros)
    assert any(a.kind == "conv2d" and not np.array_equal(a.arrays["bias"], b.arrays["bias"]) for a, b in changed)
    xs, want = _inputs(g, "vww")
    _same_outputs(g, p, xs)
    for x, y in zip(xs, want):
        assert np.array_equal(reference.run(p, x).reshape(-1), y)
    assert dead_channels.prune(p) is p        # nothing left to drop: the same graph


def test_lowering_prunes_and_leaves_models_without_dead_channels():
    g = _graph("vww_mobilenetv1_025_int8")
    low = lowering.lower_graph(g, dsp=True)
    assert low.tensors[g.ops[12].output].shape[-1] < g.tensors[g.ops[12].output].shape[-1]
    kws = _graph("kws_dscnn_int8")
    assert dead_channels.prune(kws) is kws


def _kill(op, channels, bias):
    """op with the given output channels' weights zeroed and their bias set"""
    w, b = op.arrays["weights"].copy(), op.arrays["bias"].copy()
    w[channels] = 0
    b[channels] = bias
    return dataclasses.replace(op, arrays={**op.arrays, "weights": w, "bias": b})


def test_kws_with_dead_channels_made_here():
    """KWS's first conv -> depthwise -> 1x1 chain with 6 channels made dead: 4 whose value is the depthwise's input
    zero point (a very negative bias: the ReLU's clamp) are dropped, 2 whose value is above it stay (the depthwise's
    padding would read the zero point there, not the constant)"""
    g = _graph("kws_dscnn_int8")
    i = next(j for j, op in enumerate(g.ops) if op.kind == "conv2d" and dead_channels._chain(
        g, op, list(g.ops), {id(o): k for k, o in enumerate(g.ops)}))
    op = _kill(_kill(g.ops[i], [1, 5, 6, 9], -(1 << 30)), [2, 3], 1 << 20)
    g2 = g.replace_ops(g.ops[:i] + (op,) + g.ops[i + 1:])
    p = dead_channels.prune(g2)
    n = g2.tensors[op.output].shape[-1]
    assert p.tensors[op.output].shape[-1] == n - 4
    kept = p.ops[i].arrays["weights"]                          # channels 0, 2, 3, 4, 7, 8, 10, ...
    assert kept[0].any() and not kept[1:3].any() and kept[3].any()
    xs, _ = _inputs(g2, "kws")
    _same_outputs(g2, p, xs)


def _pool_chain_at(g):
    ops = list(g.ops)
    at = {id(o): k for k, o in enumerate(ops)}
    i = next(j for j, op in enumerate(ops) if dead_channels._pool_chain(g, op, ops, at))
    return i, dead_channels._pool_chain(g, ops[i], ops, at)


def _kws_pooled(act_max: int):
    """KWS with 8 of its last conv's 64 channels made dead (4 at the ReLU's clamp, 2 mid-range, 2 saturated at 127)
    and its global average pool's range clamped at act_max: (graph, conv index, pool index, fc index)"""
    g = _graph("kws_dscnn_int8")
    i, (a, _, f) = _pool_chain_at(g)
    op = _kill(_kill(_kill(g.ops[i], [0, 7, 8, 30], -(1 << 30)), [3, 12], 1 << 14), [40, 63], 1 << 30)
    j, k = g.ops.index(a), g.ops.index(f)
    pool = dataclasses.replace(a, params={**a.params, "act_max": act_max})
    ops = list(g.ops)
    ops[i], ops[j] = op, pool
    return g.replace_ops(tuple(ops)), i, j, k


def test_kws_pooled_dead_channels_made_here():
    """KWS's last conv -> global average pool -> reshape -> fully connected, 8 channels made dead whatever their
    value: all dropped (64 -> 56, a multiple of 4), their pooled constants, clamped to the pool's range, folded into
    the fully connected layer's bias: every tensor left at its shape identical, the model's output among them. The
    pool's range is clamped at 20 here so that the saturated channels' 127 pools to 20: without the clamp the fold
    is wrong, and the outputs differ (checked)."""
    g, i, j, k = _kws_pooled(20)
    v = scheme.finish(g.ops[i].arrays["bias"], g.ops[i].arrays["mult"], g.ops[i].arrays["shift"], g.ops[i].params)
    assert v[40] == v[63] == 127 and v[0] == -128 and -128 < v[3] < 20       # three kinds of constant
    p = dead_channels.prune(g)
    assert p.ops[i].params["out_c"] == p.ops[j].params["c"] == p.ops[k].params["in_features"] == 56
    assert not np.array_equal(p.ops[k].arrays["bias"], g.ops[k].arrays["bias"])
    xs, _ = _inputs(g, "kws")
    _same_outputs(g, p, xs)
    assert dead_channels.prune(p) is p
    # the fold without the pool's clamp (the constants as the conv makes them) is not exact
    f = g.ops[k]
    dead = ~g.ops[i].arrays["weights"].reshape(64, -1).any(axis=1)
    raw = f.arrays["bias"].astype(np.int64) + f.arrays["weights"][:, dead].astype(np.int64) @ (
        v[dead].astype(np.int64) - f.params["input_zp"])
    wrong = p.replace_ops(p.ops[:k] + (dataclasses.replace(p.ops[k], arrays={**p.ops[k].arrays, "bias": raw.astype(
        np.int32)}),) + p.ops[k + 1:])
    assert any(not np.array_equal(reference.run(wrong, x), reference.run(g, x)) for x in xs)


def test_pooled_dead_channels_stay_where_the_pool_is_read_elsewhere():
    """The pooled rule needs the pool's output to reach the fully connected layer only: with it also an output of the
    model (its dead channels visible there), nothing of the chain is dropped."""
    g, i, j, k = _kws_pooled(127)
    g2 = dataclasses.replace(g, more_outputs=(*g.more_outputs, g.ops[j].output))
    p = dead_channels.prune(g2)
    assert p.ops[j].params["c"] == 64 and p.ops[k].params["in_features"] == 64 and p.ops[i] is g2.ops[i]
    assert dead_channels.prune(g).ops[j].params["c"] == 56
