"""The bench of a detection model: its one output is TFLite_Detection_PostProcess's packed float32 detections
(edgec/ops/detection.py: [4D boxes | D classes | D scores | count]), or its outputs are ONNX NonMaxSuppression's
selection beside the int8 boxes and scores it selects from (edgec/ops/nms.py: the selected boxes with their
class and score).  The device's outputs are compared with the INT8 reference bit for bit as every model's are
(an NMS detector's as the bytes its link sends); on top of that, with ground-truth boxes in the data file, the
mAP@0.5 and mAP@0.5:0.95 of the float model (for a .tflite: TFLite Micro's interpreter), the reference and the
device (edgec/bench/detection_metrics.py); without them, how far the device's boxes agree with the reference's and
the float model's.

Ground truth in the data file (docs/benchmarking.md#detection-models), beside `x`:

    boxes      float  [N, M, 4]  (ymin, xmin, ymax, xmax), in the model's output coordinates (SSD: 0..1)
    labels     int    [N, M]     class numbers as the model outputs them (TFLite's: without the background)
    box_count  int    [N]        how many of the M rows of each image are boxes (the rest is padding)
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from edgec import ports, svgplot
from edgec.bench.detection_metrics import Detections, agreement, mean_average_precision
from edgec.data import DEFAULT_MEMORY_LIMIT, read_array
from edgec.errors import EdgecError
from edgec.ir import Graph, Op
from edgec.ops import detection, nms

TRUTH_KEYS = ("boxes", "labels", "box_count")


def of_outputs(packed: np.ndarray, d: int) -> list[Detections]:
    """Every sample's detections from the packed outputs [N, 6D+1]."""
    return [Detections.of(*detection.unpack(row, d)) for row in np.asarray(packed, np.float32)]


def nms_bytes(graph: Graph, op: Op, raw: np.ndarray) -> list[Detections]:
    """Every sample's detections from an NMS detector's output bytes [N, bytes] (ports.output_bytes): the selected
    boxes and scores dequantized in float32, as the NMS kernel reads them."""
    parts = ports.output_parts(graph, raw)

    def real(t: str) -> np.ndarray:
        q = graph.tensors[t]
        return (parts[t].astype(np.float32) - np.float32(q.zero_point)) * np.float32(q.scale)
    boxes, scores, sel = real(op.inputs[0]), real(op.inputs[1]), parts[op.output]
    return [Detections.of(*nms.detections_of(op.params, boxes[i], scores[i], nms.selected(sel[i], op.params)))
            for i in range(len(sel))]


def nms_float(graph: Graph, op: Op, outs: list[dict[str, np.ndarray]]) -> list[Detections]:
    """Every sample's detections from the float model's outputs as onnxruntime gives them
    (calibrate.run_float_each: {output name: array}, the selection [K, 3] int64)."""
    b, s, k = (graph.port_names.get(t, t) for t in (op.inputs[0], op.inputs[1], op.output))
    return [Detections.of(*nms.detections_of(op.params, o[b], o[s], o[k])) for o in outs]


def load_truth(path: str | Path, n: int, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list[Detections] | None:
    """The ground truth of the first n samples of the data file, or None when it has none; an error naming the
    key when it is malformed.  Only the first n rows are read, each array's size checked against the memory
    limit from its header first (a small compressed file can unpack to gigabytes)."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            files = {name[:-4] for name in z.namelist() if name.endswith(".npy")}
            present = [k for k in TRUTH_KEYS if k in files]
            if not present:
                return None
            if len(present) != len(TRUTH_KEYS):
                missing = ", ".join(k for k in TRUTH_KEYS if k not in present)
                raise EdgecError(f"{path}: ground-truth boxes need {', '.join(TRUTH_KEYS)}; {missing} missing "
                                 "(docs/benchmarking.md#detection-models)")
            boxes, labels, count = (read_array(z, path, k, n, memory_limit=memory_limit)[0] for k in TRUTH_KEYS)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise EdgecError(f"{path}: cannot read the ground-truth boxes ({type(exc).__name__}: {exc})") from None
    m = boxes.shape[1] if boxes.ndim == 3 else -1
    if boxes.ndim != 3 or boxes.shape[2] != 4 or len(boxes) < n or not np.issubdtype(boxes.dtype, np.number):
        raise EdgecError(f"{path}: boxes must be numbers shaped [N, M, 4] for {n} samples, got {boxes.dtype} "
                         f"{list(boxes.shape)}")
    if labels.shape != boxes.shape[:2] or not np.issubdtype(labels.dtype, np.integer):
        raise EdgecError(f"{path}: labels must be integers shaped {list(boxes.shape[:2])} (one per box), got "
                         f"{labels.dtype} {list(labels.shape)}")
    if count.shape != (len(boxes),) or not np.issubdtype(count.dtype, np.integer) or np.any((count < 0) | (count > m)):
        raise EdgecError(f"{path}: box_count must be integers 0..{m} shaped [{len(boxes)}], got {count.dtype} "
                         f"{list(count.shape)}")
    if not np.all(np.isfinite(boxes)):
        raise EdgecError(f"{path}: boxes contain NaN or Inf values")
    return [Detections.of(boxes[i, :count[i]], labels[i, :count[i]]) for i in range(n)]


def _counts(dets: list[Detections]) -> dict:
    c = np.array([len(d) for d in dets])
    return {"total": int(c.sum()), "mean": float(c.mean()) if c.size else 0.0, "max": int(c.max()) if c.size else 0}


def quality(d: int, truth: list[Detections] | None, float_dets: list[Detections] | None,
            ref_dets: list[Detections], dev_dets: list[Detections], float_name: str, x: np.ndarray | None = None) -> dict:
    """The bench report's quality part of a detection model (task "detection"); x: the test inputs, for the
    report's picture of one image with its boxes."""
    outs = {"float": float_dets, "int8_reference": ref_dets, "device": dev_dets}
    q: dict = {"task": "detection", "detection": {
        "max_detections": d, "float_model": float_name if float_dets is not None else None,
        "detections": {k: None if v is None else _counts(v) for k, v in outs.items()},
        "ground_truth": None if truth is None else _counts(truth)}}
    det = q["detection"]
    if truth is not None:
        det["map"] = {k: None if v is None else mean_average_precision(v, truth) for k, v in outs.items()}
    if x is not None:
        det["example"] = example(x, outs, truth)
    det["agreement"] = {"device_vs_reference": agreement(outs["int8_reference"], outs["device"])}
    if outs["float"] is not None:
        det["agreement"]["device_vs_float"] = agreement(outs["float"], outs["device"])
        det["agreement"]["int8_vs_float"] = agreement(outs["float"], outs["int8_reference"])
    return q


def example(x: np.ndarray, outs: dict, truth: list[Detections] | None) -> dict | None:
    """One image for the report: of the first 50 samples, the first with the most device boxes, as a PNG data: URI
    with its height and width, and every detector's boxes (and the ground truth's); None when the input is no
    image."""
    img = image_of(np.asarray(x[0]))
    if img is None:
        return None
    i = max(range(min(len(outs["device"]), 50)), key=lambda k: len(outs["device"][k]), default=0)
    img = image_of(np.asarray(x[i]))

    def boxes(d: Detections) -> list:
        return [{"box": [round(float(v), 4) for v in b], "class": int(c),
                 **({"score": round(float(s), 4)} if d.scores is not None else {})}
                for b, c, s in zip(d.boxes, d.classes, d.scores if d.scores is not None else [None] * len(d))]
    return {"sample": i, "image": svgplot.png_data_uri(img.tolist()), "height": img.shape[0], "width": img.shape[1],
            "boxes": {k: boxes(v[i]) for k, v in outs.items() if v is not None},
            **({"ground_truth": boxes(truth[i])} if truth is not None else {})}


def image_of(a: np.ndarray) -> np.ndarray | None:
    """An input as an image [H, W] or [H, W, 3] of uint8 (its own range stretched to 0..255): one or three
    channels first or last; None for other shapes."""
    a = np.squeeze(a)
    if a.ndim == 3 and a.shape[0] in (1, 3) and a.shape[-1] not in (1, 3):
        a = np.moveaxis(a, 0, -1)
    a = np.squeeze(a)
    if not (a.ndim == 2 or (a.ndim == 3 and a.shape[-1] == 3)) or min(a.shape[:2]) < 4 or max(a.shape[:2]) > 1024:
        return None
    lo, hi = float(np.min(a)), float(np.max(a))
    return np.round((a - lo) / (hi - lo if hi > lo else 1.0) * 255).astype(np.uint8)


def lines(q: dict) -> list[str]:
    """The text summary's lines of a detection model's quality."""
    det, out = q["detection"], []
    if det.get("map"):
        m = det["map"]

        def pct(r, key):
            return "n/a" if r is None or r[key] is None else f"{100 * r[key]:.2f}"
        out.append(f"mAP@0.5: float {pct(m['float'], 'map50')}, int8 reference {pct(m['int8_reference'], 'map50')}, "
                   f"device {pct(m['device'], 'map50')}; mAP@0.5:0.95: float {pct(m['float'], 'map50_95')}, int8 "
                   f"reference {pct(m['int8_reference'], 'map50_95')}, device {pct(m['device'], 'map50_95')} "
                   f"({det['ground_truth']['total']} ground-truth boxes)")
    for name, a in det["agreement"].items():
        iou = a["iou"]
        spread = f", IoU min {iou['min']:.3f} median {iou['median']:.3f}" if iou else ""
        out.append(f"boxes {name.replace('_', ' ')}: {a['matched']} matched (IoU >= {a['min_iou']}), {a['missed']} "
                   f"missed, {a['extra']} extra, {a['identical_boxes']} identical{spread}")
    return out
