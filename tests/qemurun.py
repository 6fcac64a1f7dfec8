"""Running a firmware on an emulated board to its end, for tests that build applications of their own."""
from __future__ import annotations

import subprocess

from edgec.targets.boards import load_board


def run_qemu(board_name: str, elf, timeout=60) -> tuple[int, str]:
    """Run a firmware that needs no input to its end (semihosting exit); UART0 -> stdout."""
    board = load_board(board_name)
    proc = subprocess.run(list(board.emulator_command) + ["-serial", "stdio", "-kernel", str(elf)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout
