"""The corpus table of docs/performance.md from benchmarks/peers.py's JSON rows: one line per `.tflite` that both
engines ran on one board and TFLM build, then every file that was not compared with the reason the run gave.

    .venv/bin/python benchmarks/peers_corpus_table.py peers.json [more.json ...] [--after branch.json]
        [--previous docs/performance.md --heading "2026-11-28"] [--board qemu-cortex-m4] [--kernels cmsis_nn]

Several JSON files (one run split in parts) are merged by model; `--after` holds rows of the same models run again
(on a branch with a fix): those replace the run's rows, whose edgec figures then show in the "before" column.
`--previous` takes the edgec column of an earlier table of the doc (the first `###` heading containing `--heading`)
as one more column. Bold: a ratio above 0.5, an arena above TFLM's, outputs that differ.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def _n(v) -> str:
    return "" if v is None else f"{round(v):,}"


def load_rows(paths: list[str], board: str) -> dict[str, dict]:
    rows = {}
    for p in paths:
        for r in json.loads(Path(p).read_text()):
            if r["board"] == board:
                rows[r["model"]] = r
    return rows


def previous_column(doc: Path, heading: str) -> dict[str, str]:
    """model -> the edgec instructions of the first table under the first ### heading that contains `heading`."""
    text = doc.read_text()
    start = next((m.end() for m in re.finditer(r"^### .*$", text, re.M) if heading in m.group(0)), None)
    if start is None:
        raise SystemExit(f"peers_corpus_table.py: no ### heading containing {heading!r} in {doc}")
    end = text.find("\n### ", start)
    out = {}
    for line in text[start:end if end > 0 else None].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and cells[0] and not cells[0].startswith(("model", "---")) and line.startswith("|"):
            out[cells[0]] = cells[2]
    return out


def peer_of(row: dict, kernels: str) -> dict | None:
    return next((p for p in row["peers"] if p.get("kernels") == kernels), None)


def reason(row: dict, kernels: str) -> str:
    e = row["edgec"]
    if "error" in e:
        return "edgec: " + e["error"].split("\n")[0]
    p = peer_of(row, kernels)
    return "TFLM: " + (p["error"].split("\n")[0] if p else "not run")


def table(rows: dict[str, dict], kernels: str, before: dict[str, dict], previous: dict[str, str]) -> tuple[str, dict]:
    head = ["model", "TFLM", "edgec", "ratio", "edgec on main (before)" if before else None,
            "edgec in the table before" if previous else None, "arena edgec / TFLM", "total RAM edgec / TFLM",
            "flash edgec / TFLM", "outputs"]
    head = [h for h in head if h]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 2) + "---|"]
    counts = {"compared": 0, "above": [], "arena": [], "differ": [], "not": []}
    for name in sorted(rows):
        r, p = rows[name], peer_of(rows[name], kernels)
        if "error" in r["edgec"] or p is None or "error" in p:
            counts["not"].append((name, reason(r, kernels)))
            continue
        e = r["edgec"]
        counts["compared"] += 1
        ratio = f"{p['ratio']:.3f}"
        if p["ratio"] > 0.5:
            ratio = f"**{ratio}**"
            counts["above"].append(name)
        arena = f"{_n(e['arena_bytes'])} / {_n(p['arena_bytes'])}"
        if e["arena_bytes"] > p["arena_bytes"]:
            arena = f"**{arena}**"
            counts["arena"].append(name)
        same = "identical" if p["identical"] else "**DIFFER**"
        if not p["identical"]:
            counts["differ"].append(name)
        cells = [name, _n(p["instructions"]), _n(e["instructions"]), ratio]
        if before:
            b = before.get(name)
            cells.append(_n(b["edgec"].get("instructions")) if b and "error" not in b["edgec"] else "")
        if previous:
            cells.append(previous.get(name, ""))
        cells += [arena, f"{_n(e['ram_total_bytes'])} / {_n(p['ram_total_bytes'])}",
                  f"{_n(e['flash_bytes'])} / {_n(p['flash_bytes'])}", same]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", nargs="+", help="peers.py --json files (merged by model)")
    ap.add_argument("--after", action="append", default=[], help="rows run again on a branch: they replace the run's")
    ap.add_argument("--previous", help="a doc with an earlier table (its edgec column)")
    ap.add_argument("--heading", default="", help="text of the earlier table's ### heading")
    ap.add_argument("--board", default="qemu-cortex-m4")
    ap.add_argument("--kernels", default="cmsis_nn")
    args = ap.parse_args(argv)
    rows = load_rows(args.json, args.board)
    after = load_rows(args.after, args.board) if args.after else {}
    before = {k: rows[k] for k in after if k in rows}
    rows.update(after)
    previous = previous_column(Path(args.previous), args.heading) if args.previous else {}
    text, c = table(rows, args.kernels, before, previous)
    print(text + "\n")
    print(f"{len(rows)} files: {c['compared']} compared; above 0.5x: {', '.join(c['above']) or 'none'}; arena above "
          f"TFLM's: {', '.join(c['arena']) or 'none'}; outputs that differ: {', '.join(c['differ']) or 'none'}.\n")
    print(f"Not compared ({len(c['not'])}):\n")
    for name, why in c["not"]:
        print(f"- {name}: {why[:300]}")
    return 1 if c["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
