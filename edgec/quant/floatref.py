"""A float interpreter of the canonical graph (channels-last physical layouts, before quantization).

It runs exactly what edgec will compute (layouts, folded BatchNorms, fused activations, tables'
functions, index maps) in float64, from the float attributes canonicalize left (`op.attrs`). Uses:
the conformance runner checks canonicalization against ONNX's own outputs; the sensitivity report
compares it tensor by tensor with the int8 reference; bias correction measures layers on float
inputs; and the ranges of edgec's own intermediate tensors (sources starting with "edgec:", made by
decomposed operators, which onnxruntime never sees) are calibrated with it.
"""
from __future__ import annotations

import math

import numpy as np

from edgec.ops import lut
from edgec.ir import SYNTHETIC, Graph, Op   # noqa: F401  (SYNTHETIC: ptq reads floatref.SYNTHETIC)


def _act(y, op: Op):
    lo, hi = op.attrs.get("act", (-math.inf, math.inf))
    return np.clip(y, lo, hi)


def _windows(x, a, fill):
    """x [h, w, c] padded with fill; returns tap(ky, kx) -> [out_h, out_w, c]."""
    (ih, iw, _), (oh, ow, _) = a["in_hwc"], a["out_hwc"]
    (kh, kw), (sh, sw) = a["kernel"], a["stride"]
    dh, dw = a.get("dilation", (1, 1))
    pt, pl = a["pad"]
    need_h, need_w = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.pad(x, ((max(pt, 0), max(0, need_h - pt - ih)), (max(pl, 0), max(0, need_w - pl - iw)), (0, 0)),
                constant_values=fill)
    oy, ox = max(pt, 0) - pt, max(pl, 0) - pl

    def tap(ky, kx):
        y0, x0 = oy + ky * dh, ox + kx * dw
        return xp[y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw, :]
    return tap


def conv(op: Op, x, weights=None, bias=None, act: bool = True):
    """A conv2d/depthwise/group conv or fully_connected op in float, optionally with other weights/bias
    and without its fused activation."""
    a = op.attrs
    w = np.asarray(a["weights"] if weights is None else weights, np.float64)
    b = np.asarray(a.get("float_bias", a["bias"]) if bias is None else bias, np.float64)   # the model's own bias

    if op.kind == "fully_connected":
        y = w @ np.asarray(x, np.float64).reshape(-1) + b
        return _act(y, op) if act else y
    (ih, iw, ic), (oh, ow, oc) = a["in_hwc"], a["out_hwc"]
    tap = _windows(x.reshape(ih, iw, ic), a, 0.0)
    acc = np.zeros((oh, ow, oc))
    kh, kw = a["kernel"]
    for ky in range(kh):
        for kx in range(kw):
            t = tap(ky, kx)
            if op.kind == "conv2d":
                acc += t @ w[:, ky, kx, :].T
            elif op.kind == "depthwise_conv2d":
                acc += t[:, :, np.arange(oc) // a["depth_multiplier"]] * w[ky, kx, :]
            else:
                g = a["groups"]
                gi, go = ic // g, oc // g
                for k in range(g):
                    acc[:, :, k * go:(k + 1) * go] += t[:, :, k * gi:(k + 1) * gi] @ w[k * go:(k + 1) * go, ky, kx, :].T
    y = acc + b
    return _act(y, op) if act else y


def _pool(op: Op, x):
    a = op.attrs
    (ih, iw, c) = a["in_hwc"]
    tap = _windows(x.reshape(ih, iw, c), a, np.nan)
    taps = np.stack([tap(ky, kx) for ky in range(a["kernel"][0]) for kx in range(a["kernel"][1])])
    with np.errstate(all="ignore"):
        y = np.nanmax(taps, axis=0) if op.kind == "max_pool" else np.nanmean(taps, axis=0)
    return _act(np.nan_to_num(y), op)


def _binary(op: Op, a, b):
    with np.errstate(all="ignore"):
        if op.attrs["op"] in ("add", "sub", "max", "min", "mul", "div"):
            fn = {"add": np.add, "sub": np.subtract, "max": np.maximum, "min": np.minimum,
                  "mul": np.multiply, "div": np.divide}[op.attrs["op"]]
            return _act(fn(a.reshape(op.attrs["a_shape"]), b.reshape(op.attrs["b_shape"])), op)
    raise ValueError(op.attrs["op"])


def _remap(op: Op, x):
    dims = list(op.attrs["dims"])
    total = np.zeros(dims, np.int64)
    for k, t in enumerate(op.attrs["tables"]):
        shape = [1] * len(dims)
        shape[k] = dims[k]
        total = total + np.asarray(t, np.int64).reshape(shape)
    total = total.reshape(-1)
    return np.where(total >= 0, x.reshape(-1)[np.maximum(total, 0)], op.attrs["pad"])


def _reduce(op: Op, x):
    a = op.attrs
    x = x.reshape(a["outer"], a["n"], a["inner"])
    kind = a["how"]
    if kind in ("argmax", "argmin"):
        v = x if kind == "argmax" else -x
        if a["select_last"]:
            return a["n"] - 1 - np.argmax(v[:, ::-1], axis=1)
        return np.argmax(v, axis=1)
    return {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[kind](x, axis=1)


def _softmax(op: Op, x, log=False):
    x = x.reshape(op.attrs["rows"], op.attrs["cols"])
    z = x - x.max(axis=1, keepdims=True)
    ls = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return ls if log else np.exp(ls)


def _resize_linear(op: Op, x):
    a = op.attrs
    (ih, iw, c) = a["in_hwc"]
    x = x.reshape(ih, iw, c)
    fy, fx = np.asarray(a["fy"]).reshape(-1, 1, 1), np.asarray(a["fx"]).reshape(1, -1, 1)
    top = x[a["y0"]][:, a["x0"]] * (1 - fx) + x[a["y0"]][:, a["x1"]] * fx
    bot = x[a["y1"]][:, a["x0"]] * (1 - fx) + x[a["y1"]][:, a["x1"]] * fx
    return top * (1 - fy) + bot * fy


def _matmul(op: Op, a, b):
    p = op.attrs
    a, b = a.reshape(-1), b.reshape(-1)
    out = []
    for i in range(p["batch"]):
        am = a[i * p["a_batch_stride"]:][:p["m"] * p["k"]].reshape(p["m"], p["k"])
        bm = b[i * p["b_batch_stride"]:][:p["k"] * p["n"]].reshape(p["k"], p["n"])
        out.append(am @ bm)
    return _act(np.stack(out), op)


def run_op(op: Op, inputs: list[np.ndarray]) -> np.ndarray:
    a = op.attrs
    x = inputs[0]
    k = op.kind
    if k in ("conv2d", "depthwise_conv2d", "group_conv2d", "fully_connected"):
        return conv(op, x)
    if k == "fully_connected_rows":
        return _act(x.reshape(a["rows"], -1) @ np.asarray(a["weights"], np.float64).T + a["bias"], op)
    if k in ("max_pool", "avg_pool"):
        return _pool(op, x)
    if k == "add":
        return _act(x + inputs[1].reshape(x.shape), op)
    if k == "binary":
        c = a["const"]
        if c is not None:
            return _binary(op, *((c, x) if a["const_first"] else (x, c)))
        return _binary(op, x, inputs[1])
    if k == "lut":
        c = a["consts"]
        xs = x.reshape(-1, a["count"], a["inner"])
        cs = None if c is None else np.asarray(c, np.float64).reshape((1, a["count"], 1) + np.shape(c)[1:])
        return lut.apply(a["fn"], xs, cs, a["fparams"])
    if k == "softmax":
        return _softmax(op, x)
    if k == "log_softmax":
        return _softmax(op, x, log=True)
    if k == "transpose":
        return np.transpose(x, a["perm"])
    if k in ("reshape", "requantize"):      # a view; an int8 <-> int16 conversion (edgec/int16.py)
        return x
    if k == "remap":
        return _remap(op, x)
    if k == "concat":
        outer = a["outer"]
        return np.concatenate([i.reshape(outer, -1) for i in inputs], axis=1)
    if k == "reduce":
        return _reduce(op, x)
    if k == "matmul":
        return _matmul(op, x, inputs[1])
    if k == "resize_linear":
        return _resize_linear(op, x)
    raise ValueError(f"no float reference for op kind {k}")


KINDS = {"conv2d", "depthwise_conv2d", "group_conv2d", "fully_connected", "fully_connected_rows", "max_pool",
         "avg_pool", "add", "binary", "lut", "softmax", "log_softmax", "transpose", "reshape", "remap", "concat",
         "reduce", "matmul", "resize_linear", "requantize"}


def supported(graph: Graph) -> list[str]:
    """Op kinds of `graph` this interpreter cannot run (empty when it runs the whole graph)."""
    return sorted({op.kind for op in graph.ops if op.kind not in KINDS})


def run(graph: Graph, x: np.ndarray, override: dict | None = None, env: dict | None = None,
        start: int = 0) -> dict[str, np.ndarray]:
    """Every canonical tensor, in float, for one input sample (the model input's ONNX layout).

    `override` {op index: fn(op, inputs) -> output} replaces ops (e.g. by their int8 emulation);
    `env` + `start` reuse the tensors of an earlier run and recompute only ops[start:]."""
    env = dict(env) if env is not None else {}
    env[graph.input] = np.asarray(x, np.float64).reshape(graph.tensors[graph.input].shape)
    for i, op in enumerate(graph.ops[start:], start):
        ins = [env[t] for t in op.inputs]
        y = override[i](op, ins) if override and i in override else run_op(op, ins)
        env[op.output] = np.asarray(y, np.float64).reshape(graph.tensors[op.output].shape)
    return env


def output(graph: Graph, x: np.ndarray) -> np.ndarray:
    """The float output for one input, in the model output's ONNX layout."""
    return run(graph, x)[graph.output].reshape(graph.output_onnx_shape)


def ranges(graph: Graph, xs: np.ndarray, sources) -> dict[str, tuple[float, float]]:
    """(min, max) of the tensors with the given sources over samples xs (edgec's own tensors)."""
    want = set(sources)
    out: dict[str, list[float]] = {}
    for x in xs:
        env = run(graph, x)
        for name, t in graph.tensors.items():
            if t.source in want:
                v = env[name]
                lo, hi = float(np.min(v)), float(np.max(v))
                cur = out.setdefault(t.source, [lo, hi])
                cur[0], cur[1] = min(cur[0], lo), max(cur[1], hi)
    return {k: (v[0], v[1]) for k, v in out.items()}


def graph_ranges(model, graph: Graph, xs: np.ndarray) -> dict[str, tuple[float, float]]:
    """Ranges of every tensor of the graph from this interpreter (over samples xs)."""
    return ranges(graph, xs, {t.source for t in graph.tensors.values()})
