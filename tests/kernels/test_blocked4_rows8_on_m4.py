"""blocked4 and rows8 (edgec/ops/conv/im2col.py, edgec/ops/dense.py) as the emulated Cortex-M4 runs them: their
assembly loops exist only in the Arm build (the host tests, tests/kernels/test_fast_sweep.py, run the same kernels'
C), so a small model with awkward shapes goes through the real firmware, bit for bit with the NumPy reference: a
single-channel 4x4 convolution on the padded variant (10 outputs: a partial last block of 4; every window read from
its band of the input padded with the zero point, pairs of pixels across two output rows), a 1x1 convolution on 10 input channels (not a multiple of 4: the taps
path), one on 40 (20 k-steps: the assembly's unrolled body of 32 entered part-way; 19 outputs: the shape where the
selector's cost model still prefers blocked4 to the pointwise kernel), one from 19 channels to 8 (24 words a pixel),
one from 8 to 19 (8 words: the straight tail alone, as in VWW's 8 -> 16 layer), one from 19 to 72, one from 72 to 12 and one
from 12 to 72 (3 groups of 4 channels a pixel: the pair loop's widening takes the odd group out of its two-group
passes), one from 72 to 19 with stride 2 (the pixels gathered from the input; 36 k-steps: the unrolled body entered part-way, then run once
whole), and a fully connected layer on 114 inputs (not whole words) to 13 outputs (a partial block of 8)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

from conftest import make_model, runs_bit_exact_on_the_board
from edgec import api
from edgec.ops.conv import im2col


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
    w8 = rng.normal(0, .2, (12, 72, 1, 1)).astype(np.float32)
    w9 = rng.normal(0, .3, (72, 12, 1, 1)).astype(np.float32)
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
             helper.make_node("Conv", ["e5", "w8"], ["e6"]),
             helper.make_node("Conv", ["e6", "w9"], ["e7"]),
             helper.make_node("Relu", ["e7"], ["e8"]),
             helper.make_node("Conv", ["e8", "w7"], ["e"], strides=[2, 2]),
             helper.make_node("Flatten", ["e"], ["f"]),
             helper.make_node("MatMul", ["f", "wf"], ["y"])]
    model = make_model(nodes, ("x", [1, 1, 9, 7]), ("y", [1, 13]), {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "w5": w5, "w6": w6,
                                                                       "w7": w7, "w8": w8, "w9": w9, "wf": wf})
    text, _ = runs_bit_exact_on_the_board(model, rng, tmp_path, samples=12)
    # each call names its mode and loop (edgec/ops/conv/im2col.py blocked4_entry), never an entry that chooses them
    # at run time: the firmware links those loops alone; the padded variant's call names the band's
    calls = re.findall(r"(edgec_conv2d_blocked4_\w+_s8)\(", text)
    assert len(calls) == 9 and "edgec_fully_connected_rows8_s8(" in text
    assert sum(c.startswith("edgec_conv2d_blocked4_banded_") for c in calls) == 1
    assert not {"edgec_conv2d_blocked4_s8", "edgec_conv2d_blocked4_padded_s8", "edgec_conv2d_blocked4_banded_s8",
                "edgec_conv2d_blocked4_unbanded_s8"} & set(calls)
    assert set(calls) <= set(im2col.BLOCKED4_ENTRIES) and len(set(calls)) > 2    # several loops in one firmware


@pytest.mark.sweep
def test_blocked4_on_64_input_channels_on_the_emulated_cortex_m4(tmp_path):
    """1x1 convolutions on exactly 64 input channels (KWS's) run the 32 k-steps straight (the k64_exact loop, no jump
    into the unrolled body), 15 pixels (7 pairs and a lone pixel) to 16 and to 8 channels, bit for bit with the NumPy
    reference; between them one on 16 channels (k16) to 64."""
    rng = np.random.default_rng(11)
    w1 = rng.normal(0, .15, (16, 64, 1, 1)).astype(np.float32)
    w2 = rng.normal(0, .3, (64, 16, 1, 1)).astype(np.float32)
    w3 = rng.normal(0, .15, (8, 64, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]), helper.make_node("Conv", ["a", "w2"], ["b"]),
             helper.make_node("Conv", ["b", "w3"], ["y"])]
    model = make_model(nodes, ("x", [1, 64, 3, 5]), ("y", [1, 8, 3, 5]), {"w1": w1, "w2": w2, "w3": w3})
    text, _ = runs_bit_exact_on_the_board(model, rng, tmp_path)
    calls = re.findall(r"(edgec_conv2d_\w+_s8)\(", text)
    assert calls.count("edgec_conv2d_blocked4_k64_exact_s8") == 2, calls

def _fc_chain(rng):
    """A .tflite chain of FULLY_CONNECTED layers, one for each of rows8's output stages and entries into its loop of 8
    pairs of input groups: 64 -> 285 (8 pairs, the full range, one weight scale: the uniform stage; 285 outputs: a
    partial block), 285 -> 20 (36 pairs: 4 rounds and an entry half-way), 20 -> 13 (a fused RELU whose output zero
    point is 5: the relu stage), 13 -> 19 (RELU6 at 80: the clamp stage), 19 -> 9 (weights -1..1 and a multiplier of
    0.75, no right shift: neg 0, the clamp stage over the full range), 9 -> 140 (an all-zero weight row: a dead
    channel, neg 0). Scales keep most outputs inside the range (an output standard deviation near 40 steps)."""
    from tflite_oracle import INT32, Case, Node, T

    layers = [(64, 285, 0, -3), (285, 20, 0, 7), (20, 13, 1, 5), (13, 19, 3, -20), (19, 9, 0, 2), (9, 140, 0, -1)]
    tensors, nodes, xs, spread = [T((1, 64), [0.02], [4])], [], 0.02, 73.0     # spread: the input's std in steps
    for n_in, n_out, fused, zp in layers:
        lim = 1 if n_out == 9 else 127
        w = rng.integers(-lim, lim + 1, (n_out, n_in)).astype(np.int8)
        acc = spread * np.sqrt(n_in) * max(lim / np.sqrt(3), 0.8)                   # the accumulator's std
        ws, ys = 1 / (xs * acc), 1 / 40                                              # real std 1, 40 steps out
        if fused == 3:
            ws, ys = 4 * ws, 0.06                                                    # std 4 against RELU6 at 80
        if n_out == 9:
            ws = 0.75 * ys / xs                                                      # multiplier 0.75
        if n_out == 140:
            w[77] = 0
        b = rng.integers(-int(acc), int(acc), n_out).astype(np.int32)
        x = len(tensors) - 1
        tensors += [T((n_out, n_in), [ws], [0], data=w), T((n_out,), [xs * ws], [0], INT32, b),
                    T((1, n_out), [ys], [zp])]
        nodes.append(Node("FULLY_CONNECTED", [x, x + 1, x + 2], x + 3,
                          ("FullyConnectedOptions", dict(FusedActivationFunction=fused))))
        xs, spread = ys, 40.0
    return Case("rows8_stages", tensors, nodes, 0, len(tensors) - 1)


@pytest.mark.sweep
def test_rows8_output_stages_on_the_emulated_cortex_m4(tmp_path):
    """rows8's assembly (its passes, the loop entered part-way, the three output stages the build picks per layer)
    bit for bit with the NumPy reference of a .tflite chain that reaches every stage, and the stages as expected."""
    from edgec.ops import dense
    from tflite_oracle import write

    rng = np.random.default_rng(5)
    path = tmp_path / "chain.tflite"
    path.write_bytes(write(_fc_chain(rng)))
    np.savez(tmp_path / "test.npz", x=rng.uniform(-2.6, 2.5, (12, 64)).astype(np.float32))
    out = tmp_path / "build"
    report = api.build(path, None, "qemu-cortex-m4", out, choose=lambda op, generic: "rows8",
                       tuning_log=tmp_path / "none.json")
    text = (out / "model" / f"{report['model']}.c").read_text()
    assert text.count("edgec_fully_connected_rows8_s8(") == 6
    stages = [int(s) for s in re.findall(r"_fw\[\d+\] = \{\s*(\d+)u?,", text)]
    assert stages == [dense.ROWS8_UNIFORM, dense.ROWS8_UNIFORM, dense.ROWS8_RELU, dense.ROWS8_CLAMP,
                      dense.ROWS8_CLAMP, dense.ROWS8_CLAMP]      # (the first test's per-channel layer: FULL)
    r = api.bench(out, tmp_path / "test.npz")
    assert r["samples"] == 12 and r["agreement"]["device_vs_reference"] == 1.0
