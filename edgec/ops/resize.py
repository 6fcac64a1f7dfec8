"""Resize / Upsample: nearest becomes a `remap` (an index map, edgec/ops/movement.py); linear over the spatial axes
of an NCHW tensor, or the last axis of an NCL one (one row), a `resize_linear` (two source rows and columns and their Q10 weights per output pixel;
kernel in runtime_c/edgec_resize.c). The coordinates come from running the node itself (onnx's reference) on
index values, so every coordinate_transformation_mode and rounding mode means what ONNX says.
"""
from __future__ import annotations

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit, movement
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.ops.softmax import _round_div_pot


def quantize_resize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    (ih, iw, c), (oh, ow, _) = a["in_hwc"], a["out_hwc"]
    op.params.update(in_h=ih, in_w=iw, c=c, out_h=oh, out_w=ow)
    op.arrays["idx"] = np.concatenate([a["y0"], a["y1"], a["x0"], a["x1"]]).astype(np.int32)
    op.arrays["frac"] = np.round(np.concatenate([a["fy"], a["fx"]]) * 1024).astype(np.int32)


def resize_linear_s8(p: dict, idx, frac, x) -> np.ndarray:
    """Separable linear resize of [h][w][c] (channels last): per output row/column two source
    indices and a Q10 weight of the second; result rounded half away from zero."""
    h, w, c = int(p["in_h"]), int(p["in_w"]), int(p["c"])
    oh, ow = int(p["out_h"]), int(p["out_w"])
    x = np.asarray(x, np.int8).reshape(h, w, c).astype(np.int64)
    idx = np.asarray(idx, np.int64)
    frac = np.asarray(frac, np.int64)
    y0, y1, x0, x1 = idx[:oh], idx[oh:2 * oh], idx[2 * oh:2 * oh + ow], idx[2 * oh + ow:]
    fy, fx = frac[:oh].reshape(-1, 1, 1), frac[oh:].reshape(1, -1, 1)
    one = 1 << 10
    top = x[y0][:, x0] * (one - fx) + x[y0][:, x1] * fx
    bot = x[y1][:, x0] * (one - fx) + x[y1][:, x1] * fx
    v = top * (one - fy) + bot * fy
    return np.clip(_round_div_pot(v, 20), -128, 127).astype(np.int8).reshape(-1)


def float_resize(op: Op, inputs: list):
    a = op.attrs
    (ih, iw, c) = a["in_hwc"]
    x = inputs[0].reshape(ih, iw, c)
    fy, fx = np.asarray(a["fy"]).reshape(-1, 1, 1), np.asarray(a["fx"]).reshape(1, -1, 1)
    top = x[a["y0"]][:, a["x0"]] * (1 - fx) + x[a["y0"]][:, a["x1"]] * fx
    bot = x[a["y1"]][:, a["x0"]] * (1 - fx) + x[a["y1"]][:, a["x1"]] * fx
    return top * (1 - fy) + bot * fy


def c_resize(op: Op, low, site: CallSite) -> str:
    n = site.arrays
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {n['idx']}, {n['frac']}, {site.output});"
    return cemit.with_params("edgec_resize_params", op.params, call)


OPS = [OpDef("resize_linear", "resize", quantize_resize, float_resize, qparams="input")]
KERNELS = [Kernel("edgec_resize_linear_s8", ("resize_linear",), REFERENCE, c_resize,
                  run=lambda op, inputs: resize_linear_s8(op.params, op.arrays["idx"], op.arrays["frac"], inputs[0]))]


# ---- ONNX import
def _resize_map(cx, node, x, values):
    """Run the Resize node itself (onnx reference) on a tensor of index values."""
    from onnx.reference import ReferenceEvaluator   # slow to import: only when a model resizes
    inputs = ["x"] + [f"c{i}" if n else "" for i, n in enumerate(node.input[1:])]
    feeds = {f"c{i}": cx.consts[n] for i, n in enumerate(node.input[1:]) if n}
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    op = "Resize" if node.op_type == "Resize" else "Upsample"
    g = onnx.helper.make_graph(
        [onnx.helper.make_node(op, inputs, ["y"], **attrs)], "resize",
        [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in ["x", *feeds]],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.UNDEFINED, None)])
    m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", cx.opset)])
    return ReferenceEvaluator(m).run(None, {"x": values, **feeds})[0]


def import_resize(cx, node):
    x, y = node.input[0], node.output[0]
    for i in node.input[1:]:
        if i and i not in cx.consts:
            raise node_error(node, f"input '{i}' (roi/scales/sizes) must be constant")
    shape, yshape = cx.shape(x, node), cx.shape(y, node)
    mode = cx.attr(node, "mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ctm = cx.attr(node, "coordinate_transformation_mode", b"half_pixel")
    if (ctm.decode() if isinstance(ctm, bytes) else ctm) == "tf_crop_and_resize":
        raise node_error(node, "coordinate_transformation_mode tf_crop_and_resize is not supported")
    if cx.attr(node, "antialias", 0) and mode != "nearest":
        raise node_error(node, "antialiased Resize is not supported")
    coords = []
    for a, n in enumerate(shape):
        v = np.arange(n, dtype=np.float32).reshape([n if k == a else 1 for k in range(len(shape))])
        v = np.broadcast_to(v, shape).astype(np.float32)
        out = np.asarray(_resize_map(cx, node, x, v), np.float64)
        coords.append(out[tuple(slice(None) if k == a else 0 for k in range(len(shape)))])
    if mode == "nearest":
        idx = [np.round(c).astype(np.int64) for c in coords]
        return movement.remap_axes(cx, node, x, y, [(lambda m, i=i: i) for i in idx])
    if mode != "linear":
        raise node_error(node, f"Resize mode '{mode}' is not supported (nearest and linear are)")
    moved = [a for a in range(len(shape)) if not np.array_equal(coords[a], np.arange(shape[a]))]
    if len(shape) not in (3, 4) or shape[0] != 1 or any(a < 2 for a in moved):
        raise node_error(node, "linear Resize is supported over the spatial axes of an NCHW or NCL tensor "
                               "of batch 1")
    if len(shape) == 3:     # NCL (a 1-D Upsample, mode linear): one row of an image, its columns resized
        layout, (h, w), (oh, ow) = (0, 2, 1), (1, shape[2]), (1, yshape[2])
        cy, cx_ = np.zeros(1), coords[2]
    else:
        layout, (h, w), (oh, ow) = (0, 2, 3, 1), shape[2:], yshape[2:]
        cy, cx_ = coords[2], coords[3]
    xin = cx.as_layout(x, layout, node)
    y0, x0 = np.clip(np.floor(cy), 0, h - 1).astype(np.int64), np.clip(np.floor(cx_), 0, w - 1).astype(np.int64)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    out = cx.new_tensor(y, (1, *([oh] if len(shape) == 4 else []), ow, yshape[1]), y)
    cx.emit("resize_linear", node, [xin], out, in_hwc=(h, w, shape[1]), out_hwc=(oh, ow, yshape[1]),
            y0=y0, y1=y1, x0=x0, x1=x1, fy=np.clip(cy - y0, 0, 1), fx=np.clip(cx_ - x0, 0, 1))
    cx.values[y] = (out, layout)


ONNX = {"Resize": import_resize, "Upsample": import_resize}


# ---- TFLite import (edgec/frontend/tflite.py)
def _tflite_resize_args(tx, op, dtypes=("int8",)):
    x = tx.input(op, 0, dtypes)
    shape = tx.tensor(x).shape
    size = tx.const(op, 1)
    o = tx.options(op)
    if len(shape) != 4 or size is None or size.size != 2:
        raise tx.unsupported("a 4-D NHWC input and a constant size [height, width]")
    align, half = (bool(o.AlignCorners()), bool(o.HalfPixelCenters())) if o is not None else (False, False)
    return x, shape, [int(v) for v in size.reshape(-1)], align, half


def tflite_nearest(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    """TFLite's GetNearestNeighbor for every output index (its float32 arithmetic)."""
    f = np.float32
    scale = f(n_in - 1) / f(n_out - 1) if align and n_out > 1 else f(n_in) / f(n_out)
    v = (np.arange(n_out, dtype=f) + f(0.5 if half else 0.0)) * scale
    if align:                                   # TfLiteRound: half away from zero (v >= 0 here)
        v = np.floor(v) + (v - np.floor(v) >= f(0.5))
    else:
        v = np.floor(v)
    v = np.minimum(v.astype(np.int64), n_in - 1)
    return np.maximum(v, 0) if half else v


def import_tflite_resize_nearest(tx, op):
    """RESIZE_NEAREST_NEIGHBOR: a remap (the bytes copied, as TFLite Micro does; int8, or int16 in 16x8)."""
    from edgec.ops.rearrange import tflite_remap
    from edgec.ops.tflite16 import ACTIVATIONS, like

    x, (n, h, w, c), (oh, ow), align, half = _tflite_resize_args(tx, op, ACTIVATIONS)
    axes = [(np.arange(n), 0), (tflite_nearest(h, oh, align, half), 1), (tflite_nearest(w, ow, align, half), 2),
            (np.arange(c), 3)]
    tflite_remap(tx, op, x, tx.output(op, dtypes=like(tx, x)), axes)


def tflite_bilinear_axis(n_in: int, n_out: int, align: bool, half: bool):
    """TFLite's ResizeBilinearInteger along one axis: the two source indices and the Q10 weight of the second
    (ComputeInterpolationValuesInteger; C's truncating division)."""
    scale = ((1 << 10) * n_in + n_out // 2) // n_out
    if align and n_out > 1:
        scale = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
    v = np.arange(n_out, dtype=np.int64) * scale
    if half:
        v = v + scale // 2 - (1 << 9)
    lo = np.maximum(np.trunc(v / 1024).astype(np.int64), 0)
    hi = np.minimum(np.trunc((v + 1023) / 1024).astype(np.int64), n_in - 1)
    return lo, hi, v - 1024 * lo


def import_tflite_resize_bilinear(tx, op):
    """RESIZE_BILINEAR on int8 (TFLite's integer kernel: Q10 weights, the raw int8 values interpolated, rounded
    half away from zero): edgec's `resize_linear` with TFLite's source indices and weights."""
    x, (n, h, w, c), (oh, ow), align, half = _tflite_resize_args(tx, op)
    if n != 1:
        raise tx.unsupported(f"batch {n} (RESIZE_BILINEAR runs on a batch of 1)")
    if align and half:
        raise tx.unsupported("align_corners and half_pixel_centers together")
    out = tx.output(op)
    tx.same_qparams(x, out, "RESIZE_BILINEAR")
    y0, y1, fy = tflite_bilinear_axis(h, oh, align, half)
    x0, x1, fx = tflite_bilinear_axis(w, ow, align, half)
    frac = np.concatenate([fy, fx]).astype(np.int32)
    tx.emit("resize_linear", op, [x], out, {"frac": frac}, None, in_hwc=(h, w, c), out_hwc=(oh, ow, c),
            y0=y0, y1=y1, x0=x0, x1=x1, fy=fy / 1024.0, fx=fx / 1024.0)


TFLITE = {"RESIZE_NEAREST_NEIGHBOR": import_tflite_resize_nearest, "RESIZE_BILINEAR": import_tflite_resize_bilinear}
