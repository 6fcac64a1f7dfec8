"""Detection metrics: mean average precision against ground-truth boxes, and the agreement of two detectors'
boxes (the device's against the INT8 reference's or the float model's) where there is no ground truth.

Boxes are (ymin, xmin, ymax, xmax), as TFLite's detection post-processing writes them; one image's detections
are a `Detections` (boxes [K, 4], classes [K], scores [K]; ground truth has no scores).

mAP follows pycocotools' COCOeval for one area range and no detection limit beyond the detector's own: per class,
the detections of all images sorted by score (stable: equal scores keep image order, then their order within the
image), each matched greedily to the unmatched ground-truth box of its class with the highest IoU >= the
threshold; AP is the area under the precision envelope at every recall step (all-point interpolation, as
PASCAL VOC 2010+; COCOeval samples the envelope at 101 recall points instead, which can differ by a fraction of
a point). Classes without ground truth are left out of the mean (COCOeval: -1); a class with ground truth and no
detection has AP 0. mAP@0.5:0.95 is the mean over the IoU thresholds 0.50, 0.55, ..., 0.95.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IOU_THRESHOLDS = np.round(np.arange(0.5, 0.951, 0.05), 2)      # 0.5, 0.55, ..., 0.95


@dataclass(frozen=True)
class Detections:
    """One image's boxes [K, 4] (ymin, xmin, ymax, xmax), their classes [K] and scores [K] (None: ground truth)."""

    boxes: np.ndarray
    classes: np.ndarray
    scores: np.ndarray | None = None

    @staticmethod
    def of(boxes, classes, scores=None) -> "Detections":
        b = np.asarray(boxes, np.float64).reshape(-1, 4)
        return Detections(b, np.asarray(classes, np.int64).reshape(-1),
                          None if scores is None else np.asarray(scores, np.float64).reshape(-1))

    def __len__(self) -> int:
        return len(self.boxes)

    def of_class(self, c: int) -> "Detections":
        keep = self.classes == c
        return Detections(self.boxes[keep], self.classes[keep], None if self.scores is None else self.scores[keep])


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of a [K, 4] with every box of b [L, 4] -> [K, L]; 0 where the union is empty."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    dy = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    dx = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(dy, 0, None) * np.clip(dx, 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def match_image(det: Detections, truth: Detections, threshold: float) -> np.ndarray:
    """Whether each detection (one class, in decreasing score order) is a true positive: COCOeval's greedy
    matching to the unmatched ground-truth box with the highest IoU >= threshold."""
    ious = iou_matrix(det.boxes, truth.boxes)
    taken = np.zeros(len(truth), bool)
    tp = np.zeros(len(det), bool)
    for d in range(len(det)):
        candidates = np.where(taken, -1.0, ious[d]) if len(truth) else np.zeros(0)
        if candidates.size and candidates.max() >= threshold:
            g = int(np.argmax(candidates))
            taken[g] = tp[d] = True
    return tp


def average_precision(tp: np.ndarray, truths: int) -> float:
    """All-point interpolated AP of detections sorted by decreasing score (tp: whether each is a true positive)
    against `truths` ground-truth boxes."""
    if truths == 0:
        raise ValueError("average precision of a class without ground truth is undefined")
    tp = np.asarray(tp, bool)
    if tp.size == 0:
        return 0.0
    hits = np.cumsum(tp)
    recall = hits / truths
    precision = hits / np.arange(1, tp.size + 1)
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    steps = np.diff(np.concatenate([[0.0], recall]))
    return float(np.sum(steps * envelope))


def _class_ap(dets: list[Detections], truths: list[Detections], c: int, threshold: float) -> float:
    scores, flags = [], []
    for det, truth in zip(dets, truths):
        d = det.of_class(c)
        order = np.argsort(-d.scores, kind="stable")
        d = Detections(d.boxes[order], d.classes[order], d.scores[order])
        scores.append(d.scores)
        flags.append(match_image(d, truth.of_class(c), threshold))
    s, f = np.concatenate(scores), np.concatenate(flags)
    return average_precision(f[np.argsort(-s, kind="stable")], sum(int(np.sum(t.classes == c)) for t in truths))


def mean_average_precision(dets: list[Detections], truths: list[Detections]) -> dict:
    """{"map50", "map50_95", "classes": classes with ground truth, "ap50_per_class": {class: AP@0.5}} of the
    detections of every image against its ground truth; the mAPs are None where no image has a ground-truth
    box."""
    if len(dets) != len(truths):
        raise ValueError(f"{len(dets)} images of detections for {len(truths)} of ground truth")
    classes = sorted({int(c) for t in truths for c in t.classes})
    if not classes:
        return {"map50": None, "map50_95": None, "classes": 0, "ap50_per_class": {}}
    ap = np.array([[_class_ap(dets, truths, c, t) for c in classes] for t in IOU_THRESHOLDS])
    return {"map50": float(ap[0].mean()), "map50_95": float(ap.mean()), "classes": len(classes),
            "ap50_per_class": {str(c): float(v) for c, v in zip(classes, ap[0])}}


def match_pairs(a: Detections, b: Detections, min_iou: float) -> list[tuple[int, int, float]]:
    """Pairs (i of a, j of b, IoU) of the same class, greedily by decreasing IoU (ties: lower i, then lower j),
    each box in at most one pair, IoU >= min_iou."""
    ious = iou_matrix(a.boxes, b.boxes)
    ious = np.where(a.classes[:, None] == b.classes[None, :], ious, -1.0)
    i, j = np.nonzero(ious >= min_iou)
    order = np.lexsort((j, i, -ious[i, j]))
    used_a, used_b, pairs = set(), set(), []
    for k in order:
        if i[k] not in used_a and j[k] not in used_b:
            used_a.add(i[k])
            used_b.add(j[k])
            pairs.append((int(i[k]), int(j[k]), float(ious[i[k], j[k]])))
    return pairs


def agreement(base: list[Detections], other: list[Detections], min_iou: float = 0.5) -> dict:
    """How far `other`'s boxes (the device's) agree with `base`'s (the reference's or the float model's), image
    by image: boxes matched (same class, IoU >= min_iou), missed (in base only), extra (in other only), the IoU
    distribution of the matched ones, how many of them are identical and how far their scores differ."""
    ious, score_diff = [], []
    matched = missed = extra = identical = same_images = 0
    for a, b in zip(base, other):
        pairs = match_pairs(a, b, min_iou)
        matched += len(pairs)
        missed += len(a) - len(pairs)
        extra += len(b) - len(pairs)
        same_images += len(pairs) == len(a) == len(b)
        for i, j, iou in pairs:
            ious.append(iou)
            identical += bool(np.array_equal(a.boxes[i], b.boxes[j]))
            if a.scores is not None and b.scores is not None:
                score_diff.append(abs(a.scores[i] - b.scores[j]))
    v = np.array(ious)
    dist = ({"min": float(v.min()), "p10": float(np.percentile(v, 10)), "median": float(np.median(v)),
             "mean": float(v.mean())} if v.size else None)
    return {"min_iou": min_iou, "boxes_base": int(sum(len(a) for a in base)),
            "boxes_other": int(sum(len(b) for b in other)), "matched": matched, "missed": missed, "extra": extra,
            "identical_boxes": identical, "images_all_matched": int(same_images), "images": len(base),
            "iou": dist, "max_abs_score_diff": float(max(score_diff)) if score_diff else None}
