"""An ONNX model through edgec's float interpreter and its INT8 reference, as the operator tests check it: the
float graph equals ONNX Runtime, then the model is calibrated, quantized and run in integers (shared by the tests
of ONNX operators: test_where_onnx, test_logic_onnx, test_cumsum, ...)."""
from __future__ import annotations

import numpy as np

from edgec.fixedpoint import scheme
from edgec.frontend import canonicalize
from edgec.quant import calibrate, floatref, quantize, reference


def float_then_int8(model, x: np.ndarray, name: str, want: np.ndarray | None = None, atol: float = 1e-5):
    """Canonicalize `model` (its C name `name`) and check its float interpreter on x[0] against `want` (by
    default ONNX Runtime's float output) within `atol`; calibrate on all of `x` (edgec's own tensors, sources
    "edgec:...", on the float interpreter), quantize and run the INT8 reference on x[0].
    Returns (the quantized graph, want, the reference's output dequantized and shaped as want)."""
    graph = canonicalize.canonicalize(model, name)
    if want is None:
        want = calibrate.run_float(model, x[:1])[0]
    np.testing.assert_allclose(floatref.output(graph, x[0]).reshape(want.shape), want, atol=atol)
    own = {t.source for t in graph.tensors.values() if t.source.startswith("edgec:")}
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values() if t.source not in own])
    if own:
        ranges.update(floatref.ranges(graph, x, own))
    graph = quantize.quantize(graph, ranges)
    tout = graph.tensors[graph.output]
    got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    return graph, want, got.reshape(want.shape)
