"""The test files' measured durations, for the order in which scripts/test.sh hands them to its workers.

    python scripts/test_durations.py LOG [--write] [--top N]

LOG is the output of a whole default run with `--durations=0` (e.g. `bash scripts/test.sh --durations=0 >LOG`);
every `N.NNs setup|call|teardown tests/...::...` line is summed per test file.  The script prints the per-file
table (seconds, share of the run, tests) and, with --write, stores the sums in tests/durations.json, which
tests/conftest.py reads to put the heaviest files first (docs/development.md, "Test time"), with the mean
seconds per test (a file not measured yet counts as its number of tests times that).  Only the relative
sizes matter: a run on a busy machine is fine if the whole suite ran in it."""
from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent.parent / "tests" / "durations.json"
LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(tests/\S+?\.py)::")


def per_file(log: str) -> tuple[dict[str, float], dict[str, int]]:
    """({test file: seconds of setup + call + teardown}, {test file: tests}) from a --durations=0 log."""
    seconds: dict[str, float] = defaultdict(float)
    tests: dict[str, set[str]] = defaultdict(set)
    for line in log.splitlines():
        m = LINE.match(line)
        if m:
            seconds[m[3]] += float(m[1])
            tests[m[3]].add(line.split(None, 2)[2])
    return dict(seconds), {f: len(t) for f, t in tests.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--write", action="store_true", help=f"store the sums in {DURATIONS.name}")
    ap.add_argument("--top", type=int, default=25, help="rows of the printed table")
    args = ap.parse_args(argv)
    seconds, tests = per_file(args.log.read_text(errors="replace"))
    if not seconds:
        ap.error(f"{args.log} has no `--durations=0` lines; run the suite with --durations=0")
    total = sum(seconds.values())
    print(f"{len(seconds)} files, {sum(tests.values())} tests, {total:.0f} s in all")
    print("| file | s | share | tests |\n|---|---:|---:|---:|")
    for f in sorted(seconds, key=lambda f: -seconds[f])[:args.top]:
        print(f"| `{f}` | {seconds[f]:.1f} | {100 * seconds[f] / total:.1f} % | {tests[f]} |")
    if args.write:
        files = {f: round(seconds[f], 1) for f in sorted(seconds)}
        DURATIONS.write_text(json.dumps({"seconds_per_test": round(total / sum(tests.values()), 2), "files": files},
                                        indent=1) + "\n")
        print(f"wrote {DURATIONS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
