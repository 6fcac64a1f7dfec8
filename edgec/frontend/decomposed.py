"""Operators exporters write as several nodes, recognized at canonicalization and built as the one node they are.

- GELU: before opset 20 ONNX has no Gelu, and PyTorch's TorchScript exporter writes `Div(x, sqrt 2) -> Erf -> Add 1
  -> Mul x -> Mul 0.5`; others multiply by 1/sqrt 2, halve before the product or halve the other factor, or write
  the tanh approximation `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (Pow 3 or x*x*x). Run as they are, these
  are several tables and an int8 x int8 product (slower, and each rounds); as one `Gelu` node (approximate "none"
  or "tanh") they are one table (edgec/ops/lut/__init__.py). A subgraph around an Erf or Tanh is taken when it has exactly
  one input x, is made of elementwise Add/Sub/Mul/Div/Pow/Erf/Tanh with scalar constants, none of its intermediate
  values is read outside it (nor is a model output), and it computes GELU: evaluated on a grid of x, within 1e-6
  (relative) of the exact function, so a wrong constant (0.6 for 0.5, another approximation) is left alone.
- LayerNorm: before opset 17 (and from many TF/Keras converters) `ReduceMean -> Sub -> Pow 2 (or Mul by itself)
  -> ReduceMean -> Add eps -> Sqrt -> Div (or Reciprocal and Mul) [-> Mul gamma] [-> Add beta]`, the reductions
  over the last axis (axes an attribute, or an input from opset 18) with keepdims: one `LayerNormalization`
  (edgec/ops/norm.py), gamma and beta constant along the last axis.

`fuse(...)` returns the nodes to canonicalize: the model's, with each recognized subgraph replaced by its one node,
placed where its last node was (its input is computed before its first). The ONNX model itself is unchanged
(calibration runs it as it is: the fused node's input and output are values of the model).
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgec.ir import SYNTHETIC
from edgec.ops import lut

ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Erf", "Tanh"}
GRID = np.linspace(-8.0, 8.0, 321)
TOLERANCE = 1e-6
MAX_NODES = 24          # a GELU is at most a dozen nodes: a larger elementwise cone is something else
_erf = np.vectorize(math.erf, otypes=[np.float64])
_EVAL = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
         "Erf": _erf, "Tanh": np.tanh}


class _Nodes:
    """The model's nodes with their producers, readers and constants (initializers and Constant nodes)."""

    def __init__(self, nodes, consts: dict, outputs, shapes: dict):
        self.nodes, self.shapes, self.outputs = list(nodes), shapes, set(outputs)
        self.consts = dict(consts)
        for n in self.nodes:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name in ("value", "value_float", "value_floats"):
                v = helper.get_attribute_value(n.attribute[0])
                self.consts[n.output[0]] = numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)
        self.producer = {o: k for k, n in enumerate(self.nodes) for o in n.output if o}
        self.readers: dict[str, list[int]] = {}
        for k, n in enumerate(self.nodes):
            for i in dict.fromkeys(n.input):
                self.readers.setdefault(i, []).append(k)
        self.used: set[int] = set()          # nodes already part of a fused subgraph

    def scalar(self, v: str) -> float | None:
        c = self.consts.get(v)
        return float(np.asarray(c).reshape(-1)[0]) if c is not None and np.asarray(c).size == 1 else None

    def only_reader(self, v: str) -> int | None:
        """The one node reading `v` (which is no model output), or None."""
        r = self.readers.get(v, [])
        return r[0] if len(r) == 1 and v not in self.outputs and r[0] not in self.used else None

    def plain(self, k: int, types) -> bool:
        n = self.nodes[k]
        return n.domain in ("", "ai.onnx") and n.op_type in types and k not in self.used


# ---- GELU -------------------------------------------------------------------------------------
def _elementwise(g: _Nodes, k: int) -> bool:
    """An elementwise node of x whose constants are scalars (Pow: a constant exponent)."""
    n = g.nodes[k]
    if not g.plain(k, ELEMENTWISE) or len(n.output) != 1:
        return False
    consts = [i for i in n.input if i in g.consts]
    if n.op_type == "Pow" and n.input[1] not in g.consts:
        return False
    return all(g.scalar(c) is not None for c in consts) and len(consts) < len(n.input)


def _cone(g: _Nodes, sinks: set[int], stop: str | None) -> tuple[set[int], set[str]]:
    """`sinks` grown backwards by every elementwise producer whose output only the set reads (never past `stop`),
    and the values the set reads from outside (constants aside)."""
    cone = set(sinks)
    changed = True
    while changed:
        changed = False
        for k in sorted(cone):
            for v in g.nodes[k].input:
                p = g.producer.get(v)
                if v == stop or v in g.consts or p is None or p in cone or v in g.outputs or not _elementwise(g, p):
                    continue
                if all(r in cone for r in g.readers[v]):
                    cone.add(p)
                    changed = len(cone) <= MAX_NODES
    inside = {o for k in cone for o in g.nodes[k].output}
    leaves = {v for k in cone for v in g.nodes[k].input if v and v not in g.consts and v not in inside}
    return cone, leaves


def _computes(g: _Nodes, sub: set[int], x: str, y: str, approximate: str) -> bool:
    """Whether the nodes `sub` compute GELU of x as y, evaluated on GRID."""
    vals = {x: GRID}
    with np.errstate(all="ignore"):
        for k in sorted(sub):        # ONNX nodes are in topological order
            n = g.nodes[k]
            args = [vals[i] if i in vals else np.float64(g.scalar(i)) for i in n.input]
            vals[n.output[0]] = _EVAL[n.op_type](*args)
    want = lut.apply("gelu", GRID, None, {"approximate": approximate})
    got = np.asarray(vals[y], np.float64)
    return got.shape == GRID.shape and bool(np.all(np.abs(got - want) <= TOLERANCE * (1 + np.abs(want))))


def _gelu_at(g: _Nodes, anchor: int):
    """(nodes, x, y, approximate) of a GELU around Erf/Tanh node `anchor`, or None."""
    if not _elementwise(g, anchor):
        return None
    cone, leaves = _cone(g, {anchor}, None)
    if len(leaves) != 1 or len(cone) > MAX_NODES:
        return None
    x = next(iter(leaves))
    approximate = "none" if g.nodes[anchor].op_type == "Erf" else "tanh"
    sub, cur = cone, g.nodes[anchor].output[0]
    for _ in range(4):                      # Add 1, the product with x, the halving (before or after it)
        r = g.only_reader(cur)
        if r is None or not g.plain(r, {"Add", "Sub", "Mul", "Div"}) or not _elementwise(g, r):
            return None
        sub, leaves = _cone(g, sub | {r}, x)
        if leaves != {x} or len(sub) > MAX_NODES:
            return None
        cur = g.nodes[r].output[0]
        if _computes(g, sub, x, cur, approximate):
            return sub, x, cur, approximate
    return None


# ---- LayerNorm --------------------------------------------------------------------------------
def _last_axis_mean(g: _Nodes, k: int, x: str, opset: int) -> bool:
    n = g.nodes[k]
    if not g.plain(k, {"ReduceMean"}) or n.input[0] != x or x not in g.shapes:
        return False
    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
    axes = attrs.get("axes")
    if opset >= 18 and len(n.input) > 1 and n.input[1]:
        axes = g.consts.get(n.input[1])
    rank = len(g.shapes[x])
    if axes is None or attrs.get("keepdims", 1) != 1 or rank == 0:
        return False
    return [int(a) % rank for a in np.asarray(axes).reshape(-1)] == [rank - 1]


def _other(n, v: str) -> str | None:
    """The operand of binary node `n` that is not `v` (None unless exactly one is)."""
    rest = [i for i in n.input if i != v]
    return rest[0] if len(rest) == 1 and len(n.input) == 2 else None


def _along_last(g: _Nodes, c: str, cols: int, rank: int) -> np.ndarray | None:
    """A constant operand that broadcasts along the last axis only, as [cols] (None if it is not one)."""
    a = g.consts.get(c)
    if a is None or np.asarray(a).ndim > rank:
        return None
    a = np.asarray(a, np.float64)
    if any(d != 1 for d in a.shape[:-1]) or (a.ndim and a.shape[-1] not in (1, cols)):
        return None
    return np.broadcast_to(a.reshape(-1), (cols,)).copy()


def _layer_norm_at(g: _Nodes, k: int, opset: int):
    """(nodes, x, y, gamma, beta, epsilon) of a decomposed LayerNorm starting at ReduceMean node k, or None."""
    x = g.nodes[k].input[0] if g.nodes[k].input else ""
    if x in g.consts or not _last_axis_mean(g, k, x, opset):
        return None
    shape = g.shapes[x]
    sub = [k]

    def step(v: str, types) -> int | None:
        r = g.only_reader(v)
        if r is None or not g.plain(r, types):
            return None
        sub.append(r)
        return r
    s = step(g.nodes[k].output[0], {"Sub"})
    if s is None or list(g.nodes[s].input) != [x, g.nodes[k].output[0]]:
        return None
    d = g.nodes[s].output[0]
    rd = g.readers.get(d, [])
    if len(rd) != 2 or d in g.outputs or any(r in g.used for r in rd):
        return None
    sq = next((r for r in rd if g.nodes[r].op_type == "Mul" and list(g.nodes[r].input) == [d, d]
               or g.nodes[r].op_type == "Pow" and g.nodes[r].input[0] == d and g.scalar(g.nodes[r].input[1]) == 2.0),
              None)
    if sq is None or not g.plain(sq, {"Mul", "Pow"}):
        return None
    sub.append(sq)
    r2 = step(g.nodes[sq].output[0], {"ReduceMean"})
    if r2 is None or not _last_axis_mean(g, r2, g.nodes[sq].output[0], opset):
        return None
    add = step(g.nodes[r2].output[0], {"Add"})
    eps = g.scalar(_other(g.nodes[add], g.nodes[r2].output[0]) or "") if add is not None else None
    root = step(g.nodes[add].output[0], {"Sqrt"}) if eps is not None and eps >= 0 else None
    if root is None:
        return None
    std = g.nodes[root].output[0]
    div = step(std, {"Div", "Reciprocal"})
    if div is not None and g.nodes[div].op_type == "Reciprocal":
        div = step(g.nodes[div].output[0], {"Mul"})
        if div is None or _other(g.nodes[div], g.nodes[sub[-2]].output[0]) != d:
            return None
    elif div is None or list(g.nodes[div].input) != [d, std]:
        return None
    if div not in rd or sq not in rd:
        return None
    y, cols = g.nodes[div].output[0], int(shape[-1])
    gamma, beta = np.ones(cols), np.zeros(cols)
    for op, value in (("Mul", "gamma"), ("Add", "beta")):
        r = g.only_reader(y)
        if r is None or not g.plain(r, {op}):
            continue
        c = _along_last(g, _other(g.nodes[r], y) or "", cols, len(shape))
        if c is None or g.shapes.get(g.nodes[r].output[0], shape) != shape:
            continue
        if value == "gamma":
            gamma = c
        else:
            beta = c
        sub.append(r)
        y = g.nodes[r].output[0]
    return set(sub), x, y, gamma, beta, eps


# ---- the driver's entry -------------------------------------------------------------------------
def _name(g: _Nodes, sub: set[int], op_type: str, taken: set[str]) -> str:
    """The fused node's name: the matched nodes' common scope + the op type (PyTorch's style), else the last's."""
    parts = [g.nodes[k].name.split("/")[:-1] for k in sub]
    scope = []
    for level in zip(*parts):
        if len(set(level)) != 1:
            break
        scope.append(level[0])
    name = "/".join(scope + [op_type]) if any(scope) else ""
    return name if name and name not in taken else g.nodes[max(sub)].name


def fuse(model: onnx.ModelProto, consts: dict, shapes: dict, opset: int):
    """The nodes to canonicalize as (index in the model, node), each decomposed GELU and LayerNorm replaced by one
    node at its last node's index, and the constants the new nodes read (LayerNorm's gamma and beta)."""
    g = _Nodes(model.graph.node, consts, [o.name for o in model.graph.output], shapes)
    taken = {n.name for n in g.nodes}
    fused: dict[int, onnx.NodeProto] = {}
    new_consts: dict[str, np.ndarray] = {}
    for k, n in enumerate(g.nodes):
        if k in g.used or n.domain not in ("", "ai.onnx"):
            continue
        if n.op_type in ("Erf", "Tanh"):
            found = _gelu_at(g, k)
            if found is not None:
                sub, x, y, approximate = found
                node = helper.make_node("Gelu", [x], [y], name=_name(g, sub, "Gelu", taken), approximate=approximate)
        elif n.op_type == "ReduceMean":
            found = _layer_norm_at(g, k, opset)
            if found is not None:
                sub, x, y, gamma, beta, eps = found
                names = [f"{SYNTHETIC}{y}__{w}" for w in ("gamma", "beta")]
                new_consts.update(zip(names, (gamma.astype(np.float32), beta.astype(np.float32))))
                node = helper.make_node("LayerNormalization", [x] + names, [y], axis=-1, epsilon=float(eps),
                                        name=_name(g, sub, "LayerNormalization", taken))
        else:
            continue
        if found is not None:
            g.used |= sub
            taken.add(node.name)
            fused[max(sub)] = node
    nodes = [(k, fused.get(k, n)) for k, n in enumerate(g.nodes) if k not in g.used or k in fused]
    return nodes, new_consts
