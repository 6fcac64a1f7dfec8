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
def _exp(v: float) -> float:
    """The C library's exp (infinity past the double range, as C's)."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def decode(p: dict, boxes_q, anchors, fparams) -> np.ndarray:
    """TFLM's DecodeCenterSizeBoxes of the dequantized encodings: [num_boxes, 4] float32 (ymin, xmin, ymax,
    xmax); InvalidBoxes where one is empty."""
    n = int(p["num_boxes"])
    e = np.asarray(boxes_q, np.int8).reshape(n, int(p["box_stride"]))[:, :4].astype(np.int32) - int(p["box_zp"])
    e = e.astype(F32) * F32(fparams[0])                       # DEQUANTIZE: the float product, rounded once
    a = np.asarray(anchors, F32).reshape(n, 4).astype(np.float64)
    sy, sx, sh, sw = (float(v) for v in fparams[4:8])
    ed = e.astype(np.float64)
    with np.errstate(over="ignore"):
        yc = (ed[:, 0] / sy * a[:, 2] + a[:, 0]).astype(F32)
        xc = (ed[:, 1] / sx * a[:, 3] + a[:, 1]).astype(F32)
    eh = np.array([_exp(v) for v in ed[:, 2] / sh])
    ew = np.array([_exp(v) for v in ed[:, 3] / sw])
    with np.errstate(over="ignore", invalid="ignore"):
        hh = (0.5 * eh * a[:, 2]).astype(F32)
        hw = (0.5 * ew * a[:, 3]).astype(F32)
    out = np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=1).astype(F32)
    if np.any(out[:, 0] >= out[:, 2]) or np.any(out[:, 1] >= out[:, 3]):
        raise InvalidBoxes("a decoded box is empty (ymin >= ymax or xmin >= xmax)")
    return out


def _iou(boxes: np.ndarray, i: int, js: np.ndarray) -> np.ndarray:
    """ComputeIntersectionOverUnion(i, j) for every j of js, in float32 as TFLM."""
    a, b = boxes[i], boxes[js]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):     # IEEE infinities, as in C
        area_a = F32(a[2] - a[0]) * F32(a[3] - a[1])
        area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        dy = np.maximum(np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0]), F32(0))
        dx = np.maximum(np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1]), F32(0))
        inter = dy * dx
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


def c_detections(graph, pointer) -> dict | None:
    """What the generated C declares for a model output computed by this op (`NAME_detections`: the detections
    as structs): its name, max_detections and pointer(tensor), the C expression of its place; None: no such
    output."""
    for op in graph.ops:
        if op.kind == "detection_postprocess" and op.output in graph.outputs:
            return {"name": graph.port_names.get(op.output, op.output), "max": int(op.attrs["max_detections"]),
                    "pointer": pointer(op.output)}
    return None


def output_detections(graph) -> int | None:
    """max_detections of the model's one output when this op computes it (its packed float32 detections, which
    edgec bench reads as boxes), else None."""
    if graph.more_outputs:
        return None
    op = next((o for o in graph.ops if o.output == graph.output), None)
    return int(op.params["max_detections"]) if op is not None and op.kind == "detection_postprocess" else None


def unpack(packed, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One sample's packed output [4D boxes | D classes | D scores | count] -> (boxes [n, 4] (ymin, xmin, ymax,
    xmax), classes [n], scores [n]) of its n detections (the count, clipped to 0..D)."""
    packed = np.asarray(packed, F32).reshape(-1)
    count = packed[6 * d]
    n = int(min(max(count, 0), d)) if np.isfinite(count) else 0
    return packed[:4 * n].reshape(n, 4), packed[4 * d:4 * d + n], packed[5 * d:5 * d + n]


def defined(packed, d: int) -> np.ndarray:
    """The packed outputs [N, 6D+1] with the rows past each sample's count zeroed, as edgec writes them: TFLM's
    fast NMS leaves them as its arena held them (undefined), so only the defined part is compared."""
    out = np.array(packed, F32).reshape(len(packed), -1)
    for row in out:
        count = row[6 * d]
        n = int(min(max(count, 0), d)) if np.isfinite(count) else 0
        for start in (4 * n, 4 * d + n, 5 * d + n):
            row[start:start + (4 * (d - n) if start == 4 * n else d - n)] = 0
    return out


OPS = [OpDef("detection_postprocess", "detection", quantize_detection, None, qparams="fixed",
             fixed_qparams=lambda op: (1.0, 0), sensitivity=False)]
KERNELS = [Kernel("edgec_detection_postprocess_s8", ("detection_postprocess",), REFERENCE, c_detection,
                  run=run_detection, code_bytes=2500)]
ONNX: dict = {}


# ---- TFLite import -------------------------------------------------------------------------------------------
def _producer(tx, index: int):
    """The operator of the file computing tensor `index` (None: an input or a constant)."""
    sg = tx.sg
    return next((sg.Operators(i) for i in range(sg.OperatorsLength()) if index in sg.Operators(i).OutputsAsNumpy()),
                None)


def import_tflite_dequantize(tx, op):
    """DEQUANTIZE of an int8 activation or constant into TFLite_Detection_PostProcess, the one float operator
    edgec runs: folded into it (its float output stands for the int8 tensor); any other is refused."""
    readers = [tx.op_name(tx.sg.Operators(i)) for i in range(tx.sg.OperatorsLength())
               if op.Outputs(0) in tx.sg.Operators(i).InputsAsNumpy()]
    if not readers or any(r != f"CUSTOM {CUSTOM_CODE}" for r in readers):
        raise tx.unsupported(f"a float tensor inside the model (edgec runs int8 activations; only {CUSTOM_CODE} "
                             "reads dequantized ones)")
    if tx.sg.Tensors(op.Inputs(0)).Type() != 9:
        raise tx.unsupported("DEQUANTIZE of a tensor that is not int8")
    if op.Inputs(0) in tx.values:                      # an activation (a constant: read by the importer below)
        tx.values[op.Outputs(0)] = tx.values[op.Inputs(0)]


def _int8_input(tx, op, k: int, what: str) -> str:
    """The int8 tensor a DEQUANTIZE turned into input k of the operator."""
    prod = _producer(tx, op.Inputs(k))
    if prod is None or tx.op_name(prod) != "DEQUANTIZE" or op.Inputs(k) not in tx.values:
        raise tx.unsupported(f"its {what} must be int8 activations dequantized by a DEQUANTIZE (edgec runs int8)")
    return tx.values[op.Inputs(k)]


def _anchors(tx, op) -> np.ndarray:
    """The anchors: a float32 constant, or an int8 constant and its DEQUANTIZE (computed here as TFLM does)."""
    try:
        a = tx.const(op, 2)
    except type(tx.unsupported("")):        # computed: by a DEQUANTIZE of a constant?
        prod = _producer(tx, op.Inputs(2))
        if prod is None or tx.op_name(prod) != "DEQUANTIZE":
            raise tx.unsupported("its anchors must be a constant (float32, or int8 and its DEQUANTIZE)") from None
        q = tx.const(prod, 0)
        scales, zps, _ = tx.qparams(prod.Inputs(0))
        if scales.size != 1:
            raise tx.unsupported("anchors quantized per channel") from None
        return (q.astype(np.int32) - int(zps[0])).astype(F32) * F32(scales[0])
    if a is None or a.dtype != F32:
        raise tx.unsupported("its anchors must be a float32 constant (or an int8 one and its DEQUANTIZE)")
    return a


def import_tflite_detection(tx, op):
    from flatbuffers import flexbuffers

    try:
        o = flexbuffers.Loads(op.CustomOptionsAsNumpy().tobytes())
    except Exception as exc:
        raise tx.unsupported(f"its options are not a flexbuffer map ({type(exc).__name__})") from None
    need = ("max_detections", "max_classes_per_detection", "nms_score_threshold", "nms_iou_threshold",
            "num_classes", "y_scale", "x_scale", "h_scale", "w_scale")
    missing = [k for k in need if k not in o]
    if missing:
        raise tx.unsupported(f"its options lack {', '.join(missing)}")
    if op.InputsLength() != 3 or op.OutputsLength() != 4:
        raise tx.unsupported("it takes box encodings, class scores and anchors and gives four outputs")
    boxes, scores = _int8_input(tx, op, 0, "box encodings"), _int8_input(tx, op, 1, "class scores")
    bshape, sshape = tx.shape(op.Inputs(0)), tx.shape(op.Inputs(1))
    anchors = _anchors(tx, op)
    nc, d = int(o["num_classes"]), int(o["max_detections"])
    regular = bool(o.get("use_regular_nms", False))
    per_class = int(o.get("detections_per_class", DETECTIONS_PER_CLASS))
    if len(bshape) != 3 or len(sshape) != 3 or bshape[0] != 1 or sshape[:2] != bshape[:2] or bshape[2] < 4:
        raise tx.unsupported(f"box encodings {list(bshape)} and class scores {list(sshape)}: TFLM takes [1, boxes, "
                             ">=4] and [1, boxes, classes]")
    n = int(bshape[1])
    if anchors.size != 4 * n:
        raise tx.unsupported(f"{anchors.size // 4} anchors for {n} boxes")
    if sshape[2] - nc not in (0, 1):
        raise tx.unsupported(f"{sshape[2]} class scores a box for {nc} classes (TFLM: the classes and at most one "
                             "background class)")
    iou = float(F32(o["nms_iou_threshold"]))
    if not 0.0 < iou <= 1.0 or d < 1 or nc < 1 or (regular and per_class <= 0):
        raise tx.unsupported(f"nms_iou_threshold {iou} outside (0, 1], or max_detections {d}, num_classes {nc} or "
                             f"detections_per_class {per_class} below 1 (TFLM refuses or misreads them too)")
    if not regular and int(o["max_classes_per_detection"]) != 1:
        raise tx.unsupported("fast NMS with max_classes_per_detection other than 1 (TFLM writes those outside "
                             "its outputs)")
    shapes = [tx.shape(op.Outputs(k)) for k in range(4)]
    if [int(np.prod(s, dtype=np.int64)) for s in shapes] != [4 * d, d, d, 1]:
        raise tx.unsupported(f"outputs {[list(s) for s in shapes]}: TFLM writes [1, {d}, 4], [1, {d}], [1, {d}], "
                             "[1] for max_detections " + str(d))
    out = tx.packed_outputs(op, 6 * d + 1, "float32")
    tx.emit("detection_postprocess", op, [boxes, scores], out, num_boxes=n, box_stride=int(bshape[2]),
            num_classes=nc, score_stride=int(sshape[2]), max_detections=d,
            max_classes_per_detection=int(o["max_classes_per_detection"]), detections_per_class=per_class,
            regular_nms=regular, score_threshold=F32(o["nms_score_threshold"]), iou_threshold=F32(iou),
            scales=[F32(o[k]) for k in ("y_scale", "x_scale", "h_scale", "w_scale")], anchors=anchors)


TFLITE = {"DEQUANTIZE": import_tflite_dequantize, f"CUSTOM {CUSTOM_CODE}": import_tflite_detection}
