"""detection_postprocess: TFLite's `TFLite_Detection_PostProcess` custom operator (an SSD's box decoding and
non-maximum suppression), bit-identical with TFLite Micro's kernel (tensorflow/lite/micro/kernels/
detection_postprocess.cc); kernel in runtime_c/edgec_detection.c.

TFLM runs it in float: the int8 box encodings and class scores are dequantized (the model's DEQUANTIZE
operators, folded into the op here), decoded against the anchors in double (exp included), then either fast NMS
(each anchor's best class, one NMS over all anchors) or regular NMS (one NMS per class, then the best
max_detections over all classes). Its four float outputs (boxes [1,D,4], classes [1,D], scores [1,D], the number
of detections [1]) are one float32 tensor here, packed one after the other as edgec packs several outputs
(edgec/ports.py): [4D boxes | D classes | D scores | 1 count]. The twin below performs the same float32 and
float64 operations in the same order as TFLM's C++ (NumPy's float32 arithmetic is IEEE single, `math.exp` the C
library's exp), and orders equal scores as TFLM's stable sorts do (by index).
"""
from __future__ import annotations

import math

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef

CUSTOM_CODE = "TFLite_Detection_PostProcess"
DETECTIONS_PER_CLASS = 100        # TFLM's default when the options omit detections_per_class
F32 = np.float32


class InvalidBoxes(ValueError):
    """A decoded box with ymin >= ymax or xmin >= xmax: TFLM's Invoke fails (and the C kernel returns -1)."""


# ---- quantize -------------------------------------------------------------------------------------------------
def quantize_detection(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The params struct (ints) and the float constants: the inputs' dequantization and the options' floats."""
    a, boxes, scores = op.attrs, ins[0], ins[1]
    op.params.update(num_boxes=a["num_boxes"], box_stride=a["box_stride"], num_classes=a["num_classes"],
                     score_stride=a["score_stride"], max_detections=a["max_detections"],
                     max_classes_per_detection=a["max_classes_per_detection"],
                     detections_per_class=a["detections_per_class"], regular_nms=int(a["regular_nms"]),
                     box_zp=int(boxes.zero_point), score_zp=int(scores.zero_point))
    op.arrays.update(anchors=np.asarray(a["anchors"], F32).reshape(-1, 4),
                     fparams=np.array([boxes.scale, scores.scale, a["score_threshold"], a["iou_threshold"],
                                       *a["scales"]], F32))


# ---- NumPy twin (bit-identical with TFLM's kernel and the C) ---------------------------------------------------
def decode(p: dict, boxes_q, anchors, fparams) -> np.ndarray:
    """TFLM's DecodeCenterSizeBoxes of the dequantized encodings: [num_boxes, 4] float32 (ymin, xmin, ymax,
    xmax); InvalidBoxes where one is empty."""
    n = int(p["num_boxes"])
    e = np.asarray(boxes_q, np.int8).reshape(n, int(p["box_stride"]))[:, :4].astype(np.int32) - int(p["box_zp"])
    e = e.astype(F32) * F32(fparams[0])                       # DEQUANTIZE: the float product, rounded once
    a = np.asarray(anchors, F32).reshape(n, 4).astype(np.float64)
    sy, sx, sh, sw = (float(v) for v in fparams[4:8])
    ed = e.astype(np.float64)
    yc = (ed[:, 0] / sy * a[:, 2] + a[:, 0]).astype(F32)
    xc = (ed[:, 1] / sx * a[:, 3] + a[:, 1]).astype(F32)
    eh = np.array([math.exp(v) for v in ed[:, 2] / sh])
    ew = np.array([math.exp(v) for v in ed[:, 3] / sw])
    hh = (0.5 * eh * a[:, 2]).astype(F32)
    hw = (0.5 * ew * a[:, 3]).astype(F32)
    out = np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=1).astype(F32)
    if np.any(out[:, 0] >= out[:, 2]) or np.any(out[:, 1] >= out[:, 3]):
        raise InvalidBoxes("a decoded box is empty (ymin >= ymax or xmin >= xmax)")
    return out


def _iou(boxes: np.ndarray, i: int, js: np.ndarray) -> np.ndarray:
    """ComputeIntersectionOverUnion(i, j) for every j of js, in float32 as TFLM."""
    a, b = boxes[i], boxes[js]
    area_a = F32(a[2] - a[0]) * F32(a[3] - a[1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    dy = np.maximum(np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0]), F32(0))
    dx = np.maximum(np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1]), F32(0))
    inter = dy * dx
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / ((area_a + area_b) - inter)
    return np.where((area_a <= 0) | (area_b <= 0), F32(0), iou).astype(F32)


def _sorted_decreasing(values: np.ndarray) -> np.ndarray:
    """Indices by value descending, equal values in index order (TFLM's stable sorts)."""
    return np.argsort(-np.asarray(values, F32), kind="stable")


def nms_one_class(boxes: np.ndarray, scores: np.ndarray, threshold: float, iou_threshold: float,
                  max_out: int) -> list[int]:
    """TFLM's NonMaxSuppressionSingleClassHelper: the selected box indices, best first."""
    keep = np.flatnonzero(scores >= F32(threshold))
    order = keep[_sorted_decreasing(scores[keep])]
    active = np.ones(order.size, bool)
    selected: list[int] = []
    out_size = min(order.size, max_out)
    for i in range(order.size):
        if not active.any() or len(selected) >= out_size:
            break
        if not active[i]:
            continue
        selected.append(int(order[i]))
        active[i] = False
        rest = np.flatnonzero(active[i + 1:]) + i + 1
        if rest.size:
            active[rest[_iou(boxes, int(order[i]), order[rest]) > F32(iou_threshold)]] = False
    return selected


def detection_postprocess(p: dict, boxes_q, scores_q, anchors, fparams) -> np.ndarray:
    """The op's packed float32 output [4D boxes | D classes | D scores | count] (rows past the count: 0)."""
    n, cb, nc, d = (int(p[k]) for k in ("num_boxes", "score_stride", "num_classes", "max_detections"))
    fparams = np.asarray(fparams, F32)
    boxes = decode(p, boxes_q, anchors, fparams)
    s = (np.asarray(scores_q, np.int8).reshape(n, cb).astype(np.int32) - int(p["score_zp"])).astype(F32) \
        * F32(fparams[1])
    s = s[:, cb - nc:]
    rows: list[tuple[int, int, np.float32]] = []          # (box, class, score)
    if not p["regular_nms"]:
        best = np.argmax(s, axis=1)                       # the first of equal best scores
        best_scores = s[np.arange(n), best]
        for b in nms_one_class(boxes, best_scores, fparams[2], fparams[3], d):
            rows.append((b, int(best[b]), best_scores[b]))
    else:
        for c in range(nc):
            sel = nms_one_class(boxes, s[:, c], fparams[2], fparams[3], int(p["detections_per_class"]))
            rows += [(b, c, s[b, c]) for b in sel]
            order = _sorted_decreasing(np.array([r[2] for r in rows], F32))[:d]
            rows = [rows[k] for k in order]
    out = np.zeros(6 * d + 1, F32)
    for k, (b, c, score) in enumerate(rows):
        out[4 * k:4 * k + 4] = boxes[b]
        out[4 * d + k], out[5 * d + k] = F32(c), score
    out[6 * d] = F32(len(rows))
    return out


def run_detection(op: Op, inputs: list) -> np.ndarray:
    return detection_postprocess(op.params, inputs[0], inputs[1], op.arrays["anchors"], op.arrays["fparams"])


# ---- C --------------------------------------------------------------------------------------------------------
def c_detection(op: Op, low, site: CallSite) -> str:
    a = site.arrays
    call = (f"if ({low.kernel.name}(&p, {site.inputs[0]}, {site.inputs[1]}, {a['anchors']}, {a['fparams']},\n"
            f"        {site.scratch}, (float *)(void *)({site.output})) != 0) return -1;")
    return cemit.with_params("edgec_detection_postprocess_params", op.params, call)


OPS = [OpDef("detection_postprocess", "detection", quantize_detection, None, qparams="fixed",
             fixed_qparams=lambda op: (1.0, 0), sensitivity=False)]
KERNELS = [Kernel("edgec_detection_postprocess_s8", ("detection_postprocess",), REFERENCE, c_detection,
                  run=run_detection, code_bytes=2500)]
ONNX: dict = {}
