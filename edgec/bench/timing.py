"""Device timing in the bench: the clock a firmware reports, board units (cycles, instructions, ns) to
milliseconds, and latency statistics over the samples."""
from __future__ import annotations

import dataclasses

import numpy as np

from edgec.targets.boards import Board


def _quiet(_: str) -> None:
    pass


def device_clock(board: Board, hello: dict, log=_quiet) -> Board:
    """The board with the clock its firmware reports: a counter at the core clock (DWT cycles) ticks at
    whatever clock the framework set up (SystemCoreClock), which is what turns cycles into milliseconds;
    the profile's clock_hz is only the datasheet's number (the H743 runs at 480 MHz under STM32duino 2.12,
    not the 400 MHz PlatformIO's board file says)."""
    hz = int(hello.get("tick_hz") or 0)
    if not board.framework or board.timing_unit != "cycles" or hz <= 0 or hz == board.clock_hz:
        return board
    log(f"{board.name}: the firmware runs at {hz / 1e6:g} MHz (profile: {board.clock_hz / 1e6:g} MHz); "
        "latencies in ms use the firmware's clock")
    return dataclasses.replace(board, clock_hz=hz, tick_hz=hz)


def ms_basis(board: Board) -> str | None:
    """How board units become milliseconds, or None when they cannot."""
    if board.timing_unit == "ns":
        return "host wall clock"
    if not board.clock_hz:
        return None
    mhz = f"{board.clock_hz / 1e6:g} MHz"
    if board.timing_unit == "cycles":
        return f"cycles at {mhz}"
    return f"{board.timing_unit} at {mhz} if each took one cycle: an estimate"


def to_ms(units: float, board: Board) -> float | None:
    if board.timing_unit == "ns":
        return units / 1e6
    return units / board.clock_hz * 1e3 if board.clock_hz else None


def latency_stats(units: np.ndarray, board: Board) -> dict:
    """Median, p90, min, max (and ms where the unit allows).  A counter that never advanced measured nothing
    (QEMU does not model the DWT cycle counter): then the values are None and `not_measured` says why."""
    if len(units) and not units.any():
        why = (f"the board's {board.timing_method} counter read 0 on every sample"
               + (": the emulator does not model it" if board.emulated else ""))
        return {"unit": board.timing_unit, "median": None, "p90": None, "min": None, "max": None, "samples": [],
                "ms": None, "not_measured": why}
    stats = {"median": float(np.median(units)), "p90": float(np.percentile(units, 90)),
             "min": float(units.min()), "max": float(units.max())}
    out = {"unit": board.timing_unit, **stats, "samples": [float(u) for u in units]}
    basis = ms_basis(board)
    out["ms"] = {**{k: to_ms(v, board) for k, v in stats.items()}, "basis": basis} if basis else None
    return out
