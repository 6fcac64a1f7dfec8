"""The command line's board-farm and many-boards options of `edgec bench` and `edgec flash` (kept apart from
cli.py, a thin shell over edgec.api, edgec.matrix and edgec.farm)."""
from __future__ import annotations

import json
import sys

from edgec import argtypes


def add_bench_options(p) -> None:
    g = p.add_argument_group("many boards, board farms, large test sets (docs/board-farm.md)")
    _add_place_options(g)
    g.add_argument("--units", type=argtypes.count(1), default=1,
                   help="emulated boards: run each build on N emulators in parallel (with --dataset-in-flash: the "
                        "chunks are shared out among them)")
    g.add_argument("--split", action="store_true",
                   help="several units of one board share the test set (default: each runs all of it, which "
                        "shows the unit-to-unit spread)")
    g.add_argument("--dataset-in-flash", action="store_true",
                   help="compile the test inputs into the firmware image, a chunk at a time, and read back only "
                        "outputs and timings (test sets too big for the serial link)")
    g.add_argument("--chunk", type=argtypes.count(1), metavar="N",
                   help="with --dataset-in-flash: at most N inputs per image (default: as many as the flash holds)")


def add_flash_options(p) -> None:
    _add_place_options(p)


def _add_place_options(g) -> None:
    g.add_argument("--labgrid", metavar="PLACE", action="append",
                   help="acquire this labgrid place, bench/flash its board, release it (repeat for several "
                        "places; default: the board profile's [labgrid] place)")
    g.add_argument("--coordinator", metavar="HOST:PORT",
                   help="the labgrid coordinator (default: $LG_COORDINATOR, else 127.0.0.1:20408)")


def places_of(args, outdirs) -> list[str]:
    """The places asked for: --labgrid, else the build's board profile's [labgrid] place."""
    if args.labgrid:
        return list(args.labgrid)
    from edgec.targets.build_folder import load_build
    found = []
    for outdir in outdirs:
        place = load_build(outdir)[1].labgrid_place
        if place and place not in found:
            found.append(place)
    return found


def coordinator_of(args, outdirs) -> str:
    """--coordinator, else the builds' profile's [labgrid] coordinator, else the environment's (args.env: the
    Settings the command read, $LG_COORDINATOR or 127.0.0.1:20408)."""
    if args.coordinator:
        return args.coordinator
    from edgec.targets.build_folder import load_build
    return next((c for c in (load_build(o)[1].labgrid_coordinator for o in outdirs) if c),
                args.env.labgrid_coordinator)


def is_matrix(args, outdirs) -> bool:
    return len(outdirs) > 1 or args.units > 1 or bool(places_of(args, outdirs))


def cmd_bench_matrix(args, outdirs, log, gates=()) -> int:
    """`edgec bench` over several builds / units / places: one aggregated report; the CI gates apply to every
    unit of every build (and --junit has a test suite per unit); exit 1 when a cell or a gate failed."""
    import time
    from edgec import matrix
    from edgec.bench import gates as bench_gates

    report_dir = None if args.no_report else (args.report or ".")
    options = dict(limit=args.limit, flash=not args.no_flash, settings=args.env)
    units = args.units
    if args.dataset_in_flash:      # the units share each build's chunks instead of each running all the data
        options.update(dataset_in_flash=True, max_chunk=args.chunk, units=units)
        units = 1
    t0 = time.monotonic()
    r = matrix.run(outdirs, args.data, places=places_of(args, outdirs) or None, units=units, split=args.split,
                   coordinator=coordinator_of(args, outdirs), log=log, report_dir=report_dir, gates=gates,
                   **options)
    to_stdout = args.json == "-"
    out = sys.stderr if to_stdout else sys.stdout
    for line in matrix.summary_lines(r):
        print(line, file=out)
    runs = r.pop("gate_runs", [])
    if args.junit:
        done = bench_gates.write_junit_runs(args.junit, runs, time.monotonic() - t0, (args.data,))
        print(f"junit: {done}", file=out)
    gate_failed = False
    for result, outcomes, label in runs:
        for o in outcomes:
            gate_failed |= not o.passed
            print(f"[{label}] {o.line}", file=out if o.passed else sys.stderr)
    if r.get("report_files"):
        print(f"report: {', '.join(r['report_files'])}", file=out)
    if args.json:
        if to_stdout:
            print(json.dumps(r, indent=1))
        else:
            from edgec import outputs
            outputs.write_json(outputs.check_output_file(args.json, (args.data,)), r)
    return 0 if all(c["ok"] for c in r["cells"]) and not gate_failed else 1


def cmd_flash_place(args, log) -> int:
    from edgec import farm

    places = places_of(args, [args.outdir])
    for place in places:
        hello = farm.flash_on_place(place, args.outdir, coordinator_of(args, [args.outdir]), log=log)
        print(f"flashed: place {place} runs {hello.get('model')} ({hello.get('model_hash')}) on {hello.get('board')}")
    return 0
