"""Dead channels: a convolution's output channels whose weights are all zero hold one value at every pixel (the
requantized bias). TFLite files keep such channels (MLPerf Tiny's VWW: 21 to 234 of the 128 or 256 channels of each
1x1 layer from the 6x6 ones on). Where that value is the next depthwise layer's input zero point, the depthwise
layer's output of the channel is one value too (every tap, the padding's included, adds zero: its requantized
bias), and a 1x1 convolution without padding after it takes that value as a constant input: its contribution
w[o][c] * (value - input_zp) is added to the bias at build time. So the channel is dropped from all three layers
and from the two tensors between them: the same integers at every output, bit for bit, without its MACs.

    conv2d P (channel c: all-zero weights, value == D's input zero point)
      -> depthwise_conv2d D (depth multiplier 1: channel c's output = D's requantized bias[c], a constant v)
      -> conv2d C (1x1, no padding: bias[o] += w[o][c] * (v - C's input zero point))

A conv2d whose output goes through a global average pool (int8 in and out, no padding, one output pixel) and views
(reshape) into a fully connected layer drops its dead channels too, whatever their value: the pool's average of a
channel that holds v at every pixel is v (count * v / count, whatever the rounding), clamped to the pool's range,
so the fully connected layer's sum over that input is w[o][c] * (u - input_zp), added to its bias at build time
(MLPerf Tiny's VWW: 234 of layer 26's 256 channels).

    conv2d P (channel c: all-zero weights, value v)
      -> avg_pool A (global, no padding: u = clamp(v, A's range))  [-> reshape ...]
      -> fully_connected F (bias[o] += w[o][c] * (u - F's input zero point))

The channels kept are a multiple of 4 (the fast kernels' groups: some dead channels stay where needed)."""
from __future__ import annotations

import dataclasses

import numpy as np

from edgec.fixedpoint import scheme
from edgec.ir import Graph, Op
from edgec.ops import dense, pool
from edgec.ops.registry import REGISTRY

INT32 = (-(1 << 31), (1 << 31) - 1)
POOL_KINDS = pool.GLOBAL.kinds      # the average pool's kinds (its family's: edgec/ops/pool.py)
FC_KINDS = dense.FC.kinds           # the int8 fully connected layer's (edgec/ops/dense.py)


def _per_channel(op: Op, n: int) -> bool:
    """an int8 layer not lowered yet, with int8 weights and a bias, multiplier and shift per output channel (n),
    and no other array (a file's packed int4 weights, for one, are left alone)"""
    a = op.arrays
    return (op.lowering is None and set(a) == {"weights", "bias", "mult", "shift"} and a["weights"].dtype == np.int8
            and all(np.asarray(a[k]).shape == (n,) for k in ("bias", "mult", "shift")))


def _only_consumer(graph: Graph, tensor: str, ops: list[Op], at: dict[int, int]) -> Op | None:
    """the one consumer of an int8 tensor that is no output of the graph (its current version in ops), or None"""
    outs = {graph.output, *graph.more_outputs}
    users = graph.consumers(tensor)
    if tensor in outs or len(users) != 1 or graph.tensors[tensor].dtype != "int8":
        return None
    return ops[at[id(users[0])]]


def _chain(graph: Graph, p: Op, ops: list[Op], at: dict[int, int]):
    """(depthwise D, 1x1 conv C) after the conv2d p where the rule above applies to its channels, or None"""
    w = p.arrays.get("weights")
    if p.kind != "conv2d" or w is None or w.ndim != 4 or not _per_channel(p, w.shape[0]) \
            or w.shape[3] != p.params.get("in_c"):
        return None
    d = _only_consumer(graph, p.output, ops, at)
    if d is None or d.kind != "depthwise_conv2d" or tuple(d.inputs) != (p.output,) \
            or int(d.params.get("depth_multiplier", 1)) != 1 or d.arrays.get("weights") is None \
            or d.arrays["weights"].shape[-1] != w.shape[0] or not _per_channel(d, w.shape[0]):
        return None
    c = _only_consumer(graph, d.output, ops, at)
    if c is None or c.kind != "conv2d" or tuple(c.inputs) != (d.output,) or c.arrays.get("weights") is None:
        return None
    cw, cp = c.arrays["weights"], c.params
    if cw.ndim != 4 or cw.shape[1:] != (1, 1, w.shape[0]) or not _per_channel(c, cw.shape[0]) \
            or cp.get("pad_top") != 0 or cp.get("pad_left") != 0 or cp.get("k_h") != 1 or cp.get("k_w") != 1 \
            or cp.get("in_c") != w.shape[0]:
        return None
    return d, c


def _pool_chain(graph: Graph, p: Op, ops: list[Op], at: dict[int, int]):
    """(global average pool A, the views after it, fully connected F) after the conv2d p where the pooled rule above
    applies to its channels, or None"""
    w = p.arrays.get("weights")
    if p.kind != "conv2d" or w is None or w.ndim != 4 or not _per_channel(p, w.shape[0]) \
            or w.shape[3] != p.params.get("in_c"):
        return None
    n = w.shape[0]
    a = _only_consumer(graph, p.output, ops, at)
    if a is None or a.kind not in POOL_KINDS or tuple(a.inputs) != (p.output,) or a.arrays or "rounding" in a.attrs:
        return None
    ap = a.params
    if "_rounding" in ap or (ap.get("out_h"), ap.get("out_w"), ap.get("c")) != (1, 1, n) \
            or (ap.get("k_h"), ap.get("k_w")) != (ap.get("in_h"), ap.get("in_w")) \
            or (ap.get("pad_top"), ap.get("pad_left")) != (0, 0):
        return None
    views, t = [], a.output
    nxt = _only_consumer(graph, t, ops, at)
    while nxt is not None and REGISTRY[nxt.kind].alias and tuple(nxt.inputs) == (t,):     # views: the same bytes
        views.append(nxt)
        t = nxt.output
        nxt = _only_consumer(graph, t, ops, at)
    f = nxt
    if f is None or f.kind not in FC_KINDS or tuple(f.inputs) != (t,) or f.arrays.get("weights") is None:
        return None
    fw = f.arrays["weights"]
    flat = [graph.tensors[x].shape for x in (a.output, *(v.output for v in views))]
    if fw.ndim != 2 or fw.shape[1] != n or f.params.get("in_features") != n or not _per_channel(f, fw.shape[0]) \
            or any(s[-1] != n or int(np.prod(s)) != n for s in flat):
        return None
    return a, views, f


def _keep(drop: np.ndarray) -> np.ndarray:
    """the channels kept: the live ones and as many dead ones (the first) as make their count a multiple of 4"""
    keep = ~drop
    short = (-int(keep.sum())) % 4 or (4 if not keep.any() else 0)
    for i in np.flatnonzero(drop)[:short]:
        keep[i] = True
    return keep


def _sliced_attrs(op: Op, axis: int, keep: np.ndarray, hwc: tuple[str, ...], outputs: bool = True) -> dict:
    """op's attrs with the channels kept (outputs False: the channels are its inputs, its bias stays whole)"""
    attrs = dict(op.attrs)
    for name in ("weights", "bias") if outputs else ("weights",):
        if name in attrs and attrs[name] is not None:
            a = np.asarray(attrs[name])
            if a.ndim and a.shape[axis if name == "weights" else 0] == keep.size:
                attrs[name] = np.compress(keep, a, axis=axis if name == "weights" else 0)
    for name in hwc:
        if isinstance(attrs.get(name), tuple) and len(attrs[name]) == 3:
            attrs[name] = (*attrs[name][:2], int(keep.sum()))
    return attrs


def _pruned(p: Op, d: Op, c: Op):
    """(P, D, C) without their dropped channels, or None where there is none to drop"""
    w = p.arrays["weights"]
    dead = ~w.reshape(w.shape[0], -1).any(axis=1)
    if not dead.any():
        return None
    value = scheme.finish(p.arrays["bias"], p.arrays["mult"], p.arrays["shift"], p.params)
    drop = dead & (value.astype(np.int64) == int(d.params["input_zp"]))
    keep = _keep(drop)
    if keep.all():
        return None
    gone = ~keep
    v = scheme.finish(d.arrays["bias"], d.arrays["mult"], d.arrays["shift"], d.params).astype(np.int64)
    cw = c.arrays["weights"].reshape(c.arrays["weights"].shape[0], -1).astype(np.int64)
    bias = c.arrays["bias"].astype(np.int64) + cw[:, gone] @ (v[gone] - int(c.params["input_zp"]))
    if bias.min() < INT32[0] or bias.max() > INT32[1]:
        return None
    n = int(keep.sum())
    p2 = dataclasses.replace(
        p, params={**p.params, "out_c": n}, attrs=_sliced_attrs(p, 0, keep, ("out_hwc",)),
        arrays={k: np.compress(keep, v, axis=0) for k, v in p.arrays.items()})   # weights, bias, mult, shift
    d_arrays = {k: np.compress(keep, d.arrays[k], axis=0) for k in ("bias", "mult", "shift")}
    d2 = dataclasses.replace(
        d, params={**d.params, "in_c": n, "out_c": n}, attrs=_sliced_attrs(d, -1, keep, ("in_hwc", "out_hwc")),
        arrays={**d.arrays, **d_arrays, "weights": np.compress(keep, d.arrays["weights"], axis=-1)})
    c2 = dataclasses.replace(
        c, params={**c.params, "in_c": n}, attrs=_sliced_attrs(c, 3, keep, ("in_hwc",), outputs=False),
        arrays={**c.arrays, "weights": np.compress(keep, c.arrays["weights"], axis=3),
                "bias": bias.astype(np.int32)})
    return p2, d2, c2


def _pruned_pool(p: Op, a: Op, f: Op):
    """(P, A, F) without P's dead channels (the pooled rule), or None where there is none to drop"""
    w = p.arrays["weights"]
    keep = _keep(~w.reshape(w.shape[0], -1).any(axis=1))
    if keep.all():
        return None
    gone = ~keep
    v = scheme.finish(p.arrays["bias"], p.arrays["mult"], p.arrays["shift"], p.params).astype(np.int64)
    u = np.clip(v, int(a.params["act_min"]), int(a.params["act_max"]))
    fw = f.arrays["weights"].astype(np.int64)
    bias = f.arrays["bias"].astype(np.int64) + fw[:, gone] @ (u[gone] - int(f.params["input_zp"]))
    if bias.min() < INT32[0] or bias.max() > INT32[1]:
        return None
    n = int(keep.sum())
    p2 = dataclasses.replace(
        p, params={**p.params, "out_c": n}, attrs=_sliced_attrs(p, 0, keep, ("out_hwc",)),
        arrays={k: np.compress(keep, v, axis=0) for k, v in p.arrays.items()})   # weights, bias, mult, shift
    a2 = dataclasses.replace(a, params={**a.params, "c": n}, attrs=_sliced_attrs(a, 0, keep, ("in_hwc", "out_hwc")))
    f2 = dataclasses.replace(
        f, params={**f.params, "in_features": n}, attrs=_sliced_attrs(f, 1, keep, (), outputs=False),
        arrays={**f.arrays, "weights": np.compress(keep, f.arrays["weights"], axis=1), "bias": bias.astype(np.int32)})
    return p2, a2, f2


def prune(graph: Graph) -> Graph:
    """The graph with the dead channels of every conv2d -> depthwise -> 1x1 conv2d chain and every conv2d -> global
    average pool -> fully connected chain dropped (the module's docstring), in execution order (a chain's 1x1 layer
    may start the next); the graph itself where there is none."""
    ops = list(graph.ops)
    at = {id(op): i for i, op in enumerate(graph.ops)}
    tensors = dict(graph.tensors)
    changed = False
    for i in range(len(ops)):
        chain = _chain(graph, ops[i], ops, at)
        pruned = _pruned(ops[i], *chain) if chain else None
        inside = chain[:1] if chain else ()                    # the tensors between: P's output and D's
        if pruned is None:
            pooled = _pool_chain(graph, ops[i], ops, at)
            pruned = _pruned_pool(ops[i], pooled[0], pooled[2]) if pooled else None
            if pruned is None:
                continue
            chain, inside = (pooled[0], pooled[2]), (pooled[0], *pooled[1])   # P's, A's and the views' outputs
        p = ops[i]
        for old, op in zip((p, *chain), pruned):
            ops[next(j for j, o in enumerate(ops) if o is old)] = op
        n = pruned[0].params["out_c"]
        for t in (p.output, *(o.output for o in inside)):
            tensors[t] = dataclasses.replace(tensors[t], shape=(*tensors[t].shape[:-1], n))
        changed = True
    return graph.replace_ops(ops, tensors) if changed else graph
