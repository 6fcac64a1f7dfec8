"""A Cortex-M cycle ESTIMATE beside the exact emulated-instruction count (QEMU boards only).

The estimate comes from a QEMU TCG plugin (boards/platforms/edgec-qemu/plugins/edgec_cycles.c: it lives with the
other emulated-board support, the BSP and builder of the local `edgec-qemu` PlatformIO platform, and ships as
package data like them): every executed Thumb instruction is weighed by its Cortex-M3/M4 timing from Arm's
technical reference manuals (loads/stores and their pipelining, LDM/STM/PUSH/POP by register count, multiplies,
DSP and Helium instructions, divides, taken branches), with an assumed flash wait-state model. It is NOT a
cycle-accurate simulation: no caches, no M7 dual issue, no bus contention, fixed divide time (see the plugin's
header). It answers "do the instructions a kernel change saved cost more cycles elsewhere?", not "how many
milliseconds on a real board?".

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
MODEL = ("Cortex-M4 timings from Arm's TRMs (M55: Helium instructions 2 beats), {ws} flash wait states on taken "
         "branches and literal loads; an estimate, not a cycle-accurate model")


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


def qemu_args(board, firmware: Path, out: Path, settings: Settings) -> list[str]:
    """QEMU arguments that load the plugin timing the bench harness's invokes (edgec_link.c: each one runs
    between edgec_ticks_align() and the second edgec_ticks() after it); [] where there is no estimate
    (not an Arm QEMU board, no compiler, or a firmware without the harness's symbols)."""
    if not board.emulated or board.arch != "arm" or not board.emulator_command:
        return []
    start = symbol_address(firmware, "edgec_ticks_align")
    mark = symbol_address(firmware, "edgec_ticks")
    plugin = build_plugin(settings) if start is not None and mark is not None else None
    if plugin is None:
        return []
    core = "m55" if board.cpu == "cortex-m55" else "m4"
    return ["-plugin", f"{plugin},out={out},start={start:#x},mark={mark:#x},core={core},ws={WAIT_STATES}"]


def read_windows(out: Path) -> list[tuple[int, int]]:
    """(instructions, cycles) of each timed window the plugin wrote, in order."""
    if not out.is_file():
        return []
    rows = []
    for line in out.read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "window":
            rows.append((int(f[1]), int(f[2])))
    return rows


def summary(windows: list[tuple[int, int]], n: int) -> dict | None:
    """latency.cycles_estimate of a bench: the first n windows (the plain invokes; profiled ones come after)."""
    import numpy as np
    if len(windows) < n or n == 0:
        return None
    insns = np.array([w[0] for w in windows[:n]], float)
    cycles = np.array([w[1] for w in windows[:n]], float)
    return {"median": float(np.median(cycles)), "min": float(cycles.min()), "max": float(cycles.max()),
            "plugin_instructions_median": float(np.median(insns)),
            "cycles_per_instruction": float(np.median(cycles) / max(np.median(insns), 1.0)),
            "wait_states": WAIT_STATES, "model": MODEL.format(ws=WAIT_STATES)}


if __name__ == "__main__":        # scripts/setup.sh: build the plugin once (a command of its own: it reads the
    path = build_plugin(Settings.from_environment())    # environment's settings once, here)
    print(f"edgec cycle-estimate QEMU plugin: {path}" if path else "edgec cycle-estimate QEMU plugin: no C compiler")
    sys.exit(0 if path else 1)
