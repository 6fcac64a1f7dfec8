"""edgec's intermediate representation: a small, plain graph of canonical ops.

After canonicalization every activation tensor has a *physical* shape (channels
last for anything a convolution or pooling touches) and the graph holds only
the op kinds edgec has kernels for. Quantization makes a new graph whose tensors
carry their scale and zero point and whose ops carry their integer parameters;
the graph stays the same shape.

`Graph`, `Op` and `Tensor` are immutable values: each stage of the pipeline
(edgec/pipeline.py) takes one and returns a new one (`dataclasses.replace`,
`Graph.replace_ops`), so a value an earlier stage handed on never changes under
it. The dict fields (`Op.attrs`, `params`, `arrays`, `Graph.tensors`...) are
filled only by the stage that makes the op or graph, before it hands it on: a
stage that changes an op's dicts makes the op anew with its own copies first. A
frontend builds its graph in a `GraphBuilder` (mutable: ops appended, replaced,
pruned) and hands out `builder.finish()`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable

import numpy as np

# An op's `act` attribute (the interval its output is clamped to) when no activation is fused into it.
NO_ACT = (-math.inf, math.inf)
# Activation types: int8 everywhere, int16 where a layer runs TFLite's 16x8 scheme (edgec/quant/int16.py), uint8
# only at a graph input or output a .tflite file gives so (converted to / from int8 by a `quantize`, edgec/ops/convert.py).
# float32 where an operator computes in float as TFLite Micro does (the detection post-processing, edgec/ops/detection.py),
# int32 where it outputs indices (TFLite's ARG_MAX / ARG_MIN, edgec/ops/reduce.py: a graph output), bool (one byte,
# 0 or 1, as TFLite Micro stores it) out of comparisons and logical operators (edgec/ops/binary/tflite.py);
# int32, uint32 and uint64 where TFLite Micro's signal operators compute on them (edgec/ops/signal).
DTYPES = {"int8": np.int8, "int16": np.int16, "uint8": np.uint8, "float32": np.float32, "int32": np.int32,
          "bool": np.bool_, "uint32": np.uint32, "uint64": np.uint64}
# Source prefix of the tensors edgec makes itself (decomposed operators): onnxruntime never sees them, so the
# float interpreter (edgec/quant/floatref.py) calibrates them.
SYNTHETIC = "edgec:"


def _tuple_field(owner: str, name: str, value) -> None:
    if not isinstance(value, tuple):
        raise TypeError(f"{owner}.{name} is a tuple ({owner} is immutable), got {type(value).__name__}")


@dataclass(frozen=True)
class Tensor:
    """An activation tensor (never a constant: constants live in op attributes)."""

    name: str
    shape: tuple[int, ...]          # physical shape, batch first (always 1)
    source: str                     # ONNX value this tensor holds (for calibration ranges)
    scale: float | None = None      # quantization, given by quantize
    zero_point: int | None = None
    dtype: str = "int8"             # a key of DTYPES

    @property
    def size(self) -> int:
        """Elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes in the arena."""
        return self.size * np.dtype(DTYPES[self.dtype]).itemsize


@dataclass(frozen=True)
class Op:
    """One canonical operation. `attrs` holds float-domain parameters (weights,
    strides, activation range...); the quantized graph's ops add `params` (the C
    struct fields) and integer arrays (`weights_q`, `bias_q`, `mult`, `shift`, `table`)."""

    kind: str
    name: str                       # ONNX node name, for messages
    inputs: tuple[str, ...]
    output: str
    attrs: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    lowering: "Lowering | None" = None   # the kernel it runs on, its params and constants (edgec/ops/kernel.py),
                                         # set by the lower stage (edgec/lower/lowering.py); None: not lowered

    def __post_init__(self) -> None:
        _tuple_field("Op", "inputs", self.inputs)

    def fresh(self, **changes) -> Op:
        """A copy with its own attrs dict and empty params and arrays: the op a stage fills in for the graph it
        makes (a quantizer's params and constants), leaving this one as it is."""
        return replace(self, **{"attrs": dict(self.attrs), "params": {}, "arrays": {}, **changes})


class _Queries:
    """What a graph answers about its ops and ports (a Graph and a GraphBuilder alike)."""

    @property
    def inputs(self) -> list[str]:
        """Every input tensor, in the ONNX model's order."""
        return [self.input, *self.more_inputs]

    @property
    def outputs(self) -> list[str]:
        """Every output tensor, in the ONNX model's order."""
        return [self.output, *self.more_outputs]

    def onnx_shape(self, tensor: str) -> tuple[int, ...]:
        """The ONNX shape (batch included) of an input or output tensor."""
        if tensor in self.port_shapes:
            return self.port_shapes[tensor]
        return self.input_onnx_shape if tensor == self.input else self.output_onnx_shape

    def producer(self, tensor: str) -> Op | None:
        for op in self.ops:
            if op.output == tensor:
                return op
        return None

    def consumers(self, tensor: str) -> list[Op]:
        return [op for op in self.ops if tensor in op.inputs]


@dataclass(frozen=True)
class Graph(_Queries):
    name: str
    tensors: dict[str, Tensor]
    ops: tuple[Op, ...]
    input: str
    output: str
    input_onnx_shape: tuple[int, ...] = ()
    # the input tensor's physical axis order as ONNX axes: (0, 2, 3, 1) when an NCHW model takes its input
    # channels-last (--input-layout nhwc, edgec/ports.py moves host data); () its ONNX layout
    input_perm: tuple[int, ...] = ()
    output_onnx_shape: tuple[int, ...] = ()
    # ONNX value -> (scale, zero point) given by the model itself (a QDQ model, edgec/frontend/qdq.py): quantize
    # takes these instead of calibrated ranges
    fixed_qparams: dict[str, tuple[float, int]] = field(default_factory=dict)
    # A model with several inputs or outputs (edgec/ports.py): the ones after the first (`input`, `output`), in
    # the ONNX model's order, and of every input and output tensor its ONNX value name and ONNX shape
    more_inputs: tuple[str, ...] = ()
    more_outputs: tuple[str, ...] = ()
    port_names: dict[str, str] = field(default_factory=dict)
    port_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("ops", "more_inputs", "more_outputs"):
            _tuple_field("Graph", name, getattr(self, name))

    def replace_ops(self, ops: Iterable[Op], tensors: dict[str, Tensor] | None = None) -> Graph:
        """The same graph with these ops (and, given, these tensors)."""
        return replace(self, ops=tuple(ops), **({} if tensors is None else {"tensors": tensors}))

    def replace_tensors(self, tensors: dict[str, Tensor]) -> Graph:
        """The same graph with these tensors (e.g. their quantization)."""
        return replace(self, tensors=tensors)

    def weights_bytes(self) -> int:
        """Bytes of constant data the generated model keeps in flash (the fast kernels' own packing
        where an op has one)."""
        return int(sum(a.nbytes for op in self.ops
                       for a in (op.lowering.arrays if op.lowering is not None else op.arrays).values()))


class GraphBuilder(_Queries):
    """A graph being built (the frontends: edgec/frontend/canonicalize.py, tflite.py, and the importers they
    call): tensors and ops added, replaced and pruned in place; `finish()` hands out the immutable Graph."""

    def __init__(self, name: str):
        self.name = name
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []
        self.input, self.output = "", ""
        self.input_onnx_shape: tuple[int, ...] = ()
        self.input_perm: tuple[int, ...] = ()
        self.output_onnx_shape: tuple[int, ...] = ()
        self.fixed_qparams: dict[str, tuple[float, int]] = {}
        self.more_inputs: list[str] = []
        self.more_outputs: list[str] = []
        self.port_names: dict[str, str] = {}
        self.port_shapes: dict[str, tuple[int, ...]] = {}
        self.effects: list[str] = []      # outputs of ops kept for their effect (a variable's assignment)

    def replace_op(self, old: Op, new: Op) -> Op:
        """Put `new` where `old` is (the same object, not an equal one); returns new."""
        self.ops[next(i for i, op in enumerate(self.ops) if op is old)] = new
        return new

    def retensor(self, name: str, **changes) -> Tensor:
        """Tensor `name` with some fields changed (its source, its shape...)."""
        self.tensors[name] = replace(self.tensors[name], **changes)
        return self.tensors[name]

    def prune(self) -> None:
        """Drop ops whose results no output needs, and tensors nothing reads (every input stays, used or not)."""
        live, keep = set(self.outputs) | set(self.effects), []
        for op in reversed(self.ops):
            if op.output in live:
                keep.append(op)
                live.update(op.inputs)
        self.ops = keep[::-1]
        self.tensors = {k: v for k, v in self.tensors.items() if k in live or k in self.inputs}

    def finish(self) -> Graph:
        return Graph(name=self.name, tensors=dict(self.tensors), ops=tuple(self.ops), input=self.input,
                     output=self.output, input_onnx_shape=batched(self.input_onnx_shape),
                     input_perm=tuple(self.input_perm), output_onnx_shape=batched(self.output_onnx_shape),
                     fixed_qparams=dict(self.fixed_qparams), more_inputs=tuple(self.more_inputs),
                     more_outputs=tuple(self.more_outputs), port_names=dict(self.port_names),
                     port_shapes={t: batched(v) for t, v in self.port_shapes.items()})


def batched(shape) -> tuple[int, ...]:
    """An input's or output's shape with its batch dimension first, as edgec's data files and ports read it: a
    rank-1 [n] (n > 1; a model taking one vector, no batch axis) as [1, n], so one sample is the whole vector."""
    shape = tuple(int(d) for d in shape)
    return (1, *shape) if len(shape) == 1 and shape[0] > 1 else shape
