"""Cycles per layer: the cycle estimate of every layer of an edgec build (the QEMU plugin of edgec/bench/cycles.py:
the emulated board's core timings, 0 wait states), beside the instructions per layer of `edgec bench --profile`.

    .venv/bin/python benchmarks/cycle_layers.py --only vww                      # MLPerf Tiny VWW, qemu-cortex-m4
    .venv/bin/python benchmarks/cycle_layers.py --only kws,vww,ic --board qemu-cortex-m7
    .venv/bin/python benchmarks/cycle_layers.py --build BUILD --data x.npz       # an existing build folder

How: the profiled invoke calls the bench harness's profile_hook after every layer (runtime_c/harness/edgec_link.c),
and the plugin's open/close windows (the mode it times TFLM's Invoke() with) run from a call of one function to the
next call of another. So the bench runs twice: with open = close = profile_hook the plugin writes one window from
each hook call to the next (layers 1 .. n-1), with open = edgec_ticks_align and close = profile_hook one window from
the profiled invoke's start to its first hook (layer 0). A window also holds the hook's own instructions and part of
the harness's (`edgec bench --profile` leaves them out): the table shows both instruction counts, so the difference
is visible (a few dozen a layer). Printed per layer: MACs, instructions, cycles, cycles per MAC and per instruction.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import peers  # noqa: E402
from edgec import api  # noqa: E402
from edgec.bench import cycles  # noqa: E402
from edgec.quant import artifact  # noqa: E402
from edgec.targets import elf  # noqa: E402


def _plugin_args(open_name: str, close_name: str, out: Path):
    """A stand-in for cycles.qemu_args: the plugin with a window from each call of open_name to the next call of
    close_name, written to out (no real parts' memory timings: the core's own timings only)."""
    def args(board, firmware: Path, _out: Path, settings, parts: bool = True) -> list[str]:
        plugin = cycles.build_plugin(settings)
        lo, hi = elf.code_address(firmware, open_name), elf.code_address(firmware, close_name)
        if plugin is None or lo is None or hi is None:
            raise SystemExit(f"cycle_layers: no plugin, or {firmware} has no {open_name} / {close_name}")
        return ["-plugin", f"{plugin},out={out},open={lo:#x},close={hi:#x},"
                           f"core={cycles.CORES.get(board.cpu, 'm4')},ws={cycles.WAIT_STATES}"]
    return args


def _bench_windows(build: Path, data: Path, open_name: str, close_name: str, work: Path) -> tuple[dict, list]:
    """(the bench's report, the plugin's windows) of one profiled bench of one sample with the given windows."""
    out = work / f"windows-{open_name}.txt"
    out.unlink(missing_ok=True)
    saved = cycles.qemu_args
    cycles.qemu_args = _plugin_args(open_name, close_name, out)
    try:
        report = api.bench(build, data, limit=1, profile=True, report_dir=None)
    finally:
        cycles.qemu_args = saved
    return report, cycles.read_windows(out)


def layer_cycles(build: Path, data: Path, work: Path) -> list[dict]:
    """Per layer of the build: index, name, kind, MACs, instructions (the bench's profile), window instructions and
    cycles (the plugin)."""
    report, rest = _bench_windows(build, data, "profile_hook", "profile_hook", work)
    _, first = _bench_windows(build, data, "edgec_ticks_align", "profile_hook", work)
    layers = report["profile"]["layers"]
    windows = first[-1:] + rest
    if len(windows) != len(layers):
        raise SystemExit(f"cycle_layers: {len(windows)} windows for {len(layers)} layers (first {first}, "
                         f"then {len(rest)})")
    return [{"index": l["index"], "name": l["name"], "kind": l["kind"], "macs": l["macs"],
             "instructions": int(l["units"]), "window_instructions": w[0], "cycles": w[1]}
            for l, w in zip(layers, windows)]


def markdown(title: str, rows: list[dict]) -> str:
    cyc = sum(r["cycles"] for r in rows)
    lines = [f"**{title}**: {sum(r['instructions'] for r in rows):,} instructions, {cyc:,} cycles (sum of layers)",
             "", "| # | layer | kind | MACs | instructions | window instructions | cycles | cycles/MAC | cycles/insn "
             "| share |", "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        per_mac = f"{r['cycles'] / r['macs']:.2f}" if r["macs"] else ""
        lines.append(f"| {r['index']} | {r['name']} | {r['kind']} | {r['macs']:,} | {r['instructions']:,} | "
                     f"{r['window_instructions']:,} | {r['cycles']:,} | {per_mac} | "
                     f"{r['cycles'] / max(r['window_instructions'], 1):.2f} | {r['cycles'] / max(cyc, 1):.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="vww", help="MLPerf Tiny models (kws,vww,ic,ad)")
    ap.add_argument("--board", default="qemu-cortex-m4")
    ap.add_argument("--build", help="an existing build folder instead (with --data)")
    ap.add_argument("--data", help="with --build: the .npz of its input (x)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cycle_layers_") as tmp:
        work = Path(tmp)
        if a.build:
            if not a.data:
                raise SystemExit("cycle_layers: --build needs --data (an .npz with x)")
            print(markdown(Path(a.build).name, layer_cycles(Path(a.build), Path(a.data), work)))
            return 0
        for model in peers.mlperf_models(a.only.split(",")):
            out = work / model.name / "edgec"
            api.build(model.path, None, a.board, out)
            graph = artifact.load_graph(out)
            data, _ = peers.write_inputs(graph, peers.input_row(model, graph), work / model.name)
            print(markdown(f"{model.name} on {a.board}", layer_cycles(out, data, work / model.name)))
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
