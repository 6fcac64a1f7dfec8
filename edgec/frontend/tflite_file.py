"""A .tflite file as untrusted input: read once (its bytes are the only copy of the weights: the importer's
constants are read-only views of them, and a weighted op's float weights are computed when something reads
them, not held: DequantizedWeights), and every tensor's fields checked before any importer reads them, each
failure one line naming the tensor:

- shape: no negative dimension, at most MAX_ELEMENTS elements;
- buffer: an index into the model's buffers, holding exactly shape x element size bytes (or none);
- quantization: scales finite and positive, zero points inside the tensor type's range, one zero point per
  scale (or one for all, or none), a per-channel axis inside the shape with one scale per channel.

    buf = tflite_file.read(path)                 # the file's bytes, the TFL3 identifier checked
    tflite_file.check_tensors(model, subgraph, path)

Not memory-mapped: a mapped file that another program truncates kills the reader with SIGBUS on the first
page past the new end (no message, no clean-up); bytes read are the file as it was when opened.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from edgec.errors import EdgecError

IDENTIFIER = b"TFL3"
MAX_ELEMENTS = 1 << 31          # a tensor larger than this holds no model a microcontroller runs
MAX_BYTES = 1 << 31             # a flatbuffer's own limit (32-bit offsets)
# TensorType -> (element bytes, zero point range) of the types edgec reads
ELEMENTS = {0: (4, None), 1: (2, None), 2: (4, (-2**31, 2**31 - 1)), 3: (1, (0, 255)), 4: (8, None), 7: (2, (-32768, 32767)),
            9: (1, (-128, 127))}


def read(path: Path) -> bytes:
    """The file's bytes (one read of the size it has when opened; the flatbuffer and the constants' views read
    from them)."""
    if not path.is_file():
        raise EdgecError(f"{path}: no such file (give the path of an INT8 .tflite model)")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_BYTES:
            raise EdgecError(f"{path}: {size:,} bytes, more than a TFLite flatbuffer can hold ({MAX_BYTES:,}); "
                             "give an INT8 .tflite model")
        data = f.read(size)
    if len(data) != size:
        raise EdgecError(f"{path}: the file changed while edgec read it ({len(data):,} of {size:,} bytes); "
                         "import it again once it is written")
    if data[4:8] != IDENTIFIER:
        raise EdgecError(f"{path}: not a TFLite flatbuffer (no 'TFL3' identifier); give an INT8 .tflite model")
    return data


class DequantizedWeights(np.lib.mixins.NDArrayOperatorsMixin):
    """The float32 weights q x scale of a .tflite's int8 weights, made when read (np.asarray, arithmetic, an
    index) and not held: the graph keeps the file's integers only (float32 copies were 4x the file).  It has
    an array's shape, ndim, size and dtype; everything else goes through the array it makes."""

    dtype = np.dtype(np.float32)

    def __init__(self, q: np.ndarray, scale: np.ndarray):
        self.q, self.scale = q, np.asarray(scale, np.float32)
        self.shape, self.ndim, self.size = q.shape, q.ndim, q.size

    def __array__(self, dtype=None, copy=None):
        w = np.multiply(self.q, self.scale, dtype=np.float32)     # exact: an int8 times a float32
        return w if dtype is None else w.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        inputs = tuple(np.asarray(i) if isinstance(i, DequantizedWeights) else i for i in inputs)
        return getattr(ufunc, method)(*inputs, **kw)

    def __len__(self) -> int:
        return len(self.q)

    def __getitem__(self, index):
        return np.asarray(self)[index]

    def astype(self, dtype, **_kw) -> np.ndarray:
        return np.asarray(self, dtype)

    def reshape(self, *shape) -> np.ndarray:
        return np.asarray(self).reshape(*shape)

    def copy(self) -> np.ndarray:
        return np.asarray(self)

    @property
    def T(self) -> np.ndarray:
        return np.asarray(self).T


def _name(sg, index: int) -> str:
    n = sg.Tensors(index).Name()
    return n.decode(errors="replace") if n else f"#{index}"


WEIGHTED = {"FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "BATCH_MATMUL", "SVDF", "ADD",
            "MUL", "UNIDIRECTIONAL_SEQUENCE_LSTM"}     # in float32 only in a float or dynamic-range model


def is_float_model(model, sg) -> bool:
    """A float, float16-weights or dynamic-range .tflite (TFLiteConverter without a representative dataset): a
    weighted layer, ADD or MUL computes float32, or no tensor is int8, int16 or uint8."""
    from tflite.utils import BUILTIN_OPCODE2NAME

    types, weighted = {sg.Tensors(i).Type() for i in range(sg.TensorsLength())}, False
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        out = {sg.Tensors(int(k)).Type() for k in op.OutputsAsNumpy()}
        name = BUILTIN_OPCODE2NAME.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()))
        weighted |= 0 in out and name in WEIGHTED
    return weighted or (0 in types and not types & {3, 7, 9})       # float32; uint8, int16, int8 (tflite.TensorType)


def check_quantized(model, sg, path: Path) -> None:
    """A float or dynamic-range .tflite refused in one line saying what to do (the quantized importer's check:
    edgec builds such a file with a calibration set, edgec/frontend/tflite_float.py), whatever its inputs are
    (int32 token ids; a float32 input: the graph input's own refusal says the same)."""
    if is_float_model(model, sg):
        raise EdgecError(f"{path}: a float or dynamic-range .tflite (its layers compute float32): edgec quantizes "
                         "it from a calibration set: give --calib FILE.npz (x: (N, *input shape)), or quantize it "
                         "fully with TFLiteConverter (a representative dataset, TFLITE_BUILTINS_INT8), or give "
                         "edgec the float model as ONNX with --calib")


def check_tensors(model, sg, path: Path, float_ok: bool = False) -> None:
    """Every tensor of the subgraph sound (see the module doc), else one EdgecError naming it; then
    check_quantized (not for a float model's translation: float_ok)."""
    buffers = model.BuffersLength()
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)

        def bad(what: str) -> EdgecError:
            return EdgecError(f"{path}: tensor '{_name(sg, i)}' {what}; the file is damaged or was not written by "
                              "a TFLite converter: export the model again")

        shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
        if any(d < 0 for d in shape):
            raise bad(f"has shape {shape} (a negative dimension)")
        elements = math.prod(shape)
        if elements > MAX_ELEMENTS:
            raise bad(f"has shape {shape} ({elements:,} elements, more than {MAX_ELEMENTS:,})")
        size, zp_range = ELEMENTS.get(t.Type(), (None, None))
        b = t.Buffer()
        if not 0 <= b < max(buffers, 1):
            raise bad(f"names buffer {b} of {buffers}")
        length = model.Buffers(b).DataLength() if b > 0 else 0
        if length and size is not None and length != elements * size:
            raise bad(f"of shape {shape} holds {length:,} bytes in buffer {b}; it needs {elements * size:,}")
        q = t.Quantization()
        if q is None or q.ScaleLength() == 0:
            continue
        scales = np.asarray(q.ScaleAsNumpy(), np.float64).reshape(-1)
        wrong = scales[~(np.isfinite(scales) & (scales > 0))]
        if wrong.size:
            raise bad(f"has scale {float(wrong[0])!r}; a scale must be a positive finite number")
        zps = np.asarray(q.ZeroPointAsNumpy(), np.int64).reshape(-1) if q.ZeroPointLength() else np.zeros(0, np.int64)
        if zps.size not in (0, 1, scales.size):
            raise bad(f"has {scales.size} scales and {zps.size} zero points")
        if zp_range is not None and zps.size and (zps.min() < zp_range[0] or zps.max() > zp_range[1]):
            z = int(zps[(zps < zp_range[0]) | (zps > zp_range[1])][0])
            raise bad(f"has zero point {z}, outside {zp_range[0]}..{zp_range[1]} of its type")
        if scales.size > 1:
            axis = int(q.QuantizedDimension())
            if len(shape) == 1 and shape[0] == scales.size:
                continue           # a bias whose axis is its filter's (old converters: TFLite Micro reads it so)
            if not 0 <= axis < len(shape) or shape[axis] != scales.size:
                raise bad(f"has {scales.size} scales along axis {axis} of shape {shape}; one per channel needed")

    if not float_ok:
        check_quantized(model, sg, path)
