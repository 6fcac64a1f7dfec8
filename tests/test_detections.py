"""edgec/bench/detections.py: the bench of a detection model (TFLite_Detection_PostProcess's packed float32
output) on the host firmware: device boxes bit-exact with the reference and TFLite Micro, mAP of the float model
(TFLM), reference and device against ground truth in the data file, box agreement without it, the report's
lines and the ground-truth format's errors; an ONNX NonMaxSuppression detector's outputs read as onnxruntime
selects, and the report's picture of one image with its boxes."""
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


def test_nms_detector_outputs_read_as_onnxruntime_selects(tmp_path):
    """An ONNX detector ending in NonMaxSuppression (examples/shapes_detector, built for the host without firmware):
    its int8 boxes and scores and float32 selection travel as the link's bytes and come back unchanged, and the
    detections read from them are the boxes, classes and scores onnxruntime's NonMaxSuppression selects from the
    same dequantized boxes and scores (corners from the centre-size boxes)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from edgec import ports
    from edgec.ops import nms
    from edgec.quant import artifact, reference

    example = os.path.join(os.path.dirname(__file__), "..", "examples", "shapes_detector")
    out = tmp_path / "build"
    api.build(os.path.join(example, "model.onnx"), os.path.join(example, "calib.npz"), "host", out, firmware=False)
    graph = artifact.load_graph(out)
    op = nms.output_selection(graph)
    assert op is not None and ports.mixed_outputs(graph)
    with np.load(os.path.join(example, "test.npz")) as data:
        x = data["x"][:24]
    xq = ports.quantize_inputs(graph, x.reshape(len(x), -1))
    ref = np.stack([np.asarray(reference.run(graph, q)).reshape(-1) for q in xq])
    raw = ports.output_bytes(graph, ref)
    parts = ports.output_parts(graph, raw)
    for p in ports.outputs(graph):
        want = p.of(ref).astype(parts[p.tensor].dtype)
        np.testing.assert_array_equal(parts[p.tensor].view(np.uint8), want.view(np.uint8))
    dets = detections.nms_bytes(graph, op, raw)

    a = op.params
    node = helper.make_node("NonMaxSuppression", ["b", "s", "m", "i", "t"], ["sel"], center_point_box=1)
    inits = [helper.make_tensor("m", TensorProto.INT64, [1], [a["max_per_class"]]),
             helper.make_tensor("i", TensorProto.FLOAT, [1], [float(op.arrays["fparams"][2])]),
             helper.make_tensor("t", TensorProto.FLOAT, [1], [float(op.arrays["fparams"][3])])]
    g = helper.make_graph([node], "nms", [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 16, 4]),
                                          helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 3, 16])],
                          [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])], inits)
    sess = ort.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    tb, ts = (graph.tensors[t] for t in op.inputs[:2])
    found = 0
    for i, d in enumerate(dets):
        b = (parts[op.inputs[0]][i].astype(np.float32) - np.float32(tb.zero_point)) * np.float32(tb.scale)
        s = (parts[op.inputs[1]][i].astype(np.float32) - np.float32(ts.zero_point)) * np.float32(ts.scale)
        sel = sess.run(None, {"b": b.reshape(1, 16, 4), "s": s.reshape(1, 3, 16)})[0]
        cx, cy, w, h = b.reshape(16, 4)[sel[:, 2]].T
        np.testing.assert_allclose(d.boxes, np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], 1), atol=1e-6)
        np.testing.assert_array_equal(d.classes, sel[:, 1])
        np.testing.assert_array_equal(d.scores, s.reshape(3, 16)[sel[:, 1], sel[:, 2]])
        found += len(d)
    assert found >= len(dets)             # every canvas holds a shape


def test_example_image_is_a_png_with_every_detector_s_boxes():
    """The report's picture: the first sample with a device box, as a PNG (decoded here by Pillow) of the input's
    pixels stretched to 0..255, with each detector's and the ground truth's boxes; no picture for a non-image."""
    import base64
    import io

    from conftest import require
    from edgec import svgplot
    from edgec.bench.detection_metrics import Detections
    require(importlib.util.find_spec("PIL") is not None, "pillow", "pip install -e '.[test]'")
    from PIL import Image

    x = np.random.default_rng(0).uniform(-1, 1, (3, 3, 8, 10)).astype(np.float32)     # CHW colour images
    none = Detections.of(np.zeros((0, 4)), [], [])
    one = Detections.of([[0.1, 0.2, 0.5, 0.6]], [1], [0.9])
    outs = {"float": [none, one, one], "int8_reference": [none, one, one], "device": [none, one, none]}
    truth = Detections.of([[0.1, 0.2, 0.5, 0.6]], [1])                   # no scores
    ex = detections.example(x, outs, [truth, truth, truth])
    assert ex["sample"] == 1 and (ex["height"], ex["width"]) == (8, 10)
    png = Image.open(io.BytesIO(base64.b64decode(ex["image"].split(",", 1)[1])))
    assert png.mode == "RGB" and png.size == (10, 8)
    want = np.moveaxis(x[1], 0, -1)
    want = np.round((want - want.min()) / (want.max() - want.min()) * 255).astype(np.uint8)
    np.testing.assert_array_equal(np.asarray(png), want)
    assert ex["boxes"]["device"] == [{"box": [0.1, 0.2, 0.5, 0.6], "class": 1, "score": 0.9}]
    assert ex["ground_truth"] == [{"box": [0.1, 0.2, 0.5, 0.6], "class": 1}]
    svg = svgplot.image_boxes(ex["image"], 8, 10, [("device", [b["box"] for b in ex["boxes"]["device"]])], "t")
    assert svg.count('stroke-width="2"') == 1 and ex["image"] in svg
    assert detections.example(np.zeros((3, 40)), outs, None) is None          # a feature vector: no picture


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
