"""The test files' measured durations, for the order in which scripts/test.sh hands them to its workers.

    python scripts/test_durations.py LOG [--write] [--top N] [--simulate WORKERS]

LOG is the output of a whole default run with `--durations=0` (e.g. `bash scripts/test.sh --durations=0 >LOG`);
every `N.NNs setup|call|teardown tests/...::...` line is summed per test file.  The script prints the per-file
table (seconds, share of the run, tests) and, with --write, stores the sums in tests/durations.json, which
tests/conftest.py reads to put the heaviest files first (docs/development.md, "Test time"), with the mean
seconds per test (a file not measured yet counts as its number of tests times that).  Only the relative
sizes matter: a run on a busy machine is fine if the whole suite ran in it.  --simulate replays the run's
test durations through xdist's loadfile scheduling on WORKERS workers, in xdist's own order (files by number of
tests) and in scripts/test.sh's (heaviest first), and prints when each worker would finish: the critical path."""
from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent.parent / "tests" / "durations.json"
LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s (setup|call|teardown)\s+((tests/\S+?\.py)::\S*)")


def per_test(log: str) -> dict[str, float]:
    """{test node id: seconds of setup + call + teardown} from a --durations=0 log, in the log's order."""
    seconds: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        m = LINE.match(line)
        if m:
            seconds[m[3]] += float(m[1])
    return dict(seconds)


def per_file(log: str) -> tuple[dict[str, float], dict[str, int]]:
    """({test file: seconds of setup + call + teardown}, {test file: tests}) from a --durations=0 log."""
    seconds: dict[str, float] = defaultdict(float)
    tests: dict[str, int] = defaultdict(int)
    for nodeid, s in per_test(log).items():
        f = nodeid.split("::", 1)[0]
        seconds[f] += s
        tests[f] += 1
    return dict(seconds), dict(tests)


def simulate(files: list[str], durations: dict[str, list[float]], workers: int) -> list[float]:
    """When each worker ends if xdist's loadfile scheduler hands out `files` in this order: every worker starts
    with a file, and takes the next one whenever 2 or fewer of its tests are left (xdist's LoadScopeScheduling)."""
    queue, pending, clock = list(files), [[] for _ in range(workers)], [0.0] * workers

    def give(w: int) -> None:
        if queue:
            pending[w].extend(durations[queue.pop(0)])
    for w in range(workers):
        give(w)
    for w in range(workers):
        if len(pending[w]) <= 2:
            give(w)
    while any(pending):
        w = min((w for w in range(workers) if pending[w]), key=lambda w: clock[w] + pending[w][0])
        clock[w] += pending[w].pop(0)
        if len(pending[w]) <= 2:
            give(w)
    return clock


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--write", action="store_true", help=f"store the sums in {DURATIONS.name}")
    ap.add_argument("--top", type=int, default=25, help="rows of the printed table")
    ap.add_argument("--simulate", type=int, metavar="WORKERS", help="replay the run on this many xdist workers")
    args = ap.parse_args(argv)
    seconds, tests = per_file(args.log.read_text(errors="replace"))
    if not seconds:
        ap.error(f"{args.log} has no `--durations=0` lines; run the suite with --durations=0")
    total = sum(seconds.values())
    print(f"{len(seconds)} files, {sum(tests.values())} tests, {total:.0f} s in all")
    print("| file | s | share | tests |\n|---|---:|---:|---:|")
    for f in sorted(seconds, key=lambda f: -seconds[f])[:args.top]:
        print(f"| `{f}` | {seconds[f]:.1f} | {100 * seconds[f] / total:.1f} % | {tests[f]} |")
    if args.simulate:
        durations: dict[str, list[float]] = defaultdict(list)
        for nodeid, s in per_test(args.log.read_text(errors="replace")).items():
            durations[nodeid.split("::", 1)[0]].append(s)
        collected = sorted(durations)
        for name, order in (("xdist's order (by number of tests)", sorted(collected, key=lambda f: -tests[f])),
                            ("heaviest first", sorted(collected, key=lambda f: -seconds[f]))):
            ends = simulate(order, durations, args.simulate)
            print(f"{name}: workers end at {', '.join(f'{e:.0f}' for e in ends)} s; the run takes {max(ends):.0f} s, "
                  f"{max(ends) - min(ends):.0f} s with a worker idle")
    if args.write:
        files = {f: round(seconds[f], 1) for f in sorted(seconds)}
        DURATIONS.write_text(json.dumps({"seconds_per_test": round(total / sum(tests.values()), 2), "files": files},
                                        indent=1) + "\n")
        print(f"wrote {DURATIONS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
