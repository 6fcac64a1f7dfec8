"""1,000 VWW-size samples benched on an emulated board with the dataset-in-flash mode.

    EDGEC_PLATFORMIO_HOME=... .venv/bin/python benchmarks/dataset_flash.py [--samples 1000] [--units 2]
        [--board qemu-cortex-m4] [--work /tmp/edgec-dataset-flash]

Builds MLPerf Tiny's VWW MobileNetV1-0.25 (../shared/models/mlperf_tiny, input 96x96x3) once, makes a
deterministic test set (the person image with random brightness, contrast, shifts and noise, and random images),
then times `edgec bench --dataset-in-flash` end to end: references, images written per chunk, emulators started,
inputs run on the device, results read back.  Prints one JSON line: wall time, the phases, bit-exactness.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MLPERF = REPO.parent / "shared" / "models" / "mlperf_tiny"


def test_set(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    person = np.load(MLPERF / "data" / "golden_vww.npz")["x_fp32"][:1]
    x = np.repeat(person, n, axis=0).astype(np.float32)
    x = x * rng.uniform(0.6, 1.4, (n, 1, 1, 1)) + rng.uniform(-0.2, 0.2, (n, 1, 1, 1))
    for i in range(n):
        x[i] = np.roll(x[i], tuple(rng.integers(-12, 13, 2)), axis=(0, 1))
    x += rng.normal(0, 0.05, x.shape)
    x[::5] = rng.uniform(0, 1, x[::5].shape)          # every fifth: a random image
    return np.clip(x, 0, 1).astype(np.float32)


def main() -> int:
    from edgec import api

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--units", type=int, default=2, help="emulators running chunks in parallel")
    ap.add_argument("--board", default="qemu-cortex-m4")
    ap.add_argument("--work", type=Path, default=Path("/tmp/edgec-dataset-flash"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    build = args.work / f"vww-{args.board}"
    if not (build / "build-report.json").is_file():
        calib = args.work / "vww-calib.npz"
        np.savez(calib, x=test_set(64, seed=1))
        t = time.monotonic()
        api.build(MLPERF / "vww_mobilenetv1_025_fp32.onnx", calib, args.board, build, log=print)
        print(f"build: {time.monotonic() - t:.1f} s (not part of the bench's wall time)", file=sys.stderr)
    data = args.work / f"vww-test-{args.samples}.npz"
    if not data.is_file():
        np.savez(data, x=test_set(args.samples))
    t = time.monotonic()
    r = api.bench(build, data, dataset_in_flash=True, units=args.units, log=lambda m: print(m, file=sys.stderr))
    wall = time.monotonic() - t
    link = r["link"]
    phases = {k: link[k] for k in ("reference_s", "image_s", "load_s", "run_s", "result_bytes",
                                   "chunk_samples", "chunks", "units", "input_bytes_in_images")}
    phases["device_wall_s"] = link["wall_s"]      # images, emulators and runs (the references ran meanwhile)
    compute_units = float(np.sum(r["latency"]["samples"]))
    out = {"board": args.board, "samples": r["samples"], "wall_s": round(wall, 1),
           "bit_exact": r["agreement"]["device_vs_reference"] == 1.0,
           "device_vs_reference": r["agreement"]["device_vs_reference"],
           "median_latency": r["latency"]["median"], "latency_unit": r["latency"]["unit"],
           "emulated_instructions_total": compute_units, **phases,
           "over_serial_link_at_20kBps_s": round(link["input_bytes_in_images"] / 20e3, 1)}
    print(json.dumps(out))
    return 0 if out["bit_exact"] else 1


if __name__ == "__main__":
    sys.exit(main())
