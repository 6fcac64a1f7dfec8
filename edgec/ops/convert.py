"""Type conversions and build-time-only operators: a float Cast / CastLike is the tensor itself; Range and
ConstantOfShape are computed at build time when their inputs are constants (and refused otherwise);
QuantizeLinear / DequantizeLinear of computed tensors are refused (a QDQ model's pairs are stripped by
edgec/frontend/qdq.py before canonicalization).
"""
from __future__ import annotations

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ops import movement


# ---- ONNX import
def import_cast(cx, node):
    to = cx.attr(node, "to")
    if to in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
        return movement.alias(cx, node)
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
    raise node_error(node, "integer tensors in the graph are not supported: edgec takes QuantizeLinear only "
                           "directly followed by DequantizeLinear (QDQ format) and DequantizeLinear of constants")


ONNX = {"Cast": import_cast, "CastLike": import_cast_like,
        "Range": import_needs_constants, "ConstantOfShape": import_needs_constants,
        "QuantizeLinear": import_quantize_linear, "DequantizeLinear": import_quantize_linear}
