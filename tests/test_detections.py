"""edgec/bench/detections.py: the bench of a detection model (TFLite_Detection_PostProcess's packed float32
output) on the host firmware: device boxes bit-exact with the reference and TFLite Micro, mAP of the float model
(TFLM), reference and device against ground truth in the data file, box agreement without it, the report's
lines and the ground-truth format's errors."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from flatbuffers import flexbuffers

from edgec import api
from edgec.bench import detections, report
from edgec.bench.detection_metrics import mean_average_precision
from edgec.errors import EdgecError
from edgec.ops import detection

GRID, D, CLASSES = 4, 4, 2
BOX_SCALE, SCORE_SCALE = np.float32(0.05), np.float32(1 / 256)


def _anchors() -> np.ndarray:
    c = (np.arange(GRID) + 0.5) / GRID
    yy, xx = np.meshgrid(c, c, indexing="ij")
    return np.stack([yy.ravel(), xx.ravel(), np.full(GRID * GRID, 0.2), np.full(GRID * GRID, 0.2)], 1).astype(np.float32)


def _model(path):
    """A one-operator SSD tail: int8 box encodings [1, 16, 4] and class scores [1, 16, 3] (background first),
    their DEQUANTIZE and TFLite_Detection_PostProcess (fast NMS, 4 detections)."""
    from tflite_oracle import Case, Node, T, write

    nb = GRID * GRID
    options = dict(max_detections=D, max_classes_per_detection=1, nms_score_threshold=0.3, nms_iou_threshold=0.5,
                   num_classes=CLASSES, y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0, use_regular_nms=False)
    tensors = [T((1, nb, 4), [BOX_SCALE], [0]), T((1, nb, CLASSES + 1), [SCORE_SCALE], [-128]),
               T((1, nb, 4), [], [], 0), T((1, nb, CLASSES + 1), [], [], 0), T((nb, 4), [], [], 0, _anchors()),
               T((1, D, 4), [], [], 0), T((1, D), [], [], 0), T((1, D), [], [], 0), T((1,), [], [], 0)]
    nodes = [Node("DEQUANTIZE", [0], 2), Node("DEQUANTIZE", [1], 3),
             Node(f"CUSTOM:{detection.CUSTOM_CODE}", [2, 3, 4], [5, 6, 7, 8], custom=flexbuffers.Dumps(options))]
    path.write_bytes(write(Case("ssd_tail", tensors, nodes, [0, 1], [5, 6, 7, 8])))
    return path


def _data(rng, n: int):
    """Images with 1 to 3 objects, each on its own anchor with a slightly moved box; the ground truth is the
    anchor's box moved a little more (so mAP@0.5:0.95 is below mAP@0.5)."""
    nb, anchors = GRID * GRID, _anchors()
    boxes_q = rng.integers(-2, 3, (n, 1, nb, 4)).astype(np.int8)
    scores_q = np.full((n, 1, nb, CLASSES + 1), -115, np.int8)             # 0.05: under the threshold
    truth = np.zeros((n, 3, 4), np.float32)
    labels = np.zeros((n, 3), np.int64)
    count = rng.integers(1, 4, n)
    for i in range(n):
        for k, a in enumerate(rng.choice(nb, count[i], replace=False)):
            c = int(rng.integers(0, CLASSES))
            scores_q[i, 0, a, 1 + c] = int(rng.integers(40, 127))          # 0.66 .. 0.99
            y, x = anchors[a, :2] + rng.uniform(-0.02, 0.02, 2)
            truth[i, k], labels[i, k] = [y - 0.1, x - 0.1, y + 0.1, x + 0.1], c
    boxes_q, scores_q = boxes_q[:, 0], scores_q[:, 0]         # (N, boxes, 4), (N, boxes, classes + 1)
    x = {"x_t0": boxes_q.astype(np.float32) * BOX_SCALE, "x_t1": (scores_q.astype(np.float32) + 128) * SCORE_SCALE}
    return x, {"boxes": truth, "labels": labels, "box_count": count}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if importlib.util.find_spec("tflite_micro") is None:
        if os.environ.get("CI"):
            pytest.fail("tflite-micro (the TFLite Micro interpreter) is not installed", pytrace=False)
        pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed")
    root = tmp_path_factory.mktemp("detections")
    out = root / "build"
    api.build(_model(root / "ssd_tail.tflite"), None, "host", out)
    x, truth = _data(np.random.default_rng(5), 24)
    np.savez(root / "truth.npz", **x, **truth)
    np.savez(root / "boxes_only.npz", **x)
    return out, root


def test_bench_reports_map_of_float_reference_and_device_against_ground_truth(built):
    out, root = built
    r = api.bench(out, root / "truth.npz")
    assert r["task"] == "detection" and r["agreement"]["device_vs_reference"] == 1.0
    assert r["tflite"]["reference_vs_interpreter"] == 1.0              # TFLM's boxes, bit for bit
    det = r["detection"]
    m = det["map"]
    assert m["device"] == m["int8_reference"] == m["float"]           # the same boxes: the same mAP
    truth = detections.load_truth(root / "truth.npz", 24)
    assert det["ground_truth"]["total"] == sum(len(t) for t in truth) >= 24
    assert 0.5 < m["device"]["map50"] and m["device"]["map50_95"] < m["device"]["map50"]
    a = det["agreement"]["device_vs_reference"]
    assert a["missed"] == a["extra"] == 0 and a["identical_boxes"] == a["matched"] == det["detections"]["device"]["total"]
    assert set(det["agreement"]) == {"device_vs_reference", "device_vs_float", "int8_vs_float"}
    text = "\n".join(report.summary_lines(r))
    assert "mAP@0.5: float" in text and "boxes device vs reference" in text
    html = report.render_html(r, out)
    assert "<h2>Detections</h2>" in html and "mAP@0.5:0.95" in html
    # the mAP the bench reports is the metric of the reference's detections, read from its packed output
    assert m["device"] == mean_average_precision(
        [detections.Detections.of(*d) for d in _reference_rows(out, root)], truth)


def _reference_rows(out, root):
    """The reference's detections, recomputed from the build folder (the device's are identical, checked above)."""
    from edgec import ports
    from edgec.quant import artifact, reference

    graph = artifact.load_graph(out)
    data = ports.load_data(root / "truth.npz", graph)
    xq = ports.quantize_inputs(graph, data.x)
    return [detection.unpack(reference.run(graph, q), D) for q in xq]


def test_bench_without_ground_truth_reports_box_agreement(built):
    out, root = built
    r = api.bench(out, root / "boxes_only.npz", limit=8)
    det = r["detection"]
    assert "map" not in det and det["ground_truth"] is None
    assert det["agreement"]["device_vs_float"]["missed"] == 0 and det["agreement"]["device_vs_float"]["iou"]["min"] == 1.0


def test_malformed_ground_truth_is_refused_in_one_line(built, tmp_path):
    out, root = built
    with np.load(root / "truth.npz") as f:
        good = dict(f)
    cases = [({"box_count": None}, "box_count missing"), ({"labels": good["labels"].astype(np.float32)}, "labels must"),
             ({"boxes": good["boxes"][:, :, :3]}, "boxes must"), ({"box_count": good["box_count"] + 5}, "box_count must")]
    for change, needle in cases:
        bad = {k: v for k, v in {**good, **change}.items() if v is not None}
        np.savez(tmp_path / "bad.npz", **bad)
        with pytest.raises(EdgecError, match=needle) as e:
            api.bench(out, tmp_path / "bad.npz")
        assert "\n" not in str(e.value)
    with pytest.raises(EdgecError, match="--score"):
        api.bench(out, root / "truth.npz", score="math:fabs")


def test_ground_truth_is_read_within_the_memory_limit(tmp_path):
    """A small compressed data file whose ground truth unpacks to hundreds of MB (boxes [2, 4M, 4]): read whole
    before any check, it took that memory whatever EDGEC_MEMORY_LIMIT said. Its size is checked from the
    array's header first, and only the benched samples' rows are read."""
    path = tmp_path / "bomb.npz"
    m = 4 << 20
    np.savez_compressed(path, x=np.zeros((2, 4), np.float32), boxes=np.zeros((2, m, 4)),
                        labels=np.zeros((2, m), np.int64), box_count=np.zeros(2, np.int64))
    assert path.stat().st_size < 2 << 20
    with pytest.raises(EdgecError, match="boxes") as e:
        detections.load_truth(path, 2, memory_limit=64 << 20)
    assert "\n" not in str(e.value)
    small = tmp_path / "rows.npz"
    np.savez(small, x=np.zeros((1000, 4), np.float32), boxes=np.full((1000, 3, 4), 0.5),
             labels=np.ones((1000, 3), np.int64), box_count=np.full(1000, 2))
    truth = detections.load_truth(small, 5, memory_limit=64 << 20)
    assert len(truth) == 5 and all(len(t) == 2 for t in truth)
