"""Measurements of int4 weights and mixed precision by accuracy budget, on the host with the
NumPy integer reference (bit-exact with the generated C):

- weights: `--weights int4` against int8 on the digits example and MLPerf Tiny KWS (constants the generated
  library keeps in flash, and the weight tensors alone);
- accuracy: float, edgec's default int8, `--weights int4` and `--max-accuracy-drop 1` on the digits test set;
  on examples/hostile_channel also onnxruntime's static INT8 (QDQ, MinMax).

    .venv/bin/python benchmarks/mixed_precision.py [--skip-kws]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import numpy as np

from edgec import api
from edgec.codegen import constants
from edgec import pipeline
from edgec.quant import calibrate, ptq, reference
from edgec.fixedpoint import scheme

REPO = Path(__file__).resolve().parent.parent
KWS = REPO.parent / "shared" / "models" / "mlperf_tiny"


def top1(graph, x, y) -> float:
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    return float(np.mean([int(np.argmax(reference.run(graph, q))) == t for q, t in zip(xq, y)]))


def quantized(model, calib, optimize="speed", **options):
    result = api.calibrate_model(model, calib, ptq.QuantOptions(sensitivity_samples=0, **options),
                                 log=lambda m: print("  " + m, file=sys.stderr) if "trial" in m else None)[1]
    return dataclasses.replace(result, graph=pipeline.lower(result.graph, optimize))


def sizes(name, model, calib):
    """The build summary's constants (edgec/codegen/constants.py) for int8 and int4, each --optimize mode."""
    for optimize in ("size", "speed"):
        b8, b4 = (constants.breakdown(quantized(model, calib, optimize, **w).graph) for w in ({}, {"weights": "int4"}))
        print(f"{name} --optimize {optimize}: weights int8 {b8['weights']:,} B, int4 {b4['weights']:,} B "
              f"({100 * b4['weights'] / b8['weights']:.1f} %); all constants int8 {b8['total']:,} B, int4 "
              f"{b4['total']:,} B ({100 * b4['total'] / b8['total']:.1f} %); int4 build: "
              + constants.describe(b4))


def ort_static_int8(model: Path, calib: Path, x, y) -> float:
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"input": xi[None]} for xi in np.load(calib)["x"])

        def get_next(self):
            return next(self.it, None)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "int8.onnx"
        quantize_static(str(model), str(out), Reader(), quant_format=QuantFormat.QDQ)
        sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        pred = [int(np.argmax(sess.run(None, {"input": xi[None]})[0])) for xi in x]
    return float(np.mean(np.array(pred) == y))


def accuracies(folder: Path, with_ort: bool, val: Path | None = None):
    model, calib = folder / "model.onnx", folder / "calib.npz"
    test = np.load(folder / "test.npz")
    x, y = test["x"], test["y"]
    import onnx
    fl = calibrate.run_float(onnx.load(model), x)
    print(f"{folder.name} ({len(y)} test samples): float {100 * np.mean(fl.argmax(axis=1) == y):.1f} %")
    if with_ort:
        print(f"  onnxruntime static INT8 (QDQ, MinMax): {100 * ort_static_int8(model, calib, x, y):.1f} %")
    for label, opts in (("edgec int8 (default)", {}), ("edgec --weights int4", {"weights": "int4"}),
                        ("edgec --max-accuracy-drop 1", {"max_accuracy_drop": 1.0}),
                        *([("edgec --max-accuracy-drop 1 --val " + val.name, {"max_accuracy_drop": 1.0,
                                                                             "val": str(val)})] if val else [])):
        res = quantized(model, calib, **opts)
        mix = f" [{res.mixed.summary()}]" if res.mixed else ""
        print(f"  {label}: {100 * top1(res.graph, x, y):.1f} %, constants {res.graph.weights_bytes():,} B{mix}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-kws", action="store_true")
    args = ap.parse_args()
    digits = REPO / "examples" / "digits_cnn"
    sizes("digits_cnn", digits / "model.onnx", digits / "calib.npz")
    if not args.skip_kws:
        golden = np.load(KWS / "data" / "golden_kws.npz")
        with tempfile.TemporaryDirectory() as tmp:
            calib = Path(tmp) / "kws_calib.npz"
            np.savez(calib, x=golden["x_fp32"].astype(np.float32))
            sizes("kws_dscnn", KWS / "kws_dscnn_fp32.onnx", calib)
    accuracies(digits, with_ort=False)
    hostile = REPO / "examples" / "hostile_channel"
    accuracies(hostile, with_ort=True, val=hostile / "val.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
