"""Flashing through a GDB server, proven against QEMU's own GDB stub: QEMU started halted with an empty flash,
gdb-multiarch loads the firmware, compares it, resets the core from the vector table (QEMU's stub has no reset
command) and detaches, and the board then benchmarks bit-exact.  First on edgec's bare-metal qemu-cortex-m4
with a QEMU the test starts itself (an external server: --gdb HOST:PORT --port URL), then on qemu-stm32f405: the
NUCLEO-F446RE STM32duino firmware (vendor framework, same harness) with its two emulator deviations."""
from __future__ import annotations

import json
import re
import socket
import subprocess

import pytest

from conftest import EXAMPLES, edgec
from edgec import api
from edgec.bench import report
from edgec.device import image as elf_image
from edgec.targets.boards import load_board

DIGITS = EXAMPLES / "digits_cnn"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def m4_build(example_build):
    """The digits example on the emulated M4, the build tests/test_examples.py benches (conftest.example_build)."""
    return example_build("digits_cnn", "qemu-cortex-m4")[1]


def test_external_gdb_server_qemu_cortex_m4(m4_build):
    board = load_board("qemu-cortex-m4")
    gdb_port, serial_port = _free_port(), _free_port()
    qemu = subprocess.Popen([*board.emulator_command, "-serial", f"tcp:127.0.0.1:{serial_port},server=on,wait=off",
                             "-S", "-gdb", f"tcp:127.0.0.1:{gdb_port}"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"socket://127.0.0.1:{serial_port}"
        flashed = edgec("flash", m4_build, "--probe", "gdb", "--gdb", f"127.0.0.1:{gdb_port}", "--port", url)
        assert flashed.returncode == 0, flashed.stderr
        size = elf_image.read_elf(m4_build / "project" / "firmware.elf").size
        assert f"wrote {size:,} B with gdb-multiarch through the GDB server at 127.0.0.1:{gdb_port} and verified" \
            in flashed.stderr
        assert "flashed: the device runs digits_cnn" in flashed.stdout
        r = api.bench(m4_build, DIGITS / "test.npz", limit=20, port=url, flash=False)
        assert r["agreement"]["device_vs_reference"] == 1.0 and r["flashed"] is None
        assert r["latency"]["median"] > 0          # SysTick under -icount: measured
    finally:
        qemu.kill()
        qemu.wait()


@pytest.fixture(scope="module")
def f405_build(stm32duino, example_build):
    """The build tests/test_firmware_vendor.py checks against the linker (conftest.example_build: once per run)."""
    return example_build("digits_cnn", "qemu-stm32f405")[1]


def test_stm32f405_is_the_nucleo_f446re_firmware_with_two_named_deviations(f405_build):
    board, nucleo = load_board("qemu-stm32f405"), load_board("nucleo-f446re")
    assert (board.pio_platform, board.pio_board, board.framework) == \
        (nucleo.pio_platform, nucleo.pio_board, nucleo.framework)
    assert board.emulator_deviations == ("reset-clock", "polled-tx")
    ini = (f405_build / "project" / "platformio.ini").read_text()
    assert "board = nucleo_f446re\n" in ini and "framework = arduino\n" in ini
    assert "-DEDGEC_EMULATOR_RESET_CLOCK" in ini and "-DEDGEC_EMULATOR_POLLED_TX" in ini
    main = (f405_build / "project" / "src" / "main.cpp").read_text()
    assert re.search(r"#if defined\(EDGEC_EMULATOR_RESET_CLOCK\)\n(//.*\n)+extern \"C\" void SystemClock_Config", main)
    assert "#if defined(EDGEC_EMULATOR_POLLED_TX)" in main


def test_stm32f405_flashed_through_qemus_gdb_stub_and_benched_bit_exact(f405_build, tmp_path):
    flashed = edgec("flash", f405_build, "--probe", "gdb")     # QEMU started halted, loaded through its stub
    assert flashed.returncode == 0, flashed.stderr
    assert re.search(r"wrote [\d,]+ B with gdb-multiarch through the GDB server at 127\.0\.0\.1:\d+ and verified",
                     flashed.stderr)
    assert "flashed: the device runs digits_cnn" in flashed.stdout
    r = api.bench(f405_build, DIGITS / "test.npz", limit=30, probe="gdb", report_dir=tmp_path)
    size = elf_image.read_elf(f405_build / "project" / "firmware.elf").size
    assert r["flashed"]["verified"] and r["flashed"]["bytes"] == size and r["flashed"]["tool"] == "gdb-multiarch"
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == 30
    m = r["memory"]                                # the STM32duino harness paints its stack (edgec_stack_mcu.c)
    assert 0 < m["stack_used_bytes"] < m["stack_reserved_bytes"] < load_board("qemu-stm32f405").ram_bytes
    assert m["total_ram_bytes"] == m["static_ram_bytes"] + m["stack_used_bytes"]
    lat = r["latency"]                             # QEMU has no DWT: not measured, never 0
    assert lat["median"] is None and "dwt-cyccnt counter read 0" in lat["not_measured"]
    saved = json.loads((tmp_path / "bench-report.json").read_text())
    assert saved["latency"]["not_measured"] == lat["not_measured"]
    assert f"latency: not measured ({lat['not_measured']})" in report.summary_lines(r)
