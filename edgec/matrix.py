"""Many boards at once: a bench over several build folders and/or several units (emulators started here, or
places of a labgrid board farm), run in parallel, aggregated into one report: a model x board table with
accuracy, agreement and latency, and the unit-to-unit spread where several units of one board ran a model.

    result = matrix.run([build_a, build_b], "test.npz", units=2)            # emulated: 2 emulators per build
    result = matrix.run([build], "test.npz", places=["lab-f4-1", "lab-f4-2"], split=True)   # a farm

A unit that fails (its board dies, its place cannot be acquired) fails its cell with the reason; the others
complete.  With split, a cell's units each run a part of the test set; otherwise each runs all of it.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from edgec import children, outputs
from edgec.errors import EdgecError
from edgec.targets.build_folder import load_build

JSON_NAME = "matrix-report.json"
HTML_NAME = "matrix-report.html"
STOP_SECONDS = 30.0         # an interrupt waits this long at most for the cells to end
Log = Callable[[str], None]


@dataclass
class Unit:
    build: Path
    model: str
    board: str
    label: str                  # "qemu-cortex-m4#0" or the labgrid place
    place: str | None = None
    data: Path | None = None    # its part of the test set (split) or the whole one


def _slices(data_path: Path, parts: int, folder: Path, memory_limit: int | None = None) -> list[Path]:
    """The test set cut into `parts` consecutive .npz files (edgec/data.py: bounded, every sample array)."""
    from edgec.data import DEFAULT_MEMORY_LIMIT, split_file
    return split_file(data_path, parts, folder, memory_limit or DEFAULT_MEMORY_LIMIT)


def plan(builds: list[Path], places: list[str] | None, units: int, place_boards: dict[str, str] | None = None) -> list[Unit]:
    """The units of the matrix: per build, `units` local emulators, or the places whose board (place_boards:
    place -> board profile, from the place's `board` tag; unknown: any build) is the build's board."""
    out = []
    for build in builds:
        report, board, _ = load_build(build)
        if places:
            mine = [p for p in places if (place_boards or {}).get(p) in (None, board.name)]
            if not mine:
                raise EdgecError(f"no place of {', '.join(places)} carries board '{board.name}' of {build} "
                                 "(the place's tag board=NAME); add one or leave the build out")
            out += [Unit(Path(build), report["model"], board.name, p, place=p) for p in mine]
        else:
            out += [Unit(Path(build), report["model"], board.name, f"{board.name}#{i}") for i in range(units)]
    # cells are keyed by build: two builds of one model for one board are two cells, named by their folder
    builds_of: dict[tuple[str, str], set[Path]] = {}
    for u in out:
        builds_of.setdefault((u.model, u.board), set()).add(u.build)
    for u in out:
        if len(builds_of[(u.model, u.board)]) > 1:
            u.model = f"{u.model} ({u.build})"
    return out


def run(builds: list[str | Path], data_path: str | Path, places: list[str] | None = None, units: int = 1,
        split: bool = False, coordinator: str | None = None, log: Log = print, report_dir: str | Path | None = None,
        bench: Callable | None = None, gates=(), **bench_options) -> dict:
    """Bench every unit in parallel and aggregate (see the module's docstring).  bench_options go to api.bench
    (limit, dataset_in_flash, ...); bench replaces api.bench (tests).  gates (edgec/bench/gates.py) are
    evaluated on every unit's result: each cell says which failed, and `gate_runs` holds (result, outcomes,
    unit label) per unit for the JUnit file (a unit that failed: a result with its `error`)."""
    from edgec import api

    builds = [Path(b) for b in builds]
    data_path = Path(data_path)
    if report_dir is not None:
        check_report_dir(Path(report_dir))
    place_boards = None
    if places:
        from edgec import farm
        place_boards = farm.place_boards(places, coordinator)
    unit_list = plan(builds, places, units, place_boards)
    bench = bench or api.bench
    results: dict[str, dict] = {}
    lock = threading.Lock()
    t0 = time.monotonic()
    with children.temporary_folder() as tmp:      # the slices: removed even if edgec is killed
        by_cell: dict[tuple[str, str], list[Unit]] = {}
        for u in unit_list:
            by_cell.setdefault((str(u.build), u.model, u.board), []).append(u)
        for k, cell_units in enumerate(by_cell.values()):
            parts = [data_path] * len(cell_units)
            if split and len(cell_units) > 1:
                folder = Path(tmp) / f"cell{k}"
                folder.mkdir()
                settings = bench_options.get("settings")
                parts = _slices(data_path, len(cell_units), folder, settings.memory_limit if settings else None)
            for u, part in zip(cell_units, parts):
                u.data = part

        stop = threading.Event()          # an interrupt: the cells end without a word (the interrupt is reported)

        def say(line: str) -> None:
            if not stop.is_set():
                log(line)

        def one(i: int, u: Unit) -> None:
            started = time.monotonic()
            try:
                if u.place is not None:
                    from edgec import farm
                    r = farm.bench_on_place(u.place, u.build, u.data, coordinator, bench=bench, log=say,
                                            **bench_options)
                else:
                    r = bench(u.build, u.data, log=lambda m: say(f"[{u.label}] {m}"), **bench_options)
                entry = {"ok": True, "result": r}
            except EdgecError as e:
                entry = {"ok": False, "error": str(e)}
            except Exception as e:          # one unit's unexpected failure must not take the others down
                entry = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            except BaseException:           # (a KeyboardInterrupt in a cell: the main thread's to report)
                return
            if stop.is_set():               # its device was killed by the interrupt: not a failure of the cell
                return
            entry.update(label=u.label, place=u.place, seconds=round(time.monotonic() - started, 2))
            with lock:
                results[str(i)] = entry
            log(f"[{u.label}] {u.model}: " + ("done" if entry["ok"] else f"FAILED: {entry['error']}"))

        threads = [threading.Thread(target=one, args=(i, u), daemon=True) for i, u in enumerate(unit_list)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        except BaseException:      # an interrupt: every cell's processes (builds, devices, flashing tools) end now
            stop.set()
            _stop_cells(threads)
            raise
    from edgec.bench.gates import evaluate
    cells, gate_runs = [], []
    for (build, model, board), cell_units in by_cell.items():
        entries = [results[str(unit_list.index(u))] for u in cell_units]
        cell = aggregate(model, board, entries, split)
        cell["build"] = build
        if gates:
            cell["gates"] = []
            for e in entries:
                r = e["result"] if e["ok"] else {"model": model, "board": board, "error": e["error"]}
                outcomes = evaluate(gates, r) if e["ok"] else []
                gate_runs.append((r, outcomes, e["label"]))
                cell["gates"] += [f"{e['label']}: {o.line}" for o in outcomes]
                cell["gates_passed"] = cell.get("gates_passed", True) and e["ok"] and all(o.passed for o in outcomes)
        cells.append(cell)
    out = {"data": str(data_path), "split": split, "wall_seconds": round(time.monotonic() - t0, 2),
           "models": sorted({c["model"] for c in cells}), "boards": sorted({c["board"] for c in cells}),
           "cells": cells}
    if report_dir is not None:
        out["report_files"] = [str(p) for p in write(out, Path(report_dir))]
    out["gate_runs"] = gate_runs
    return out


def _stop_cells(threads: list[threading.Thread], wait: float = STOP_SECONDS) -> None:
    """After an interrupt: kill every cell's processes, and again those a cell started meanwhile (a bench
    between two steps), until every cell has ended (a cell whose device is gone fails at once) or `wait` s
    have passed; so no emulator or flashing tool starts after edgec has reported the interrupt."""
    end = time.monotonic() + wait
    while True:
        children.kill_all()
        alive = [t for t in threads if t.is_alive()]
        if not alive or time.monotonic() > end:
            return
        alive[0].join(0.1)


def aggregate(model: str, board: str, entries: list[dict], split: bool) -> dict:
    """One model x board cell from its units' bench results: failed units are named with their reason; the
    cell's numbers come from the units that completed (samples pooled), the spread from their medians."""
    done = [e for e in entries if e["ok"]]
    failed = [{"unit": e["label"], "error": e["error"]} for e in entries if not e["ok"]]
    cell = {"model": model, "board": board, "units": [e["label"] for e in entries], "failed": failed,
            "ok": not failed and bool(done)}
    if not done:
        return cell
    rs = [e["result"] for e in done]
    n = np.array([r["samples"] for r in rs], float)
    acc = [(r.get("accuracy") or {}).get("device") for r in rs]
    lat = [s for r in rs for s in r["latency"].get("samples") or []]
    medians = [r["latency"]["median"] for r in rs if r["latency"]["median"] is not None]
    cell.update(
        samples=int(n.sum()),
        accuracy=None if None in acc else float(np.dot(acc, n) / n.sum()),
        agreement=float(np.dot([r["agreement"]["device_vs_reference"] for r in rs], n) / n.sum()),
        latency={"unit": rs[0]["latency"]["unit"], "median": float(np.median(lat)) if lat else None,
                 "p90": float(np.percentile(lat, 90)) if lat else None},
        per_unit=[{"unit": e["label"], "samples": e["result"]["samples"],
                   "median": e["result"]["latency"]["median"],
                   "agreement": e["result"]["agreement"]["device_vs_reference"], "seconds": e["seconds"]}
                  for e in done])
    if len(medians) > 1:
        mid = float(np.median(medians))
        cell["spread"] = {"min": min(medians), "max": max(medians),
                          "relative": (max(medians) - min(medians)) / mid if mid else None}
    return cell


def check_report_dir(report_dir: Path) -> None:
    outputs.check_names(report_dir / HTML_NAME, "report folder")
    if report_dir.is_symlink() or (report_dir.exists() and not report_dir.is_dir()):
        raise EdgecError(f"report folder {report_dir} is not a folder; give another one with --report")
    for name in (JSON_NAME, HTML_NAME):
        outputs.check_output_file(report_dir / name, what="matrix report", folder_exists=False)


def write(result: dict, report_dir: Path) -> list[Path]:
    from edgec.templating import environment

    outputs.make_folder(report_dir, "report folder")
    json_path, html_path = report_dir / JSON_NAME, report_dir / HTML_NAME
    outputs.write_json(json_path, result, what="matrix report")
    grid = {(c["model"], c["board"]): c for c in result["cells"]}
    outputs.write_text(html_path, environment().get_template("matrix.html.j2").render(result=result, grid=grid),
                       what="matrix report")
    return [json_path, html_path]


def summary_lines(result: dict) -> list[str]:
    """The matrix as text: one line per cell."""
    lines = [f"bench matrix: {len(result['cells'])} cells ({len(result['models'])} model(s) x "
             f"{len(result['boards'])} board(s)) in {result['wall_seconds']} s"]
    for c in result["cells"]:
        head = f"  {c['model']} on {c['board']} ({len(c['units'])} unit(s)): "
        if "samples" in c:
            acc = "n/a" if c["accuracy"] is None else f"{100 * c['accuracy']:.2f}%"
            med = c["latency"]["median"]
            head += (f"accuracy {acc}, agreement {100 * c['agreement']:.2f}%, median "
                     f"{'n/a' if med is None else f'{med:,.0f}'} {c['latency']['unit']}")
            if "spread" in c and c["spread"]["relative"] is not None:
                head += f", unit spread {100 * c['spread']['relative']:.2f}%"
        lines.append(head + "".join(f"; {f['unit']} FAILED: {f['error']}" for f in c["failed"]))
    return lines
