"""Softmax and LogSoftmax (`softmax`, `log_softmax`): rows x cols with the reduced axes innermost,
brought there by a layout change when they are not.
"""
from __future__ import annotations

import numpy as np


# ---- ONNX import
def import_softmax(cx, node):
    x = node.input[0]
    shape = cx.shape(x, node)
    tensor, perm = cx.activation(x, node)
    rank = len(shape)
    axis = cx.attr(node, "axis", -1 if cx.opset >= 13 else 1) % rank
    reduced = [axis] if cx.opset >= 13 else list(range(axis, rank))
    phys = [a for a in perm if shape[a] != 1]
    tail = [a for a in phys if a in reduced]
    if phys[len(phys) - len(tail):] != tail or (cx.opset < 13 and any(shape[a] != 1 for a in range(axis))):
        return _softmax_general(cx, node, "softmax")
    cols = int(np.prod([shape[a] for a in reduced]))
    out = cx.new_tensor(node.output[0], cx.graph.tensors[tensor].shape, node.output[0])
    cx.emit("softmax", node, [tensor], out, rows=int(np.prod(shape)) // cols, cols=cols)
    cx.values[node.output[0]] = (out, perm)


def _softmax_general(cx, node, kind):
    """Softmax/LogSoftmax over any axes: bring them innermost (a remap) when they are not."""
    x, y = node.input[0], node.output[0]
    shape = cx.shape(x, node)
    rank = len(shape)
    axis = int(cx.attr(node, "axis", -1 if cx.opset >= 13 else 1)) % rank
    reduced = [axis] if cx.opset >= 13 else list(range(axis, rank))
    tensor, perm = cx.activation(x, node)
    order = [a for a in perm if shape[a] != 1]
    tail = [a for a in order if a in reduced]
    if order[len(order) - len(tail):] != tail:
        perm = tuple([a for a in perm if a not in reduced] + [a for a in perm if a in reduced])
        tensor = cx.as_layout(x, perm, node)
    cols = int(np.prod([shape[a] for a in reduced], dtype=np.int64))
    out = cx.new_tensor(y, cx.graph.tensors[tensor].shape, y)
    cx.emit(kind, node, [tensor], out, rows=int(np.prod(shape, dtype=np.int64)) // cols, cols=cols)
    cx.values[y] = (out, perm)


def import_log_softmax(cx, node):
    _softmax_general(cx, node, "log_softmax")


ONNX = {"Softmax": import_softmax, "LogSoftmax": import_log_softmax}
