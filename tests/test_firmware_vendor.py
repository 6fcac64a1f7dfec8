"""The three NUCLEO profiles compiled with their real vendor framework (STM32duino 2.12.0 on PlatformIO's
ststm32 19.6.0, offline from ../shared/frameworks/stm32duino-offline.tar.xz through the `stm32duino`
fixture), and their build reports checked against the linker's own numbers.  Each board is built once per
run (the framework alone takes most of a minute to compile), the digits example, shared through
conftest.example_build.  In the default run: the NUCLEO-H743ZI2 (Cortex-M7, its arena in DTCM by a second linker
script beside the framework's) and the NUCLEO-F446RE firmware as qemu-stm32f405 builds it (the same
nucleo_f446re board, STM32duino variant and harness, plus the two emulator defines its main.cpp reads), the very
build tests/test_flash_gdb.py flashes and benches on QEMU; the nucleo-f446re profile itself, the NUCLEO-L4R5ZI
and one MLPerf Tiny model (KWS, on the L4R5ZI) with the sweeps.  Compiled, not run: nothing here claims a run
on silicon."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from edgec.targets.boards import load_board
from edgec.targets.firmware import section_table
from edgec.targets.fit import FRAMEWORK_MAIN_BYTES, stack_usage

NUCLEOS = ["nucleo-f446re", "nucleo-l4r5zi", "nucleo-h743zi2"]
# the default run builds the vendor framework for two of them (the suite's time: a fresh clone compiles each
# board's framework, ~30 s on an idle 2-core machine): the H743, and the F446RE's firmware as qemu-stm32f405 (same
# board, framework and harness; tests/test_flash_gdb.py runs that build on QEMU).  The F446RE profile's own
# build and the L4R5ZI's run with the sweeps.
BOARDS = ["qemu-stm32f405", "nucleo-h743zi2", *(pytest.param(b, marks=pytest.mark.sweep)
                                                for b in ("nucleo-f446re", "nucleo-l4r5zi"))]
# sections PlatformIO's ststm32 size report leaves out of "Flash" (its SIZEPROGREGEXP counts .text, .data,
# .rodata, .text.align and .ARM.exidx): the vector table, .ARM (exception index), the init/fini arrays
PIO_UNCOUNTED_FLASH = {".isr_vector", ".ARM", ".preinit_array", ".init_array", ".fini_array"}


@pytest.fixture(scope="session")
def nucleo_build(stm32duino, example_build):
    """nucleo_build(board) -> (build report, build folder): the digits example, built once per board and run."""
    return lambda board: example_build("digits_cnn", board)


def _pio_sizes(build_log: str) -> tuple[int, int]:
    """(flash, RAM) from PlatformIO's own size report in the build log."""
    flash = re.search(r"^Flash: .*\(used (\d+) bytes", build_log, re.MULTILINE)
    ram = re.search(r"^RAM: .*\(used (\d+) bytes", build_log, re.MULTILINE)
    assert flash and ram, build_log[-2000:]
    return int(flash[1]), int(ram[1])


def check_against_the_linker(report: dict, out: Path, board_name: str) -> None:
    """Flash = the image objcopy makes of the linker's load segments (firmware.bin); RAM = what the
    linker says it placed in RAM (--print-memory-usage); both within 1 %.  PlatformIO's own report differs
    by exactly the sections its size regexp leaves out (flash) and the minimum heap + stack reservation
    ._user_heap_stack (RAM)."""
    mem = report["memory"]
    project = out / "project"
    elf = out / report["firmware"]
    binary = next((project / ".pio" / "build").glob("*/firmware.bin"))
    assert abs(mem["flash_bytes"] - binary.stat().st_size) <= 0.01 * binary.stat().st_size, \
        (mem["flash_bytes"], binary.stat().st_size)
    sections = {s["name"]: s["size"] for s in section_table(elf)}
    # arena pieces in other RAM regions (edgec_regions.ld places them by address): the linker's region table
    # and PlatformIO's size report leave them out
    pieces = sum(v for k, v in sections.items() if k.startswith(".edgec_"))
    linker_ram = sum(v for k, v in mem["linker_region_usage"].items() if not k.startswith(("FLASH", "*"))) + pieces
    assert abs(mem["ram_bytes"] - linker_ram) <= 0.01 * linker_ram, (mem["ram_bytes"], mem["linker_region_usage"])
    pio_flash, pio_ram = _pio_sizes((project / "build.log").read_text())
    assert mem["flash_bytes"] - pio_flash == sum(sections.get(s, 0) for s in PIO_UNCOUNTED_FLASH)
    assert mem["ram_bytes"] - pio_ram - pieces == sections.get("._user_heap_stack", 0) > 0
    # the model's weights are in flash: STM32duino's own .rodata output section holds them
    assert sections[".rodata"] >= mem["weights_bytes"]
    assert mem["flash_bytes"] > sections[".text"] + sections[".rodata"] + sections[".isr_vector"]
    print(f"\n[{board_name}] {report['model']}: edgec flash {mem['flash_bytes']:,} B (firmware.bin "
          f"{binary.stat().st_size:,}, PlatformIO {pio_flash:,}), RAM {mem['ram_bytes']:,} B (linker {linker_ram:,}, "
          f"PlatformIO {pio_ram:,}), weights {mem['weights_bytes']:,} B, stack estimate "
          f"{mem['stack_estimate_bytes']} B, model built with {mem['model_optimization']}")


@pytest.mark.parametrize("board", BOARDS)
def test_vendor_build_sizes_agree_with_the_linker(board, nucleo_build):
    report, out = nucleo_build(board)
    check_against_the_linker(report, out, board)


@pytest.mark.parametrize("board", BOARDS)
def test_the_model_is_compiled_with_the_profiles_optimization_not_the_frameworks(board, nucleo_build):
    report, out = nucleo_build(board)
    wanted = [f for f in load_board(board).build_flags if f.startswith("-O")][-1]
    assert report["memory"]["model_optimization"] == wanted == "-O2"


@pytest.mark.parametrize("board", BOARDS)
def test_memory_checks_are_measured_on_framework_boards(board, nucleo_build):
    report, out = nucleo_build(board)
    mem = report["memory"]
    # the model's constants all stay in flash; the arena is `arena` when in pieces over several RAM regions (no
    # context API then), else `static_arena`
    pieces = "regions" in json.loads((out / "plan.json").read_text())
    assert mem["model_ram_symbols"] == (["arena"] if pieces else ["static_arena"])
    frames = stack_usage(next(d for d in (out / "project" / ".pio" / "build").glob("*") if d.is_dir()))
    entry = frames.get("main", FRAMEWORK_MAIN_BYTES) + frames["setup"] + frames["edgec_bench_main"] \
        + frames["edgec_link_serve"]
    assert entry < mem["stack_estimate_bytes"] < 4096
    assert mem["total_ram_bytes"] == mem["static_ram_bytes"] + mem["stack_estimate_bytes"]
    assert mem["static_ram_bytes"] >= mem["arena_bytes"]


def test_the_h743_arena_is_in_dtcm(nucleo_build):
    """NUCLEO-H743ZI2 lists DTCM (fastest) beside AXI SRAM: the arena goes to DTCM, the firmware's data stays
    in AXI SRAM (RAM_D1), and the build links with the vendor framework's own linker script."""
    report, out = nucleo_build("nucleo-h743zi2")
    plan = json.loads((out / "plan.json").read_text())
    assert [(r["region"], r["section"]) for r in plan["regions"]] == [("DTCM", ".edgec_dtcm")]
    elf = out / report["firmware"]
    symbols = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    arena = next(int(line.split()[0], 16) for line in symbols.splitlines() if line.endswith(" arena"))
    assert arena == 0x20000000
    assert {s["name"]: s["vma"] for s in section_table(elf)}[".data"] >= 0x24000000
    assert report["memory"]["fit_estimate"]["ram"]["regions"]["DTCM"]["arena"] == report["memory"]["arena_bytes"]


@pytest.mark.parametrize("board", BOARDS)
def test_the_firmware_reports_the_clock_it_runs_at(board, nucleo_build):
    """edgec_tick_hz() returns CMSIS's SystemCoreClock (what the framework's clock set-up left there),
    not a number from the profile; the bench converts cycles with it (tests/test_bench_runner.py)."""
    report, out = nucleo_build(board)
    ticks = next((out / "project" / ".pio" / "build").glob("*/src/edgec_ticks_mcu.c.o"))
    undefined = subprocess.run(["arm-none-eabi-nm", "-u", str(ticks)], capture_output=True, text=True).stdout
    assert "SystemCoreClock" in undefined
    assert "EDGEC_TICK_HZ=" not in (out / "project" / "platformio.ini").read_text()


@pytest.mark.sweep     # (the suite's time: each NUCLEO board's vendor build runs by default above)
def test_an_mlperf_model_builds_with_the_vendor_framework(stm32duino, mlperf_build):
    report, out, _ = mlperf_build("kws", "nucleo-l4r5zi")
    check_against_the_linker(report, out, "nucleo-l4r5zi")
    mem = report["memory"]
    assert mem["model_ram_symbols"] == ["static_arena"] and mem["model_optimization"] == "-O2"
    assert mem["stack_estimate_bytes"] and mem["total_ram_bytes"]
