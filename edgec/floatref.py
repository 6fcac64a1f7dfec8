"""A float NumPy interpreter of the canonical graph (channels-last, physical layouts).

It computes what every canonical tensor holds in float, in the same layout as the int8 reference,
so that the two can be compared tensor by tensor (sensitivity report) and layers can be measured
on float inputs (bias correction). It reads the float attributes (`op.attrs`) canonicalize left.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import EdgecError
from .ir import Graph, Op
from .kernels_ref import _pad_windows

KINDS = {"conv2d", "depthwise_conv2d", "fully_connected", "max_pool", "avg_pool", "add", "softmax",
         "transpose", "reshape"}


def supported(graph: Graph) -> list[str]:
    """Op kinds of `graph` this interpreter cannot run (empty when it runs the whole graph)."""
    return sorted({op.kind for op in graph.ops if op.kind not in KINDS})


def _window(op: Op) -> dict:
    (oh, ow, _) = op.attrs["out_hwc"]
    return dict(out_h=oh, out_w=ow, k_h=op.attrs["kernel"][0], k_w=op.attrs["kernel"][1],
                stride_h=op.attrs["stride"][0], stride_w=op.attrs["stride"][1],
                pad_top=op.attrs["pad"][0], pad_left=op.attrs["pad"][1])


def _act(op: Op, y: np.ndarray) -> np.ndarray:
    lo, hi = op.attrs.get("act", (-math.inf, math.inf))
    return np.clip(y, lo, hi) if (lo, hi) != (-math.inf, math.inf) else y


def conv(op: Op, x: np.ndarray, weights: np.ndarray | None = None, bias: np.ndarray | None = None,
         act: bool = True) -> np.ndarray:
    """A conv2d/depthwise_conv2d/fully_connected op in float, optionally with other weights/bias."""
    w = op.attrs["weights"] if weights is None else weights
    b = op.attrs["bias"] if bias is None else bias
    if op.kind == "fully_connected":
        y = w.astype(np.float32) @ x.reshape(-1).astype(np.float32) + b
        return _act(op, y) if act else y
    (ih, iw, ic), (oh, ow, oc) = op.attrs["in_hwc"], op.attrs["out_hwc"]
    dil_h, dil_w = op.attrs["dilation"]
    x = x.reshape(ih, iw, ic).astype(np.float32)
    if op.kind == "depthwise_conv2d":
        x = x[:, :, np.arange(oc) // int(op.attrs.get("depth_multiplier", 1))]
    tap = _pad_windows(x, _window(op), 0.0, dil_h, dil_w)
    y = np.zeros((oh, ow, oc), np.float32)
    for ky in range(op.attrs["kernel"][0]):
        for kx in range(op.attrs["kernel"][1]):
            y += tap(ky, kx) @ w[:, ky, kx, :].T if op.kind == "conv2d" else tap(ky, kx) * w[ky, kx, :]
    y += b
    return _act(op, y) if act else y


def _pool(op: Op, x: np.ndarray) -> np.ndarray:
    (ih, iw, c) = op.attrs["in_hwc"]
    (oh, ow, _) = op.attrs["out_hwc"]
    x = x.reshape(ih, iw, c).astype(np.float32)
    p = _window(op)
    if op.kind == "max_pool":
        tap = _pad_windows(x, p, -np.inf)
        y = np.full((oh, ow, c), -np.inf, np.float32)
        for ky in range(p["k_h"]):
            for kx in range(p["k_w"]):
                np.maximum(y, tap(ky, kx), out=y)
        return _act(op, y)
    tap_x = _pad_windows(x, p, 0.0)
    tap_n = _pad_windows(np.ones((ih, iw, 1), np.float32), p, 0.0)
    acc, cnt = np.zeros((oh, ow, c), np.float32), np.zeros((oh, ow, 1), np.float32)
    for ky in range(p["k_h"]):
        for kx in range(p["k_w"]):
            acc += tap_x(ky, kx)
            cnt += tap_n(ky, kx)
    return _act(op, acc / np.maximum(cnt, 1))


def run_op(op: Op, inputs: list[np.ndarray], in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> np.ndarray:
    x = inputs[0]
    if op.kind in ("conv2d", "depthwise_conv2d", "fully_connected"):
        y = conv(op, x)
    elif op.kind in ("max_pool", "avg_pool"):
        y = _pool(op, x)
    elif op.kind == "add":
        y = _act(op, x.reshape(-1) + inputs[1].reshape(-1))
    elif op.kind == "softmax":
        z = x.reshape(op.attrs["rows"], op.attrs["cols"]).astype(np.float64)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        y = e / e.sum(axis=1, keepdims=True)
    elif op.kind == "transpose":
        y = np.transpose(x.reshape(in_shape), op.attrs["perm"])
    elif op.kind == "reshape":
        y = x
    else:
        raise EdgecError(f"node '{op.name}': no float reference for op kind '{op.kind}'")
    return np.asarray(y, np.float32).reshape(out_shape)


def run(graph: Graph, x: np.ndarray, override: dict | None = None, env: dict | None = None,
        start: int = 0) -> dict[str, np.ndarray]:
    """Every canonical tensor, in float, for one input sample (the model input's ONNX layout).

    `override` {op index: fn(op, inputs) -> output} replaces ops (e.g. by their int8 emulation);
    `env` + `start` reuse the tensors of an earlier run and recompute only ops[start:]."""
    env = dict(env) if env is not None else {}
    env[graph.input] = np.asarray(x, np.float32).reshape(graph.tensors[graph.input].shape)
    for i, op in enumerate(graph.ops):
        if i < start:
            continue
        ins = [env[t] for t in op.inputs]
        out_shape = graph.tensors[op.output].shape
        if override and i in override:
            env[op.output] = np.asarray(override[i](op, ins), np.float32).reshape(out_shape)
        else:
            env[op.output] = run_op(op, ins, graph.tensors[op.inputs[0]].shape, out_shape)
    return env
