"""Saturating layers: an activation table (Tanh, Sigmoid, a Clip with no producer to fuse into...) whose input's
calibrated range reaches far into where the function is flat.

A Tanh whose input spans -140..110 spends all but a few of its input's 256 int8 levels where tanh is +-1: the
few levels left for -3..3 are what the output is made of. The range of such an input is better cut to where the
function still moves: values beyond it map to (almost) the same output anyway, and the producer's int8 clamp
puts them at the cut. `flat_tails` finds that interval on the function itself (within a quarter of an output
step of the function's value at the cut, over the whole calibrated range), `clamp` applies it to the ranges
of the tensors only such tables read. The default recipe (edgec/quant/fixes.py) keeps it when it measurably
helps; `QuantOptions(saturation=True)` forces it.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Graph
from edgec.ops import lut
from edgec.ops.registry import REGISTRY

GRID = 8192           # points the function is evaluated on over the calibrated input range
TOLERANCE = 0.25      # the cut may move an output by at most this many output steps (of 255 over its range)
MIN_SHRINK = 2.0      # a range is cut only if the cut makes it at least this many times narrower


def flat_tails(op, lo: float, hi: float) -> tuple[float, float]:
    """The interval [a, b] within [lo, hi] outside which `op`'s function moves by less than TOLERANCE of an
    int8 output step (its output range over [lo, hi] / 255); [lo, hi] when it has no flat tail."""
    a = op.attrs
    x = np.linspace(lo, hi, GRID)
    y = np.asarray(lut.apply(a["fn"], x.reshape(-1, 1, 1), None, a["fparams"]), np.float64).reshape(-1)
    if not np.all(np.isfinite(y)) or y.max() <= y.min():
        return lo, hi
    tol = TOLERANCE * (y.max() - y.min()) / 255.0

    def last_flat(v):          # the last index i with v[0..i] all within tol of v[i]
        bad = (np.maximum.accumulate(v) - v > tol) | (v - np.minimum.accumulate(v) > tol)
        return (int(np.argmax(bad)) - 1) if bad.any() else len(v) - 1
    i, j = last_flat(y), len(y) - 1 - last_flat(y[::-1])
    if i >= j:
        return lo, hi
    return float(x[i]), float(x[j])


def candidates(graph: Graph) -> list:
    """(table op, its input tensor) where cutting the input's range is safe: a one-table activation, the only
    reader of an input that is not a model output and whose range is calibrated (not tied to another's)."""
    readers: dict[str, int] = {}
    for op in graph.ops:
        for t in op.inputs:
            readers[t] = readers.get(t, 0) + 1
    producer = {op.output: op for op in graph.ops}
    out = []
    for op in graph.ops:
        if not (lut.is_table(op) and op.attrs.get("consts") is None and op.attrs.get("count", 1) == 1):
            continue
        t = op.inputs[0]
        src = producer.get(t)
        if readers.get(t) == 1 and t not in graph.outputs and (src is None or REGISTRY[src.kind].qparams == "calibrated"):
            out.append((op, graph.tensors[t]))
    return out


def clamp(graph: Graph, ranges: dict) -> tuple[dict, dict]:
    """(ranges with every saturating table's input range cut to where its function moves, {source: (old, new)}
    of the cut ones)."""
    ranges, cut = dict(ranges), {}
    for op, t in candidates(graph):
        if t.source not in ranges:
            continue
        lo, hi = ranges[t.source]
        a, b = flat_tails(op, lo, hi)
        a, b = min(a, 0.0), max(b, 0.0)          # a range holds zero
        if hi - lo > 0 and (hi - lo) >= MIN_SHRINK * (b - a):
            ranges[t.source] = (a, b)
            cut[t.source] = ((lo, hi), (a, b))
    return ranges, cut


def describe(cut: dict) -> list[str]:
    return [f"saturating input {s} ({old[0]:.3g}..{old[1]:.3g}, flat beyond {new[0]:.3g}..{new[1]:.3g})"
            for s, (old, new) in cut.items()]
