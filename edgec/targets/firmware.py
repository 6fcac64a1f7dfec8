"""Model library + board -> PlatformIO project -> firmware (ELF and its flash/RAM use).

One PlatformIO project per build: any change to a project's configuration makes PlatformIO wipe
the build folders of all its environments.
"""
from __future__ import annotations

import functools

import os
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from edgec.targets.boards import Board
from edgec.errors import EdgecError
from edgec.targets import elf, packages
from edgec.targets.pio import OFFLINE_HINT, registry_reachable, run_pio
from edgec.resources import resource_dir
from edgec.plan.regions import REGIONS_LD_SUFFIX
from edgec.settings import Settings

LINK_FILES = ("edgec_link.c", "edgec_link.h", "edgec_timed.h")
# A board with a vendor framework gets edgec's board API from these (boards/platforms/common/) plus a
# rendered templates/<framework>_main.cpp.j2; edgec's local platforms bring their own BSP.
HARNESS_FILES = ("edgec_board.h", "edgec_ticks_mcu.c", "edgec_stack_mcu.c")
# PlatformIO extra script (boards/platforms/common/) that compiles the harness for size on every board
HARNESS_SIZE_SCRIPT = "edgec_harness_size.py"
# the benchmark firmware's protocol: edgec's framed link, or the MLPerf Tiny runner's text protocol
PROTOCOLS = {"edgec": ("bench_main.c.j2", LINK_FILES),
             "mlperf": ("mlperf_main.c.j2", ("edgec_mlperf.c", "edgec_mlperf.h", "edgec_timed.h")),
             # the test inputs compiled into the image (edgec/bench/dataset_flash.py)
             "dataset": ("dataset_main.c.j2", ("edgec_dataset.c", "edgec_dataset.h", "edgec_timed.h"))}
# counters that tick at the core clock: the firmware reports the clock it really runs at (CMSIS SystemCoreClock)
CORE_CLOCK_TIMERS = ("dwt-cyccnt",)
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Sizes from the ELF's section headers (`objdump -h`), whatever the linker script calls its sections:
# flash = every allocated section stored in the image (code, constants such as STM32duino's separate
# .rodata, .ARM/.ARM.exidx, the init/fini arrays, the .data image); RAM = every allocated section that
# lives in RAM (.data, .bss, .noinit, the stack and STM32duino's minimum heap + stack ._user_heap_stack).
# Not counted: edgec's own platforms' .heap, which is "whatever RAM is left", not a reservation.
_UNRESERVED_SECTIONS = {".heap"}
# what the linker says it placed in each memory region (-Wl,--print-memory-usage, in the build log)
_LINKER_USAGE_RE = re.compile(r"^\s*(?P<region>[A-Za-z_][\w.]*):\s+(?P<used>\d+)\s*(?P<unit>B|KB|MB|GB)\s+\d+",
                              re.MULTILINE)


@dataclass(frozen=True)
class Firmware:
    elf: Path          # the program the board runs (an ELF; for the host board a host executable)
    flash_bytes: int   # every allocated section stored in the image: code, constants, the .data image
    ram_bytes: int     # every allocated RAM section: .data, .bss, reserved stack / minimum heap (host: data + bss)
    linker_usage: dict = field(default_factory=dict)   # {region: bytes} the linker printed (framework boards)


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


def _optimization(flag: str) -> bool:
    return flag.startswith("-O")


def harness_build_flags(board: Board) -> list[str]:
    """platformio.ini build_flags (every file, the framework's too).  On framework boards: the profile's
    flags except its optimization level (see src_build_flags), the counter edgec_ticks_mcu.c reads, frame
    sizes of every function (-fstack-usage: the framework's main() is on the stack estimate's chain) and
    the linker's own region usage in the build log (--print-memory-usage, checked against edgec's sizes)."""
    if not board.framework:
        return list(board.build_flags)
    flags = [f for f in board.build_flags if not _optimization(f)]
    flags.append(f"-DEDGEC_TIMER_{board.timing_method.upper().replace('-', '_')}")
    if board.timing_method in CORE_CLOCK_TIMERS:
        flags.append("-DEDGEC_TICK_HZ_CORE_CLOCK")      # the firmware reports its SystemCoreClock
    else:
        flags.append(f"-DEDGEC_TICK_HZ={board.tick_hz}u")
    flags += [f"-DEDGEC_EMULATOR_{d.upper().replace('-', '_')}" for d in board.emulator_deviations]
    if board.framework == "arduino" and board.pio_platform == "ststm32":
        # a whole link frame (edgec_link.c FRAME_MAX, ~270 B on the wire) fits STM32duino's Serial receive buffer
        # (64 B by default: bytes arriving faster than the harness read them were dropped and resent)
        flags.append("-DSERIAL_RX_BUFFER_SIZE=512")
        flags.append("-DEDGEC_STACK_NEWLIB_ESTACK")     # stack high-water mark by painting (edgec_stack_mcu.c)
    return flags + ["-fstack-usage", "-Wl,--print-memory-usage"]


def core_define(board: Board) -> list[str]:
    """The core as a macro for the runtime's per-core code choices (gcc defines none: -mcpu=cortex-m4 and
    cortex-m7 differ only in their FPU's macros): -DEDGEC_CPU_CORTEX_M7 for cpu "cortex-m7", one for every
    Cortex-M; none elsewhere.  A -D, so `edgec export BUILD_DIR` hands it on with the build's other code flags."""
    if not board.cpu.startswith("cortex-"):
        return []
    return [f"-DEDGEC_CPU_{board.cpu.upper().replace('-', '_')}"]


def src_build_flags(board: Board) -> list[str]:
    """platformio.ini build_src_flags: edgec's own sources (model library, runtime, harness).  PlatformIO
    appends them after the framework's flags, so on framework boards the profile's optimization level
    (-O2) goes here: in build_flags it came before STM32duino's -Os, and -Os won.  -frecord-gcc-switches
    keeps each object's command line (.GCC.command.line) so the report can say how the model was built."""
    if board.framework:
        # a fresh number per project: edgec's sources always miss PlatformIO's build cache (it keeps objects,
        # not the .su files the stack estimate reads) while the framework's objects come from it
        build_id = f"-DEDGEC_BUILD_ID=0x{secrets.randbits(64):016x}ull"
        return ["-Wall", "-fstack-usage", "-frecord-gcc-switches", build_id, *core_define(board),
                *[f for f in board.build_flags if _optimization(f)]]
    return ["-std=c99", "-Wall", "-Wextra", "-Werror", "-fstack-usage", "-frecord-gcc-switches", *core_define(board)]


@functools.lru_cache(maxsize=None)
def _project_environment() -> jinja2.Environment:
    """Project templates keep their blank lines (no trim_blocks); one environment, templates compiled once."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _render(template: str, **values) -> str:
    return _project_environment().get_template(template).render(**values)


def write_project(project_dir: Path, board: Board, model_dir: Path, model_name: str, protocol: str = "edgec",
                  mlperf_model: str | None = None, mlperf: dict | None = None, dataset_bytes: int = 0, *,
                  core: Path, code_in_ram: bool = False) -> Path:
    """Render a PlatformIO project building the model library in model_dir with the benchmark main
    (protocol "edgec": edgec's serial link; "mlperf": the MLPerf Tiny runner's protocol, configured by
    `mlperf`, edgec.targets.mlperf_firmware.settings; "dataset": the test inputs in a dataset_bytes blob in
    flash, edgec/bench/dataset_flash.py); core: edgec's PlatformIO core (Settings.platformio_home), whose
    build cache a vendor framework's build shares. code_in_ram: the model library's runtime code run from the
    board's code RAM (edgec/targets/code_ram.py)."""
    project_dir, model_dir = Path(project_dir), Path(model_dir)
    if not _IDENT_RE.match(model_name):
        raise EdgecError(f"model name '{model_name}' is not a C identifier")
    for ext in (".c", ".h"):
        if not (model_dir / f"{model_name}{ext}").is_file():
            raise EdgecError(f"model library {model_dir} has no {model_name}{ext}; generate the model first")
    src = project_dir / "src"
    if src.exists() or src.is_symlink():
        from edgec import outputs
        outputs.remove_made(src)          # the sources an earlier write_project put there (a link: only the link)
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
    if protocol == "mlperf" and not re.match(r"^[A-Za-z0-9_.-]{1,40}$", mlperf_model):   # only the runner's limit
        raise EdgecError(f"MLPerf model name '{mlperf_model}' must be 1-40 letters, digits, '_', '.' or '-' "
                         "(e.g. kws01, vww01, ad01, ic01)")
    harness = resource_dir("runtime_c") / "harness"     # the firmware harness, never part of a model library
    for name in runtime_files:
        shutil.copy2(harness / name, src / name)
    if protocol == "mlperf" and mlperf is None:
        raise EdgecError("an MLPerf firmware needs its settings (edgec.targets.mlperf_firmware.settings)")
    if protocol == "mlperf" and mlperf.get("stream"):       # sww01: the audio front end and its tables
        from edgec.targets import audio_frontend
        for name in ("edgec_audio_frontend.c", "edgec_audio_frontend.h"):
            shutil.copy2(harness / name, src / name)
        tables = audio_frontend.Tables(mlperf["stream"]["input_scale"])
        (src / "edgec_afe_tables.c").write_text(audio_frontend.c_tables(tables))
    values = dict(name=model_name, NAME=model_name.upper(), board=board, mlperf_model=mlperf_model,
                  mlperf=mlperf if protocol == "mlperf" else None, dataset_bytes=dataset_bytes)
    main_file = "bench_main.c" if board.framework else "main.c"
    (src / main_file).write_text(_render(main_template, **values))
    common = resource_dir("boards") / "platforms" / "common"
    shutil.copy2(common / HARNESS_SIZE_SCRIPT, project_dir / HARNESS_SIZE_SCRIPT)
    if board.framework:
        for name in HARNESS_FILES:
            shutil.copy2(common / name, src / name)
        (src / "main.cpp").write_text(_render(f"{board.framework}_main.cpp.j2", **values))
    build_flags = harness_build_flags(board)
    options = board_options(board)
    if code_in_ram:     # the kernels' text run from the board's code RAM (edgec/targets/code_ram.py)
        from edgec.targets import code_ram
        (project_dir / code_ram.SCRIPT).write_text(
            code_ram.linker_script(board, code_ram.runtime_objects(model_dir, model_name)))
        far = code_ram.far_ram(board) is not None and code_ram.has_far_weights(model_dir / f"{model_name}.c")
        (src / code_ram.COPY_FILE).write_text(code_ram.copy_source(far))
        if far:         # --weights-in-ram: the largest weights in the RAM above the alias
            (project_dir / code_ram.FAR_SCRIPT).write_text(code_ram.far_script(board))
            build_flags.append(f"-Wl,-T,$PROJECT_DIR/{code_ram.FAR_SCRIPT}")
        build_flags.append(f"-Wl,-T,$PROJECT_DIR/{code_ram.SCRIPT}")
        limit = code_ram.ram_limit(board)
        if limit is not None:
            options = [(k, v) for k, v in options if k != "board_upload.maximum_ram_size"]
            options.append(("board_upload.maximum_ram_size", str(limit)))
    regions_ld = model_dir / f"{model_name}{REGIONS_LD_SUFFIX}"
    if regions_ld.is_file():    # arena pieces in other RAM regions: a second linker script places them
        shutil.copy2(regions_ld, project_dir / "edgec_regions.ld")
        build_flags.append("-Wl,-T,$PROJECT_DIR/edgec_regions.ld")
    ini = _render("platformio.ini.j2", env_name=env_name(board), platform=platform_spec(board),
                  board_options=options, build_flags=build_flags,
                  src_flags=src_build_flags(board), extra_script=HARNESS_SIZE_SCRIPT, build_cache_dir=Path(core) / "build-cache" if board.framework else None,
                  **values)
    (project_dir / "platformio.ini").write_text(ini)
    return project_dir


def _program(build_dir: Path) -> Path:
    for name in ("firmware.elf", "program", "program.exe"):
        if (build_dir / name).is_file():
            return build_dir / name
    raise EdgecError(f"the build finished but left no firmware in {build_dir}; see the build log")



def section_table(program: Path, prefix: str = "") -> list[dict]:
    """The ELF's sections: name, size, vma, lma and flags (ALLOC, LOAD as objdump -h names them), read by
    edgec/targets/elf.py (prefix: unused, any target's ELF reads alike)."""
    return [{"name": s.name, "size": s.size, "vma": s.vma, "lma": s.lma,
             "flags": {f for f, on in (("ALLOC", s.alloc), ("LOAD", s.load), ("CODE", s.code)) if on}}
            for s in elf.sections(program)]


def firmware_sizes(program: Path, host: bool, prefix: str = "") -> tuple[int, int]:
    """(flash_bytes, ram_bytes) of a built program (see Firmware)."""
    if host:   # as `size -B` counts a host program: text + data, data + bss
        text, data, bss = elf.berkeley_sizes(program)
        return text + data, data + bss
    flash = ram = 0
    for sec in section_table(program):
        if "ALLOC" not in sec["flags"]:
            continue
        stored = "LOAD" in sec["flags"]
        if stored:
            flash += sec["size"]
        if (not stored or sec["vma"] != sec["lma"]) and sec["name"] not in _UNRESERVED_SECTIONS:
            ram += sec["size"]
    return flash, ram


def linker_memory_usage(build_log: str) -> dict[str, int]:
    """{region: bytes used} as the linker printed it (-Wl,--print-memory-usage), e.g. FLASH, RAM, RAM_D1."""
    scale = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}
    return {m["region"]: int(m["used"]) * scale[m["unit"]] for m in _LINKER_USAGE_RE.finditer(build_log)}


def check_packages(board: Board, log_file: Path, settings: Settings, log=print) -> None:
    """Before `pio run`: the PlatformIO platform and packages the board needs in edgec's core.  Missing ones
    are downloaded by PlatformIO when its registry is reachable; offline (or with EDGEC_OFFLINE=1:
    settings.offline) this fails at once, naming them, instead of after PlatformIO's registry time-outs."""
    core = settings.platformio_home
    lacking = packages.missing(board, core)
    if not lacking:
        return
    names = ", ".join(lacking)
    if not settings.offline and registry_reachable():
        if log:
            log(f"{board.name}: PlatformIO downloads {names} (once; later builds work offline)")
        return
    message = (f"board {board.name} needs PlatformIO's {names}, not installed in {core}, and PlatformIO's "
               f"registry cannot be reached; {OFFLINE_HINT}")
    from edgec import outputs
    outputs.write_text(log_file, f"[edgec] {message}\n[edgec] installed: {packages.installed(core)}\n",
                       what="build log")
    raise EdgecError(f"{message} (log: {log_file})")


def build_firmware(project_dir: Path, board: Board, settings: Settings, log=print,
                   log_file: Path | None = None) -> Firmware:
    """`pio run` the project with edgec's PlatformIO core, offline flag and build timeout (settings); the
    firmware is also copied to project_dir/firmware.elf (host: firmware). The build's output goes to log_file
    (default project_dir/build.log) and stays there when the build fails; after a success it is moved to
    project_dir/build.log."""
    project_dir = Path(project_dir)
    kept = project_dir / "build.log"
    log_file = Path(log_file) if log_file else kept
    if log:
        log(f"building firmware for {board.name} in {project_dir}")
    with packages.core_lock(settings.platformio_home, shared=True):      # no bundle install meanwhile
        check_packages(board, log_file, settings, log)
        try:
            output = run_pio(["run", "-e", env_name(board)], project_dir, log_file, settings.platformio_home,
                             settings.build_timeout, log=log)
        except EdgecError:
            if (project_dir / "edgec_code_ram.ld").is_file() and log_file.is_file():    # --code-in-ram
                from edgec.targets import code_ram
                code_ram.check_link(log_file.read_text(errors="replace"), board)
            raise
    if log_file != kept:
        os.replace(log_file, kept)      # edgec's own log (outputs.write_text wrote it) into the build folder
    program = _program(project_dir / ".pio" / "build" / env_name(board))
    host = program.suffix != ".elf"
    dest = project_dir / ("firmware" if host else "firmware.elf")
    shutil.copy2(program, dest)
    flash, ram = firmware_sizes(dest, host, board.toolchain_prefix or "")
    return Firmware(elf=dest, flash_bytes=flash, ram_bytes=ram, linker_usage=linker_memory_usage(output))
