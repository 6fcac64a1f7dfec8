"""RAM of the four MLPerf Tiny models: edgec's arena against the live-set lower bound and TFLM's arena.

    .venv/bin/python benchmarks/memory.py [--models DIR] [--no-firmware]

For each model: edgec's arena (activations and scratch, everything), the live-set lower bound (largest sum
of int8 tensors live at one op, views shared, no in-place reuse), planning time (schedule + plan), and with
firmware built for qemu-cortex-m4 the firmware's static RAM (.data + .bss of the ELF) plus the stack: gcc's
-fstack-usage estimate and the high-water mark measured on the emulated device (stack painting, one bench run).
TFLM is measured with the `tflite-micro` PyPI package (`pip install tflite-micro`, x86 reference kernels)
on the official int8 .tflite files: its RecordingMicroAllocator prints the arena it used. The issue's
reference numbers (TFLM with CMSIS-NN on a Cortex-M4) are printed next to them, labelled as such.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edgec import api
from edgec.quant import calibrate
from edgec.frontend import canonicalize
from edgec.frontend import loader
from edgec.codegen import lowering
from edgec.plan import planner
from edgec.quant import quantize
from edgec.data import load_dataset

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"kws": ("KWS DS-CNN", "kws_dscnn_fp32", "kws_dscnn_int8"),
          "vww": ("VWW MobileNetV1-0.25", "vww_mobilenetv1_025_fp32", "vww_mobilenetv1_025_int8"),
          "ic": ("IC ResNet-8", "ic_resnet8_fp32", "ic_resnet8_int8"),
          "ad": ("AD FC autoencoder", "ad_fc_autoencoder_fp32", "ad_fc_autoencoder_int8")}
# Issue 5's table (TFLM with CMSIS-NN on a Cortex-M4): smallest working arena, and arena + static RAM + stack.
ISSUE_TFLM_ARENA = {"kws": 22832, "vww": 100720, "ic": 55008, "ad": 3024}
ISSUE_TFLM_TOTAL = {"kws": 25476, "vww": 103364, "ic": 57652, "ad": 4968}

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
    """TFLM's arena (total, head = activations, tail = persistent) or None and why not."""
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", help="folder with the MLPerf Tiny .onnx/.tflite files and data/")
    ap.add_argument("--no-firmware", action="store_true", help="skip the qemu-cortex-m4 firmware builds")
    args = ap.parse_args()
    models = find_models(args.models)
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for key, (title, onnx_name, tflite_name) in MODELS.items():
            model_path = models / f"{onnx_name}.onnx"
            calib = Path(tmp) / f"{key}.npz"
            np.savez(calib, x=np.load(models / "data" / f"golden_{key}.npz")["x_fp32"])
            model = loader.load_model(model_path)
            graph = canonicalize.canonicalize(model, onnx_name)
            bound = planner.live_set_lower_bound(graph)
            data = load_dataset(calib, graph.input_onnx_shape)
            ranges = calibrate.calibrate(model, data.x, [t.source for t in graph.tensors.values()])
            quantize.quantize(graph, ranges)
            lowering.lower_graph(graph)
            start = time.perf_counter()
            graph.ops = planner.schedule(graph)
            plan = planner.plan(graph)
            plan_s = time.perf_counter() - start
            planner.check_plan(graph, plan)
            row = {"title": title, "arena": plan.arena_bytes, "bound": bound, "plan_ms": plan_s * 1e3,
                   "optimal": plan.optimal, "method": plan.method}
            if not args.no_firmware:
                out = Path(tmp) / f"build-{key}"
                mem = api.build(model_path, calib, "qemu-cortex-m4", out)["memory"]
                measured = api.bench(out, calib, limit=2, report_dir=None)["memory"]["stack_used_bytes"]
                row.update(static=mem["static_ram_bytes"], stack=mem["stack_estimate_bytes"],
                           total=mem["total_ram_bytes"], in_ram=mem["model_ram_symbols"], measured=measured,
                           total_measured=mem["static_ram_bytes"] + measured if measured is not None else None)
            tflm, why = tflm_arena(models / f"{tflite_name}.tflite")
            if tflm is None:
                notes.append(f"{title}: TFLM not measured ({why})")
            row["tflm"] = tflm
            row["issue_arena"], row["issue_total"] = ISSUE_TFLM_ARENA[key], ISSUE_TFLM_TOTAL[key]
            rows.append(row)

    def n(v):
        return "n/a" if v is None else f"{v:,}"

    print("RAM in bytes. edgec: arena planned for the int8 graph; bound: live-set lower bound.")
    print("TFLM x86: tflite-micro wheel (reference kernels), total = head (activations) + tail (persistent).")
    print("TFLM M4 (issue): reference numbers from issue 5, TFLM + CMSIS-NN on a Cortex-M4, not measured here.\n")
    head = (f"{'model':22} {'edgec arena':>11} {'bound':>7} {'+/-bound':>8} {'plan ms':>7}  "
            f"{'TFLM x86 total':>14} {'head':>7} {'tail':>6}  {'TFLM M4 arena (issue)':>21}")
    print(head)
    print("-" * len(head))
    for r in rows:
        t = r["tflm"] or {}
        print(f"{r['title']:22} {r['arena']:>11,} {r['bound']:>7,} {r['arena'] - r['bound']:>+8,} "
              f"{r['plan_ms']:>7.1f}  {n(t.get('total')):>14} {n(t.get('head')):>7} {n(t.get('tail')):>6}  "
              f"{r['issue_arena']:>21,}")
    if not args.no_firmware:
        print("\nTotal RAM of the qemu-cortex-m4 benchmark firmware: static RAM (.data + .bss from the ELF, arena "
              "included, the reserved stack region not) + stack, estimated (gcc -fstack-usage, deepest call chain) "
              "and measured (high-water mark by stack painting on the emulated device).")
        head = (f"{'model':22} {'static RAM':>10} {'stack est.':>10} {'measured':>8} {'total':>8}  "
                f"{'TFLM total (issue)':>18}  model symbols in RAM")
        print(head)
        print("-" * len(head))
        for r in rows:
            print(f"{r['title']:22} {r['static']:>10,} {n(r['stack']):>10} {n(r['measured']):>8} "
                  f"{n(r['total_measured']):>8}  {r['issue_total']:>18,}  {', '.join(r['in_ram'] or [])}")
    print("\nPlanner: " + "; ".join(f"{r['title']}: {r['method']}{' (optimal)' if r['optimal'] else ''}"
                                    for r in rows))
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
