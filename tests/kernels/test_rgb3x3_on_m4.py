"""rgb3x3 (edgec/ops/conv/rgb3x3.py, fast/edgec_conv2d_window.c edgec_conv2d_rgb3x3_s8) as the emulated Cortex-M4
runs it: its row of pixel pairs in assembly exists only in the Arm build (tests/kernels/test_fast_sweep.py runs the
kernel's C on the host), so a small model goes through the real firmware, bit for bit with the NumPy reference: a
3-channel 3x3 convolution to 3 channels at stride 1, padded on one side only, clamped by a ReLU6 (the pair by pair
path with a partial block of channels), then one to 8 channels at stride 2 on an odd output width, full range (the
row assembly, a lone last pixel per row, a padding row at the top and at the bottom)."""
from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import helper

from conftest import make_model
from edgec import api
from edgec.ops.conv.rgb3x3 import RGB3X3


@pytest.mark.sweep
def test_rgb3x3_on_the_emulated_cortex_m4(tmp_path):
    rng = np.random.default_rng(11)
    w1 = rng.normal(0, .4, (3, 3, 3, 3)).astype(np.float32)
    w2 = rng.normal(0, .4, (8, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 0, 1, 2]),
             helper.make_node("Clip", ["a", "lo", "hi"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])]
    inits = {"w1": w1, "w2": w2, "lo": np.float32(0), "hi": np.float32(6)}
    model = make_model(nodes, ("x", [1, 3, 11, 13]), ("y", [1, 8, 6, 7]), inits)
    onnx.checker.check_model(model)
    onnx.save(model, tmp_path / "model.onnx")
    np.savez(tmp_path / "calib.npz", x=rng.normal(0, 1, (64, 3, 11, 13)).astype(np.float32))
    np.savez(tmp_path / "test.npz", x=rng.normal(0, 1, (8, 3, 11, 13)).astype(np.float32))
    out = tmp_path / "build"
    report = api.build(tmp_path / "model.onnx", tmp_path / "calib.npz", "qemu-cortex-m4", out,
                       tuning_log=tmp_path / "none.json")
    calls = re.findall(r"\b(edgec_conv2d_rgb3x3_\w+)\(", (out / "model" / f"{report['model']}.c").read_text())
    assert len(calls) == 2 and set(calls) <= set(RGB3X3.entries)      # each call names its loop's entry
    r = api.bench(out, tmp_path / "test.npz")
    assert r["samples"] == 8 and r["agreement"]["device_vs_reference"] == 1.0
