"""blocked4 and rows8 (edgec/ops/conv/im2col.py, edgec/ops/dense.py) as the emulated Cortex-M4 runs them: their
assembly loops exist only in the Arm build (the host tests, tests/kernels/test_fast_sweep.py, run the same kernels'
C), so a small model with awkward shapes goes through the real firmware, bit for bit with the NumPy reference: a
single-channel 4x4 convolution (10 outputs: a partial last block of 4; windows inside the image read from the input
rows, the others through the im2col row), a 1x1 convolution on 10 input channels (not a multiple of 4: the taps
path), one on 40 (20 k-steps: the assembly's unrolled body of 32 entered part-way; 19 outputs: the shape where the
selector's cost model still prefers blocked4 to the pointwise kernel), one from 19 channels to 8 (24 words a pixel),
one from 8 to 19 (8 words: the straight tail alone, as in VWW's 8 -> 16 layer), one from 19 to 72, one from 72 to
19 with stride 2 (the pixels gathered from the input; 36 k-steps: the unrolled body entered part-way, then run once
whole), and a fully connected layer on 114 inputs (not whole words) to 13 outputs (a partial block of 8)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from conftest import make_model
from edgec import api


@pytest.mark.sweep
def test_register_blocked_kernels_on_the_emulated_cortex_m4(tmp_path):
    rng = np.random.default_rng(3)
    w1 = rng.normal(0, .4, (10, 1, 4, 4)).astype(np.float32)
    w2 = rng.normal(0, .3, (40, 10, 1, 1)).astype(np.float32)
    w3 = rng.normal(0, .3, (19, 40, 1, 1)).astype(np.float32)
    w4 = rng.normal(0, .3, (8, 19, 1, 1)).astype(np.float32)
    w5 = rng.normal(0, .3, (19, 8, 1, 1)).astype(np.float32)
    w6 = rng.normal(0, .3, (72, 19, 1, 1)).astype(np.float32)
    w7 = rng.normal(0, .2, (19, 72, 1, 1)).astype(np.float32)
    wf = rng.normal(0, .2, (19 * 3 * 2, 13)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], strides=[2, 2], pads=[1, 0, 2, 1]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["c"]),
             helper.make_node("Relu", ["c"], ["d"]),
             helper.make_node("Conv", ["d", "w3"], ["e0"]),
             helper.make_node("Conv", ["e0", "w4"], ["e1"]),
             helper.make_node("Relu", ["e1"], ["e2"]),
             helper.make_node("Conv", ["e2", "w5"], ["e3"]),
             helper.make_node("Conv", ["e3", "w6"], ["e4"]),
             helper.make_node("Relu", ["e4"], ["e5"]),
             helper.make_node("Conv", ["e5", "w7"], ["e"], strides=[2, 2]),
             helper.make_node("Flatten", ["e"], ["f"]),
             helper.make_node("MatMul", ["f", "wf"], ["y"])]
    model = make_model(nodes, ("x", [1, 1, 9, 7]), ("y", [1, 13]), {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "w5": w5, "w6": w6,
                                                                       "w7": w7, "wf": wf})
    onnx.checker.check_model(model)
    path = tmp_path / "odd.onnx"
    onnx.save(model, path)
    np.savez(tmp_path / "calib.npz", x=rng.normal(0, 1, (64, 1, 9, 7)).astype(np.float32))
    np.savez(tmp_path / "test.npz", x=rng.normal(0, 1, (12, 1, 9, 7)).astype(np.float32))
    out = tmp_path / "build"
    report = api.build(path, tmp_path / "calib.npz", "qemu-cortex-m4", out, tuning_log=tmp_path / "none.json")
    text = (out / "model" / f"{report['model']}.c").read_text()
    assert text.count("edgec_conv2d_blocked4_s8(") == 7 and "edgec_fully_connected_rows8_s8(" in text
    r = api.bench(out, tmp_path / "test.npz")
    assert r["samples"] == 12 and r["agreement"]["device_vs_reference"] == 1.0
