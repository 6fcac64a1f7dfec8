"""Reused weights staged from flash into RAM per layer (edgec/lower/weight_staging.py): the decision by the part's
flash timing, the copy in the layer's scratch, bit-exact in the generated C (gcc and clang, -Wall -Wextra -Werror)
and on the emulated Cortex-M4 with the kernels and staging of a NUCLEO-L4R5ZI build; emulated boards unchanged."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from conftest import EXAMPLES, check_generated_c, require
from edgec import api, pipeline
from edgec.lower import lowering, weight_staging
from edgec.ops.conv.im2col import BLOCKED4
from edgec.ops.dense import ROWS8
from edgec.ops.kernel import Lowering
from edgec.plan import planner
from edgec.resources import resource_dir
from edgec.targets.boards import load_board

DIGITS = EXAMPLES / "digits_cnn"
L4R5 = weight_staging.Staging(byte_cycles=5 / 8, cache_bytes=256)


def _pointwise(pixels: int, out_c: int = 64, k: int = 64) -> Lowering:
    """A blocked4 lowering of a 1x1 layer of `pixels` output pixels (only what the decision reads)."""
    return Lowering(BLOCKED4, {"out_h": pixels, "out_w": 1},
                    {"fw": np.zeros(out_c * k // 2, np.uint32), "rq": np.zeros((out_c, 5), np.int32)}, 96)


def test_the_parts_flash_timing_decides_and_emulated_boards_never_stage():
    assert weight_staging.for_board(load_board("nucleo-l4r5zi")) == L4R5
    assert weight_staging.for_board(load_board("nucleo-f446re")) == weight_staging.Staging(5 / 16, 128)
    assert weight_staging.for_board(load_board("nucleo-h743zi2")) == weight_staging.Staging(14 / 32, 0)  # caches off
    assert weight_staging.for_board(load_board("qemu-cortex-m4")) is None
    assert weight_staging.for_board(None) is None


def test_staged_when_the_re_reads_misses_cost_more_than_the_copy():
    """(passes - 1) x m > m + c: with m = 5/8 and c = 1 at least 4 passes of 2 pixels (7 pixels), not 3 (6)."""
    assert weight_staging.staged_keys(_pointwise(6), L4R5) == []
    assert weight_staging.staged_keys(_pointwise(7), L4R5) == ["fw", "rq"]
    # a dearer copy, or weights the data cache holds, or a kernel that reads its weights once: not staged
    assert weight_staging.staged_keys(_pointwise(7), weight_staging.Staging(5 / 8, 256, copy_cycles=3.0)) == []
    assert weight_staging.staged_keys(_pointwise(99, out_c=4, k=16), L4R5) == []       # 128 + 80 B <= 256 B
    fc = Lowering(ROWS8, {"out_features": 64, "k4": 64}, {"fw": np.zeros(2048, np.uint32)})
    assert ROWS8.reads is None and weight_staging.staged_keys(fc, L4R5) == []


def test_the_copy_goes_after_the_kernels_own_scratch_aligned():
    low = weight_staging.staged(_pointwise(50), L4R5)
    assert low.staged == (("fw", 96, 8192), ("rq", 96 + 8192, 1280))
    assert low.scratch_bytes == 96 + 8192 + 1280
    assert weight_staging.staged(low, L4R5) is low           # staged once


def _digits():
    _, graph, _ = api.compile_model(DIGITS / "model.onnx", DIGITS / "calib.npz")
    lowered = lowering.lower_graph(graph, dsp=True)
    return lowered.replace_ops(planner.schedule(lowered))


@pytest.mark.parametrize("cc", ["gcc", pytest.param("clang", marks=pytest.mark.sweep)])
def test_a_staged_library_is_bit_exact_and_warning_free(tmp_path, cc):
    """digits_cnn on the DSP kernels, staged as for the L4R5ZI (its two convolutions' weights and records, the
    depthwise layer's records): the generated C copies them and its calls read the copies, bit-exact with the
    reference under gcc (and clang: sweep) -Wall -Wextra -Werror -pedantic; the arena grows by at most the largest
    staged layer's arrays."""
    graph = _digits()
    staged = weight_staging.stage(graph, L4R5)
    got = weight_staging.staged_bytes(staged)
    assert got["layers"] == 3 and got["bytes"] == 576 + 320 + 9344 + 640 + 640
    before, after = planner.plan(graph).arena_bytes, planner.plan(staged).arena_bytes
    assert before <= after <= before + got["largest_bytes"] + 64
    x = np.load(DIGITS / "test.npz")["x"][:8]
    check_generated_c(staged, x, tmp_path, cc=cc)
    c = (tmp_path / f"{graph.name}.c").read_text()
    assert c.count("edgec_stage_copy(") == 5
    assert weight_staging.staged_bytes(weight_staging.stage(graph, weight_staging.Staging(0.0)))["layers"] == 0


def test_the_plan_stages_only_without_a_budget_and_within_the_boards_ram():
    """schedule_and_plan stages nothing under --ram-budget (a budget build never grows past it) and, where the
    staged arena would not fit the board's RAM, gives up the largest copies first until it fits."""
    _, graph, _ = api.compile_model(DIGITS / "model.onnx", DIGITS / "calib.npz")
    plain = pipeline.schedule_and_plan(graph, dsp=True)[1].arena_bytes

    def staged(**ram):
        g, plan = pipeline.schedule_and_plan(graph, dsp=True, staging=L4R5, **ram)
        return weight_staging.staged_bytes(g)["layers"], plan.arena_bytes

    assert staged() == (3, staged()[1]) and staged()[1] > plain
    assert staged(ram_budget=1 << 20)[0] == 0
    layers, arena = staged(board_ram=plain + 1024)
    assert 0 < layers < 3 and plain <= arena <= plain + 1024
    assert staged(board_ram=plain)[1] == plain      # the copies that fit its slack only


def test_the_copy_compiles_warning_free_for_the_cortex_m4(tmp_path):
    require(shutil.which("arm-none-eabi-gcc") is not None, "arm-none-eabi-gcc", "bash scripts/setup.sh")
    runtime = resource_dir("runtime_c")
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-O2", "-std=c99", "-Wall", "-Wextra",
                    "-Werror", "-I", str(runtime), "-c", "-o", str(tmp_path / "r.o"),
                    str(runtime / "edgec_runtime.c")], check=True)


@pytest.mark.sweep
def test_a_staged_build_runs_bit_exact_on_the_emulated_cortex_m4(tmp_path):
    """digits_cnn built for qemu-cortex-m4 staged as a nucleo-l4r5zi build stages it: every output equal to the
    reference; the same build without stage_for (an emulated board: zero wait states) stages nothing."""
    plain = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", "qemu-cortex-m4", tmp_path / "plain",
                      firmware=False)
    assert plain["memory"]["staged_weights"]["layers"] == 0
    assert "edgec_stage_copy" not in (tmp_path / "plain" / "model" / "digits_cnn.c").read_text()
    built = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", "qemu-cortex-m4", tmp_path / "b",
                      stage_for="nucleo-l4r5zi")
    assert built["memory"]["staged_weights"]["layers"] == 3
    assert built["memory"]["arena_bytes"] > plain["memory"]["arena_bytes"]
    bench = api.bench(tmp_path / "b", DIGITS / "test.npz", limit=12, report_dir=None)
    assert bench["agreement"]["device_vs_reference"] == 1.0
