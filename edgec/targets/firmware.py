"""Model library + board -> PlatformIO project -> firmware (ELF and its flash/RAM use).

One PlatformIO project per build: any change to a project's configuration makes PlatformIO wipe
the build folders of all its environments.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import jinja2

from edgec.targets.boards import Board
from edgec.errors import EdgecError
from edgec.targets.pio import run_pio
from edgec.resources import resource_dir

LINK_FILES = ("edgec_link.c", "edgec_link.h")
# A board with a vendor framework gets edgec's board API from these (boards/platforms/common/) plus a
# rendered templates/<framework>_main.cpp.j2; edgec's local platforms bring their own BSP.
HARNESS_FILES = ("edgec_board.h", "edgec_ticks_mcu.c")
# the benchmark firmware's protocol: edgec's framed link, or the MLPerf Tiny runner's text protocol
PROTOCOLS = {"edgec": ("bench_main.c.j2", LINK_FILES),
             "mlperf": ("mlperf_main.c.j2", ("edgec_mlperf.c", "edgec_mlperf.h"))}
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Sizes from `arm-none-eabi-size -A`: flash = code, constants and the .data image;
# RAM = .data + .bss + the reserved stack (the heap is whatever RAM is left, not counted).
_FLASH_SECTIONS = {".isr_vector", ".text", ".ARM.extab", ".ARM.exidx", ".init_array", ".data"}
_RAM_SECTIONS = {".data", ".bss", ".stack"}


@dataclass(frozen=True)
class Firmware:
    elf: Path          # the program the board runs (an ELF; for the host board a host executable)
    flash_bytes: int   # code + constants + initialised-data image
    ram_bytes: int     # static RAM: .data + .bss + reserved stack (host: data + bss)


def env_name(board: Board) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", board.name)


def platform_spec(board: Board) -> str:
    local = board.local_platform_dir
    return f"symlink://{local.resolve()}" if local else board.pio_platform


def board_options(board: Board) -> list[tuple[str, str]]:
    options = []
    if board.local_platform_dir and board.emulated:
        # the profile's memory sizes are enforced by the linker script the platform renders
        options += [("board_upload.maximum_ram_size", str(board.ram_bytes)),
                    ("board_upload.maximum_size", str(board.flash_bytes))]
    return options + list(board.pio_options)


def harness_build_flags(board: Board) -> list[str]:
    """The profile's build flags, plus for framework boards the counter edgec_ticks_mcu.c reads."""
    flags = list(board.build_flags)
    if board.framework:
        flags += [f"-DEDGEC_TIMER_{board.timing_method.upper().replace('-', '_')}",
                  f"-DEDGEC_TICK_HZ={board.tick_hz}u"]
    return flags


def _render(template: str, **values) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template(template).render(**values)


def write_project(project_dir: Path, board: Board, model_dir: Path, model_name: str, protocol: str = "edgec",
                  mlperf_model: str | None = None, mlperf: dict | None = None) -> Path:
    """Render a PlatformIO project building the model library in model_dir with the benchmark main
    (protocol "edgec": edgec's serial link; "mlperf": the MLPerf Tiny runner's protocol, configured by
    `mlperf`, edgec.targets.mlperf_firmware.settings)."""
    project_dir, model_dir = Path(project_dir), Path(model_dir)
    if not _IDENT_RE.match(model_name):
        raise EdgecError(f"model name '{model_name}' is not a C identifier")
    for ext in (".c", ".h"):
        if not (model_dir / f"{model_name}{ext}").is_file():
            raise EdgecError(f"model library {model_dir} has no {model_name}{ext}; generate the model first")
    src = project_dir / "src"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for f in sorted(model_dir.rglob("*")):     # the runtime's fast/ subfolder too: PlatformIO builds src/ recursively
        if f.is_file() and f.suffix in (".c", ".h"):
            dest = src / f.relative_to(model_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
    if protocol not in PROTOCOLS:
        raise EdgecError(f"unknown benchmark protocol '{protocol}': choose {' or '.join(PROTOCOLS)}")
    main_template, runtime_files = PROTOCOLS[protocol]
    mlperf_model = mlperf_model or model_name
    if not re.match(r"^[A-Za-z0-9_.-]{1,40}$", mlperf_model):
        raise EdgecError(f"MLPerf model name '{mlperf_model}' must be 1-40 letters, digits, '_', '.' or '-' "
                         "(e.g. kws01, vww01, ad01, ic01)")
    harness = resource_dir("runtime_c") / "harness"     # the firmware harness, never part of a model library
    for name in runtime_files:
        shutil.copy2(harness / name, src / name)
    if protocol == "mlperf" and mlperf is None:
        raise EdgecError("an MLPerf firmware needs its settings (edgec.targets.mlperf_firmware.settings)")
    values = dict(name=model_name, NAME=model_name.upper(), board=board, mlperf_model=mlperf_model,
                  mlperf=mlperf if protocol == "mlperf" else None)
    main_file = "bench_main.c" if board.framework else "main.c"
    (src / main_file).write_text(_render(main_template, **values))
    if board.framework:
        common = resource_dir("boards") / "platforms" / "common"
        for name in HARNESS_FILES:
            shutil.copy2(common / name, src / name)
        (src / "main.cpp").write_text(_render(f"{board.framework}_main.cpp.j2", **values))
    ini = _render("platformio.ini.j2", env_name=env_name(board), platform=platform_spec(board),
                  board_options=board_options(board), build_flags=harness_build_flags(board), **values)
    (project_dir / "platformio.ini").write_text(ini)
    return project_dir


def _program(build_dir: Path) -> Path:
    for name in ("firmware.elf", "program", "program.exe"):
        if (build_dir / name).is_file():
            return build_dir / name
    raise EdgecError(f"the build finished but left no firmware in {build_dir}; see the build log")


def _run_size(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise EdgecError(f"'{argv[0]}' not found: install binutils for this board (apt-get install "
                         "binutils-arm-none-eabi / binutils-riscv64-unknown-elf / binutils)") from None
    except subprocess.CalledProcessError as e:
        raise EdgecError(f"'{' '.join(argv)}' failed: {e.stderr.strip()}") from None


def firmware_sizes(program: Path, host: bool, prefix: str = "arm-none-eabi-") -> tuple[int, int]:
    """(flash_bytes, ram_bytes) of a built program (see Firmware); prefix = the board's toolchain."""
    if host:   # Berkeley format: text data bss dec hex filename
        line = _run_size(["size", "-B", "-d", str(program)]).splitlines()[1].split()
        text, data, bss = (int(v) for v in line[:3])
        return text + data, data + bss
    sections = {}
    for line in _run_size([f"{prefix}size", "-A", "-d", str(program)]).splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sections[parts[0]] = int(parts[1])
    flash = sum(v for k, v in sections.items() if k in _FLASH_SECTIONS)
    ram = sum(v for k, v in sections.items() if k in _RAM_SECTIONS)
    return flash, ram


def build_firmware(project_dir: Path, board: Board, log=print) -> Firmware:
    """`pio run` the project; the firmware is also copied to project_dir/firmware.elf (host: firmware)."""
    project_dir = Path(project_dir)
    if log:
        log(f"building firmware for {board.name} in {project_dir}")
    run_pio(["run", "-e", env_name(board)], project_dir, project_dir / "build.log", log=log)
    program = _program(project_dir / ".pio" / "build" / env_name(board))
    host = program.suffix != ".elf"
    dest = project_dir / ("firmware" if host else "firmware.elf")
    shutil.copy2(program, dest)
    flash, ram = firmware_sizes(dest, host, board.toolchain_prefix or "")
    return Firmware(elf=dest, flash_bytes=flash, ram_bytes=ram)
