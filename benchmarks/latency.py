"""Latency of the four MLPerf Tiny models on the emulated boards (and the host), per inference and per layer.

    .venv/bin/python benchmarks/latency.py                      # qemu-cortex-m4, -m55, host, both Cortex-M3 boards
    .venv/bin/python benchmarks/latency.py --boards qemu-cortex-m55   # the Helium kernels vs TFLM + CMSIS-NN MVE
    .venv/bin/python benchmarks/latency.py --boards qemu-cortex-m4 --models kws,ic --layers
    .venv/bin/python benchmarks/latency.py --layers --md docs/performance.md   # the published tables
    .venv/bin/python benchmarks/latency.py --boards qemu-cortex-m4 --optimize speed,size   # both builds side by side

For every model and board: build (calibrated on the golden inputs' x_fp32, NHWC like the ONNX files),
bench on the device (bit-exactness against the NumPy reference), and print MACs, emulated instructions
per inference (QEMU -icount read through SysTick: exact to one tick, 40 instructions on the M3/M4 boards; host:
ns; the JSON rows also hold the QEMU plugin's count of every executed instruction, `plugin_instructions`),
instructions per MAC, the ratio to TFLM on the same models, run in the same invocation on the same QEMU machine
by benchmarks/peers.py (the .tflite files, golden x_int8 row 0; qemu-cortex-m4 and -m7: TFLM + CMSIS-NN; the
Cortex-M3 boards, portable C path: TFLM's reference kernels; qemu-cortex-m3-large is an M3 with 4 MB of code
memory, for the models a 256 KB part cannot hold; qemu-cortex-m55, Helium kernels: TFLM + CMSIS-NN's MVE
kernels; --no-peers leaves TFLM out), the cycle estimate of the QEMU plugin on the Arm emulated boards
(edgec/bench/cycles.py; there are no TFLM cycle figures, so the ratio compares instructions only), the code
bytes (functions, weights and other constants excluded) of the whole firmware and of the model library +
runtime alone (what an application embeds; the rest is the benchmark harness, startup and the C library:
edgec/targets/code_size.py), and the firmware's flash. --optimize takes
speed, size or both (speed,size: one row per build). With --layers, the per-layer breakdown on
qemu-cortex-m4 from `edgec bench --profile` (the bench firmware's PROFILE command).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "benchmarks"))

import peers  # noqa: E402
from edgec import api  # noqa: E402
from edgec.errors import EdgecError  # noqa: E402

MLPERF = REPO.parent / "shared" / "models" / "mlperf_tiny"      # the shared folder beside the checkout
MODELS = {"kws": "kws_dscnn_fp32.onnx", "vww": "vww_mobilenetv1_025_fp32.onnx",
          "ic": "ic_resnet8_fp32.onnx", "ad": "ad_fc_autoencoder_fp32.onnx"}
# The peer each board is compared with, measured in the same run by benchmarks/peers.py (TFLM from
# ../shared/peers on the same QEMU machine, the .tflite of the same model, golden x_int8 row 0): the board TFLM
# runs on, its kernels, the target ratio (issue 32's acceptance) and the column label. Both Cortex-M3 boards
# compare with TFLM's M3 build on mps2-an385 (qemu-cortex-m3-large): the lm3s6965's 256 KB hold only KWS and IC,
# and the count is the same on both machines.
TARGET = {"qemu-cortex-m4": ("qemu-cortex-m4", "cmsis_nn", 0.35, "TFLM+CMSIS-NN"),
          "qemu-cortex-m3": ("qemu-cortex-m3-large", "reference", 0.35, "TFLM ref"),
          "qemu-cortex-m3-large": ("qemu-cortex-m3-large", "reference", 0.35, "TFLM ref"),
          "qemu-cortex-m7": ("qemu-cortex-m7", "cmsis_nn", 0.4, "TFLM+CMSIS-NN"),
          "qemu-cortex-m55": ("qemu-cortex-m55", "cmsis_nn", 0.5, "TFLM+CMSIS-NN (MVE)")}
PEERS_ON = True
_PEER_RUNS: dict[tuple[str, str, str], dict] = {}


def peer_instructions(key: str, board: str) -> dict:
    """TFLM's figures for this model on this board's peer (benchmarks/peers.py), run once per script run."""
    peer_board, kernels, _, _ = TARGET[board]
    if (key, peer_board, kernels) not in _PEER_RUNS:
        _PEER_RUNS[key, peer_board, kernels] = peers.tflm_mlperf(key, peer_board, kernels)
    return _PEER_RUNS[key, peer_board, kernels]


def code_bytes(elf: Path) -> int | None:
    """Bytes of all functions in a program (nm symbol types t/T), i.e. flash for code without data: for the host
    executable, which has no code-by-part accounting (the Arm firmware's come from the build report)."""
    nm = "arm-none-eabi-nm" if elf.suffix == ".elf" else "nm"
    try:
        out = subprocess.run([nm, "-S", "--size-sort", str(elf)], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    # the linker script places constants in .text too: leave out the model's arrays (opN_*) and tables
    return sum(int(f[1], 16) for f in (line.split() for line in out.splitlines())
               if len(f) == 4 and f[2] in "tT" and not re.match(r"op\d+_|.*_layer_(names|kinds|output)", f[3]))


def run(models, boards, samples, root: Path, layers: bool, optimize: str = "speed") -> dict:
    """Build and bench every model on every board, once per --optimize mode (a comma-separated list)."""
    results = {"rows": [], "layers": {}}
    modes = optimize.split(",")
    for key in models:
        golden = np.load(MLPERF / "data" / f"golden_{key}.npz")
        data = root / f"{key}.npz"
        np.savez(data, x=golden["x_fp32"])           # NHWC, the layout of the (non-_nchw) ONNX files
        for board in boards:
            for mode in modes:
                row = measure(key, board, mode, data, root, samples, layers and mode == modes[0], results)
                results["rows"].append(row)
    return results


def measure(key: str, board: str, mode: str, data: Path, root: Path, samples: int, layers: bool,
            results: dict) -> dict:
    """One row: build the model for the board with --optimize mode, bench it (per layer too with `layers` on
    qemu-cortex-m4, into results["layers"])."""
    out = root / f"{key}-{board}-{mode}"
    row = {"model": key, "board": board, "optimize": mode}
    try:
        rep = api.build(MLPERF / MODELS[key], data, board, out, optimize=mode)
    except EdgecError as e:
        print(f"{key:4s} {board:20s} {mode} does not build: {e}", file=sys.stderr)
        return dict(row, error=str(e))
    profiled = layers and board == "qemu-cortex-m4"
    r = api.bench(out, data, limit=samples, profile=profiled, report_dir=None)
    _, _, elf = api.load_build(out)
    code = rep["memory"].get("code") or {}
    row.update(macs=rep["macs"], latency=r["latency"]["median"], unit=r["latency"]["unit"],
               per_mac=r["latency"]["per_mac"],
               cycles=(r["latency"].get("cycles_estimate") or {}).get("median"),
               plugin_instructions=(r["latency"].get("cycles_estimate") or {}).get("plugin_instructions_median"),
               agreement=r["agreement"]["device_vs_reference"],
               code_bytes=code.get("total") or code_bytes(elf), model_code_bytes=code.get("model_and_runtime"),
               code_by_part=code or None, arena_bytes=rep["memory"]["arena_bytes"],
               weights_bytes=rep["memory"]["weights_bytes"], flash_bytes=rep["memory"]["flash_bytes"])
    if board in TARGET and PEERS_ON:
        peer = peer_instructions(key, board)
        if "error" in peer:
            print(f"{key:4s} {board:20s} TFLM does not run: {peer['error']}", file=sys.stderr)
        else:
            row.update(reference=peer["instructions"], ratio=row["latency"] / peer["instructions"])
    if profiled:
        results["layers"][key] = dict(r["profile"], board=board)
    return row


def summary_table(results: dict) -> str:
    """The per-model, per-board table as Markdown (printed as is: it reads as plain text too)."""
    lines = ["| model | board | optimize | MACs | per inference | unit | per MAC | reference | ratio | target "
             "| cycles est. | cycles/MAC | exact | code B | model + runtime code B | flash B | arena B |",
             "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        if "error" in r:
            m = re.search(r"needs (?:about )?([\d,]+ B of \w+).*?the board has ([\d,]+ B)", r["error"])
            why = f"does not fit: needs {m[1]}, has {m[2]}" if m else f"does not build: {r['error'][:80]}"
            lines.append(f"| {r['model']} | {r['board']} | {r.get('optimize', '')} | {why} |" + " |" * 13)
            continue
        unit = "insns" if r["unit"] == "emulated instructions" else r["unit"]
        ref = f"{r['reference']:,d}" if "reference" in r else ""
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
        target = f"<= {TARGET[r['board']][2]:g}" if r["board"] in TARGET else ""
        cycles = f"{r['cycles']:,.0f}" if r.get("cycles") else ""
        cycles_per_mac = f"{r['cycles'] / r['macs']:.2f}" if r.get("cycles") and r["macs"] else ""
        model_code = f"{r['model_code_bytes']:,d}" if r.get("model_code_bytes") else ""
        lines.append(f"| {r['model']} | {r['board']} | {r.get('optimize', '')} | {r['macs']:,d} | "
                     f"{r['latency']:,.0f} | {unit} | {r['per_mac']:.2f} | {ref} | {ratio} | {target} | {cycles} | "
                     f"{cycles_per_mac} | {r['agreement']:.2f} | {r['code_bytes'] or 0:,d} | {model_code} | "
                     f"{r['flash_bytes'] or 0:,d} | {r['arena_bytes']:,d} |")
    return "\n".join(lines)


def layer_tables(results: dict) -> str:
    out = []
    for key, prof in results["layers"].items():
        out.append(f"\n**{key}** on {prof['board']}: per layer ({prof['unit']}), whole invoke "
                   f"{prof['whole_units']:,.0f}\n")
        out.append("| # | kind | MACs | insns | per MAC | share | name |\n|---:|---|---:|---:|---:|---:|---|")
        total = sum(layer["units"] for layer in prof["layers"]) or 1
        for layer in prof["layers"]:
            per = f"{layer['units'] / layer['macs']:.2f}" if layer["macs"] else ""
            name = layer["name"][-40:].replace("|", "/")
            out.append(f"| {layer['index']} | {layer['kind']} | {layer['macs']:,d} | {layer['units']:,.0f} | {per} | "
                       f"{100 * layer['units'] / total:.1f}% | {name} |")
    return "\n".join(out)


NOTE = ("reference: TFLM on the same emulator, run by benchmarks/peers.py (qemu-cortex-m4, -m7: TFLM + CMSIS-NN; Cortex-M3 boards: TFLM "
        "reference kernels; qemu-cortex-m55: TFLM + CMSIS-NN's MVE kernels), in instructions; ratio = instructions / "
        "reference instructions; cycles est. = the QEMU plugin's Cortex-M cycle estimate (edgec/bench/cycles.py, "
        "not a measurement): there are no TFLM cycle figures, so it has no ratio to TFLM and is not comparable "
        "to the reference; exact = fraction of samples byte-identical to the NumPy reference; code B = functions "
        "in the firmware (model + runtime + benchmark harness + startup + C library); model + runtime code B = "
        "the functions an application embeds; flash B = the whole firmware image (code, weights, constants)")


def print_tables(results: dict) -> None:
    print()
    print(summary_table(results))
    print(NOTE)
    print(layer_tables(results))


DOC = """# Latency of the MLPerf Tiny models

Produced by `{cmd}` (one run; QEMU `-icount shift=0` instruction counts are exact and repeatable, host
times are wall-clock ns on the shared development machine and noisy).

For each model and board: MACs, emulated instructions per inference (the median over the benchmarked
golden samples), instructions per MAC, TFLM's count for the same model measured in the same run by
benchmarks/peers.py (TFLM with CMSIS-NN on the Cortex-M4 and -M7; TFLM reference kernels on the Cortex-M3
boards, where edgec runs its portable C path; TFLM with CMSIS-NN's Helium (MVE) kernels on the Cortex-M55,
where edgec runs its MVE kernels; the .tflite file, golden x_int8 row 0, same QEMU machine), the ratio (in instructions) and its target, *cycles est.* (a Cortex-M cycle
estimate from the QEMU plugin of edgec/bench/cycles.py: Cortex-M4 TRM timings per executed instruction, Helium
instructions 2 beats, 0 flash wait states; an estimate, not a measurement; there are no TFLM cycle figures, so
it has no ratio to the reference and is not comparable to it) and per MAC, *exact* (the fraction of samples
whose device output is byte-identical to the NumPy integer reference), the bytes of code in the firmware (all
functions, weights and other constants excluded: startup, serial link, benchmark harness, kernels, the model's
invoke; on the host, the whole native test executable), the code of the model library + runtime alone (what
an application embeds, edgec/targets/code_size.py), the firmware's flash (code, weights and other constants)
and the arena. `qemu-cortex-m3` is the
256 KB lm3s6965, which cannot hold VWW and AD;
`qemu-cortex-m3-large` is QEMU's mps2-an385, the same Cortex-M3 with 4 MB of code memory.

{summary}

## Per layer on qemu-cortex-m4

From `edgec bench --profile` (the firmware's PROFILE command: the counter read after every layer).
{layers}
"""


def optimize_modes(text: str) -> str:
    modes = text.split(",")
    if not modes or any(m not in ("speed", "size") for m in modes) or len(set(modes)) != len(modes):
        raise argparse.ArgumentTypeError(f"'{text}': give speed, size or speed,size")
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--boards", default="qemu-cortex-m4,qemu-cortex-m55,host,qemu-cortex-m3,qemu-cortex-m3-large")
    ap.add_argument("--samples", type=int, default=2, help="golden samples benchmarked per model (default 2)")
    ap.add_argument("--layers", action="store_true", help="per-layer breakdown on qemu-cortex-m4")
    ap.add_argument("--optimize", default="speed", type=optimize_modes,
                    help="edgec build --optimize: speed (default), size, or speed,size (a row per build)")
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--md", help="write the tables as a Markdown page (docs/performance.md)")
    ap.add_argument("--keep", help="build folder to keep (default: a temporary one)")
    ap.add_argument("--no-peers", action="store_true", help="do not run TFLM (benchmarks/peers.py): no ratios")
    args = ap.parse_args()
    global PEERS_ON
    PEERS_ON = not args.no_peers
    with tempfile.TemporaryDirectory(prefix="edgec-latency-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        results = run(args.models.split(","), args.boards.split(","), args.samples, root, args.layers, args.optimize)
    print_tables(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.md:
        cmd = "python " + " ".join(["benchmarks/latency.py"] + sys.argv[1:])
        Path(args.md).write_text(DOC.format(cmd=cmd, summary=summary_table(results), layers=layer_tables(results)))


if __name__ == "__main__":
    main()
