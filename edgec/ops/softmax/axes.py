"""The axes a Softmax or LogSoftmax normalizes over, brought innermost: the one layout step the plain and the
masked softmax (masked.py) share."""
from __future__ import annotations

import numpy as np


def rows_innermost(cx, x: str, node):
    """(tensor, perm, shape, cols) for the ONNX value x that `node` normalizes: the reduced axes (`axis` alone from
    opset 13, every axis from it on before) made innermost by a remap when they are not, cols their product."""
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
    return tensor, perm, shape, int(np.prod([shape[a] for a in reduced], dtype=np.int64))
