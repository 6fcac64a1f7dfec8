"""PyTorch's F.normalize written as several nodes, recognized as one LpNormalization (edgec/frontend/decomposed.py
calls it; its module doc says which forms)."""
from __future__ import annotations

import numpy as np
from onnx import helper

from edgec.frontend.node_graph import Nodes, other

PASS_THROUGH = {"Cast", "CastLike", "Identity"}      # ReduceL2's function body casts to float and back


def reduced_axes(g: Nodes, k: int, opset: int, since: int) -> list[int] | None:
    """The axes (each in [0, rank)) node k, a reduction keeping them, reduces (an input from opset `since`, else
    an attribute), or None. (Also read by decomposed_rsqrt.py.)"""
    n = g.nodes[k]
    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
    axes = g.consts.get(n.input[1]) if opset >= since and len(n.input) > 1 and n.input[1] else attrs.get("axes")
    shape = g.shapes.get(n.input[0])
    if axes is None or attrs.get("keepdims", 1) != 1 or not shape:
        return None
    return [int(a) % len(shape) for a in np.asarray(axes).reshape(-1)]


def squares(g: Nodes, k: int, x: str) -> bool:
    """Node k, a Mul or a Pow, computes x * x or x ^ 2. (Also read by decomposed_rsqrt.py.)"""
    m = g.nodes[k]
    return list(m.input) == [x, x] if m.op_type == "Mul" else m.input[0] == x and g.scalar(m.input[1]) == 2.0


def _reduces_last(g: Nodes, k: int, v: str, opset: int, op_type: str, since: int) -> bool:
    """Node k is `op_type` of v over its last axis alone, kept (axes an input from opset `since`, else an
    attribute)."""
    if not g.plain(k, {op_type}) or g.nodes[k].input[0] != v:
        return False
    axes = reduced_axes(g, k, opset, since)
    return axes is not None and axes == [len(g.shapes[v]) - 1]


def _norm_of(g: Nodes, v: str, x: str, opset: int) -> set[int] | None:
    """The nodes computing v = ||x||_2 over x's last axis (ReduceL2, or Sqrt of a ReduceSum of x * x or x ^ 2, casts
    between them passed), or None."""
    nodes = set()
    while True:
        k = g.producer.get(v)
        if k is None or k in g.used:
            return None
        nodes.add(k)
        n = g.nodes[k]
        if g.plain(k, PASS_THROUGH):
            v = n.input[0]
        elif _reduces_last(g, k, x, opset, "ReduceL2", 18):
            return nodes
        elif g.plain(k, {"Sqrt"}):
            s = g.producer.get(n.input[0])
            while s is not None and g.plain(s, PASS_THROUGH):
                nodes.add(s)
                s = g.producer.get(g.nodes[s].input[0])
            if s is None or not g.nodes[s].input or \
                    not _reduces_last(g, s, g.nodes[s].input[0], opset, "ReduceSum", 13):
                return None
            sq = g.producer.get(g.nodes[s].input[0])
            if sq is None or not g.plain(sq, {"Mul", "Pow"}):
                return None
            return nodes | {s, sq} if squares(g, sq, x) else None
        else:
            return None


def l2_normalize_at(g: Nodes, k: int, opset: int):
    """(nodes, x, y) of x / max(||x||_2, eps) over x's last axis whose Div is node k, or None. Every value the nodes
    compute but y is read only by them and is no model output; eps (a Clip's min or a Max's scalar) at most 1e-6."""
    n = g.nodes[k]
    if not g.plain(k, {"Div"}) or len(n.input) != 2 or n.input[0] in g.consts or n.input[0] not in g.shapes:
        return None
    x, v, nodes = n.input[0], n.input[1], {k}
    while True:
        p = g.producer.get(v)
        if p is None or p in g.used:
            return None
        q = g.nodes[p]
        if g.plain(p, {"Expand"}):
            shape = g.producer.get(q.input[1])
            if q.input[1] in g.consts:
                if tuple(np.asarray(g.consts[q.input[1]]).reshape(-1)) != tuple(g.shapes[x]):
                    return None
            elif shape is None or not g.plain(shape, {"Shape"}) or g.nodes[shape].input[0] != x or \
                    len(g.nodes[shape].attribute):
                return None
            else:
                nodes.add(shape)
        elif g.plain(p, {"Clip"}):
            attrs = {a.name: helper.get_attribute_value(a) for a in q.attribute}
            low = g.scalar(q.input[1]) if len(q.input) > 1 and q.input[1] else attrs.get("min")
            high = q.input[2] if len(q.input) > 2 else ""
            if low is None or not 0 <= low <= 1e-6 or high or "max" in attrs:
                return None
        elif g.plain(p, {"Max"}):
            low = g.scalar(other(q, q.input[0]) or "")
            if low is None or not 0 <= low <= 1e-6:
                return None
        else:
            break
        nodes.add(p)
        v = q.input[0]
    norm = _norm_of(g, v, x, opset)
    if norm is None:
        return None
    nodes |= norm
    y = n.output[0]
    inner = {o for j in nodes for o in g.nodes[j].output} - {y}
    if any(o in g.outputs or any(r not in nodes for r in g.readers.get(o, [])) for o in inner):
        return None
    return nodes, x, y
