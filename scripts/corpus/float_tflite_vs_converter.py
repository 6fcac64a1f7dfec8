"""edgec's INT8 of a float .tflite against TFLiteConverter's own full-INT8 PTQ of the same Keras model, on the
held-out inputs scripts/corpus/export_tf_float.py stored (<name>_compare.npz in its --compare folder): per model,
the translation's largest difference from TF Lite's float outputs, then SQNR (dB, all outputs together) against
TF Lite's float outputs of edgec's INT8 reference (built on the host from the model's calib.npz, as
scripts/corpus_table.py builds it) and of TFLiteConverter's INT8 (calibrated on the same 8 inputs).

    python scripts/corpus/float_tflite_vs_converter.py [--compare DIR] [NAME ...]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402


def sqnr(ref: np.ndarray, y: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / max(np.sum((ref - y) ** 2.0), 1e-30)))


def measure(name: str, compare: Path) -> str:
    from edgec import api
    from edgec.errors import EdgecError
    from edgec.frontend import tflite_float

    folder = manifest.CORPUS / name if (manifest.CORPUS / name).is_dir() else compare / name
    c = np.load(compare / f"{name}_compare.npz")
    x, want = c["x"], c["y_float"]
    sess = ort.InferenceSession(tflite_float.to_onnx(folder / "model.tflite").SerializeToString())
    feed = sess.get_inputs()[0].name
    translated = np.stack([np.concatenate([y.reshape(-1) for y in sess.run(None, {feed: xi[None]})]) for xi in x])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            api.build(folder / "model.tflite", folder / "calib.npz", "host", Path(tmp) / "out", firmware=False)
        except EdgecError as e:
            return f"| {name} | {np.abs(translated - want).max():.1e} | refused: {e} | {sqnr(want, c['y_tflite_int8']):.1f} |"
        ours = np.stack([np.concatenate([np.asarray(v).reshape(-1) for v in
                                         (r.y if isinstance(r.y, (list, tuple)) else [r.y])])
                         for r in (api.reference(Path(tmp) / "out", xi) for xi in x)])
    return (f"| {name} | {np.abs(translated - want).max():.1e} | {sqnr(want, ours):.1f} | "
            f"{sqnr(want, c['y_tflite_int8']):.1f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--compare", type=Path, default=Path("/tmp/export_tf_float"))
    args = ap.parse_args(argv)
    names = args.names or sorted(p.name[:-len("_compare.npz")] for p in args.compare.glob("*_compare.npz"))
    print("| model | translation vs TF Lite float (max abs) | edgec INT8 SQNR (dB) | TFLiteConverter INT8 SQNR (dB) |")
    print("|---|---:|---:|---:|")
    for name in names:
        print(measure(name, args.compare), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
