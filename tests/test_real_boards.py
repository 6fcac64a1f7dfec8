"""Real boards whose frameworks are not here (their platforms come from PlatformIO's registry, or an offline bundle).
What can be checked offline, is: each profile yields an ordinary PlatformIO project with edgec's serial
harness; on Arm cores the model library, the C runtime, the link protocol, the benchmark main and the
cycle counter compile with the board's CPU flags (-Wall -Wextra -Werror) and link into the board's
flash/RAM minus the framework's reserved share; the Arduino glue (main.cpp) compiles against a stub of
the few Arduino calls it makes.  The vendor framework itself is compiled in tests/test_firmware_vendor.py
(the STM32 NUCLEO profiles, from the offline STM32duino bundle), and no profile claims hardware testing."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from onnx import helper

from conftest import EXAMPLES, library_sources, make_model, save
from edgec.codegen import cmodel as codegen
from edgec.api import compile_model
from edgec.targets.boards import list_boards
from edgec.errors import EdgecError
from edgec.targets import fit
from edgec.targets.firmware import harness_build_flags, write_project
from edgec.settings import Settings

REAL = [b for b in list_boards() if not b.emulated and b.cpu != "host"]
EXPECTED = {"nucleo-l4r5zi", "nucleo-f446re", "nucleo-h743zi2", "rpi-pico", "nano33ble", "esp32-s3"}

# Stand-in for the framework's serial glue (templates/arduino_main.cpp.j2): the same edgec_board.h
# functions and a main() that runs the harness, so the link pulls in everything the firmware uses.
SERIAL_STANDIN = r"""
#include "edgec_board.h"
int edgec_bench_main(void);
static volatile uint8_t rx;
void edgec_board_init(void) { }
void edgec_uart_putc(uint8_t c) { rx = c; }
void edgec_uart_write(const void *buf, size_t n) { const uint8_t *p = buf; while (n--) edgec_uart_putc(*p++); }
void edgec_uart_flush(void) { }
int edgec_uart_try_getc(void) { return rx; }
int edgec_uart_getc(void) { return rx; }
void edgec_exit(int code) { (void)code; for (;;) { } }
uint32_t SystemCoreClock = 16000000u;    /* CMSIS: the framework's clock set-up keeps it current */
extern uint8_t _end;                     /* the framework's syscalls: newlib's heap starts after .bss */
void *_sbrk(ptrdiff_t n) { static uint8_t *top = &_end; uint8_t *old = top; top += n; return old; }
int main(void) { return edgec_bench_main(); }
"""

ARDUINO_STUB = """
#pragma once
#include <stdint.h>
#include <stddef.h>
struct StubSerial {
    void begin(unsigned long) {}
    explicit operator bool() const { return true; }
    size_t write(uint8_t) { return 1; }
    size_t write(const uint8_t *, size_t n) { return n; }
    void flush() {}
    int available() { return 0; }
    int read() { return -1; }
};
extern StubSerial Serial;
void yield(void);
"""

LINKER_SCRIPT = """
MEMORY {{
  FLASH (rx) : ORIGIN = {flash_origin:#x}, LENGTH = {flash_len}
  RAM (rwx)  : ORIGIN = {ram_origin:#x}, LENGTH = {ram_len}
}}
SECTIONS {{
  .text : {{ *(.text*) *(.rodata*) . = ALIGN(4); }} > FLASH
  .ARM.exidx : {{ *(.ARM.exidx*) }} > FLASH
  .data : {{ *(.data*) . = ALIGN(4); }} > RAM AT > FLASH
  .bss (NOLOAD) : {{ *(.bss*) *(COMMON) . = ALIGN(4); _end = .; }} > RAM
  _estack = ORIGIN(RAM) + LENGTH(RAM);     /* STM32duino's linker scripts: the stack's top */
}}
"""


def test_the_six_real_boards_are_profiled_and_none_claims_hardware_testing():
    assert {b.name for b in REAL} == EXPECTED
    assert all(b.tested_on_hardware is False and b.framework == "arduino" for b in REAL)


@pytest.fixture(scope="module")
def digits_lib(tmp_path_factory):
    out = tmp_path_factory.mktemp("digits_lib")
    _, graph, plan = compile_model(EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz")
    codegen.generate(graph, plan, out, graph.name)
    return out, graph, plan


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; scripts/setup.sh installs it")
    return path


def _compile_and_link(board, src, tmp_path):
    """Link the project's C sources for the board's core into its memory; (flash, ram) in bytes."""
    (tmp_path / "standin.c").write_text(SERIAL_STANDIN)
    flash, ram = board.region("flash"), board.region("ram")
    (tmp_path / "board.ld").write_text(LINKER_SCRIPT.format(
        flash_origin=flash.origin, flash_len=board.flash_bytes - board.reserved_flash_bytes,
        ram_origin=ram.origin, ram_len=board.ram_bytes - board.reserved_ram_bytes))
    sources = library_sources(src) + [str(tmp_path / "standin.c")]
    elf = tmp_path / "harness.elf"
    cmd = [_tool(f"{board.toolchain_prefix}gcc"), *board.cpu_flags, *harness_build_flags(board), "-std=c99",
           "-Wall", "-Wextra", "-Werror", "-O2", "-ffunction-sections", "-fdata-sections", "-I", str(src),
           *sources, "--specs=nano.specs", "-nostartfiles", "-Wl,--gc-sections", "-Wl,--entry=main",
           "-T", str(tmp_path / "board.ld"), "-o", str(elf)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)      # (-fstack-usage writes .su files)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sizes = {}
    for line in subprocess.run([_tool(f"{board.toolchain_prefix}size"), "-A", "-d", str(elf)],
                               capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    flash_used = sizes.get(".text", 0) + sizes.get(".ARM.exidx", 0) + sizes.get(".data", 0)
    return flash_used, sizes.get(".data", 0) + sizes.get(".bss", 0)


@pytest.mark.parametrize("board", REAL, ids=[b.name for b in REAL])
def test_real_board_project_compiles_with_its_cpu_flags_and_fits(board, digits_lib, tmp_path):
    lib, graph, plan = digits_lib
    name, arena, weights = graph.name, plan.arena_bytes, graph.weights_bytes()
    project = write_project(tmp_path / "project", board, lib, name, core=Settings.from_environment().platformio_home)
    ini = (project / "platformio.ini").read_text()
    assert f"platform = {board.pio_platform}\n" in ini and f"board = {board.pio_board}\n" in ini
    assert "framework = arduino\n" in ini and "symlink://" not in ini
    timer = "-DEDGEC_TIMER_" + board.timing_method.upper().replace("-", "_")
    rate = "-DEDGEC_TICK_HZ_CORE_CLOCK" if board.timing_method == "dwt-cyccnt" else f"-DEDGEC_TICK_HZ={board.tick_hz}u"
    assert timer in ini and rate in ini
    src = project / "src"
    assert {"main.cpp", "bench_main.c", "edgec_ticks_mcu.c", "edgec_board.h", "edgec_link.c", f"{name}.c"} <= \
        {p.name for p in src.iterdir()}
    assert "int edgec_bench_main(void)" in (src / "bench_main.c").read_text()
    fit.check(graph, plan, board)                 # model, runtime and stack fit what the framework leaves

    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "Arduino.h").write_text(ARDUINO_STUB)
    if board.arch != "arm":           # Xtensa: no toolchain here; the glue is checked with the host g++
        subprocess.run([_tool("g++"), "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", str(stub),
                        "-I", str(src), str(src / "main.cpp")], check=True, capture_output=True, text=True)
        print(f"\n[{board.name}] not compiled (no {board.cpu} toolchain here): arena {arena:,} B, weights "
              f"{weights:,} B vs {board.ram_bytes - board.reserved_ram_bytes:,} B RAM / "
              f"{board.flash_bytes - board.reserved_flash_bytes:,} B flash left for the model")
        return
    subprocess.run([_tool("arm-none-eabi-g++"), *board.cpu_flags, "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                    "-I", str(stub), "-I", str(src), str(src / "main.cpp")], check=True, capture_output=True, text=True)
    flash_used, ram_used = _compile_and_link(board, src, tmp_path)
    print(f"\n[{board.name}] {' '.join(board.cpu_flags)}: model + harness flash {flash_used:,} B "
          f"(weights {weights:,}), RAM {ram_used:,} B (arena {arena:,}); left for them: "
          f"{board.flash_bytes - board.reserved_flash_bytes:,} B flash, {board.ram_bytes - board.reserved_ram_bytes:,} B RAM")
    assert weights < flash_used <= board.flash_bytes - board.reserved_flash_bytes
    assert arena < ram_used <= board.ram_bytes - board.reserved_ram_bytes


# the calls MLPerf energy mode's glue adds (the EEMBC timestamp pin), as STM32duino declares them
ENERGY_STUB = ARDUINO_STUB + """
enum { LOW = 0, HIGH = 1, OUTPUT_OPEN_DRAIN = 4, D7 = 7 };
void pinMode(uint32_t pin, uint32_t mode);
void digitalWrite(uint32_t pin, uint32_t value);
"""


def test_the_mlperf_energy_glue_compiles_for_the_nucleo_l4r5zi(digits_lib, tmp_path):
    """MLPerf Tiny energy mode on the reference board: main.cpp drives the profile's timestamp pin (D7, open drain,
    idle high) and opens the UART at 9,600 baud, and compiles with the L4R5ZI's CPU flags against the Arduino stub.
    The whole firmware compiled with STM32duino is tests/test_mlperf_firmware.py's sweep test; the energy
    harness itself (timestamp pulses, result lines) runs on the emulated Cortex-M4 in the default run there."""
    from edgec.targets import mlperf_firmware
    board = next(b for b in REAL if b.name == "nucleo-l4r5zi")
    lib, graph, _ = digits_lib
    mlperf = mlperf_firmware.settings(board, graph, "digits01", "energy")
    assert mlperf["timestamp_pin"] == "D7" and mlperf["baud"] == 9600
    project = write_project(tmp_path / "project", board, lib, graph.name, "mlperf", "digits01", mlperf,
                            core=Settings.from_environment().platformio_home)
    main = (project / "src" / "main.cpp").read_text()
    assert "digitalWrite(D7, level ? HIGH : LOW)" in main and "Serial.begin(9600)" in main
    assert "pinMode(D7, OUTPUT_OPEN_DRAIN)" in main
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "Arduino.h").write_text(ENERGY_STUB)
    subprocess.run([_tool("arm-none-eabi-g++"), *board.cpu_flags, "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                    "-I", str(stub), "-I", str(project / "src"), str(project / "src" / "main.cpp")], check=True,
                   capture_output=True, text=True)

def test_a_model_too_big_for_the_f446re_fails_its_link_but_fits_the_l4r5zi(tmp_path):
    """256x256 image: 2 x 64 KB arena > the 120 KB the F446RE leaves; the L4R5ZI's 632 KB take it."""
    model = make_model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                       ("x", [1, 1, 256, 256]), ("y", [1, 1, 256, 256]), {"w": np.ones((1, 1, 3, 3)) / 9})
    path = save(model, tmp_path, "big.onnx")
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(0).random((2, 1, 256, 256), np.float32))
    _, graph, plan = compile_model(path, calib)
    lib = tmp_path / "lib"
    codegen.generate(graph, plan, lib, graph.name)
    boards = {b.name: b for b in REAL}
    with pytest.raises(EdgecError, match=r"does not fit board nucleo-f446re: .* of RAM \(arena 131,\d\d\d B .*"
                                         r"\+ framework [\d,]+ B\) but the board has 131,072 B"):
        fit.check(graph, plan, boards["nucleo-f446re"])
    core = Settings.from_environment().platformio_home
    f446 = write_project(tmp_path / "f446", boards["nucleo-f446re"], lib, graph.name, core=core) / "src"
    with pytest.raises(AssertionError, match="region .RAM. overflowed"):
        _compile_and_link(boards["nucleo-f446re"], f446, tmp_path)
    l4 = write_project(tmp_path / "l4", boards["nucleo-l4r5zi"], lib, graph.name, core=core) / "src"
    flash_used, ram_used = _compile_and_link(boards["nucleo-l4r5zi"], l4, tmp_path)
    assert plan.arena_bytes < ram_used <= boards["nucleo-l4r5zi"].ram_bytes
