"""edgec's intermediate representation: a small, plain graph of canonical ops.

After canonicalization every activation tensor has a *physical* shape (channels
last for anything a convolution or pooling touches) and the graph holds only
the op kinds edgec has kernels for. Quantization fills in each tensor's scale
and zero point and each op's integer parameters; the graph stays the same shape.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# An op's `act` attribute (the interval its output is clamped to) when no activation is fused into it.
NO_ACT = (-math.inf, math.inf)
# Activation types: int8 everywhere, int16 where a layer runs TFLite's 16x8 scheme (edgec/quant/int16.py).
DTYPES = {"int8": np.int8, "int16": np.int16}
# Source prefix of the tensors edgec makes itself (decomposed operators): onnxruntime never sees them, so the
# float interpreter (edgec/quant/floatref.py) calibrates them.
SYNTHETIC = "edgec:"


@dataclass
class Tensor:
    """An activation tensor (never a constant: constants live in op attributes)."""

    name: str
    shape: tuple[int, ...]          # physical shape, batch first (always 1)
    source: str                     # ONNX value this tensor holds (for calibration ranges)
    scale: float | None = None      # quantization, filled in by quantize
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


@dataclass
class Op:
    """One canonical operation. `attrs` holds float-domain parameters (weights,
    strides, activation range...); quantize adds `params` (the C struct fields)
    and integer arrays (`weights_q`, `bias_q`, `mult`, `shift`, `table`)."""

    kind: str
    name: str                       # ONNX node name, for messages
    inputs: list[str]
    output: str
    attrs: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    lowering: "Lowering | None" = None   # the kernel it runs on, its params and constants (edgec/ops/kernel.py),
                                         # set by the lower stage (edgec/lower/lowering.py); None: not lowered


@dataclass
class Graph:
    name: str
    tensors: dict[str, Tensor]
    ops: list[Op]
    input: str
    output: str
    input_onnx_shape: tuple[int, ...] = ()
    output_onnx_shape: tuple[int, ...] = ()
    # ONNX value -> (scale, zero point) given by the model itself (a QDQ model, edgec/frontend/qdq.py): quantize
    # takes these instead of calibrated ranges
    fixed_qparams: dict[str, tuple[float, int]] = field(default_factory=dict)
    # A model with several inputs or outputs (edgec/ports.py): the ones after the first (`input`, `output`), in
    # the ONNX model's order, and of every input and output tensor its ONNX value name and ONNX shape
    more_inputs: list[str] = field(default_factory=list)
    more_outputs: list[str] = field(default_factory=list)
    port_names: dict[str, str] = field(default_factory=dict)
    port_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

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

    def weights_bytes(self) -> int:
        """Bytes of constant data the generated model keeps in flash (the fast kernels' own packing
        where an op has one)."""
        return int(sum(a.nbytes for op in self.ops
                       for a in (op.lowering.arrays if op.lowering is not None else op.arrays).values()))

    def prune(self) -> None:
        """Drop ops whose results no output needs, and tensors nothing reads (every input stays, used or not)."""
        live, keep = set(self.outputs), []
        for op in reversed(self.ops):
            if op.output in live:
                keep.append(op)
                live.update(op.inputs)
        self.ops = keep[::-1]
        self.tensors = {k: v for k, v in self.tensors.items() if k in live or k in self.inputs}
