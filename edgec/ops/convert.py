"""`requantize`: the conversion between an int8 tensor and its int16 twin where a 16x8 layer (--int16,
edgec/quant/int16.py) meets int8 ones (TFLite's Requantize, Q31 multiplier + shift); `quantize`: TFLite's QUANTIZE
between int8, uint8 and int16 (a uint8 graph input the sensor's bytes go into, a uint8 or int16 graph input or
output, an int8 requantization anywhere), as TFLite Micro's Requantize computes it; kernels in
runtime_c/edgec_convert.c.

Also the ONNX type conversions and build-time-only operators: a float Cast / CastLike is the tensor itself; Range
and ConstantOfShape are computed at build time when their inputs are constants (and refused otherwise);
QuantizeLinear / DequantizeLinear of computed tensors are refused (a QDQ model's pairs are stripped by
edgec/frontend/qdq.py before canonicalization).
"""
from __future__ import annotations

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops import movement
from edgec.ops.cemit import i16, with_params
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.fixedpoint.scheme import quantize_multiplier, requantize


KIND = "requantize"
QUANTIZE_KIND = "quantize"        # TFLite's QUANTIZE between integer types (uint8 / int8 / int16 ports)


def quantize_requantize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    mult, shift = quantize_multiplier(ins[0].scale / out.scale)
    zp = ins[0].zero_point if out.dtype == "int16" else out.zero_point
    op.params.update(n=out.size, zero_point=int(zp), mult=mult, shift=shift)


def requantize_s8_s16(x, input_zp: int, mult: int, shift: int) -> np.ndarray:
    """int8 (scale s8, zero point) -> int16 (scale s16, zero point 0): mult/shift encode s8 / s16."""
    v = np.asarray(x, np.int8).astype(np.int32) - int(input_zp)
    return np.clip(requantize(v, mult, shift), -32768, 32767).astype(np.int16)


def requantize_s16_s8(x, output_zp: int, mult: int, shift: int) -> np.ndarray:
    """int16 (zero point 0) -> int8 (scale, zero point): mult/shift encode s16 / s8."""
    v = requantize(np.asarray(x, np.int16).astype(np.int32), mult, shift).astype(np.int64) + int(output_zp)
    return np.clip(v, -128, 127).astype(np.int8)


def _run_to16(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return requantize_s8_s16(inputs[0].reshape(-1), p["zero_point"], p["mult"], p["shift"])


def _run_to8(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return requantize_s16_s8(inputs[0].reshape(-1), p["zero_point"], p["mult"], p["shift"])


def _c_to16(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {i16(site.output)});"
    return with_params("edgec_requantize_params", op.params, call, only_fields=True)


def _c_to8(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {i16(site.inputs[0], const=True)}, {site.output});"
    return with_params("edgec_requantize_params", op.params, call, only_fields=True)


def quantize_quantize8(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """TFLM's QUANTIZE Prepare: the Q31 multiplier of input scale / output scale, in double."""
    mult, shift = quantize_multiplier(float(np.float64(np.float32(ins[0].scale)) / np.float64(np.float32(out.scale))))
    op.params.update(n=out.size, input_zp=int(ins[0].zero_point), mult=mult, shift=shift,
                     output_zp=int(out.zero_point), input_type=QUANTIZE_TYPES.index(ins[0].dtype),
                     output_type=QUANTIZE_TYPES.index(out.dtype))


QUANTIZE_TYPES = ("int8", "uint8", "int16", "int32")     # the C kernel's input_type / output_type codes


def quantize8(p: dict, x) -> np.ndarray:
    """TFLite Micro's Requantize between int8, uint8 and int16, and from int8 or int16 to int32: (x - input_zp) *
    (mult, shift) + output_zp, clamped to the output type (an 8-bit input's bytes read as uint8 or int8 as the
    input is, whatever array type carries them)."""
    v = np.asarray(x).astype(np.int64).reshape(-1)
    if p["input_type"] != 2:
        v = (v & 0xFF) if p["input_type"] == 1 else ((v + 128) & 0xFF) - 128
    out = requantize(v - int(p["input_zp"]), p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    t = np.dtype(QUANTIZE_TYPES[int(p["output_type"])])
    return np.clip(out, np.iinfo(t).min, np.iinfo(t).max).astype(t)


def _c_quantize8(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.output});"
    return with_params("edgec_quantize8_params", op.params, call, only_fields=True)


def float_quantize8(op: Op, inputs: list):
    return inputs[0]


OPS = [OpDef(KIND, "convert", quantize_requantize, lambda op, inputs: inputs[0], sensitivity=False,
             qparams="fixed", fixed_qparams=lambda op: op.attrs.get("grid")),   # (None: the calibrated range)
       OpDef(QUANTIZE_KIND, "convert", quantize_quantize8, float_quantize8, sensitivity=False)]
# the int8 one (an int8 output) converts int16 -> int8; the int16 one (an int16 output) int8 -> int16
# (code_bytes: arm-none-eabi-gcc -O2 for the Cortex-M4, 236 and 176 B)
KERNELS = [Kernel("edgec_requantize_s16_s8", (KIND,), REFERENCE, _c_to8, run=_run_to8, code_bytes=240),
           Kernel("edgec_requantize_s8_s16", (KIND,), REFERENCE, _c_to16, precision=INT16, run=_run_to16,
                  code_bytes=180),
           Kernel("edgec_quantize8", (QUANTIZE_KIND,), REFERENCE, _c_quantize8,
                  run=lambda op, inputs: quantize8(op.params, inputs[0]))]


# ---- ONNX import
def import_cast(cx, node):
    to = cx.attr(node, "to")
    if to in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
        return movement.alias(cx, node)
    if to == onnx.TensorProto.BOOL and cx.graph.tensors[cx.activation(node.input[0], node)[0]].dtype == "bool":
        return movement.alias(cx, node)         # a mask cast to bool (torch.onnx's F.hardshrink): the same bytes
    if to == onnx.TensorProto.BOOL and node.input[0] not in cx.consts:
        from edgec.ops.binary.compare import import_cast_to_bool
        return import_cast_to_bool(cx, node)     # a value cast to bool: x != 0, a bool mask
    raise node_error(node, f"casting a computed tensor to {onnx.TensorProto.DataType.Name(to)} is not supported")


def import_cast_like(cx, node):
    a, b = node.input
    target = cx.consts[b].dtype if b in cx.consts else None
    if a in cx.consts and (target is None or target.kind == "f"):   # a constant cast to a float tensor's type
        cx.consts[node.output[0]] = cx.consts[a].astype(target or np.float32)
        return
    if a not in cx.consts and (target is None or target.kind == "f"):
        return movement.alias(cx, node)
    raise node_error(node, "CastLike to a non-float type is not supported on computed tensors")


def import_needs_constants(cx, node):
    raise node_error(node, "supported only when all its inputs are constants (folded at build time)")


def import_quantize_linear(cx, node):
    outputs = {o.name for o in cx.model.graph.output}
    scale = cx.consts.get(node.input[1]) if len(node.input) > 1 else None
    if node.output[0] in outputs and scale is not None and np.asarray(scale).size > 1:    # a per-axis output port
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        raise node_error(node, f"writes the graph output '{node.output[0]}' as integers with {np.asarray(scale).size} "
                               f"scales along axis {axis}; an edgec output port has one scale and zero point: "
                               "quantize that output per tensor, or end the model with its DequantizeLinear (edgec "
                               "then holds the output on one grid, the widest channel's scale)")
    if node.output[0] in outputs:      # tf2onnx's from_tflite of an int8 file
        raise node_error(node, f"writes the graph output '{node.output[0]}' as integers; edgec takes an integer "
                               "graph output from a per-tensor QuantizeLinear to int8 or uint8 with constant scale and "
                               "zero point (a QDQ file's): quantize so, end the model with a DequantizeLinear, or give "
                               "edgec the .tflite")
    raise node_error(node, "integer tensors in the graph are not supported: edgec takes QuantizeLinear only "
                           "directly followed by DequantizeLinear (QDQ format) and DequantizeLinear of constants")


ONNX = {"Cast": import_cast, "CastLike": import_cast_like,
        "Range": import_needs_constants, "ConstantOfShape": import_needs_constants,
        "QuantizeLinear": import_quantize_linear, "DequantizeLinear": import_quantize_linear}


# ---- TFLite import (edgec/frontend/tflite.py)
def import_tflite_quantize(tx, op):
    """QUANTIZE between integer types (uint8 -> int8 after a uint8 graph input: x - 128 where the scales agree;
    int8 -> uint8 before a uint8 output; int8 -> int8 requantization; int16 <-> int8 at an int16 graph input or
    output; int8 or int16 -> int32, as before keyword_scrambled_8bit's int32 output). The QUANTIZE of a float
    graph input is the host's (edgec/frontend/tflite.py); uint8 or int16 tensors into any other operator are
    refused."""
    x = tx.input(op, 0, dtypes=QUANTIZE_TYPES[:3])
    out = tx.output(op, dtypes=QUANTIZE_TYPES)
    if tx.tensor(out).dtype == "int32" and tx.tensor(x).dtype == "uint8":
        raise tx.unsupported("a QUANTIZE from uint8 to int32 (TFLite Micro requantizes only int8 and int16 to int32)")
    tx.emit(QUANTIZE_KIND, op, [x], out)


def import_tflite_dequantize(tx, op):
    raise tx.unsupported("a float tensor inside the graph (edgec runs integer graphs: a DEQUANTIZE is taken only "
                         "right before a float graph output, where the host dequantizes)")


TFLITE = {"QUANTIZE": import_tflite_quantize, "DEQUANTIZE": import_tflite_dequantize}
