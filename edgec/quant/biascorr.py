"""Empirical bias correction: remove from each layer's bias the mean shift quantization causes in its output.

Two variants (`--bias-correction [quantized|float]`):
- quantized (default; Nagel et al. 2019, "Data-Free Quantization Through Weight Equalization and Bias
  Correction", empirical variant): layer by layer in execution order, the layer's pre-activation output
  as the INT8 model computes it -- its dequantized int8 (or int16) input from the integer reference of
  the model quantized so far, already corrected upstream, times its dequantized weights -- against the
  float model's own pre-activation output, averaged per output channel over the calibration samples.
  The shift removed covers the weights' rounding and everything upstream quantization did to the
  mean of the inputs this layer really sees. Runs after the ranges are chosen (it needs the
  quantized graph) in one forward pass of the integer reference, re-quantizing after each layer.
- float: E[(W_q - W) x] with float inputs x: the weights' rounding alone, before quantization.
- weights: E[(W_q - W) x_q], the layer's own weights' rounding alone on the dequantized inputs the quantized layer
  really sees (x_q from the integer reference of the model corrected so far), shrunk as the quantized variant's
  shift (shrunk_shift); the shift upstream quantization passes on is left in (ONNX Runtime's and TFLite's INT8
  correct nothing). Of the quantized variant's two parts it is the one that does not compound: each layer's own
  rounding, not what the layers before it fitted of the same few samples (docs/corpus.md, h48-cnn).

Both keep the float model's own bias in `attrs["float_bias"]`, so the sensitivity report still
compares against the original float model.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from edgec import ports
from edgec.quant import floatref
from edgec.quant import reference
from edgec.ir import Graph, Op
from edgec.ops.registry import BIAS_CORRECTABLE, REGISTRY, WEIGHT_AXIS
from edgec.quant.quantize import requantize_op
from edgec.fixedpoint.scheme import dequantize, quantize_weights

VARIANTS = ("quantized", "float", "weights")
SHRINK = 1.0       # shrunk_shift: a shift is taken off only past sqrt(SHRINK) standard errors (2: measured, not
                   # kept, docs/corpus.md h47-cnn)


def _dequantized_weights(op: Op, per_channel: bool) -> np.ndarray:
    """The weights as the quantized layer holds them: int8 levels, or int4 ones (attrs['weight_bits'] 4)."""
    qmax = 7 if op.attrs.get("weight_bits", 8) == 4 else 127
    wq, scale = quantize_weights(op.attrs["weights"], WEIGHT_AXIS[op.kind], per_channel, qmax)
    shape = [1] * wq.ndim
    shape[WEIGHT_AXIS[op.kind]] = -1
    return (wq * scale.reshape(shape)).astype(np.float64)


def _channel_mean(op: Op, x, weights) -> np.ndarray:
    """Per-output-channel mean of the layer's pre-activation output without bias, for input x."""
    n = len(op.attrs["bias"])
    y = REGISTRY[op.kind].run_float(op, [x], weights=weights, bias=np.zeros(n), act=False)
    return np.asarray(y).reshape(-1, n).mean(axis=0)


def _with_bias(op: Op, bias: np.ndarray) -> Op:
    """The op anew with this float bias (its own float_bias kept: the original model's)."""
    attrs = dict(op.attrs)
    attrs.setdefault("float_bias", attrs["bias"])
    attrs["bias"] = np.asarray(bias, np.float32)
    return replace(op, attrs=attrs)


def correct_float(graph: Graph, samples: np.ndarray, per_channel: bool = True) -> Graph:
    """The float variant (before quantization): the graph with E[(W_q - W) x] over float inputs x taken off
    each correctable layer's bias."""
    ops = [op for op in graph.ops if op.kind in BIAS_CORRECTABLE]
    delta = {id(op): _dequantized_weights(op, per_channel) - op.attrs["weights"] for op in ops}
    shift = {id(op): np.zeros(len(op.attrs["bias"])) for op in ops}
    for x in samples:
        env = floatref.run(graph, x)
        for op in ops:
            shift[id(op)] += _channel_mean(op, env[op.inputs[0]], delta[id(op)])
    return graph.replace_ops(_with_bias(op, op.attrs["bias"] - shift[id(op)] / len(samples)) if id(op) in shift
                             else op for op in graph.ops)


def shrunk_shift(diff: np.ndarray) -> np.ndarray:
    """The mean output shift to take off each channel's bias, from its per-sample values diff (samples,
    channels), shrunk towards 0 where the samples do not agree on it: m * max(0, 1 - SHRINK * se^2 / m^2), m the
    mean over the samples and se its standard error. A shift many standard errors away from 0 is taken off
    whole; one within the samples' noise (a few calibration samples of a deep network) mostly not, where taking it
    off would fit that noise. SHRINK 1 is the plug-in positive-part James-Stein factor, channel by channel; SHRINK 2
    would put the zero where taking off the whole estimate stops paying on a new sample (m^2 = 2 se^2): measured on
    the corpus, it brings three mobile CNNs to ONNX Runtime's INT8 and one other below it, so it is not the default
    (docs/corpus.md, h47-cnn)."""
    m = diff.mean(axis=0)
    if len(diff) < 2:
        return m
    se2 = diff.var(axis=0, ddof=1) / len(diff)
    return m * np.clip(1.0 - SHRINK * se2 / np.maximum(m * m, 1e-30), 0.0, 1.0)


def float_targets(graph: Graph, samples: np.ndarray) -> list:
    """The float model's pre-activation channel means, (samples, channels) per correctable op, by op position (None
    elsewhere): what the quantized variant aims at, the same for any subset of the samples (rows of these)."""
    ops = [op for op in graph.ops if op.kind in BIAS_CORRECTABLE]
    target = {id(op): [] for op in ops}
    for x in samples:
        env = floatref.run(graph, x)
        for op in ops:
            target[id(op)].append(_channel_mean(op, env[op.inputs[0]], None))
    return [np.asarray(target[id(op)]) if id(op) in target else None for op in graph.ops]


def correct_quantized(graph: Graph, samples: np.ndarray, per_channel: bool = True,
                      variant: str = "quantized", targets: list | None = None) -> tuple[Graph, int]:
    """The quantized variant (or, variant "weights", the layer's own rounding on the same inputs), on a graph
    `quantize(graph, ranges, per_channel)` has quantized: the corrected graph (quantized again) and the number of
    layers corrected. targets: float_targets of these samples, when the caller has them (cross-validation folds)."""
    ops = [op for op in graph.ops if op.kind in BIAS_CORRECTABLE]
    if variant == "quantized":
        target = float_targets(graph, samples) if targets is None else targets
    envs = [ports.feed(graph, q) for q in ports.quantize_inputs(graph, samples)]
    for k in range(len(graph.ops)):
        op = graph.ops[k]
        if op.kind in BIAS_CORRECTABLE:
            w = _dequantized_weights(op, per_channel)
            t = graph.tensors[op.inputs[0]]
            if variant == "quantized":
                seen = np.asarray([_channel_mean(op, dequantize(t, env[op.inputs[0]]), w) for env in envs])
                diff = seen - target[k]
            else:                                       # weights: (W_q - W) x_q, the layer's own rounding
                diff = np.asarray([_channel_mean(op, dequantize(t, env[op.inputs[0]]), w - op.attrs["weights"])
                                   for env in envs])
            fixed = _with_bias(op, op.attrs["bias"] - shrunk_shift(diff))
            graph = requantize_op(graph, k, fixed)      # the other ops and every tensor's grid are as they were
            op = graph.ops[k]
        out = graph.tensors[op.output]
        for env in envs:
            env[op.output] = reference.run_op(op, [env[i] for i in op.inputs], out.shape, out.dtype)
    return graph, len(ops)
