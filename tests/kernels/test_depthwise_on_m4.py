"""The depthwise 3x3 speed variants (edgec/ops/conv/depthwise3x3.py) as the emulated Cortex-M4 runs them: their
assembly (fast/edgec_depthwise_conv2d_3x3_fused.c: the rows of a 4-channel group, per stride; fast/
edgec_depthwise_conv2d_3x3_small.c: all record rows of a group at stride 1, an odd last output row one output at a time)
exists only in the Arm build (tests/kernels/test_fast_sweep.py runs the same kernels' C on the host), so a small
model with awkward shapes goes through the real firmware, bit for bit with the NumPy reference: the fused kernel at
stride 1 on an 11x11 image (5 output pairs a row, an odd count, and a lone last output), at stride 2 to 6x6 (3
pairs), the small kernel at stride 1 on 6x6 with 80 channels (the assembly), at stride 2 to 3x3 (its assembly
since h45-vww: one output pair and an odd column), and the
fused kernel at stride 1 on the 3x3 image (one pair and a lone output); the kxk kernel's tile variant on 5x5 layers."""
from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

from conftest import make_model, runs_bit_exact_on_the_board
from edgec.ops.conv import depthwise3x3


def _calls(text: str, variant: str) -> int:
    """How many calls of the fused or small 3x3 kernel the generated C makes; each names one of its record's entries
    (the code its layer runs: depthwise3x3.fused_entry / small_entry)."""
    kernel = depthwise3x3.FUSED if variant == "fused" else depthwise3x3.SMALL
    calls = re.findall(rf"\b(edgec_depthwise_conv2d_3x3_{variant}_\w+)\(", text)
    assert set(calls) <= set(kernel.entries), calls
    return len(calls)


def _depthwise(rng, c: int) -> np.ndarray:
    return rng.normal(0, .4, (c, 1, 3, 3)).astype(np.float32)


@pytest.mark.sweep
def test_depthwise_variants_on_the_emulated_cortex_m4(tmp_path):
    rng = np.random.default_rng(9)
    inits = {"d1": _depthwise(rng, 8), "d2": _depthwise(rng, 8), "d3": _depthwise(rng, 80),
             "d4": _depthwise(rng, 80), "d5": _depthwise(rng, 80),
             "p1": rng.normal(0, .3, (80, 8, 1, 1)).astype(np.float32)}
    dw = dict(kernel_shape=[3, 3])
    nodes = [helper.make_node("Conv", ["x", "d1"], ["a"], group=8, pads=[1, 1, 1, 1], **dw),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "d2"], ["c"], group=8, strides=[2, 2], pads=[1, 1, 1, 1], **dw),
             helper.make_node("Relu", ["c"], ["d"]),
             helper.make_node("Conv", ["d", "p1"], ["e"]),
             helper.make_node("Relu", ["e"], ["f"]),
             helper.make_node("Conv", ["f", "d3"], ["g"], group=80, pads=[1, 1, 1, 1], **dw),
             helper.make_node("Relu", ["g"], ["h"]),
             helper.make_node("Conv", ["h", "d4"], ["i"], group=80, strides=[2, 2], pads=[1, 1, 1, 1], **dw),
             helper.make_node("Relu", ["i"], ["j"]),
             helper.make_node("Conv", ["j", "d5"], ["y"], group=80, pads=[1, 1, 1, 1], **dw)]
    model = make_model(nodes, ("x", [1, 8, 11, 11]), ("y", [1, 80, 3, 3]), inits)
    text, _ = runs_bit_exact_on_the_board(model, rng, tmp_path)
    assert _calls(text, "fused") == 3 and _calls(text, "small") == 2


@pytest.mark.sweep
def test_small_kernel_odd_output_rows_on_the_emulated_cortex_m4(tmp_path):
    """The small kernel's assembly with an odd number of stride-1 output rows (two-row records, then the last row
    one output at a time): 5x5 with 96 channels (two record pairs and the odd row) and 3x3 with 144 (VWW's last
    depthwise shape: one pair and the odd row); a stride-2 layer between them (the small kernel's stride-2
    assembly)."""
    rng = np.random.default_rng(11)
    inits = {"d1": _depthwise(rng, 96), "d2": _depthwise(rng, 96), "d3": _depthwise(rng, 144),
             "p1": rng.normal(0, .3, (144, 96, 1, 1)).astype(np.float32)}
    dw = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [helper.make_node("Conv", ["x", "d1"], ["a"], group=96, **dw),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "d2"], ["c"], group=96, strides=[2, 2], **dw),
             helper.make_node("Relu", ["c"], ["d"]),
             helper.make_node("Conv", ["d", "p1"], ["e"]),
             helper.make_node("Relu", ["e"], ["f"]),
             helper.make_node("Conv", ["f", "d3"], ["y"], group=144, **dw)]
    model = make_model(nodes, ("x", [1, 96, 5, 5]), ("y", [1, 144, 3, 3]), inits)
    text, _ = runs_bit_exact_on_the_board(model, rng, tmp_path)
    assert _calls(text, "small") == 3


@pytest.mark.sweep
def test_small_kernel_stride2_on_the_emulated_cortex_m4(tmp_path):
    """The small kernel's stride-2 assembly (edgec_dws_rows_s2): 14x14 -> 7x7 (3 output pairs a row, an odd count,
    and an odd last column, as VWW's 12x12 -> 6x6 and 6x6 -> 3x3), 7x7 -> 4x4 (2 pairs, even), 4x4 -> 2x2 (1 pair),
    128 channels, bit for bit with the NumPy reference on the emulated SoC."""
    rng = np.random.default_rng(15)
    inits = {f"d{i}": _depthwise(rng, 128) for i in (1, 2, 3)}
    dw = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=128)
    nodes = [helper.make_node("Conv", ["x", "d1"], ["a"], **dw),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "d2"], ["c"], **dw),
             helper.make_node("Relu", ["c"], ["d"]),
             helper.make_node("Conv", ["d", "d3"], ["y"], **dw)]
    model = make_model(nodes, ("x", [1, 128, 14, 14]), ("y", [1, 128, 2, 2]), inits)
    text, _ = runs_bit_exact_on_the_board(model, rng, tmp_path)
    assert _calls(text, "small") == 3


@pytest.mark.sweep
def test_kxk_tile_on_the_emulated_cortex_m4(tmp_path):
    """The 5x5 depthwise layers on the kxk kernel's tile variant (edgec/ops/conv/depthwise_kxk.py; its unrolled 5-tap
    rows exist only in the DSP build, which the host sweep runs with emulated intrinsics): stride 1 on a 7x5 image,
    stride 2 down to 4x3, then stride 1 on that 4x3 image (every window wider and taller than the image), 16
    channels, bit for bit with the NumPy reference on the emulated SoC."""
    rng = np.random.default_rng(13)
    inits = {f"d{i}": rng.normal(0, .2, (16, 1, 5, 5)).astype(np.float32) for i in (1, 2, 3)}
    dw = dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2], group=16)
    nodes = [helper.make_node("Conv", ["x", "d1"], ["a"], **dw),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "d2"], ["c"], strides=[2, 2], **dw),
             helper.make_node("Relu", ["c"], ["d"]),
             helper.make_node("Conv", ["d", "d3"], ["y"], **dw)]
    model = make_model(nodes, ("x", [1, 16, 7, 5]), ("y", [1, 16, 4, 3]), inits)
    text, _ = runs_bit_exact_on_the_board(model, rng, tmp_path)
    assert text.count("edgec_depthwise_conv2d_kxk_tile_s8(") == 3
