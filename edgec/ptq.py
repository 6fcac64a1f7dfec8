"""Post-training quantization, the whole recipe: canonical float graph + calibration file -> INT8 graph.

    [cross-layer equalization] -> calibration statistics (streamed, cached) -> range method
    (minmax / percentile / entropy / mse, or `auto`: the one whose INT8 output is closest to float
    on held-out calibration samples) -> [bias correction] -> quantize -> [sensitivity report]
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx

from . import calibrate, equalize, floatref, numerics, reference, sensitivity
from .data import SampleStream
from .errors import EdgecError
from .ir import Graph
from .quantize import WEIGHT_AXIS, dequantize, quantize, quantize_input, quantize_weights
from .ranges import METHODS

ALL_METHODS = METHODS + ("auto",)
HOLDOUT = 32          # samples `auto` keeps aside (at most a quarter of the set)
BIAS_SAMPLES = 64     # samples bias correction measures the mean shift on
OWN_RANGE_SAMPLES = 256   # samples the ranges of edgec's own (non-ONNX) tensors are measured on


@dataclass
class QuantOptions:
    method: str = "minmax"
    percentile: float = 99.99
    per_channel: bool = True
    bias_correction: bool = False
    equalize: bool = False
    cache: bool = True
    sensitivity_samples: int = 16      # 0: no sensitivity report

    def check(self) -> None:
        if self.method not in ALL_METHODS:
            raise EdgecError(f"unknown calibration method '{self.method}'; use one of {', '.join(ALL_METHODS)}")
        if not 50.0 < self.percentile <= 100.0:
            raise EdgecError(f"--percentile {self.percentile} is out of range; give a value in (50, 100], e.g. 99.99")


@dataclass
class QuantResult:
    graph: Graph
    method: str                                      # the method used (what `auto` chose)
    ranges: dict[str, tuple[float, float]]
    scores: dict[str, float] = field(default_factory=dict)   # auto: output SQNR (dB) of each method
    sensitivity: list[dict] = field(default_factory=list)
    samples: int = 0
    calib_seconds: float = 0.0
    cached: bool = False
    batch: int = 1
    warnings: list[str] = field(default_factory=list)          # numeric hazards (edgec/numerics.py)

    def to_json(self, options: QuantOptions) -> dict:
        g = self.graph
        return {"method": self.method, "options": vars(options), "samples": self.samples,
                "calibration_seconds": round(self.calib_seconds, 3), "from_cache": self.cached,
                "auto_scores_db": self.scores,
                "input": {"scale": g.tensors[g.input].scale, "zero_point": g.tensors[g.input].zero_point},
                "output": {"scale": g.tensors[g.output].scale, "zero_point": g.tensors[g.output].zero_point},
                "tensors": {t.name: {"source": t.source, "range": list(self.ranges.get(t.source, (None, None))),
                                     "scale": t.scale, "zero_point": t.zero_point} for t in g.tensors.values()},
                "sensitivity": self.sensitivity}


def quantize_model(model: onnx.ModelProto, graph: Graph, calib_path, options: QuantOptions,
                   log: Callable[[str], None] = lambda _: None, progress=None) -> QuantResult:
    """Calibrate and quantize `graph` (in place) as `options` say."""
    options.check()
    numerics.check_finite(graph)
    stream = SampleStream(calib_path, graph.input_onnx_shape)
    rescale = equalize.equalize(graph) if options.equalize else None
    if rescale is not None:
        log(f"cross-layer equalization: {len(rescale)} layer pairs")
    holdout = min(HOLDOUT, stream.n // 4) if options.method == "auto" else 0
    log(f"calibrating on {stream.n} samples ({options.method})")
    sources = {t.source for t in graph.tensors.values()}
    own = {s for s in sources if s.startswith(floatref.SYNTHETIC)}
    stats = calibrate.collect_cached(model, stream, sorted(sources - own),
                                     histograms=options.method != "minmax", holdout=holdout, rescale=rescale,
                                     use_cache=options.cache, progress=progress, log=log)
    # tensors edgec made up (decomposed operators) are not ONNX values: their ranges come from edgec's
    # float interpreter (min/max over the first calibration samples)
    own_ranges = floatref.ranges(graph, _first(stream, OWN_RANGE_SAMPLES), own) if own else {}
    if options.bias_correction:
        correct_bias(graph, _first(stream, BIAS_SAMPLES), options.per_channel)
    method, scores = options.method, {}
    if method == "auto":
        method, scores = _auto(graph, stats, options, stream, own_ranges)
        log("auto: output SQNR " + ", ".join(f"{m} {s:.1f} dB" for m, s in scores.items()) + f" -> {method}")
    ranges = {**stats.ranges(method, options.percentile), **own_ranges}
    quantize(graph, ranges, options.per_channel)
    result = QuantResult(graph=graph, method=method, ranges=ranges, scores=scores, samples=stats.samples,
                         calib_seconds=stats.seconds, cached=stats.cached, batch=stats.batch,
                         warnings=numerics.warnings(graph, ranges))
    for w in result.warnings:
        log(f"warning: {w}")
    if options.sensitivity_samples > 0:
        missing = floatref.supported(graph)
        if missing:
            log(f"sensitivity report skipped: no float reference for op kinds {', '.join(missing)}")
        else:
            result.sensitivity = sensitivity.analyse(graph, _first(stream, options.sensitivity_samples))
    return result


def _first(stream: SampleStream, n: int) -> np.ndarray:
    _, x = next(iter(stream.batches(n)))
    return x


def output_sqnr(graph: Graph, x: np.ndarray, y_float: np.ndarray) -> float:
    """SQNR (dB) of the INT8 reference's dequantized output against the float output."""
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    xq = quantize_input(tin, x)
    got = np.stack([dequantize(tout, reference.run(graph, xq[i])).reshape(-1) for i in range(len(x))])
    want = y_float.reshape(len(x), -1).astype(np.float64)
    return sensitivity.sqnr_db(float(np.sum(want ** 2)), float(np.sum((want - got) ** 2)))


def _auto(graph: Graph, stats, options: QuantOptions, stream, own_ranges: dict) -> tuple[str, dict[str, float]]:
    """The range method whose INT8 output is closest to float on the held-out samples."""
    if stats.holdout_x is not None and len(stats.holdout_x):
        x, part = stats.holdout_x, "fit"
    else:  # too few samples to hold any out: judge on the calibration samples themselves
        x, part = _first(stream, HOLDOUT), "all"
    y = np.stack([floatref.run(graph, xi)[graph.output] for xi in x])
    scores = {}
    for m in METHODS:
        g = copy.deepcopy(graph)
        quantize(g, {**stats.ranges(m, options.percentile, part=part), **own_ranges}, options.per_channel)
        scores[m] = round(output_sqnr(g, x, y), 2)
    return max(scores, key=lambda m: (scores[m], -METHODS.index(m))), scores


def correct_bias(graph: Graph, samples: np.ndarray, per_channel: bool = True) -> None:
    """Empirical bias correction: remove from each layer's bias the mean shift its quantized weights
    cause in its output, E[(W_q - W) x], measured with float inputs from the calibration samples."""
    ops = [op for op in graph.ops if op.kind in WEIGHT_AXIS]
    deltas = {}
    for op in ops:
        wq, scale = quantize_weights(op.attrs["weights"], WEIGHT_AXIS[op.kind], per_channel)
        shape = [1] * wq.ndim
        shape[WEIGHT_AXIS[op.kind]] = -1
        deltas[op.name, op.output] = (wq * scale.reshape(shape) - op.attrs["weights"]).astype(np.float32)
    shift = {k: np.zeros(len(op.attrs["bias"])) for k, op in zip(deltas, ops)}
    for x in samples:
        env = floatref.run(graph, x)
        for op in ops:
            k = (op.name, op.output)
            d = floatref.conv(op, env[op.inputs[0]], weights=deltas[k], bias=np.zeros_like(op.attrs["bias"]),
                              act=False)
            shift[k] += d.reshape(-1, len(op.attrs["bias"])).mean(axis=0)
    for op in ops:
        k = (op.name, op.output)
        op.attrs["bias"] = (op.attrs["bias"] - shift[k] / len(samples)).astype(np.float32)
