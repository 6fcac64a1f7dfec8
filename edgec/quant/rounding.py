"""Better rounding of low-bit weights: a GPTQ-style second-order update (Frantar et al. 2022, "GPTQ: Accurate
Post-Training Quantization for Generative Pre-trained Transformers"), learned from the calibration data.

Rounding each int4 weight to its nearest level minimises each weight's own error, not the layer's output error.
For a layer y = W x, with H = E[x x^T] over the calibration inputs the layer sees (float model), the weights
are rounded one input column at a time, and the rounding error of each column is pushed onto the columns not
yet rounded, weighted by H^-1, so that the output W x changes as little as possible (the optimal brain
surgeon update, in GPTQ's Cholesky form). Conv layers are the same on their input patches (im2col, taken by
the layer's own float kernel with one-hot weights, so every layout and padding is the kernel's).

The result must survive the quantizer (edgec/fixedpoint/scheme.py: per-channel scale = max|w| / 7): the layer's
weights become the chosen levels times the original scales, and each output channel's largest weight is left
out of the updates (it stays at +-7 levels, or +-127 at int8), so the quantizer finds the same scales and exactly
these levels.
The model's own float weights are kept in attrs['float_weights'] (the float reference and the sensitivity
report use them). Only per-channel conv2d and fully connected layers with int4 weights are rounded; each
layer's time is logged and the whole is bounded by a time budget (the layers not reached keep nearest
rounding, and the log says so).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

import numpy as np

from edgec.ir import Graph, Op
from edgec.quant import floatref
from edgec.ops.registry import ADAPTIVE_ROUNDING as KINDS, REGISTRY

DAMP = 0.01               # H + DAMP * mean(diag H) * I: a well-conditioned inverse
SAMPLES = 64              # calibration samples the layer inputs come from
MAX_ROWS = 20000          # input patches H is estimated from (a random subset beyond)
BUDGET_S = 60.0
BLOCK = 128               # columns rounded one by one before the rest take their updates in one product
MODES = ("nearest", "gptq")


def _patches(op: Op, inputs: list[np.ndarray]) -> np.ndarray:
    """[rows, K] input vectors of the layer (K = weights per output channel), one row per output position."""
    w = np.asarray(op.attrs["weights"])
    k = int(np.prod(w.shape[1:]))
    basis = np.eye(k).reshape((k,) + w.shape[1:])
    if "out_hwc" in op.attrs:              # a conv: k output channels, one per weight position
        op = replace(op, attrs={**op.attrs, "out_hwc": (*op.attrs["out_hwc"][:2], k)})
    run = REGISTRY[op.kind].run_float
    return np.concatenate([np.asarray(run(op, [x], weights=basis, bias=np.zeros(k), act=False)).reshape(-1, k)
                           for x in inputs])


def gptq_levels(w: np.ndarray, x: np.ndarray, qmax: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(int levels [O, K] in [-qmax, qmax], per-row scale) for weights w [O, K] given input rows x [N, K]."""
    w = np.asarray(w, np.float64).copy()
    scale = np.max(np.abs(w), axis=1) / qmax
    scale = np.where(scale > 0, scale, 1.0)
    keep = np.zeros_like(w, bool)
    keep[np.arange(len(w)), np.argmax(np.abs(w), axis=1)] = True      # the scale-setting weight stays as it is
    h = x.T @ x / max(len(x), 1)
    dead = np.diag(h) <= 0
    h[dead, dead] = 1.0
    h += DAMP * np.mean(np.diag(h)) * np.eye(len(h))
    hinv = np.linalg.cholesky(np.linalg.inv(h)).T                       # upper: GPTQ's H^-1 in Cholesky form
    q = np.zeros(w.shape, np.int64)
    original = w.copy()
    for b0 in range(0, w.shape[1], BLOCK):       # GPTQ's lazy batch updates: the columns after a block at once
        b1 = min(b0 + BLOCK, w.shape[1])
        errs = np.zeros((len(w), b1 - b0))
        for j in range(b0, b1):
            q[:, j] = np.clip(np.round(w[:, j] / scale), -qmax, qmax)
            errs[:, j - b0] = err = (w[:, j] - q[:, j] * scale) / hinv[j, j]
            update = np.outer(err, hinv[j, j + 1:b1])
            update[keep[:, j + 1:b1]] = 0.0
            w[:, j + 1:b1] -= update
        w[:, b1:] -= errs @ hinv[b0:b1, b1:]
        w[:, b1:][keep[:, b1:]] = original[:, b1:][keep[:, b1:]]
    return q, scale


def apply(graph: Graph, samples: np.ndarray, int8_too: bool = False, log: Callable[[str], None] = lambda _: None,
          budget_s: float = BUDGET_S) -> tuple[Graph, list[str]]:
    """The float graph with its int4-marked conv2d / fully connected layers' weights (int8 ones too with
    int8_too) rounded by GPTQ (see the module doc), and the names of the layers rounded. A QDQ model's layers keep the
    file's own integers."""
    t0 = time.monotonic()
    todo = [i for i, op in enumerate(graph.ops) if op.kind in KINDS and graph.tensors[op.output].dtype == "int8"
            and (int8_too or op.attrs.get("weight_bits") == 4) and "weight_scale" not in op.attrs]  # (a QDQ file's own)
    if not todo:
        return graph, []
    envs = [floatref.run(graph, x) for x in samples[:SAMPLES]]
    rng = np.random.default_rng(0)
    ops, done = list(graph.ops), []
    for n, i in enumerate(todo):
        if time.monotonic() - t0 > budget_s:
            log(f"weight rounding: time budget of {budget_s:g} s reached; {len(todo) - n} layers keep nearest rounding")
            break
        op = ops[i]
        x = _patches(op, [env[op.inputs[0]] for env in envs])
        if len(x) > MAX_ROWS:
            x = x[rng.choice(len(x), MAX_ROWS, replace=False)]
        w = np.asarray(op.attrs["weights"], np.float64)
        q, scale = gptq_levels(w.reshape(len(w), -1), x, 7 if op.attrs.get("weight_bits") == 4 else 127)
        rounded = (q * scale[:, None]).reshape(w.shape).astype(np.float32)
        attrs = {**op.attrs, "weights": rounded}
        attrs.setdefault("float_weights", op.attrs["weights"])
        ops[i] = replace(op, attrs=attrs)
        done.append(op.name)
        log(f"weight rounding (GPTQ): layer {n + 1}/{len(todo)} {op.name}: {x.shape[0]} input rows, "
            f"{time.monotonic() - t0:.1f} s")
    return graph.replace_ops(ops), done
