"""Stage 3: run the float model over the calibration set and record value ranges.

onnxruntime runs the original ONNX model with every intermediate value exposed
as an output; the result is {ONNX value name: (min, max)}.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import onnx

from .errors import EdgecError
from .loader import graph_inputs


def float_session(model: onnx.ModelProto, outputs: Iterable[str] | None = None):
    """An onnxruntime session of `model`, optionally returning extra values too."""
    import onnxruntime as ort

    model = onnx.ModelProto.FromString(model.SerializeToString())
    if outputs is not None:
        known = {o.name for o in model.graph.output}
        types = {vi.name: vi for vi in model.graph.value_info}
        for name in outputs:
            if name not in known and name in types:
                model.graph.output.append(types[name])
                known.add(name)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def run_float(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """Float outputs of the model for every sample of x (N, *input shape without batch)."""
    sess = float_session(model)
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


def calibrate(model: onnx.ModelProto, x: np.ndarray, values: Iterable[str],
              progress: Callable[[int, int], None] | None = None) -> dict[str, tuple[float, float]]:
    """min/max of each named ONNX value over the calibration samples."""
    values = list(dict.fromkeys(values))
    inp = graph_inputs(model)[0].name
    sess = float_session(model, values)
    names = [o.name for o in sess.get_outputs()]
    ranges: dict[str, list[float]] = {}
    for i in range(len(x)):
        results = sess.run(None, {inp: x[i:i + 1]})
        for name, r in zip(names, results):
            lo, hi = float(np.min(r)), float(np.max(r))
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise EdgecError(f"calibration sample {i}: value '{name}' is not finite (NaN/Inf); "
                                 "check the calibration data and the model's weights")
            cur = ranges.setdefault(name, [lo, hi])
            cur[0], cur[1] = min(cur[0], lo), max(cur[1], hi)
        if progress:
            progress(i + 1, len(x))
    lo, hi = float(np.min(x)), float(np.max(x))
    ranges.setdefault(inp, [lo, hi])
    missing = [v for v in values if v not in ranges]
    if missing:
        raise EdgecError(f"calibration could not observe values {missing[:5]}")
    return {k: (v[0], v[1]) for k, v in ranges.items()}
