"""RAM of the four MLPerf Tiny models: what a user pays on the device with edgec, against the bounds and TFLM.

    .venv/bin/python benchmarks/memory.py [--models DIR] [--only kws,ic] [--no-firmware]
                                          [--ram-budget BYTES] [--json FILE] [--md FILE]

Per model: the live-set lower bound (largest sum of int8 tensors live at one op, views shared, no in-place
reuse), edgec's arena (activations and scratch, everything), planning time, and with firmware built for
qemu-cortex-m4 (default): the firmware's static RAM (.data + .bss of the ELF, arena included), the stack
high-water mark measured on the emulated device (stack painting, reported over the bench link), the total
device RAM (their sum) and the latency (emulated instructions per inference, exact under QEMU -icount).

--ram-budget BYTES builds each model a second time with that budget passed to `edgec build` (api.build's
`ram_budget`: the memory-saving plans of edgec/plan/ram_budget.py) and adds its arena, total RAM and latency cost (its
instructions / the default plan's); an edgec without that option says so and leaves the columns empty.
Any other build option can be passed the same way (BUILD_OPTIONS below).

TFLM's figures, each with its source:
- "TFLM x86": measured here if the `tflite-micro` PyPI package is installed (x86 reference kernels, the
  official int8 .tflite files; its RecordingMicroAllocator prints the arena), else the same measurement as
  recorded in ../shared/docs/landscape.md section 2 (tflite-micro 0.dev20261023 wheel);
- "TFLM M4": TFLM + CMSIS-NN on qemu-cortex-m4, measured in the same run by benchmarks/peers.py (the bundle of
  ../shared/peers, the .tflite file, golden x_int8 row 0): the smallest working arena, and the total device RAM
  (.data + .bss + that arena + the measured stack), as edgec's total; --no-peers leaves it out.
"""
from __future__ import annotations

import argparse
import inspect
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))        # this checkout's edgec, not whichever the interpreter has installed

from edgec import api  # noqa: E402
from edgec.quant import calibrate  # noqa: E402
from edgec.frontend import canonicalize  # noqa: E402
from edgec.frontend import loader  # noqa: E402
from edgec import pipeline  # noqa: E402
from edgec.plan import planner  # noqa: E402
from edgec.quant import quantize  # noqa: E402
from edgec.data import load_dataset  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
import peers  # noqa: E402  (benchmarks/peers.py: TFLM on the same emulator, same run)

BOARD = "qemu-cortex-m4"
MODELS = {"kws": ("KWS DS-CNN", "kws_dscnn_fp32", "kws_dscnn_int8"),
          "vww": ("VWW MobileNetV1-0.25", "vww_mobilenetv1_025_fp32", "vww_mobilenetv1_025_int8"),
          "ic": ("IC ResNet-8", "ic_resnet8_fp32", "ic_resnet8_int8"),
          "ad": ("AD FC autoencoder", "ad_fc_autoencoder_fp32", "ad_fc_autoencoder_int8")}
# ../shared/docs/landscape.md section 2, "TFLM arena_used_bytes, x86-64 reference kernels, tflite-micro
# 0.dev20261023 wheel [measured here]": total / head (non-persistent) / tail (persistent)
LANDSCAPE_TFLM_X86 = {"kws": (24272, 16000, 8272), "vww": (103680, 73728, 29952), "ic": (55984, 49152, 6832),
                      "ad": (3984, 768, 3216)}
# build options this script can pass through to api.build (command-line flag -> keyword)
BUILD_OPTIONS = {"ram_budget": "--ram-budget"}

TFLM_SCRIPT = r"""
import sys, numpy as np
from tflite_micro.python.tflite_micro import runtime
interp = runtime.Interpreter.from_file(sys.argv[1], arena_size=1 << 20)
d = interp.get_input_details(0)
interp.set_input(np.zeros(d["shape"], d["dtype"]), 0)
interp.invoke()
sys.stdout.flush()
interp.print_allocations()
"""


def tflm_arena(tflite: Path) -> tuple[dict | None, str]:
    """TFLM's arena measured here (total, head = activations, tail = persistent) or None and why not."""
    proc = subprocess.run([sys.executable, "-c", TFLM_SCRIPT, str(tflite)], capture_output=True, text=True,
                          timeout=300)
    text = proc.stdout + proc.stderr
    found = {k: int(v) for k, v in re.findall(r"Arena allocation (total|head|tail) (\d+) bytes", text)}
    if proc.returncode != 0 or "total" not in found:
        last = (text.strip().splitlines() or ["no output"])[-1]
        return None, last
    return found, ""


def find_models(arg: str | None) -> Path:
    for d in ([Path(arg)] if arg else [ROOT.parent / "shared" / "models" / "mlperf_tiny",
                                       ROOT.parent.parent / "shared" / "models" / "mlperf_tiny"]):
        if (d / "kws_dscnn_fp32.onnx").is_file():
            return d
    sys.exit("MLPerf Tiny models not found; pass --models DIR")


def build_options_accepted() -> set[str]:
    return set(inspect.signature(api.build).parameters)


def device_run(model_path: Path, calib: Path, out: Path, **options) -> dict:
    """Build for BOARD with these options, bench 2 samples: static RAM, measured stack, total, latency."""
    report = api.build(model_path, calib, BOARD, out, **options)
    r = api.bench(out, calib, limit=2, report_dir=None)
    m = r["memory"]
    assert r["agreement"]["device_vs_reference"] == 1.0, f"{model_path.name}: device output differs from the reference"
    return {"arena": report["memory"]["arena_bytes"], "static": m["static_ram_bytes"],
            "stack_est": m.get("stack_estimate_bytes"), "stack": m["stack_used_bytes"], "total": m["total_ram_bytes"],
            "insns": r["latency"]["median"], "in_ram": m.get("model_ram_symbols")}


def plan_row(models: Path, key: str, calib: Path) -> dict:
    title, onnx_name, _ = MODELS[key]
    model = loader.load_model(models / f"{onnx_name}.onnx")
    graph = canonicalize.canonicalize(model, onnx_name)
    bound = planner.live_set_lower_bound(graph)
    data = load_dataset(calib, graph.input_onnx_shape)
    ranges = calibrate.calibrate(model, data.x, [t.source for t in graph.tensors.values()])
    graph = quantize.quantize(graph, ranges)
    graph = pipeline.lower(graph)
    start = time.perf_counter()
    graph = graph.replace_ops(planner.schedule(graph))
    plan = planner.plan(graph)
    plan_s = time.perf_counter() - start
    planner.check_plan(graph, plan)
    return {"key": key, "title": title, "arena": plan.arena_bytes, "bound": bound, "plan_ms": plan_s * 1e3,
            "optimal": plan.optimal, "method": plan.method}


def _n(v) -> str:
    return "n/a" if v is None else f"{round(v):,}"


def table(rows: list[dict], budget: int | None) -> list[str]:
    """The per-model table as Markdown lines."""
    cols = ["model", "bound", "edgec arena", "static RAM", "stack (measured)", "total device RAM",
            "insns / inference"]
    if budget is not None:
        cols += [f"arena @ {budget:,}", f"total @ {budget:,}", "latency cost"]
    cols += ["TFLM x86 arena", "TFLM M4 arena", "TFLM M4 total"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        d, b = r.get("device") or {}, r.get("budget") or {}
        cost = (f"{b['insns'] / d['insns']:.3f}x" if b.get("insns") and d.get("insns") else "n/a")
        cells = [r["title"], _n(r["bound"]), _n(r["arena"]), _n(d.get("static")), _n(d.get("stack")),
                 _n(d.get("total")), _n(d.get("insns"))]
        if budget is not None:
            cells += [_n(b.get("arena")), _n(b.get("total")), cost]
        tflm = r["tflm"]
        m4 = r.get("tflm_m4") or {}
        cells += [f"{tflm['total']:,} ({tflm['source']})", _n(m4.get("arena_bytes")), _n(m4.get("ram_total_bytes"))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", help="folder with the MLPerf Tiny .onnx/.tflite files and data/")
    ap.add_argument("--only", default=",".join(MODELS), help="comma-separated subset of kws,vww,ic,ad")
    ap.add_argument("--no-firmware", action="store_true", help=f"skip the {BOARD} firmware builds")
    ap.add_argument("--ram-budget", type=int, help="also build with this RAM budget (bytes) and compare")
    ap.add_argument("--no-peers", action="store_true", help="do not run TFLM on qemu-cortex-m4 (benchmarks/peers.py)")
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--md", help="write the Markdown table here")
    args = ap.parse_args()
    models = find_models(args.models)
    keys = [k for k in args.only.split(",") if k]
    unknown = [k for k in keys if k not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}: choose from {', '.join(MODELS)}")
    budget_options = {"ram_budget": args.ram_budget} if args.ram_budget is not None else {}
    missing = sorted(set(budget_options) - build_options_accepted())
    budget_note = (f"this edgec's build has no {', '.join(BUILD_OPTIONS[m] for m in missing)} (the RAM budget's options)"
                   if missing else "")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in keys:
            calib = Path(tmp) / f"{key}.npz"
            np.savez(calib, x=np.load(models / "data" / f"golden_{key}.npz")["x_fp32"])
            row = plan_row(models, key, calib)
            model_path = models / f"{MODELS[key][1]}.onnx"
            if not args.no_firmware:
                row["device"] = device_run(model_path, calib, Path(tmp) / f"build-{key}")
                if budget_options and not missing:
                    row["budget"] = device_run(model_path, calib, Path(tmp) / f"budget-{key}", **budget_options)
                elif budget_options:
                    row["budget_note"] = budget_note
            tflm, why = tflm_arena(models / f"{MODELS[key][2]}.tflite")
            if tflm is None:
                total, head, tail = LANDSCAPE_TFLM_X86[key]
                tflm = {"total": total, "head": head, "tail": tail, "source": "landscape.md",
                        "not_measured_here": why}
            else:
                tflm["source"] = "measured"
            row["tflm"] = tflm
            if not args.no_peers:
                row["tflm_m4"] = peers.tflm_mlperf(key, BOARD, "cmsis_nn", bisect=True)
            rows.append(row)
            print(f"{row['title']}: done", file=sys.stderr, flush=True)
    lines = table(rows, args.ram_budget)
    print(f"RAM in bytes, firmware for {BOARD} (edgec's bench harness); latency in emulated instructions.")
    print("\n".join(lines))
    print("\nPlanner: " + "; ".join(f"{r['title']}: {r['method']}{' (optimal)' if r['optimal'] else ''}"
                                    for r in rows))
    if budget_note and budget_options:
        print(f"--ram-budget: {budget_note}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.md:
        Path(args.md).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
