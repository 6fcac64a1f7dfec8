"""Dead channels (edgec/ops/conv/dead_channels.py, run by edgec/lower/lowering.py): a conv2d's all-zero channels
dropped with the depthwise and 1x1 layers after them, the constants folded into the 1x1 layer's bias: the same
integers out, bit for bit, on MLPerf Tiny's VWW (whose TFLite file has them: 21 to 234 dead channels a layer) and on
KWS with channels made dead here."""
from __future__ import annotations

import dataclasses

import numpy as np

from conftest import MLPERF, require_mlperf
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
    assert len(changed) == 15    # layers 12-26: 7 conv -> depthwise -> 1x1 chains, each 1x1 the next one's start
    for a, b in changed:
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
