"""nms: ONNX NonMaxSuppression with static bounds (max_output_boxes_per_class, iou_threshold and score_threshold
constants; center_point_box 0 or 1), computed as ONNX Runtime's CPU kernel does on the model's dequantized boxes
and scores; kernel in runtime_c/edgec_nms.c.

ONNX Runtime (onnxruntime/core/providers/cpu/object_detection/non_max_suppression.cc) runs it in float32: per
batch and class, the boxes whose score is above score_threshold (strictly; all of them without the input), best
score first (equal scores: lower box index first), each kept unless its IoU with a box already kept for the class
is above iou_threshold, until max_output_boxes_per_class are kept. A box is normalized once: corners (ymin, xmin,
ymax, xmax) by min/max of its two y and two x (center_point_box 0), or centre -/+ half the width and height with
area width * height (center_point_box 1). ONNX's output is [K, 3] int64 (batch, class, box) with K known only at
run time; edgec's is static: [max_selected * 3 | count] float32 (the indices are exact in float32), max_selected =
batches * classes * min(max_output_boxes_per_class, boxes), rows past the count 0. The twin below performs the
same float32 operations in the same order as ONNX Runtime's C++ (and the C kernel).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef

F32 = np.float32
MAX_INDEX = 1 << 24          # every index exact in float32


# ---- quantize ---------------------------------------------------------------------------------------------------
def quantize_nms(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, boxes, scores = op.attrs, ins[0], ins[1]
    op.params.update(num_batches=a["num_batches"], num_classes=a["num_classes"], num_boxes=a["num_boxes"],
                     max_per_class=a["max_per_class"], center_point_box=a["center_point_box"],
                     has_score_threshold=int(a["score_threshold"] is not None), boxes_zp=int(boxes.zero_point),
                     scores_zp=int(scores.zero_point))
    op.arrays.update(fparams=np.array([boxes.scale, scores.scale, a["iou_threshold"],
                                       0.0 if a["score_threshold"] is None else a["score_threshold"]], F32))


def max_selected(p: dict) -> int:
    return int(p["num_batches"]) * int(p["num_classes"]) * min(int(p["max_per_class"]), int(p["num_boxes"]))


# ---- NumPy twin (bit-identical with ONNX Runtime's CPU kernel and the C) ------------------------------------------
def normalized(box: np.ndarray, center_point_box: int) -> tuple[np.ndarray, F32]:
    """ONNX Runtime's BoxInfo: (ymin, xmin, ymax, xmax) and the area, in float32."""
    b = [F32(v) for v in box]
    if center_point_box == 0:
        y0, y1 = (b[2], b[0]) if b[0] >= b[2] else (b[0], b[2])
        x0, x1 = (b[3], b[1]) if b[1] >= b[3] else (b[1], b[3])
        with np.errstate(over="ignore", invalid="ignore"):
            return np.array([y0, x0, y1, x1], F32), F32(F32(y1 - y0) * F32(x1 - x0))
    with np.errstate(over="ignore", invalid="ignore"):
        hw, hh = F32(b[2] / F32(2)), F32(b[3] / F32(2))
        return np.array([b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw], F32), F32(b[2] * b[3])


def suppresses(cand: tuple[np.ndarray, F32], kept: tuple[np.ndarray, F32], iou_threshold: F32) -> bool:
    """BoxInfo::SuppressByIOU of the candidate against a kept box."""
    (c, ca), (k, ka) = cand, kept
    x0, x1 = max(c[1], k[1]), min(c[3], k[3])
    if x1 <= x0:
        return False
    y0, y1 = max(c[0], k[0]), min(c[2], k[2])
    if y1 <= y0:
        return False
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        inter = F32(F32(x1 - x0) * F32(y1 - y0))
        if inter <= 0:
            return False
        union = F32(F32(ca + ka) - inter)
        return bool(F32(inter / union) > iou_threshold)


def nms(p: dict, boxes_q, scores_q, fparams) -> np.ndarray:
    """The op's packed float32 output [max_selected * 3 (batch, class, box) | count]."""
    nb, nc, n = (int(p[k]) for k in ("num_batches", "num_classes", "num_boxes"))
    fparams = np.asarray(fparams, F32)
    boxes = (np.asarray(boxes_q, np.int8).reshape(nb, n, 4).astype(F32) - F32(p["boxes_zp"])) * fparams[0]
    scores = (np.asarray(scores_q, np.int8).reshape(nb, nc, n).astype(F32) - F32(p["scores_zp"])) * fparams[1]
    return select(p, boxes, scores, fparams[2], fparams[3] if p["has_score_threshold"] else None)


def run_float_nms(op: Op, inputs: list) -> np.ndarray:
    """The float run (edgec/quant/floatref.py): ONNX Runtime's selection from the float boxes and scores."""
    a = op.attrs
    return select(a, np.asarray(inputs[0], F32), np.asarray(inputs[1], F32), F32(a["iou_threshold"]),
                  None if a["score_threshold"] is None else F32(a["score_threshold"]))


def select(p: dict, boxes: np.ndarray, scores: np.ndarray, iou_threshold: F32, score_threshold) -> np.ndarray:
    """The packed output of the selection from float32 boxes [B, n, 4] and scores [B, C, n] (score_threshold
    None: every box is a candidate)."""
    nb, nc, n = (int(p[k]) for k in ("num_batches", "num_classes", "num_boxes"))
    boxes, scores = boxes.reshape(nb, n, 4), scores.reshape(nb, nc, n)
    cap, cpb = min(int(p["max_per_class"]), n), int(p["center_point_box"])
    rows: list[tuple[int, int, int]] = []
    for b in range(nb):
        info = [normalized(boxes[b, i], cpb) for i in range(n)]
        for c in range(nc):
            s = scores[b, c]
            cand = np.flatnonzero(s > score_threshold) if score_threshold is not None else np.arange(n)
            order = cand[np.argsort(-s[cand], kind="stable")]       # best first, equal scores by index
            kept: list[int] = []
            for i in order:
                if len(kept) >= cap:
                    break
                if not any(suppresses(info[i], info[k], iou_threshold) for k in kept):
                    kept.append(int(i))
                    rows.append((b, c, int(i)))
    out = np.zeros(3 * max_selected(p) + 1, F32)
    if rows:
        out[:3 * len(rows)] = np.array(rows, F32).reshape(-1)
    out[-1] = F32(len(rows))
    return out


def selected(packed, p: dict) -> np.ndarray:
    """The selected (batch, class, box) rows [count, 3] int64 of one packed output: ONNX's selected_indices."""
    packed = np.asarray(packed, F32).reshape(-1)
    return packed[:3 * int(packed[-1])].reshape(-1, 3).astype(np.int64)


def run_nms(op: Op, inputs: list) -> np.ndarray:
    return nms(op.params, inputs[0], inputs[1], op.arrays["fparams"])


# ---- C ----------------------------------------------------------------------------------------------------------
def c_nms(op: Op, low, site: CallSite) -> str:
    call = (f"{low.kernel.name}(&p, {site.inputs[0]}, {site.inputs[1]}, {site.arrays['fparams']}, {site.scratch},\n"
            f"        (float *)(void *)({site.output}));")
    return cemit.with_params("edgec_nms_params", op.params, call)


OPS = [OpDef("nms", "nms", quantize_nms, run_float_nms, qparams="fixed", fixed_qparams=lambda op: (1.0, 0),
             sensitivity=False)]
KERNELS = [Kernel("edgec_nms_s8", ("nms",), REFERENCE, c_nms, run=run_nms, code_bytes=1200)]


# ---- ONNX import ------------------------------------------------------------------------------------------------
def import_nms(cx, node):
    """NonMaxSuppression of two activations with constant bounds and thresholds -> one static float32 output."""
    boxes = cx.as_layout(node.input[0], (0, 1, 2), node)     # a transposed one (a Conv head's) moved once
    scores = cx.as_layout(node.input[1], (0, 1, 2), node)
    bshape, sshape = cx.shape(node.input[0], node), cx.shape(node.input[1], node)
    if len(bshape) != 3 or len(sshape) != 3 or bshape[2] != 4 or bshape[0] != sshape[0] or bshape[1] != sshape[2]:
        raise node_error(node, f"boxes {list(bshape)} and scores {list(sshape)}: NonMaxSuppression takes "
                               "[batches, boxes, 4] and [batches, classes, boxes]")

    def scalar(k, what):
        v = cx.const_input(node, k)
        if v is not None and np.asarray(v).size != 1:
            raise node_error(node, f"its {what} must be one number")
        return None if v is None else np.asarray(v).reshape(-1)[0]

    most = scalar(2, "max_output_boxes_per_class")
    most = 0 if most is None else max(int(most), 0)
    iou = F32(0.0 if scalar(3, "iou_threshold") is None else scalar(3, "iou_threshold"))
    score = scalar(4, "score_threshold")
    cpb = int(cx.attr(node, "center_point_box", 0))
    if cpb not in (0, 1) or not 0.0 <= iou <= 1.0:
        raise node_error(node, f"center_point_box {cpb} (0 or 1) or iou_threshold {iou} (0..1) out of range, as "
                               "ONNX Runtime refuses them")
    if most == 0:
        raise node_error(node, "max_output_boxes_per_class is 0 or absent: it selects no box; give the maximum")
    nb, n, nc = int(bshape[0]), int(bshape[1]), int(sshape[1])
    if nb * nc * min(most, n) * 3 >= MAX_INDEX or n >= MAX_INDEX:
        raise node_error(node, f"{nb} batches x {nc} classes x {min(most, n)} boxes: too many to hold exactly")
    y = node.output[0]
    p = dict(num_batches=nb, num_classes=nc, num_boxes=n, max_per_class=min(most, n))
    size = 3 * max_selected(p) + 1
    out = cx.new_tensor(y, (1, size), y)
    cx.graph.tensors[out] = dataclasses.replace(cx.graph.tensors[out], dtype="float32", scale=1.0, zero_point=0)
    cx.emit("nms", node, [boxes, scores], out, **p, center_point_box=cpb, iou_threshold=iou,
            score_threshold=None if score is None else F32(score))
    cx.values[y] = (out, (0, 1))
    cx.shapes[y] = (1, size)        # edgec's static output: [selected (batch, class, box) ... | count]


ONNX = {"NonMaxSuppression": import_nms}


# ---- a detector's outputs (edgec bench reads them as boxes) -------------------------------------------------------
def output_selection(graph) -> Op | None:
    """The NonMaxSuppression whose selection is a model output beside the boxes and scores it selects from (both
    model outputs too): a detector whose outputs edgec bench reads as boxes; else None."""
    op = next((o for o in graph.ops if o.kind == "nms" and o.output in graph.outputs), None)
    if op is None or any(t not in graph.outputs for t in op.inputs[:2]) or int(op.params["num_batches"]) != 1:
        return None
    return op


def detections_of(p: dict, boxes, scores, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One image's selected boxes as (ymin, xmin, ymax, xmax) [k, 4], their classes [k] and scores [k]: boxes
    [1, n, 4] and scores [1, C, n] (floats), rows the selection [k, 3] (batch, class, box) as ONNX gives it."""
    rows = np.asarray(rows, np.int64).reshape(-1, 3)
    boxes = np.asarray(boxes, F32).reshape(-1, int(p["num_boxes"]), 4)
    scores = np.asarray(scores, F32).reshape(boxes.shape[0], -1, int(p["num_boxes"]))
    corners = [normalized(boxes[b, i], int(p["center_point_box"]))[0] for b, _, i in rows]
    return (np.array(corners, F32).reshape(-1, 4), rows[:, 1], scores[rows[:, 0], rows[:, 1], rows[:, 2]])


def output_op(graph) -> Op | None:
    """The NonMaxSuppression computing the model's one output (its packed selection), else None."""
    op = next((o for o in graph.ops if o.output == graph.output), None)
    return op if op is not None and op.kind == "nms" and not graph.more_outputs else None
