"""window4 (edgec/ops/conv/im2col.py, fast/edgec_conv2d_window.c) as the emulated Cortex-M4 runs it: its assembly
(the loop over the taps, and for full-range layers whose taps fill whole passes the whole loop over the blocks of
4 output channels with the requantization) exists only in the Arm build (tests/kernels/test_fast_sweep.py runs the
same kernel's C on the host), so a small model with awkward shapes goes through the real firmware, bit for bit
with the NumPy reference: a 3-channel 3x3 stride-2 first layer on an odd width (a lone last pixel per row; 36 taps
a pixel: passes and a tail) to 12 channels, a 3x3 convolution of 12 channels to 8 (108 taps: passes and both
tails; the output range clamped by the ReLU6), one of 8 channels to 16 (72 taps, no activation: the full-range
assembly with a tail of 8 words), and one of 16 channels to 6, padded on one side only (144 taps: whole passes, the full-range assembly loop
over the blocks, and a partial last block through the kernel's buffer). The 3-channel first layers run on rgb3x3
(the same 2x4 block over taps read from the input: tests/kernels/test_rgb3x3_on_m4.py), the others on window4."""
from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

from conftest import make_model, runs_bit_exact_on_the_board
from edgec.ops.conv import im2col
from edgec.ops.conv.rgb3x3 import RGB3X3
from elftools.elf.elffile import ELFFile


def _runs_window4_bit_exact(tmp_path, rng, model, board="qemu-cortex-m4"):
    """`model` ([1, 3, 11, 13] in) built for `board` with every convolution but the first on window4, and its
    device output equal to the NumPy reference on 8 samples; the firmware's ELF."""
    text, out = runs_bit_exact_on_the_board(model, rng, tmp_path, board=board)
    calls = re.findall(r"\b(edgec_conv2d_(?:window4|rgb3x3)_\w+)\(", text)    # each call names its loop's entry
    assert sum(c.startswith("edgec_conv2d_window4_") for c in calls) == 3 and len(calls) == 4
    assert set(calls) <= {*im2col.WINDOW4.entries, *RGB3X3.entries}
    return out / "project" / "firmware.elf"


def _functions(elf) -> set[str]:
    return {s.name for s in ELFFile(open(elf, "rb")).get_section_by_name(".symtab").iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC"}


@pytest.mark.sweep
def test_window4_on_the_emulated_cortex_m4(tmp_path):
    rng = np.random.default_rng(5)
    w1 = rng.normal(0, .4, (12, 3, 3, 3)).astype(np.float32)
    w2 = rng.normal(0, .2, (8, 12, 3, 3)).astype(np.float32)
    w3 = rng.normal(0, .2, (16, 8, 3, 3)).astype(np.float32)
    w4 = rng.normal(0, .15, (6, 16, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c", "lo", "hi"], ["d"]),
             helper.make_node("Conv", ["d", "w3"], ["e"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["e", "w4"], ["y"], pads=[1, 0, 1, 2])]
    inits = {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "lo": np.float32(0), "hi": np.float32(6)}
    _runs_window4_bit_exact(tmp_path, rng, make_model(nodes, ("x", [1, 3, 11, 13]), ("y", [1, 6, 6, 7]), inits))


@pytest.mark.sweep
def test_window4_rows_of_pairs_on_the_emulated_cortex_m4(tmp_path):
    """The full-range layers whose pairs run a row at a time in assembly (out_c a multiple of 4): a 3-channel 3x3
    first layer (36 taps a pixel: the unrolled k-steps), 16 channels at stride 2 and at stride 1 (144 taps: the
    48-word passes), all on odd widths (a lone last pixel after each row's pairs), and 8 channels to 16 between
    them (72 taps: the per-pair path); bit for bit with the NumPy reference."""
    rng = np.random.default_rng(7)
    w1 = rng.normal(0, .4, (8, 3, 3, 3)).astype(np.float32)
    w2 = rng.normal(0, .2, (16, 8, 3, 3)).astype(np.float32)
    w3 = rng.normal(0, .15, (16, 16, 3, 3)).astype(np.float32)
    w4 = rng.normal(0, .15, (8, 16, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w2"], ["b"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["b", "w3"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w4"], ["y"], pads=[1, 1, 1, 1])]
    inits = {"w1": w1, "w2": w2, "w3": w3, "w4": w4}
    elf = _runs_window4_bit_exact(tmp_path, rng, make_model(nodes, ("x", [1, 3, 11, 13]), ("y", [1, 8, 6, 7]), inits))
    assert "edgec_window_row_x2_call" not in _functions(elf)      # inlined in the entries on the Cortex-M4


@pytest.mark.sweep
def test_window4_on_the_emulated_cortex_m7_widens_rows_out_of_line(tmp_path):
    """The Cortex-M7 build (-DEDGEC_CPU_CORTEX_M7, edgec/targets/firmware.py core_define) calls window4's row
    widening out of line from the entries of its assembly blocks (gcc's M7 schedule of it inlined ran IC 0.5 % more instructions), bit for bit with
    the NumPy reference, on the full-range row assembly and the per-pair path."""
    rng = np.random.default_rng(7)
    w1 = rng.normal(0, .2, (16, 3, 3, 3)).astype(np.float32)
    w2 = rng.normal(0, .15, (16, 16, 3, 3)).astype(np.float32)
    w3 = rng.normal(0, .2, (8, 16, 3, 3)).astype(np.float32)
    w4 = rng.normal(0, .15, (8, 8, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w2"], ["b"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["b", "w3"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w4"], ["y"], pads=[1, 1, 1, 1])]
    inits = {"w1": w1, "w2": w2, "w3": w3, "w4": w4}
    elf = _runs_window4_bit_exact(tmp_path, rng, make_model(nodes, ("x", [1, 3, 11, 13]), ("y", [1, 8, 6, 7]), inits),
                                  board="qemu-cortex-m7")
    assert "edgec_window_row_x2_call" in _functions(elf)
