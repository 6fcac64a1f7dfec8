"""The four MLPerf Tiny models under a RAM budget: fastest plan against `--ram-budget`.

    .venv/bin/python benchmarks/ram_budget.py [--budget 40960] [--models kws,vww,ic,ad] [--samples 2] [--tflite]

For every model: build for qemu-cortex-m4 without a budget (the fastest plan) and with `--ram-budget`,
bench both (bit-exactness against the NumPy reference, emulated instructions per inference, the stack
high-water mark measured on the device) and print the arena, the firmware's static RAM (.data + .bss, the
arena included), the measured stack, their sum (total device RAM), the instructions and their ratio to the
fastest plan's, and the patch-based stages the budget chose (plan.json). `--tflite` builds the official INT8
`.tflite` files instead of the float ONNX ones (no calibration; the bench quantizes the golden float inputs).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edgec import api  # noqa: E402
from edgec.errors import EdgecError  # noqa: E402

MLPERF = Path("/work/shared/models/mlperf_tiny")
MODELS = {"kws": "kws_dscnn_fp32.onnx", "vww": "vww_mobilenetv1_025_fp32.onnx",
          "ic": "ic_resnet8_fp32.onnx", "ad": "ad_fc_autoencoder_fp32.onnx"}
TFLITE = {"kws": "kws_dscnn_int8.tflite", "vww": "vww_mobilenetv1_025_int8.tflite",
          "ic": "ic_resnet8_int8.tflite", "ad": "ad_fc_autoencoder_int8.tflite"}
BOARD = "qemu-cortex-m4"


def measure(key: str, budget: int | None, root: Path, samples: int, tflite: bool = False) -> dict:
    golden = np.load(MLPERF / "data" / f"golden_{key}.npz")
    data = root / f"{key}.npz"
    np.savez(data, x=golden["x_fp32"])
    out = root / f"{key}-{budget or 'fastest'}"
    row = {"model": key, "budget": budget}
    try:
        api.build(MLPERF / (TFLITE if tflite else MODELS)[key], None if tflite else data, BOARD, out,
                  ram_budget=budget)
    except EdgecError as e:
        return dict(row, error=str(e))
    r = api.bench(out, data, limit=samples, report_dir=None)
    m = r["memory"]
    plan = json.loads((out / "plan.json").read_text())
    static, stack = m.get("static_ram_bytes"), m.get("stack_used_bytes")
    return dict(row, arena=m["arena_bytes"], static=static, stack=stack,
                total=static + stack if static is not None and stack is not None else None,
                insns=r["latency"]["median"], exact=r["agreement"]["device_vs_reference"],
                stages=[(s["ops"], s["rows_per_band"]) for s in plan.get("patched_stages", [])])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=40960)
    ap.add_argument("--models", default="kws,vww,ic,ad")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--tflite", action="store_true", help="the official INT8 .tflite files, not the float ONNX")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.models.split(","):
            fast = measure(key, None, Path(tmp), args.samples, args.tflite)
            small = measure(key, args.budget, Path(tmp), args.samples, args.tflite)
            if "insns" in fast and "insns" in small:
                small["ratio"] = round(small["insns"] / fast["insns"], 4)
            rows += [fast, small]
            for r in (fast, small):
                print(json.dumps(r), flush=True)
    print("\n| model | budget | arena B | static RAM B | stack B | total B | insns | ratio | exact | stages |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['budget']} | {r['error']} | | | | | | | |")
            continue
        print(f"| {r['model']} | {r['budget'] or '-'} | {r['arena']:,} | {r['static']:,} | {r['stack']} | "
              f"{r['total']:,} | {r['insns']:,.0f} | {r.get('ratio', '')} | {r['exact']:.2f} | {r['stages']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
