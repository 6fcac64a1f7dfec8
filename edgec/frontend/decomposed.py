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
  -> ReduceMean -> Add eps -> Sqrt`, the reductions over the last axis (axes an attribute, or an input from opset
  18) with keepdims, or GlobalAveragePool of a 3-D value (tf2onnx's mean over the last axis), then a tail of
  elementwise nodes: PyTorch's `Div (or Reciprocal and Mul) [-> Mul gamma] [-> Add beta]`, Keras 3's (through
  tf2onnx, or a float .tflite's MEAN / SQUARED_DIFFERENCE / RSQRT / NEG / MUL / ADD as edgec translates them)
  `inv = Reciprocal(std) [* gamma]; x * inv + (-mean * inv [+ beta])`, tf.nn.batch_normalization's `x * inv +
  (beta - mean * inv)`: one `LayerNormalization` (edgec/ops/norm.py). The tail may read only x, the mean, x - mean
  and std (each read by nothing else), with scalar or last-axis constants; it is taken when, evaluated on random
  rows, it is (x - mean) / std * gamma + beta (gamma and beta read off it), so a gamma along another axis, a sign
  slip or an intermediate read elsewhere leaves the nodes as they are.
- RMSNorm: `Pow(x, 2)` (or `x * x`) -> ReduceMean over the last axis -> Add eps -> Sqrt, then LayerNorm's kind of
  tail computing x / std * gamma (PyTorch's nn.RMSNorm through dynamo: Reciprocal, Mul x, Mul gamma): one
  `RMSNormalization`, the `layer_norm` op without its mean (edgec/ops/norm.py).
- L2 normalization: PyTorch's `F.normalize(x, dim=-1)` is `Div(x, Expand(Clip(ReduceL2(x), min=eps), Shape(x)))`
  (ReduceL2 perhaps already written as its ONNX function body `Mul(x, x) -> ReduceSum -> Cast -> Sqrt -> CastLike`,
  edgec/frontend/functions.py, or by hand as `Sqrt(ReduceSum(Pow(x, 2)))`), the reduction over the last axis with
  keepdims, the Clip (or Max with a scalar) and the Expand optional: one `LpNormalization` (p 2, the last axis),
  TFLite's int8 L2_NORMALIZATION (edgec/ops/norm.py `l2_norm`, its output on a calibrated grid). Run as they are,
  the squares, their sum, the root and the division each round to int8 on its own grid.
- L2 normalization as `x * Min(Reciprocal(Sqrt(ReduceSum(x * x))), cap)` (Keras' UnitNormalization,
  tf.math.l2_normalize): one `LpNormalization` p=2 (edgec/frontend/decomposed_rsqrt.py).

`fuse(...)` returns the nodes to canonicalize: the model's, with each recognized subgraph replaced by its one node,
placed where its last node was (its input is computed before its first). The ONNX model itself is unchanged
(calibration runs it as it is: the fused node's input and output are values of the model).
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper

from edgec.frontend import decomposed_l2, decomposed_rsqrt
from edgec.frontend.node_graph import Nodes as _Nodes, other as _other
from edgec.ir import SYNTHETIC
from edgec.ops import lut

ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Erf", "Tanh"}
GRID = np.linspace(-8.0, 8.0, 321)
TOLERANCE = 1e-6
MAX_NODES = 24          # a GELU is at most a dozen nodes: a larger elementwise cone is something else
_erf = np.vectorize(math.erf, otypes=[np.float64])
_EVAL = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
         "Erf": _erf, "Tanh": np.tanh}


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


def _along_last(g: _Nodes, c: str, cols: int, rank: int) -> np.ndarray | None:
    """A constant operand that broadcasts along the last axis only, as [cols] (None if it is not one)."""
    a = g.consts.get(c)
    if a is None or np.asarray(a).ndim > rank:
        return None
    a = np.asarray(a, np.float64)
    if any(d != 1 for d in a.shape[:-1]) or (a.ndim and a.shape[-1] not in (1, cols)):
        return None
    return np.broadcast_to(a.reshape(-1), (cols,)).copy()


TAIL_OPS = {"Add", "Sub", "Mul", "Div", "Neg", "Reciprocal"}
MAX_TAIL = 12           # Keras' tail is 7 nodes (1 / std, x gamma, the two products, -mean, + beta, the sum)
_TAIL_EVAL = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Neg": np.negative,
              "Reciprocal": np.reciprocal}


def _mean_of(g: _Nodes, k: int, v: str, opset: int) -> bool:
    """Node k is the mean of v over its last axis, kept: a ReduceMean, or a GlobalAveragePool of a 3-D value
    (tf2onnx writes a Keras mean over the last axis of [N, T, C] so)."""
    n = g.nodes[k]
    if g.plain(k, {"GlobalAveragePool"}):
        return n.input[0] == v and len(g.shapes.get(v, ())) == 3
    return _last_axis_mean(g, k, v, opset)


def _core(g: _Nodes, k: int, opset: int):
    """The statistics of a LayerNorm whose mean is node k: (x, mean, x - mean, std, nodes, epsilon) where std is
    Sqrt(ReduceMean((x - mean)^2) + eps), or None."""
    n = g.nodes[k]
    x = n.input[0] if n.input else ""
    if x in g.consts or not _mean_of(g, k, x, opset) or not g.plain(k, {"ReduceMean", "GlobalAveragePool"}):
        return None
    m = n.output[0]
    subs = [r for r in g.readers.get(m, []) if g.plain(r, {"Sub"}) and list(g.nodes[r].input) == [x, m]]
    if len(subs) != 1 or m in g.outputs:
        return None
    d = g.nodes[subs[0]].output[0]
    sq = next((r for r in g.readers.get(d, []) if g.plain(r, {"Mul", "Pow"}) and (
        list(g.nodes[r].input) == [d, d] if g.nodes[r].op_type == "Mul"
        else g.nodes[r].input[0] == d and g.scalar(g.nodes[r].input[1]) == 2.0)), None)
    if sq is None or d in g.outputs:
        return None
    var = g.only_reader(g.nodes[sq].output[0])
    if var is None or not _mean_of(g, var, g.nodes[sq].output[0], opset):
        return None
    add = g.only_reader(g.nodes[var].output[0])
    if add is None or not g.plain(add, {"Add"}):
        return None
    eps = g.scalar(_other(g.nodes[add], g.nodes[var].output[0]) or "")
    root = g.only_reader(g.nodes[add].output[0])
    if eps is None or eps < 0 or root is None or not g.plain(root, {"Sqrt"}):
        return None
    return x, m, d, g.nodes[root].output[0], {k, subs[0], sq, var, add, root}, eps


def _tail_operand(g: _Nodes, v: str, cols: int, rank: int) -> np.ndarray | None:
    """A constant operand of the tail as [cols] (a scalar or constant along the last axis only), or None."""
    if v not in g.consts:
        return None
    return np.full(cols, g.scalar(v)) if g.scalar(v) is not None else _along_last(g, v, cols, rank)


def _cone_to(g: _Nodes, y: int, base: set[str], tail: set[int]) -> set[int] | None:
    """The tail nodes computing node y's output from `base` values and constants, or None if it reads anything
    else."""
    cone, todo = set(), [y]
    while todo:
        k = todo.pop()
        if k in cone:
            continue
        cone.add(k)
        for v in g.nodes[k].input:
            if v in base or v in g.consts:
                continue
            p = g.producer.get(v)
            if p is None or p not in tail:
                return None
            todo.append(p)
    return cone


def _evaluate(g: _Nodes, cone: set[int], vals: dict, cols: int, rank: int) -> np.ndarray | None:
    """The cone's output on `vals` (its base values), as [rows, cols]; None if a constant is not a tail operand."""
    rows, vals = len(next(iter(vals.values()))), dict(vals)
    with np.errstate(all="ignore"):
        for k in sorted(cone):          # ONNX nodes are in topological order
            n = g.nodes[k]
            args = [vals[i] if i in vals else _tail_operand(g, i, cols, rank) for i in n.input]
            if any(a is None for a in args):
                return None
            vals[n.output[0]] = _TAIL_EVAL[n.op_type](*args)
    return np.broadcast_to(vals[g.nodes[max(cone)].output[0]], (rows, cols))


def _affine(g: _Nodes, cone: set[int], x: str, m: str, d: str, std: str, cols: int, rank: int):
    """(gamma, beta) if the cone's output is (x - mean) / std * gamma + beta of its inputs (checked on random rows
    with x - mean = d: the tail may read x and mean, or d), else None."""
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(8, cols)) * 3
    ms, ss = rng.normal(size=(8, 1)), rng.uniform(0.3, 3.0, size=(8, 1))
    ms[:2], ss[:2], xs[0], xs[1] = 0.7, 1.0, 0.7, 1.7       # d = 0 gives beta, d = 1 gamma + beta
    got = _evaluate(g, cone, {x: xs, m: ms, d: xs - ms, std: ss}, cols, rank)
    if got is None:
        return None
    beta, gamma = got[0].copy(), got[1] - got[0]
    want = (xs - ms) / ss * gamma + beta
    ok = np.all(np.isfinite(got)) and np.all(np.abs(got - want) <= TOLERANCE * (1 + np.abs(want)))
    return (gamma, beta) if ok else None


def _layer_norm_at(g: _Nodes, k: int, opset: int):
    """(nodes, x, y, gamma, beta, epsilon) of a decomposed LayerNorm whose mean is node k, or None.

    The statistics (_core) feed a tail of elementwise nodes with scalar or last-axis constants (TAIL_OPS) that reads
    only x, the mean, x - mean and std; every value it computes but its output y is read only inside it, as are
    the mean, x - mean and std. Of the outputs y that qualify, the last one computing (x - mean) / std * gamma +
    beta (evaluated, _affine) is taken: PyTorch's Div [-> Mul gamma] [-> Add beta] and Keras' x * inv + (beta -
    mean * inv), inv = gamma / std, alike."""
    core = _core(g, k, opset)
    if core is None or len(g.shapes[core[0]]) == 0:
        return None
    x, m, d, std, nodes, eps = core
    shape = g.shapes[x]
    cols, rank = int(shape[-1]), len(shape)
    base = {x, m, d, std}
    tail: set[int] = set()
    todo = [r for v in (m, d, std) for r in g.readers.get(v, []) if r not in nodes]
    while todo and len(tail) < 4 * MAX_TAIL:        # (past the LayerNorm: a residual Add, the next one's Sub...)
        r = todo.pop()
        if r in tail or not g.plain(r, TAIL_OPS) or len(g.nodes[r].output) != 1:
            continue
        tail.add(r)
        todo += g.readers.get(g.nodes[r].output[0], [])
    found = None
    for y in sorted(tail):
        cone = _cone_to(g, y, base, tail)
        if cone is None or len(cone) > MAX_TAIL:
            continue
        out = g.nodes[y].output[0]
        inner = {g.nodes[j].output[0] for j in cone} - {out}
        if any(v in g.outputs or any(r not in cone for r in g.readers.get(v, [])) for v in inner):
            continue
        if any(r not in cone and r not in nodes for v in (m, d, std) for r in g.readers.get(v, [])):
            continue
        if g.shapes.get(out, shape) != shape or not any(std in g.nodes[j].input for j in cone):
            continue
        params = _affine(g, cone, x, m, d, std, cols, rank)
        if params is not None:
            found = (nodes | cone, x, out, params[0], params[1], eps)
    return found


# ---- RMSNorm ----------------------------------------------------------------------------------
def _rms_norm_at(g: _Nodes, k: int, opset: int):
    """(nodes, x, y, gamma, epsilon) of an RMSNorm whose mean of squares is node k, or None: `Pow(x, 2)` (or `x *
    x`) -> ReduceMean over the last axis, kept -> Add eps -> Sqrt, then a tail as LayerNorm's (TAIL_OPS, scalar or
    last-axis constants) reading only x and the root, evaluated to be x / std * gamma (PyTorch's nn.RMSNorm through
    dynamo: Reciprocal, Mul x, Mul gamma)."""
    sq = g.producer.get(g.nodes[k].input[0]) if g.nodes[k].input else None
    if sq is None or not g.plain(sq, {"Pow", "Mul"}) or g.only_reader(g.nodes[sq].output[0]) != k:
        return None
    m = g.nodes[sq]
    x = m.input[0]
    if not (list(m.input) == [x, x] if m.op_type == "Mul" else g.scalar(m.input[1]) == 2.0) or x in g.consts or \
            not _last_axis_mean(g, k, m.output[0], opset) or not g.shapes.get(x):
        return None
    add = g.only_reader(g.nodes[k].output[0])
    if add is None or not g.plain(add, {"Add"}):
        return None
    eps = g.scalar(_other(g.nodes[add], g.nodes[k].output[0]) or "")
    root = g.only_reader(g.nodes[add].output[0])
    if eps is None or eps < 0 or root is None or not g.plain(root, {"Sqrt"}):
        return None
    std, nodes = g.nodes[root].output[0], {sq, k, add, root}
    shape = g.shapes[x]
    cols, rank = int(shape[-1]), len(shape)
    tail: set[int] = set()
    todo = list(g.readers.get(std, []))
    while todo and len(tail) < 4 * MAX_TAIL:
        r = todo.pop()
        if r in tail or not g.plain(r, TAIL_OPS) or len(g.nodes[r].output) != 1:
            continue
        tail.add(r)
        todo += g.readers.get(g.nodes[r].output[0], [])
    rng = np.random.default_rng(0)
    xs, ss = rng.normal(size=(8, cols)) * 3, rng.uniform(0.3, 3.0, size=(8, 1))
    xs[0], xs[1], ss[:2] = 0.0, 1.0, 1.0            # x = 0 gives beta (must be 0), x = 1 gamma
    found = None
    for y in sorted(tail):
        cone = _cone_to(g, y, {x, std}, tail)
        if cone is None or len(cone) > MAX_TAIL:
            continue
        out = g.nodes[y].output[0]
        inner = {g.nodes[j].output[0] for j in cone} - {out}
        if any(v in g.outputs or any(r not in cone for r in g.readers.get(v, [])) for v in inner) or \
                any(r not in cone for r in g.readers.get(std, [])) or g.shapes.get(out, shape) != shape:
            continue
        got = _evaluate(g, cone, {x: xs, std: ss}, cols, rank)
        if got is None or not np.all(np.isfinite(got)) or np.any(np.abs(got[0]) > TOLERANCE):
            continue
        gamma = got[1].copy()
        want = xs / ss * gamma
        if np.all(np.abs(got - want) <= TOLERANCE * (1 + np.abs(want))):
            found = (nodes | cone, x, out, gamma, eps)
    return found


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
    """The nodes to canonicalize as (index in the model, node), each decomposed GELU, LayerNorm, RMSNorm and L2
    normalization replaced by one node at its last node's index, and the constants the new nodes read (the norms'
    gamma and beta)."""
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
        elif n.op_type in ("ReduceMean", "GlobalAveragePool"):
            found = _layer_norm_at(g, k, opset)
            if found is not None:
                sub, x, y, gamma, beta, eps = found
                names = [f"{SYNTHETIC}{y}__{w}" for w in ("gamma", "beta")]
                new_consts.update(zip(names, (gamma.astype(np.float32), beta.astype(np.float32))))
                node = helper.make_node("LayerNormalization", [x] + names, [y], axis=-1, epsilon=float(eps),
                                        name=_name(g, sub, "LayerNormalization", taken))
            elif n.op_type == "ReduceMean":
                found = _rms_norm_at(g, k, opset)
                if found is not None:
                    sub, x, y, gamma, eps = found
                    new_consts[f"{SYNTHETIC}{y}__gamma"] = gamma.astype(np.float32)
                    node = helper.make_node("RMSNormalization", [x, f"{SYNTHETIC}{y}__gamma"], [y], axis=-1,
                                            epsilon=float(eps), name=_name(g, sub, "RMSNormalization", taken))
        elif n.op_type == "Div":
            found = decomposed_l2.l2_normalize_at(g, k, opset)
            if found is not None:
                sub, x, y = found
                node = helper.make_node("LpNormalization", [x], [y], axis=-1, p=2,
                                        name=_name(g, sub, "LpNormalization", taken))
        elif n.op_type == "Mul":
            found = decomposed_rsqrt.unit_norm_at(g, k, opset)
            if found is not None:
                sub, x, y, axis = found
                node = helper.make_node("LpNormalization", [x], [y], axis=axis, p=2,
                                        name=_name(g, sub, "LpNormalization", taken))
        else:
            continue
        if found is not None:
            g.used |= sub
            taken.add(node.name)
            fused[max(sub)] = node
    nodes = [(k, fused.get(k, n)) for k, n in enumerate(g.nodes) if k not in g.used or k in fused]
    return nodes, new_consts
