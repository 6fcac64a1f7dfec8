"""Cross-layer equalization (Nagel et al., 2019) for depthwise-separable networks.

For a pair conv -> (ReLU) -> conv whose middle tensor feeds nothing else, channel c of the first
layer is divided by s_c and the matching input channel of the second multiplied by s_c, with
s_c = sqrt(r1_c / r2_c) (r = largest |weight| of the channel): both layers' channels then share
the same weight range, which per-tensor and depthwise per-channel weights quantize much better.
ReLU is positively homogeneous, so the float function is unchanged; a clamp at a finite upper bound
(ReLU6) is not, so such pairs are skipped.

The canonical graph changes, the ONNX model does not: `equalize` returns the per-channel factors
by which each middle tensor's ONNX value must be multiplied before calibration observes it.
"""
from __future__ import annotations

import math

import numpy as np

from edgec.ir import Graph, Op
from edgec.ops.registry import REGISTRY

def pairs(graph: Graph) -> list[tuple[Op, Op]]:
    """(first, second) conv pairs that can be equalized."""
    found = []
    for op in graph.ops:
        lo, hi = op.attrs.get("act", (-math.inf, math.inf))
        if REGISTRY[op.kind].equalize is None or hi != math.inf or lo not in (0.0, -math.inf) or op.output == graph.output:
            continue
        users = graph.consumers(op.output)
        if len(users) == 1 and REGISTRY[users[0].kind].equalize and users[0].inputs[0] == op.output:
            found.append((op, users[0]))
    return found


def equalize(graph: Graph, iterations: int = 20) -> dict[str, tuple[int, np.ndarray]]:
    """Equalize every pair in place; returns {ONNX value: (axis 1, factor)} for calibration."""
    factor: dict[str, np.ndarray] = {}
    todo = pairs(graph)
    for _ in range(iterations):
        for a, b in todo:
            ea, eb = REGISTRY[a.kind].equalize, REGISTRY[b.kind].equalize
            r1, r2 = ea.out_range(a), eb.in_range(b)
            s = np.where((r1 > 0) & (r2 > 0), np.sqrt(r1 / np.where(r2 > 0, r2, 1)), 1.0)
            s = np.clip(s, 1e-3, 1e3)
            ea.scale_out(a, s)
            eb.scale_in(b, s)
            src = graph.tensors[a.output].source
            factor[src] = factor.get(src, np.ones_like(s)) / s
    return {src: (1, f) for src, f in factor.items()}
