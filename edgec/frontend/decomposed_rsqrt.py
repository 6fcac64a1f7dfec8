"""An L2 normalization written as a product by an inverse square root, recognized as one LpNormalization
(edgec/frontend/decomposed.py calls it).

Keras' `UnitNormalization` and `tf.math.l2_normalize` as TFLiteConverter writes them in a float .tflite (MUL x x,
SUM, RSQRT, MINIMUM 1e12, MUL; edgec translates RSQRT to Sqrt then Reciprocal) and as tf2onnx writes them:
`x * Min(Reciprocal(Sqrt(ReduceSum(x * x, axis))), C)`, the cap C (or a Max(sum, eps) before the Sqrt) only
keeping rows of zeros at zero; Reciprocal may be Div(1, .), x * x may be Pow(x, 2). Run as written, the inverse
square root's calibrated range reaches the cap (1e12 on a row of zeros after a Relu) and the product's multiplier
cannot be expressed ("multiplier ... too large"); as one LpNormalization (p=2) over that axis it is TFLite's int8
L2_NORMALIZATION kernel (edgec/ops/norm.py). Taken when every intermediate value is read by the next node alone
(and is no model output), the reduction keeps its one axis, and the cap is at least 1e6 (eps at most 1e-12): rows
whose norm is below 1e-6 are the only ones computed differently, and those are zero at int8.
"""
from __future__ import annotations

from edgec.frontend.decomposed_l2 import reduced_axes, squares
from edgec.frontend.node_graph import other

MIN_CAP = 1e6          # Min(rsqrt, C): C at least this
MAX_EPS = 1e-12        # Max(sum of squares, eps): eps at most this


def _producer(g, v: str, types) -> int | None:
    """The node computing v, when it is of one of `types`, not yet fused, and v is read by one node alone."""
    k = g.producer.get(v)
    if k is None or not g.plain(k, types) or len(g.readers.get(v, [])) != 1 or v in g.outputs:
        return None
    return k


def _sum_axis(g, k: int, opset: int) -> int | None:
    """The one axis a kept ReduceSum (node k) reduces, or None."""
    axes = reduced_axes(g, k, opset, 13)
    return axes[0] if axes is not None and len(axes) == 1 else None


def unit_norm_at(g, k: int, opset: int):
    """(nodes, x, y, axis) of y = x / ||x||_2 over one axis whose last Mul is node k (module doc), or None."""
    n = g.nodes[k]
    if not g.plain(k, {"Mul"}) or len(n.input) != 2:
        return None
    for x, m in ((n.input[0], n.input[1]), (n.input[1], n.input[0])):
        found = _inverse_norm(g, m, x, opset)
        if found is not None and g.shapes.get(x) == g.shapes.get(n.output[0]):
            nodes, axis = found
            return nodes | {k}, x, n.output[0], axis
    return None


def _inverse_norm(g, v: str, x: str, opset: int):
    """(nodes, axis) computing v = min(1 / sqrt(sum(x * x, axis)), C) (module doc), or None."""
    nodes = set()
    k = _producer(g, v, {"Min"})
    if k is not None:                                  # the cap
        inner = next((i for i in g.nodes[k].input if i not in g.consts), None)
        cap = g.scalar(other(g.nodes[k], inner)) if inner is not None and len(g.nodes[k].input) == 2 else None
        if cap is None or cap < MIN_CAP:
            return None
        nodes.add(k)
        v = inner
    k = _producer(g, v, {"Reciprocal", "Div"})
    if k is None:
        return None
    r = g.nodes[k]
    if r.op_type == "Div" and (len(r.input) != 2 or g.scalar(r.input[0]) != 1.0):
        return None
    nodes.add(k)
    k = _producer(g, r.input[-1], {"Sqrt"})
    if k is None:
        return None
    nodes.add(k)
    s = g.nodes[k].input[0]
    k = _producer(g, s, {"Max"})
    if k is not None:                                  # max(sum, eps)
        inner = next((i for i in g.nodes[k].input if i not in g.consts), None)
        eps = g.scalar(other(g.nodes[k], inner)) if inner is not None and len(g.nodes[k].input) == 2 else None
        if eps is None or not 0 <= eps <= MAX_EPS:
            return None
        nodes.add(k)
        s = inner
    k = _producer(g, s, {"ReduceSum"})
    if k is None or (axis := _sum_axis(g, k, opset)) is None:
        return None
    nodes.add(k)
    k = _producer(g, g.nodes[k].input[0], {"Mul", "Pow"})
    if k is None:
        return None
    return (nodes | {k}, axis) if squares(g, k, x) else None
