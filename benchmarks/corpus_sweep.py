"""Every corpus model (.tflite and .onnx) built and benched by one edgec checkout, and two such runs compared.

    .venv/bin/python benchmarks/corpus_sweep.py --jsonl after.jsonl                       # this checkout
    .venv/bin/python benchmarks/corpus_sweep.py --tree /work/wt-base --jsonl before.jsonl  # another checkout's edgec
    .venv/bin/python benchmarks/corpus_sweep.py --compare before.jsonl after.jsonl         # the table

Per model of tests/corpus/manifest.json (or --only NAME,...): `edgec build` for the board (a .onnx with its
calib.npz), then `edgec bench` of the oracle's first sample (oracle.npz: x, or x_q through its input scale; an int8 .tflite takes no calibration set, a float one
(tflite-float) and a .onnx their calib.npz): exact
emulated instructions (the cycle plugin's count), arena, total device RAM (.data + .bss + arena + the measured stack
high-water mark), that stack, flash, and the device against edgec's reference. One JSON line a model, appended as
it finishes (a rerun skips the models the file has): a model the checkout cannot build or feed is a line with its
one-line error. Unlike benchmarks/peers.py it runs no TFLite Micro and takes .onnx files; it reads only what every
checkout since the issue-32 main (fb76f4d) has (api.build, api.bench), so `--tree` measures an old commit's edgec
on today's corpus and inputs.

--compare prints the Markdown table of the models both files built: instructions, total RAM, measured stack and
flash before / after, bold where after is above before, and the list of those above on instructions or RAM.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "tests" / "corpus" / "manifest.json"
BOARD = "qemu-cortex-m4"
FIGURES = (("instr", "instructions"), ("ram", "total RAM B"), ("stack", "measured stack B"), ("flash", "flash B"))


def entries(manifest: Path, only: set[str] | None = None) -> list[dict]:
    """The manifest's models (name, file, format), in its order."""
    m = json.loads(manifest.read_text())
    m = m.get("models", m) if isinstance(m, dict) else m
    rows = [dict(v, name=k) for k, v in m.items()] if isinstance(m, dict) else list(m)
    return [e for e in rows if only is None or e["name"] in only]


def first_sample(oracle) -> np.ndarray:
    """The oracle's first input row as float (a .tflite's integers through the file's input quantization)."""
    if "x" in oracle:
        return np.asarray(oracle["x"])[:1]
    x = (oracle["x_q"][:1].astype(np.float64) - int(oracle["x_zero_point"])) * float(oracle["x_scale"])
    return x.astype(np.float32)


def measure(api, entry: dict, corpus: Path, board: str, work: Path) -> dict:
    """One model: its figures, or {"error": the line} where the checkout cannot build, feed or bench it."""
    path = corpus / entry["file"]
    row = {"name": entry["name"], "format": entry.get("format")}
    out = work / entry["name"]
    t0 = time.time()
    try:
        x = first_sample(np.load(path.parent / "oracle.npz"))
        shutil.rmtree(out, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        calib = None if entry.get("format") == "tflite" else path.parent / "calib.npz"     # a float file calibrates
        rep = api.build(path, calib, board, out)
        data = work / f"{entry['name']}.npz"
        np.savez(data, x=x)
        r = api.bench(out, data, limit=1)
        est = r["latency"].get("cycles_estimate") or {}
        row.update(instr=est.get("plugin_instructions_median") or r["latency"]["median"], exact=bool(est),
                   arena=rep["memory"]["arena_bytes"], ram=r["memory"].get("total_ram_bytes"),
                   stack=r["memory"].get("stack_used_bytes"), flash=r["memory"]["flash_bytes"],
                   agree=r["agreement"]["device_vs_reference"])
    except Exception as e:                   # noqa: BLE001  a model this checkout cannot run is a row, not the end
        row["error"] = (str(e).strip().splitlines() or [repr(e)])[-1][:300]
    shutil.rmtree(out, ignore_errors=True)
    row["sec"] = round(time.time() - t0, 1)
    return row


def load(path: Path) -> dict[str, dict]:
    """name -> row of a --jsonl file."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    return {r["name"]: r for r in rows}


def _n(v) -> str:
    return "—" if v is None else f"{int(v):,}"


def compare(before: dict[str, dict], after: dict[str, dict]) -> tuple[str, list[str]]:
    """(Markdown table of the models both built, names above before on instructions or total RAM)."""
    lines = ["| model | " + " | ".join(f"{t} before / after" for _, t in FIGURES) + " | device = reference |",
             "|---|" + "---:|" * len(FIGURES) + "---|"]
    above = []
    for name, b in before.items():
        a = after.get(name)
        if "error" in b or a is None or "error" in a:
            continue
        cells = []
        for key, _ in FIGURES:
            up = a.get(key) is not None and b.get(key) is not None and a[key] > b[key]
            text = f"{_n(b.get(key))} / {_n(a.get(key))}"
            cells.append(f"**{text}**" if up else text)
        if any(a.get(k) is not None and b.get(k) is not None and a[k] > b[k] for k in ("instr", "ram")):
            above.append(name)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {a.get('agree')} |")
    return "\n".join(lines), above


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--board", default=BOARD)
    ap.add_argument("--tree", type=Path, help="the edgec checkout to measure (default: this one)")
    ap.add_argument("--jsonl", type=Path, help="append a JSON line a model here (models already in it skipped)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="print the table of two runs")
    args = ap.parse_args(argv)
    if args.compare:
        text, above = compare(load(args.compare[0]), load(args.compare[1]))
        print(text)
        print("\nabove before on instructions or total RAM:", ", ".join(above) or "none")
        return 0
    if args.jsonl is None:
        ap.error("--jsonl (or --compare) is required")
    sys.path.insert(0, str((args.tree or REPO).resolve()))
    from edgec import api                   # the checkout's own edgec

    done = load(args.jsonl)
    work = Path(args.jsonl).resolve().parent / f"{args.jsonl.stem}-work"
    only = set(args.only.split(",")) if args.only else None
    for e in entries(args.manifest, only):
        if e["name"] in done:
            continue
        row = measure(api, e, args.manifest.parent, args.board, work)
        with args.jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
