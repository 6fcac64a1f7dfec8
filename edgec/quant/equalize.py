"""Cross-layer equalization (Nagel et al., 2019): conv pairs, depthwise-separable or not.

For a pair conv -> (ReLU) -> [max/average pooling (+ ReLU)]... -> conv whose middle tensors feed nothing
else, channel c of the first layer is divided by s_c and the matching input channel of the second
multiplied by s_c, with s_c = sqrt(r1_c / r2_c) (r = largest |weight| of the channel): both layers'
channels then share the same weight range, which per-tensor and depthwise per-channel weights quantize
much better. ReLU, max pooling and average pooling work channel by channel and commute with a positive
scale (max(s a, s b) = s max(a, b)), so the float function is unchanged; a clamp at a finite upper bound
(ReLU6) does not, so such pairs are skipped.

`equalize` returns a new canonical graph (the pairs' ops made anew with their rescaled weights) and the
per-channel factors by which each middle tensor's ONNX value must be multiplied before calibration observes
it: the ONNX model, like the graph it was given, does not change.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from edgec.ir import Graph, Op
from edgec.ops.registry import REGISTRY

# channel-wise ops that commute with a positive per-channel scale (their fused clamp permitting): pooling
PASS_THROUGH = frozenset(k for k, d in REGISTRY.items() if d.family == "pool")


def _homogeneous(op: Op) -> bool:
    """Whether op's fused activation commutes with a positive scale: none, or ReLU."""
    lo, hi = op.attrs.get("act", (-math.inf, math.inf))
    return hi == math.inf and lo in (0.0, -math.inf)


def chain(graph: Graph, op: Op) -> tuple[list[Op], Op] | None:
    """(pass-through ops, second layer) after an equalizable first layer `op`, or None."""
    middle, t = [], op.output
    while t not in graph.outputs:
        users = graph.consumers(t)
        if len(users) != 1 or users[0].inputs[0] != t:
            return None
        u = users[0]
        if REGISTRY[u.kind].equalize is not None:
            return middle, u
        if u.kind not in PASS_THROUGH or not _homogeneous(u) or len(u.inputs) != 1:
            return None
        middle.append(u)
        t = u.output
    return None


def pairs(graph: Graph) -> list[tuple[Op, Op]]:
    """(first, second) conv pairs that can be equalized."""
    found = []
    for op in graph.ops:
        if REGISTRY[op.kind].equalize is not None and _homogeneous(op) and chain(graph, op) is not None:
            found.append((op, chain(graph, op)[1]))
    return found


def equalize(graph: Graph, iterations: int = 20) -> tuple[Graph, dict[str, tuple[int, np.ndarray]]]:
    """(the graph with every pair equalized, {ONNX value: (axis 1, factor)} for calibration)."""
    factor: dict[str, np.ndarray] = {}
    found = pairs(graph)
    fresh = {id(op): replace(op, attrs=dict(op.attrs)) for pair in found for op in pair}   # rescaled below
    graph = graph.replace_ops(fresh.get(id(op), op) for op in graph.ops)
    todo = [(fresh[id(a)], fresh[id(b)]) for a, b in found]
    for _ in range(iterations):
        for a, b in todo:
            ea, eb = REGISTRY[a.kind].equalize, REGISTRY[b.kind].equalize
            r1, r2 = ea.out_range(a), eb.in_range(b)
            s = np.where((r1 > 0) & (r2 > 0), np.sqrt(r1 / np.where(r2 > 0, r2, 1)), 1.0)
            s = np.clip(s, 1e-3, 1e3)
            ea.scale_out(a, s)
            eb.scale_in(b, s)
            between = dict.fromkeys(graph.tensors[m.output].source for m in [a, *chain(graph, a)[0]])
            for src in between:                         # every ONNX value between the two layers is scaled
                factor[src] = factor.get(src, np.ones_like(s)) / s
    return graph, {src: (1, f) for src, f in factor.items()}
