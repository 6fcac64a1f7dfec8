"""examples/shapes_detector (a tiny single-shot detector ending in ONNX NonMaxSuppression, trained on synthetic
shape canvases) built and benched as a detector: the device's outputs (int8 boxes and scores, float32 selection)
identical to the NumPy reference bit for bit, mAP@0.5 within 1 point of the float model's (onnxruntime) against
the test set's ground-truth boxes, and the report's picture of one image with the three sets of boxes. The host
on part of the test set by default; the emulated Cortex-M4 and M55 on all of it as a sweep."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgec import api

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "shapes_detector"


def check_detector(r: dict, samples: int) -> None:
    assert r["task"] == "detection" and r["samples"] == samples
    assert r["agreement"]["device_vs_reference"] == 1.0
    det = r["detection"]
    m = det["map"]
    assert m["device"] == m["int8_reference"]
    assert abs(m["device"]["map50"] - m["float"]["map50"]) <= 0.01, m
    assert m["float"]["map50"] > 0.85                        # a detector that finds the shapes
    a = det["agreement"]["device_vs_reference"]
    assert a["missed"] == a["extra"] == 0 and a["identical_boxes"] == a["matched"] > samples
    assert det["ground_truth"]["total"] > samples


def test_shapes_detector_on_host(tmp_path):
    out = tmp_path / "host"
    api.build(EXAMPLE / "model.onnx", EXAMPLE / "calib.npz", "host", out)
    assert json.loads((out / "build-report.json").read_text())["memory"]["arena_bytes"] > 0
    r = api.bench(out, EXAMPLE / "test.npz", limit=200, report_dir=tmp_path / "report")
    check_detector(r, 200)
    ex = r["detection"]["example"]
    assert ex["image"].startswith("data:image/png;base64,") and (ex["height"], ex["width"]) == (32, 32)
    assert set(ex["boxes"]) == {"float", "int8_reference", "device"} and ex["ground_truth"]
    assert ex["boxes"]["device"] == ex["boxes"]["int8_reference"]
    html = (tmp_path / "report" / "report.html").read_text()
    assert 'id="boxes"' in html and html.count("<rect") >= sum(len(v) for v in ex["boxes"].values())
    assert "not a classifier" not in html          # a detector: its boxes, not an empty confusion matrix


@pytest.mark.sweep
@pytest.mark.parametrize("board", ["qemu-cortex-m4", "qemu-cortex-m55"])
def test_shapes_detector_on_emulated_boards(board, tmp_path):
    out = tmp_path / board
    api.build(EXAMPLE / "model.onnx", EXAMPLE / "calib.npz", board, out)
    r = api.bench(out, EXAMPLE / "test.npz")
    check_detector(r, 500)
    committed = json.loads((EXAMPLE / "float_map.json").read_text())      # what train.py measured
    assert r["detection"]["map"]["float"]["map50"] == pytest.approx(committed["map50"], abs=1e-9)
    assert r["latency"]["unit"] == "emulated instructions" and r["latency"]["min"] > 0
