"""The host-only reference for one sample: what the device computes, on the host, with no board or build.

`run(graph, x)` quantizes a float sample as the device's NAME_quantize_input does (the host's rounding: half to
even), runs the NumPy integer reference (edgec/quant/reference.py, bit-exact with the C kernels) and returns both
the integer output (the bytes NAME_output() holds after invoke) and its dequantized float values.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from edgec import ports
from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.quant import artifact, reference


class Reference(NamedTuple):
    q: np.ndarray     # the integer output (ONNX layout; several outputs: packed), as the device writes it
    y: np.ndarray     # q dequantized with each output's scale and zero point


def graph_of(source) -> Graph:
    """A quantized graph from a build folder (its quantized.json/.npz), a Graph, or what api.calibrate returns."""
    if isinstance(source, Graph):
        return source
    if hasattr(source, "graph") and isinstance(source.graph, Graph):      # ptq.QuantResult
        return source.graph
    if isinstance(source, (str, Path)):
        folder = Path(source)
        if not (folder / "quantized.json").is_file():
            raise EdgecError(f"{folder}: not an edgec build folder (no quantized.json); give a build folder, a "
                             "quantized graph or api.calibrate's result")
        return artifact.load_graph(folder)
    raise EdgecError(f"reference: expected a build folder, a quantized graph or api.calibrate's result, "
                     f"got {type(source).__name__}")


def run(source, x, quantized: bool = False) -> Reference:
    """One sample x: the model's input (ONNX layout, batch of 1 or none; several inputs: packed) as floats, or
    with quantized=True its integer values already."""
    graph = graph_of(source)
    x = np.asarray(x)
    want = sum(p.size for p in ports.inputs(graph))
    if x.size != want:
        shapes = ", ".join(f"{p.name} {list(p.onnx_shape)}" for p in ports.inputs(graph))
        raise EdgecError(f"reference: one sample of {graph.name} has {want} values ({shapes}); got x of shape "
                         f"{list(x.shape)}")
    if not quantized:
        if not np.issubdtype(x.dtype, np.floating):
            raise EdgecError(f"reference: x is {x.dtype}; give float values, or quantized=True for integer inputs")
        batch = x.reshape(1, -1) if graph.more_inputs else x.reshape((1, *graph.input_onnx_shape[1:]))
        x = ports.quantize_inputs(graph, batch.astype(np.float32))[0]
    q = reference.run(graph, x)
    y = ports.dequantize_outputs(graph, q.reshape(1, *q.shape))[0]
    return Reference(q=q, y=y.reshape(q.shape) if not graph.more_outputs else y)
