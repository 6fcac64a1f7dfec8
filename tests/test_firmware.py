"""edgec/targets/firmware.py: the flags edgec's own sources are compiled with."""
from __future__ import annotations

import pytest

from edgec.targets.boards import load_board
from edgec.targets.firmware import core_define, src_build_flags


@pytest.mark.parametrize("board, define", [
    ("qemu-cortex-m7", "-DEDGEC_CPU_CORTEX_M7"), ("nucleo-h743zi2", "-DEDGEC_CPU_CORTEX_M7"),
    ("qemu-cortex-m4", "-DEDGEC_CPU_CORTEX_M4"), ("nucleo-l4r5zi", "-DEDGEC_CPU_CORTEX_M4"),
    ("qemu-cortex-m55", "-DEDGEC_CPU_CORTEX_M55"), ("qemu-cortex-m0", "-DEDGEC_CPU_CORTEX_M0")])
def test_the_core_is_a_macro_of_edgecs_sources(board, define):
    """gcc defines no macro per Cortex-M core (-mcpu=cortex-m4 and cortex-m7 differ only in the FPU's): the build
    names it for the runtime's per-core choices (window4's row widening), on emulated and framework boards alike."""
    b = load_board(board)
    assert core_define(b) == [define]
    assert define in src_build_flags(b)
    assert [f for f in src_build_flags(b) if f.startswith("-DEDGEC_CPU_")] == [define]


@pytest.mark.parametrize("board", ["host", "qemu-riscv32", "esp32-s3"])
def test_other_cores_get_no_core_macro(board):
    assert core_define(load_board(board)) == []
    assert not [f for f in src_build_flags(load_board(board)) if f.startswith("-DEDGEC_CPU_")]
