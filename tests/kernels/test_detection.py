"""TFLite_Detection_PostProcess (edgec/ops/detection.py, runtime_c/edgec_detection.c) against TFLite Micro's own
kernel: random single-operator .tflite files (two int8 inputs, their DEQUANTIZE, the custom operator with its
flexbuffer options; tests/tflite_oracle.py writes them) run by TFLM's Python interpreter, by the NumPy twin and by
the C kernel, compared bit for bit: random cases, ties in the scores, every box overlapping every other, no box
over the score threshold, max_detections reached, fast and regular NMS."""
from __future__ import annotations

import ctypes
import importlib.util
import os

import numpy as np
import pytest
from flatbuffers import flexbuffers

from ckernels import make, ptr
from edgec import cheader
from edgec.ops import detection

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

F32 = 0
MODES = ("random", "ties", "overlap", "none", "max")


def detection_case(rng, mode: str, regular: bool):
    """(model fields, params, int8 boxes, int8 scores, anchors, fparams, options) of one random case."""
    from tflite_oracle import Case, Node, T

    nb = int(rng.integers(1, 40)) if mode != "max" else int(rng.integers(20, 60))
    nc = int(rng.integers(1, 7))
    cb = nc + int(rng.integers(0, 2))
    bs = 4 if rng.random() < 0.8 else int(rng.integers(5, 9))
    d = int(rng.integers(1, 12)) if mode != "max" else int(rng.integers(1, 6))
    per_class = None if rng.random() < 0.3 else int(rng.integers(1, 8))
    box_scale, box_zp = float(np.float32(10 ** rng.uniform(-2, -0.5))), int(rng.integers(-128, 128))
    if rng.random() < 0.5:
        score_scale, score_zp = 1 / 256, -128                 # a LOGISTIC's output
    else:
        score_scale, score_zp = float(np.float32(10 ** rng.uniform(-3, -1))), int(rng.integers(-128, 128))
    anchors = np.stack([rng.uniform(0, 1, nb), rng.uniform(0, 1, nb), rng.uniform(0.02, 0.6, nb),
                        rng.uniform(0.02, 0.6, nb)], 1).astype(np.float32)
    if mode == "max":                                   # a grid of small anchors: little overlap, many kept
        anchors[:, 2:] = np.float32(0.01)
        anchors[:, 0] = np.float32(np.arange(nb) / nb)
    boxes = rng.integers(-128, 128, (1, nb, bs)).astype(np.int8)
    scores = rng.integers(-128, 128, (1, nb, cb)).astype(np.int8)
    threshold = float(rng.uniform(0.0, 0.8)) * float((127 - score_zp) * score_scale)
    if mode == "ties":
        scores = rng.choice(rng.integers(-128, 128, 3), (1, nb, cb)).astype(np.int8)
    elif mode == "overlap":                             # one anchor, one encoding: every box the same
        anchors[:] = anchors[0]
        boxes[:] = boxes[0, 0]
    elif mode == "none":
        threshold = float((127 - score_zp) * score_scale) * 1.01 + 1e-3
    elif mode == "max":
        threshold = float((-128 - score_zp) * score_scale) - 1e-3
    options = dict(max_detections=d, max_classes_per_detection=1, nms_score_threshold=threshold,
                   nms_iou_threshold=float(rng.uniform(0.05, 1.0)), num_classes=nc,
                   y_scale=float(rng.choice([10.0, 1.0, 7.5])), x_scale=float(rng.choice([10.0, 1.0, 3.0])),
                   h_scale=float(rng.choice([5.0, 1.0, 2.5])), w_scale=float(rng.choice([5.0, 1.0, 4.0])),
                   use_regular_nms=regular)
    if per_class is not None:
        options["detections_per_class"] = per_class
    tensors = [T((1, nb, bs), [box_scale], [box_zp]), T((1, nb, cb), [score_scale], [score_zp]),
               T((1, nb, bs), [], [], F32), T((1, nb, cb), [], [], F32), T((nb, 4), [], [], F32, anchors),
               T((1, d, 4), [], [], F32), T((1, d), [], [], F32), T((1, d), [], [], F32), T((1,), [], [], F32)]
    nodes = [Node("DEQUANTIZE", [0], 2), Node("DEQUANTIZE", [1], 3),
             Node(f"CUSTOM:{detection.CUSTOM_CODE}", [2, 3, 4], [5, 6, 7, 8], custom=flexbuffers.Dumps(options))]
    case = Case(f"det_{mode}_{'regular' if regular else 'fast'}", tensors, nodes, [0, 1], [5, 6, 7, 8])
    p = dict(num_boxes=nb, box_stride=bs, num_classes=nc, score_stride=cb, max_detections=d,
             max_classes_per_detection=1, detections_per_class=per_class or detection.DETECTIONS_PER_CLASS,
             regular_nms=int(regular), box_zp=box_zp, score_zp=score_zp)
    f = lambda v: np.float32(v)                                              # noqa: E731 (flexbuffers: doubles)
    fparams = np.array([box_scale, score_scale, f(threshold), f(options["nms_iou_threshold"]), options["y_scale"],
                        options["x_scale"], options["h_scale"], options["w_scale"]], np.float32)
    return case, p, boxes, scores, anchors, fparams


def tflm_run(case, boxes, scores) -> np.ndarray | None:
    """TFLM's four outputs packed; None where its Invoke fails (an empty decoded box)."""
    from tflite_oracle import tflm, write

    try:
        return tflm(write(case), [boxes[None], scores[None]])[0].astype(np.float32)
    except RuntimeError:
        return None


def c_run(ck, p, boxes, scores, anchors, fparams) -> tuple[int, np.ndarray]:
    scratch = np.zeros(cheader.buffer_size("edgec_detection_postprocess_s8", p) + 16, np.uint8)
    out = np.full(6 * p["max_detections"] + 1, np.nan, np.float32)
    status = ck.lib.edgec_detection_postprocess_s8(ctypes.byref(make("edgec_detection_postprocess_params", p)),
                                                   ptr(boxes), ptr(scores), ptr(anchors), ptr(fparams),
                                                   ptr(scratch), ptr(out))
    return status, out


def comparable(out: np.ndarray, d: int, regular: bool) -> np.ndarray:
    """What TFLM defines: every output in regular NMS; in fast NMS the rows up to the count (TFLM leaves the
    others as the arena held them)."""
    if regular:
        return out
    n = int(out[6 * d])
    return np.concatenate([out[:4 * n], out[4 * d:4 * d + n], out[5 * d:5 * d + n], out[6 * d:]])


@pytest.mark.parametrize("regular", [False, True], ids=["fast_nms", "regular_nms"])
@pytest.mark.parametrize("mode", MODES)
def test_twin_and_c_match_tflm(ck, mode, regular):
    rng = np.random.default_rng(MODES.index(mode) * 2 + regular)
    compared = counts = 0
    for _ in range(40):
        case, p, boxes, scores, anchors, fparams = detection_case(rng, mode, regular)
        want = tflm_run(case, boxes, scores)
        status, got_c = c_run(ck, p, boxes, scores, anchors, fparams)
        if want is None:                     # TFLM refuses an empty decoded box: so do the twin and the C
            with pytest.raises(detection.InvalidBoxes):
                detection.detection_postprocess(p, boxes, scores, anchors, fparams)
            assert status == -1
            continue
        got = detection.detection_postprocess(p, boxes, scores, anchors, fparams)
        d = p["max_detections"]
        assert status == 0
        np.testing.assert_array_equal(got_c.view(np.uint32), got.view(np.uint32))     # C == twin, every bit
        np.testing.assert_array_equal(comparable(got, d, regular).view(np.uint32),
                                      comparable(want, d, regular).view(np.uint32))
        compared += 1
        counts += int(got[6 * d])
    assert compared >= 30
    if mode == "none":
        assert counts == 0
    else:
        assert counts > 0
