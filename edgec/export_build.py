"""`edgec export BUILD_DIR`: a benched build's model library, exactly as it was benched, as a library for someone
else's firmware.

The library is the build's `model/` folder copied byte for byte (the generated C, the runtime it was built with,
a regions linker script if any), so the model hash of the export is the bench report's. The compile flags come
from the benched firmware itself: its model object's command line, which the firmware build records
(-frecord-gcc-switches, edgec/targets/firmware.py src_build_flags) in the section .GCC.command.line (read with
pyelftools). They are split in two: the flags that decide the speed (optimization and code generation: -O*,
-f*, -D*) are applied to the library's sources by the CMake, Zephyr and PlatformIO files and stated for
Arduino (which cannot set a library's flags); the target flags (-mcpu, -mfpu, -mfloat-abi, -mthumb...) are the
user's toolchain's and only stated (applied to one library, a different float ABI would break the link).
Options that would change the model (--calib, --name, quantization, --optimize, --ram-budget) are refused.
"""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Callable

from edgec.errors import EdgecError
from edgec.export import FORMATS, check_metadata, example_sample, write_layout
from edgec.outputs import check_output_folder
from edgec.quant import artifact
from edgec.staging import staged_folder
from edgec.targets.build_folder import REPORT, load_build
from edgec.targets.elf import COMMAND_LINE_SECTION, recorded_switches
from edgec.targets.fit import objects_of

# recorded flags that say nothing about the code (warnings, outputs, dependency files, edgec's bookkeeping)
_NOT_CODE = ("-W", "-I", "-o", "-M", "-fstack-usage", "-frecord-gcc-switches", "-DEDGEC_BUILD_ID",
             "-fdiagnostics", "-dumpbase", "-auxbase", "-c")
_TARGET = ("-mcpu", "-march", "-mtune", "-mfpu", "-mfloat-abi", "-mthumb", "-marm", "-mabi")


def is_build_folder(path) -> bool:
    return (Path(path) / REPORT).is_file()


def recorded_command_line(obj: Path) -> list[str]:
    """The switches gcc recorded in an object (.GCC.command.line), in order; [] when it has none."""
    data = recorded_switches(obj)
    words = []
    for part in data.split(b"\0"):
        words += shlex.split(part.decode("utf-8", "replace"))
    return words


def split_flags(words: list[str]) -> tuple[list[str], list[str]]:
    """(the flags that decide the code's speed, the target flags) of a recorded command line; the last
    optimization level only (gcc applies the last one)."""
    code, target = [], []
    for w in words:
        if not w.startswith("-") or w.startswith(_NOT_CODE):
            continue
        if w.startswith(_TARGET):
            target.append(w) if w not in target else None
        elif w.startswith(("-O", "-f", "-D")) and w not in code:     # (-std: the layouts set C99 themselves)
            code.append(w)
    levels = [w for w in code if w.startswith("-O")]
    code = [w for w in code if not w.startswith("-O")]
    return (levels[-1:] + code), target


def benched_flags(build_dir: Path, name: str, firmware: Path) -> dict:
    """The compile flags of the build's model object, as the export carries them."""
    pio_build = build_dir / "project" / ".pio" / "build"
    objects = objects_of(pio_build, (name,)) if pio_build.is_dir() else []
    words = recorded_command_line(objects[0]) if objects else []
    if not words:
        raise EdgecError(f"{build_dir}: the firmware's objects do not say how the model was compiled (no "
                         f"{COMMAND_LINE_SECTION} in project/.pio); run `edgec build` again, then export it")
    applied, target = split_flags(words)
    return {"build": str(build_dir), "applied": applied, "target": target,
            "source": f"{COMMAND_LINE_SECTION} of {objects[0].relative_to(build_dir).as_posix()}"}


def _library_files(model_dir: Path) -> list[Path]:
    """The files of the build's model/ (what edgec wrote there: regular files and folders); a link or anything
    else is refused, not followed (a build folder handed over with a link to a user's key or home folder would
    have put them in the library the user ships)."""
    if model_dir.is_symlink():
        raise EdgecError(f"{model_dir} is a link; edgec exports the model/ folder its build wrote, not a link")
    files = []
    for p in sorted(model_dir.rglob("*")):
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            raise EdgecError(f"{p} is a link or a special file, which edgec's build does not write; remove it or "
                             "run `edgec build` again")
        if p.is_file():
            files.append(p)
    return files


def export_build(build_dir, fmt: str, outdir, log: Callable[[str], None] = lambda _: None, board: str | None = None,
                 lib_version: str | None = None, maintainer: str | None = None, url: str | None = None) -> dict:
    """Write the benched build in build_dir as a library in `fmt` layout into outdir; returns the manifest."""
    if fmt not in FORMATS:
        raise EdgecError(f"unknown export format '{fmt}': use one of {', '.join(FORMATS)}")
    check_metadata(None, lib_version)
    build_dir = Path(build_dir)
    report, the_board, firmware = load_build(build_dir)
    if board and board != the_board.name:
        raise EdgecError(f"--board {board}: {build_dir} was built for {the_board.name}; export it for that board "
                         "or build for the other one first")
    name = report["model"]
    model_dir = build_dir / "model"
    try:
        graph = artifact.load_graph(build_dir)
    except EdgecError:
        raise
    except Exception:
        graph = None
    if graph is None or artifact.graph_hash(graph) != report["model_hash"] or not (model_dir / f"{name}.c").is_file():
        raise EdgecError(f"{build_dir}: its model/ or quantized model does not match its report (model hash "
                         f"{report['model_hash']}); run `edgec build` again")
    library = _library_files(model_dir)
    flags = benched_flags(build_dir, name, firmware)
    log(f"exporting the build {build_dir} ({name}, model hash {report['model_hash']}) as benched: "
        f"{' '.join(flags['applied'])}")
    outdir = check_output_folder(outdir, (build_dir,))
    meta = {"lib_version": lib_version or report["edgec_version"], "maintainer": maintainer, "url": url}

    def copy_library(src: Path) -> list[Path]:
        written = []
        for f in library:
            dest = src / f.relative_to(model_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
            written.append(dest)
        return written

    with staged_folder(outdir, "export", (build_dir,)) as work:
        manifest = write_layout(work, graph, report["memory"]["arena_bytes"], the_board, fmt,
                                Path(report.get("model_file") or f"{name}.onnx"),
                                f"(the build {build_dir.name}'s calibration)", meta, example_sample(graph, None),
                                copy_library, flags)
    return manifest
