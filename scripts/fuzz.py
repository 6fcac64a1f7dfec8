"""A long front-end fuzz run: mutated models and calibration files through `edgec build` (tests/fuzzcases.py).

    .venv/bin/python scripts/fuzz.py --cases 10000                 # ~1 h on 2 cores
    .venv/bin/python scripts/fuzz.py --cases 200 --bases all --firmware 5
    .venv/bin/python scripts/fuzz.py --replay digits_cnn/attr/123  # one case, with its outcome

Every case must build (up to the C model library; --firmware N builds N of them all the way for the host
board) or be refused with edgec's one-line EdgecError, leaving nothing behind, within --timeout seconds.
Prints a table of outcomes per mutation and every finding (as base/mutation/seed, to replay and to keep
as a regression case in tests/test_fuzz.py); exits 1 if there was any finding.
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # this checkout's edgec, also in the workers

from fuzzcases import BASES, MLPERF, MUTATIONS, SMALL_BASES, Case, Worker  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--bases", choices=["small", "all"], default="small",
                    help="small: the examples and the smaller MLPerf models; all: every MLPerf model too")
    ap.add_argument("--firmware", type=int, default=0, help="build this many of the cases all the way (host board)")
    ap.add_argument("--replay", nargs="*", help="run these cases (base/mutation/seed) instead")
    ap.add_argument("--findings", type=Path, help="also write the findings to this file")
    args = ap.parse_args()

    import numpy as np
    rng = np.random.default_rng(args.seed)
    bases = list(BASES) if args.bases == "all" else SMALL_BASES
    if len(bases) < 3:
        print(f"note: only {', '.join(bases)}: the MLPerf Tiny models are not at {MLPERF} (set EDGEC_MLPERF_DIR)")
    if args.replay:
        cases = [Case.parse(c) for c in args.replay]
    else:
        cases = [Case(bases[int(rng.integers(len(bases)))], MUTATIONS[int(rng.integers(len(MUTATIONS)))],
                      int(rng.integers(1 << 31))) for _ in range(args.cases)]
    with_firmware = set(range(min(args.firmware, len(cases))))
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    findings: list[tuple[Case, str]] = []
    lock = threading.Lock()
    todo = iter(enumerate(cases))
    start = time.time()
    done = [0]

    def work(root: Path) -> None:
        worker = Worker(root, timeout=args.timeout)
        try:
            while True:
                with lock:
                    item = next(todo, None)
                if item is None:
                    return
                k, case = item
                outcome = worker.run(case, firmware=k in with_firmware,
                                     timeout=args.timeout * (4 if k in with_firmware else 1))
                with lock:
                    counts[case.mutation][outcome.kind] += 1
                    done[0] += 1
                    if outcome.kind == "finding":
                        findings.append((case, outcome.message))
                        print(f"FINDING {case}: {outcome.message.splitlines()[0]}", flush=True)
                    elif args.replay:
                        print(f"{case}: {outcome}", flush=True)
                    if done[0] % 500 == 0:
                        print(f"{done[0]}/{len(cases)} cases, {len(findings)} findings, "
                              f"{time.time() - start:.0f} s", flush=True)
        finally:
            worker.close()

    with tempfile.TemporaryDirectory(prefix="edgec-fuzz.") as tmp:
        threads = [threading.Thread(target=work, args=(Path(tmp) / f"w{i}",)) for i in range(args.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    seconds = time.time() - start
    print(f"\n{'mutation':20} {'built':>7} {'refused':>8} {'finding':>8}")
    total = collections.Counter()
    for m in MUTATIONS:
        c = counts.get(m)
        if c:
            total.update(c)
            print(f"{m:20} {c['built']:>7} {c['refused']:>8} {c['finding']:>8}")
    print(f"{'total':20} {total['built']:>7} {total['refused']:>8} {total['finding']:>8}")
    print(f"{sum(total.values())} cases ({len(with_firmware)} with firmware) on {len(bases)} base models in "
          f"{seconds:.0f} s with {args.workers} workers: {len(findings)} findings")
    print(f"base models: {', '.join(bases)}")
    for case, msg in findings:
        print(f"\n--- {case}\n{msg}")
    if args.findings:
        args.findings.write_text("".join(f"{c}\t{m.splitlines()[0]}\n" for c, m in findings))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
