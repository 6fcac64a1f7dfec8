"""Code in a built firmware, by part: what an application embeds (the model library and the runtime) apart from
what only the benchmark firmware has (the harness) and what every program has (startup, board support, the C
library).

Code = the functions of the ELF (symbol type FUNC, each address counted once), so no weights, tables or other
constants, even where the linker script places them in .text. Each function is attributed to the object file
that defines it (same name and size): the model's own object (`model`), the runtime's kernels and the arena
guard (`runtime`), the benchmark harness (`harness`: the generated main, the serial link or the MLPerf / dataset
runner, a framework board's tick counter and stack painter), the rest of the project's objects (`board`: the
startup code and board support of edgec's platforms, a vendor framework). Functions no project object defines
come from the libraries (`libraries`: the C library, libgcc), e.g. memcpy or 64-bit division, which the model
library may call as well. `model_and_runtime` is the code an application links for the model besides the C
library functions it shares with the rest of the application.
"""
from __future__ import annotations

from pathlib import Path

from edgec import cheader
from edgec.plan import guard
from edgec.targets import elf
from edgec.targets.firmware import HARNESS_FILES, PROTOCOLS

PARTS = ("model", "runtime", "harness", "board", "libraries")
# the generated benchmark main: main.c (edgec's platforms) or bench_main.c + main.cpp (framework boards)
HARNESS_MAINS = ("main", "bench_main")


def functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, address, bytes) of every sized function of an ELF file (an object or a program)."""
    return elf.functions(path)


def _object_stem(obj: Path) -> str:
    """The source name of an object: foo.o (edgec's platforms) or foo.c.o / foo.cpp.o (PlatformIO's builders)."""
    name = obj.name[:-2]
    for ext in (".c", ".cpp", ".S", ".s"):
        if name.endswith(ext):
            return name[:-len(ext)]
    return name


def part_of_object(stem: str, model: str) -> str:
    runtime = {Path(f).stem for f in cheader.runtime_files() + guard.RUNTIME_FILES if f.endswith(".c")}
    harness = {Path(f).stem for _, files in PROTOCOLS.values() for f in files if f.endswith(".c")}
    harness |= {Path(f).stem for f in HARNESS_FILES if f.endswith(".c")} | set(HARNESS_MAINS)
    if stem == model:
        return "model"
    if stem in runtime:
        return "runtime"
    return "harness" if stem in harness else "board"


def code_by_part(build_dir: Path, program: Path, model: str) -> dict:
    """{part: bytes} of the program's functions (PARTS), with `total` and `model_and_runtime`."""
    owner: dict[tuple[str, int], str] = {}
    for obj in sorted(Path(build_dir).rglob("*.o")):
        part = part_of_object(_object_stem(obj), model)
        for name, _, size in functions(obj):
            owner.setdefault((name, size), part)
    sizes = dict.fromkeys(PARTS, 0)
    seen = set()
    for name, address, size in functions(program):
        if address in seen:      # aliases (weak handlers, __aeabi_* names of one function) count once
            continue
        seen.add(address)
        sizes[owner.get((name, size), "libraries")] += size
    sizes["total"] = sum(sizes[p] for p in PARTS)
    sizes["model_and_runtime"] = sizes["model"] + sizes["runtime"]
    return sizes


def summary_line(code: dict) -> str:
    """One line for the build summary."""
    return (f"code {code['total']:,} B: model + runtime {code['model_and_runtime']:,} B (what an application "
            f"embeds), benchmark harness {code['harness']:,} B, startup + board support {code['board']:,} B, "
            f"C library {code['libraries']:,} B")
