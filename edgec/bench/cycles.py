"""A Cortex-M cycle ESTIMATE beside the exact emulated-instruction count (QEMU boards only).

The estimate comes from a QEMU TCG plugin (boards/platforms/edgec-qemu/plugins/edgec_cycles.c: it lives with the
other emulated-board support, the BSP and builder of the local `edgec-qemu` PlatformIO platform, and ships as
package data like them): every executed Thumb instruction is weighed by its Cortex-M3/M4 timing from Arm's
technical reference manuals (loads/stores and their pipelining, LDM/STM/PUSH/POP by register count, multiplies,
DSP and Helium instructions, divides, taken branches; the M7's dual issue and the M55's overlapped beats). In the
same run it weighs the memory timing of every real part whose profile has the emulated board's core and a
[[cycle_model]] (flash wait states, flash line width, prefetch, the ART accelerator's or the M7's caches:
`memory_models`), so a bench on qemu-cortex-m4 also estimates the NUCLEO-L4R5ZI and NUCLEO-F446RE, one on
qemu-cortex-m7 the NUCLEO-H743ZI2 with its caches off and on. It is NOT a cycle-accurate simulation: no bus
contention, no register-dependency stalls, fixed divide time (see the plugin's header and docs/boards.md).

The plugin is compiled on first use with the host C compiler ($CC, else cc or gcc: Settings.c_compiler) into
edgec's cache (Settings.qemu_plugins; scripts/setup.sh does it once: `python -m edgec.bench.cycles`); QEMU 7.2
(Debian) supports plugins but ships no header, so the plugin declares the few API v1 functions it uses itself.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from edgec import children
from edgec.errors import EdgecError
from edgec.resources import resource_dir
from edgec.settings import Settings
from edgec.targets import elf

WAIT_STATES = 0          # the emulated boards' code memory (SRAM/TCM in QEMU's MPS2/MPS3 machines)
MODEL = ("Cortex-M4 timings from Arm's TRMs (M7: dual issue of single-cycle pairs; M55: Helium instructions 2 "
         "beats, 1 when overlapping the other class), {ws} flash wait states; an estimate, not a cycle-accurate model")
CORES = {"cortex-m55": "m55", "cortex-m7": "m7"}    # the plugin's core timing (default m4)
# a bench of at most this many inputs (a timing run) also weighs the real parts' memory timing; a longer one (an
# accuracy run) does not: the plugin's callback on every memory access slows the emulator about 2.7 times
PARTS_MAX_SAMPLES = 8


def plugin_source() -> Path:
    return resource_dir("boards") / "platforms" / "edgec-qemu" / "plugins" / "edgec_cycles.c"


def plugin_path(settings: Settings) -> Path:
    """Where the compiled plugin of this source lives (the cache, keyed by the source's hash)."""
    digest = hashlib.sha256(plugin_source().read_bytes()).hexdigest()[:12]
    return settings.qemu_plugins / f"edgec_cycles-{digest}.so"


def build_plugin(settings: Settings) -> Path | None:
    """The compiled plugin, building it if needed (settings: the cache root and the C compiler); None where
    no host C compiler can (then no estimate)."""
    target = plugin_path(settings)
    if target.is_file():
        return target
    cc = shutil.which(settings.c_compiler) or shutil.which("gcc")
    if cc is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    # a name of its own (matrix cells build it at once in one process: a name from the pid alone was shared,
    # and the second rename failed), the compiler in edgec's process-group discipline, no temporary file left
    fd, name = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        _, code = children.run([cc, "-shared", "-fPIC", "-O2", "-std=c99", "-o", str(tmp), str(plugin_source())],
                               stderr=subprocess.DEVNULL)
        if code != 0:
            return None
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def symbol_address(path: Path, name: str) -> int | None:
    """Where a function of the firmware starts (edgec/targets/elf.py); None when it has none or is unreadable."""
    try:
        return elf.code_address(path, name)
    except EdgecError:
        return None


def memory_models(board) -> list[tuple[str, object]]:
    """(real board name, its CycleModel) of every real part with the emulated board's core and a memory timing,
    in name order (at most 4: the plugin's limit)."""
    from edgec.targets.boards import list_boards
    found = [(b.name, m) for b in list_boards() if not b.emulated and b.cpu == board.cpu for m in b.cycle_models]
    return found[:4]


def mem_arg(model, flash_bytes: int, flash_origin: int = 0, code_ram=None) -> str:
    """The plugin's `mem=` argument of one memory timing, over the emulated board's flash (code + constants);
    code_ram: the emulated board's code-ram region that stands in for the part's own (code_ram_window)."""
    window = f":{code_ram.origin:x}:{code_ram.origin + code_ram.size:x}" if code_ram is not None else ""
    return (f"mem={flash_origin:x}:{flash_origin + flash_bytes:x}:{model.line_bytes}:{model.miss_cycles}:"
            f"{model.miss_cycles}:{int(model.prefetch)}:{model.icache_bytes}:{model.icache_ways}:"
            f"{model.dcache_bytes}:{model.dcache_ways}{window}")


def code_ram_window(board, part: str):
    """The emulated board's code-ram region when the real part has one too (`edgec build --code-in-ram`): code
    there is weighed as the part's code RAM (the L4R5's SRAM2 on the I-code bus: zero wait states, no ART),
    not as its flash; None otherwise (a part without one weighs it as flash)."""
    from edgec.targets.boards import load_board
    stand_in = board.region("code-ram")
    return stand_in if stand_in is not None and load_board(part).region("code-ram") is not None else None


def mem_args(board) -> str:
    """The `,mem=...` arguments of every real part of the emulated board's core (memory_models)."""
    return "".join("," + mem_arg(m, board.flash_bytes, code_ram=code_ram_window(board, name))
                   for name, m in memory_models(board))


def qemu_args(board, firmware: Path, out: Path, settings: Settings, parts: bool = True) -> list[str]:
    """QEMU arguments that load the plugin timing the bench harness's invokes (edgec_link.c: each one runs
    between edgec_ticks_align() and the second edgec_ticks() after it); [] where there is no estimate
    (not an Arm QEMU board, no compiler, or a firmware without the harness's symbols). parts: also weigh the
    memory timing of the real parts of the same core (memory_models)."""
    if not board.emulated or board.arch != "arm" or not board.emulator_command:
        return []
    start = symbol_address(firmware, "edgec_ticks_align")
    mark = symbol_address(firmware, "edgec_ticks")
    plugin = build_plugin(settings) if start is not None and mark is not None else None
    if plugin is None:
        return []
    mems = mem_args(board) if parts else ""
    return ["-plugin", f"{plugin},out={out},start={start:#x},mark={mark:#x},core={CORES.get(board.cpu, 'm4')},"
                       f"ws={WAIT_STATES}{mems}"]


def peer_args(plugin: Path, out: Path, open_addr: int, close_addr: int, board) -> list[str]:
    """The plugin on a peer's firmware (TFLM's harness: a window from bench_mark_start to bench_mark_stop),
    with the same core and memory timings as qemu_args."""
    mems = mem_args(board)
    return ["-plugin", f"{plugin},out={out},open={open_addr:#x},close={close_addr:#x},"
                       f"core={CORES.get(board.cpu, 'm4')},ws={WAIT_STATES}{mems}"]


def read_windows(out: Path) -> list[tuple[int, ...]]:
    """(instructions, cycles, cycles with each memory timing ...) of each timed window the plugin wrote."""
    if not out.is_file():
        return []
    rows = []
    for line in out.read_text().splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == "window":
            rows.append(tuple(int(v) for v in f[1:]))
    return rows


def summary(windows: list[tuple[int, ...]], n: int, board=None) -> dict | None:
    """latency.cycles_estimate of a bench: the first n windows (the plain invokes; profiled ones come after);
    with the emulated board, `parts` has the estimate under each real part's memory timing (memory_models)."""
    import numpy as np
    if len(windows) < n or n == 0:
        return None
    insns = np.array([w[0] for w in windows[:n]], float)
    cycles = np.array([w[1] for w in windows[:n]], float)
    result = {"median": float(np.median(cycles)), "min": float(cycles.min()), "max": float(cycles.max()),
              "plugin_instructions_median": float(np.median(insns)),
              "cycles_per_instruction": float(np.median(cycles) / max(np.median(insns), 1.0)),
              "wait_states": WAIT_STATES, "model": MODEL.format(ws=WAIT_STATES)}
    if board is not None:
        result["parts"] = parts(windows[:n], board)
    return result


def parts(windows: list[tuple[int, ...]], board) -> list[dict]:
    """Per real part's memory timing: its board, the timing's name and note, the median cycles and what they
    are in milliseconds at the part's clock."""
    from edgec.targets.boards import load_board
    import numpy as np
    rows = []
    for k, (name, m) in enumerate(memory_models(board)):
        if any(len(w) < 3 + k for w in windows):
            break
        median = float(np.median([w[2 + k] for w in windows]))
        clock = load_board(name).clock_hz
        rows.append({"board": name, "memory": m.name, "note": m.note, "median": median,
                     "ms": median / clock * 1000 if clock else None})
    return rows


if __name__ == "__main__":        # scripts/setup.sh: build the plugin once (a command of its own: it reads the
    path = build_plugin(Settings.from_environment())    # environment's settings once, here)
    print(f"edgec cycle-estimate QEMU plugin: {path}" if path else "edgec cycle-estimate QEMU plugin: no C compiler")
    sys.exit(0 if path else 1)
