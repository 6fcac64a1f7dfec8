"""Per-layer timing on the device: a profiling firmware built next to a build's benchmark firmware.

    from edgec import profile
    prof = profile.profile_layers("build/kws-qemu-cortex-m4", x_q)   # x_q: one int8 input (model layout)

The profiling firmware (templates/profile_main.c.j2) holds the input, runs the model through
NAME_invoke_with_hook() timing each layer with the board's edgec_ticks(), prints the ticks as text
lines on its UART and idles; this module builds it once per build folder (in `profile/`), starts it
like the benchmark firmware and reads the lines. It does not use the framed link protocol.

Result: {"board", "unit", "total" (one whole invoke, board units), "layers": [{"index", "name",
"kind", "ticks", "units"}]}. Layer times include the hook's few instructions (a few dozen).
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import serial

from . import api, firmware
from .artifact import load_graph
from .boards import PORT_EMULATOR, PORT_PROGRAM
from .codegen import _c_array
from .device import STARTUP_TIMEOUT, _start_program, _start_qemu
from .errors import EdgecError
from .ir import ALIAS_OPS

_LINE = re.compile(r"^EDGEC_(LAYER|TOTAL|PROFILE_END) (\d+)(?: (\d+))?$")
PROFILE_DIR = "profile"


def build_profiler(outdir: str | Path, x_q: np.ndarray, runs: int = 1, log=None) -> Path:
    """Build the profiling firmware of build folder `outdir` for input x_q; returns its program."""
    outdir = Path(outdir)
    report, board, _ = api.load_build(outdir)
    x_q = np.asarray(x_q, np.int8).reshape(-1)
    if x_q.size != report["input"]["bytes"]:
        raise EdgecError(f"profile input has {x_q.size} values but model {report['model']} takes "
                         f"{report['input']['bytes']}")
    project = firmware.write_project(outdir / PROFILE_DIR, board, outdir / "model", report["model"],
                                     main_template="profile_main.c.j2",
                                     main_values={"sample": _c_array(x_q), "runs": int(runs)})
    return firmware.build_firmware(project, board, log=log).elf


def _read_lines(url: str, baud: int, timeout: float) -> list[str]:
    ser = serial.serial_for_url(url, baudrate=baud, timeout=0.1)
    try:
        buf, deadline = b"", time.monotonic() + timeout
        while b"EDGEC_PROFILE_END" not in buf or not buf.endswith(b"\n"):
            if time.monotonic() > deadline:
                raise EdgecError(f"the profiling firmware printed no result within {timeout:.0f} s")
            buf += ser.read(4096)
        return buf.decode("ascii", "replace").splitlines()
    finally:
        ser.close()


def run_profiler(outdir: str | Path, program: Path, timeout: float = 300.0) -> dict:
    """Run a built profiling firmware and parse its per-layer ticks."""
    outdir = Path(outdir)
    report, board, _ = api.load_build(outdir)
    if board.serial_port not in (PORT_EMULATOR, PORT_PROGRAM):
        raise EdgecError(f"layer profiling runs on emulated boards and the host, not on '{board.name}'")
    start = _start_qemu if board.serial_port == PORT_EMULATOR else _start_program
    process, url = start(board, Path(program))
    try:
        lines = _read_lines(url, board.serial_baud, max(timeout, STARTUP_TIMEOUT))
    finally:
        process.kill()
    layers, total = {}, None
    for line in lines:
        m = _LINE.match(line.strip())
        if m and m.group(1) == "LAYER":
            layers[int(m.group(2))] = int(m.group(3))
        elif m and m.group(1) == "TOTAL":
            total = int(m.group(2))
    graph_ops = _layer_table(outdir)
    if total is None or sorted(layers) != list(range(len(graph_ops))):
        raise EdgecError(f"the profiling firmware of {outdir} printed an incomplete result; rebuild it")
    return {"board": board.name, "unit": board.timing_unit, "model": report["model"],
            "total": board.ticks_to_units(total),
            "layers": [{"index": i, "name": name, "kind": kind, "ticks": layers[i],
                        "units": board.ticks_to_units(layers[i])} for i, (name, kind) in enumerate(graph_ops)]}


def _layer_table(outdir: Path) -> list[tuple[str, str]]:
    """(name, kind) of each layer in the generated model, in execution order."""
    graph = load_graph(outdir)
    return [(op.name, op.kind) for op in graph.ops if op.kind not in ALIAS_OPS]


def profile_layers(outdir: str | Path, x_q: np.ndarray, runs: int = 1, log=None) -> dict:
    """Build (if needed) and run the profiling firmware of a build folder: per-layer time on the board."""
    return run_profiler(outdir, build_profiler(outdir, x_q, runs, log=log))
