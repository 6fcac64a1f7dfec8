"""x (op) constant folded into the weighted op (Conv, Gemm...) producing x at import: a constant Add becomes its
bias, a constant Mul scales its weights and bias (a BatchNorm a converter left as Mul then Add after a
convolution, as ONNX Runtime's Conv/Mul and Conv/Add fusions fold it), so nothing is rounded to int8 between them.
An Abs of a Sub of two activations it alone reads is that Sub computing |a - b| (`absdiff`).
"""
from __future__ import annotations

import numpy as np

from edgec.ir import NO_ACT
from edgec.ops.lut import import_unary


def add_constant(cx, node, x, c):
    """x + constant: becomes the bias of the Conv/Gemm producing x."""
    prod, per_channel = _foldable(cx, node, x, c)
    if prod is None:
        return False
    prod.attrs["bias"] = (prod.attrs["bias"] + per_channel).astype(np.float32)
    cx.rename_output(prod, x, node.output[0], cx.values[x][1])
    return True


def mul_constant(cx, node, x, c) -> bool:
    """x * constant (per output channel, or one value): scales the weights and bias of the Conv/Gemm producing x
    (a BatchNorm a converter left as Mul then Add after a convolution: ONNX Runtime folds it alike), so the
    product is not rounded to int8 at the convolution's scale first."""
    prod, per_channel = _foldable(cx, node, x, c)
    if prod is None or "weight_scale" in prod.attrs or not np.all(np.isfinite(per_channel)):
        return False
    w = np.asarray(prod.attrs["weights"])
    shape = [1] * w.ndim
    shape[cx.weight_axis(prod.kind)] = -1
    prod.attrs["weights"] = (w * per_channel.reshape(shape)).astype(w.dtype)
    prod.attrs["bias"] = (np.asarray(prod.attrs["bias"]) * per_channel).astype(np.float32)
    cx.rename_output(prod, x, node.output[0], cx.values[x][1])
    return True


def _foldable(cx, node, x, c):
    """(the weighted op producing x alone, the constant c as one value per output channel) when x (op) c can fold
    into that op's weights or bias (no activation after it, c constant along every other axis); else (None, None)."""
    prod = cx.fusable_producer(x)
    xshape = cx.shape(x, node)
    per_channel = None
    if prod is not None and xshape:      # weighted ops write channels last: the bias runs along that axis
        axis = cx.values[x][1][-1]
        try:
            full = np.moveaxis(np.broadcast_to(c.astype(np.float32), xshape), axis, -1).reshape(-1, xshape[axis])
            if np.all(full == full[:1]):
                per_channel = full[0].copy()
        except ValueError:
            pass
    if prod is None or not cx.is_weighted(prod.kind) or prod.attrs["act"] != NO_ACT or per_channel is None \
            or per_channel.size != np.asarray(prod.attrs["bias"]).size or tuple(cx.shape(node.output[0], node)) != tuple(xshape):
        return None, None
    return prod, per_channel


def import_abs(cx, node):
    """Abs: of a Sub of two activations that it alone reads (a Siamese distance), that Sub as |a - b| (BINARY_OPS
    "absdiff"), rounded once to the Abs's grid, twice as fine as the signed difference's a Sub then an Abs table
    would round it to first; any other Abs, a table (edgec/ops/lut)."""
    x = node.input[0]
    prod = cx.fusable_producer(x)
    if (prod is not None and prod.kind == "binary" and prod.attrs.get("op") == "sub" and prod.attrs["const"] is None
            and tuple(prod.attrs["act"]) == NO_ACT and not cx.graph.fixed_qparams):
        prod.attrs["op"] = "absdiff"
        cx.rename_output(prod, x, node.output[0], cx.values[x][1])
        return
    import_unary(cx, node)
