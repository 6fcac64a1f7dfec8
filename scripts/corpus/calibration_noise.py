"""How far a corpus .onnx model's edgec / ORT INT8 margin is from noise: both quantizers calibrated again on 7 of
the 8 calib.npz samples (sample k left out, for each k given), each variant's worst-output SQNR against float on the
oracle's 32-sample evaluation set (as scripts/corpus/reference_sqnr.py measures it), so the spread of ORT's own
figure and of the margin under a one-sample change of the calibration set is measured, not assumed. Also what the
int8 output port costs: the float outputs alone put on edgec's output grid, and ORT's INT8 outputs put on that same
grid (ORT's QDQ model returns a float output where it does not quantize the last node: then only edgec's figure
carries that last rounding).

    python scripts/corpus/calibration_noise.py torch_audio_events_1d [--leave-out 0 2 4 6] [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import corpus_table  # noqa: E402
import evaluation  # noqa: E402
import oracles  # noqa: E402

from edgec import api, ports  # noqa: E402
from edgec.quant import reference  # noqa: E402


def edgec_outputs(graph, x: np.ndarray) -> list[np.ndarray]:
    got = ports.dequantize_outputs(graph, reference.run_sequence(graph, ports.quantize_inputs(graph, x)))
    got = got.reshape(len(x), -1)
    return [got[:, p.start:p.start + p.size] for p in ports.outputs(graph)]


def worst(floats: list[np.ndarray], outs: list[np.ndarray]) -> float:
    return min(corpus_table.sqnr(f, o) for f, o in zip(floats, outs))


def on_grid(t, v: np.ndarray) -> np.ndarray:
    lo, hi = (-128, 127) if t.dtype == "int8" else (-32768, 32767)
    return (np.clip(np.round(v / t.scale) + t.zero_point, lo, hi) - t.zero_point) * t.scale


def measure(name: str, leave_out: list[int]) -> dict:
    d = corpus_table.manifest.CORPUS / name
    oracle = np.load(d / "oracle.npz")
    x = evaluation.stored_inputs(name, corpus_table.manifest.load()[name], oracle)
    n = len(x)
    keys = sorted(int(k[len("eval_ort_int8_"):]) for k in oracle.files if k.startswith("eval_ort_int8_"))
    floats = [oracle[f"eval_float{k}"].reshape(n, -1) for k in keys]
    ort = [oracle[f"eval_ort_int8_{k}"].reshape(n, -1) for k in keys]
    calib = np.load(d / "calib.npz")
    g = api.calibrate(d / "model.onnx", d / "calib.npz", cache=False, sensitivity_samples=0).graph
    outs = edgec_outputs(g, x)
    tensors = [g.tensors[ports.outputs(g)[k].tensor] for k in keys]
    row = {"name": name, "edgec": worst(floats, [outs[k] for k in keys]), "ort": worst(floats, ort),
           "float_on_edgec_grid": worst(floats, [on_grid(t, f) for t, f in zip(tensors, floats)]),
           "ort_on_edgec_grid": worst(floats, [on_grid(t, o) for t, o in zip(tensors, ort)]),
           "ort_output_levels": [int(len(np.unique(o))) for o in ort], "leave_out": [], "ort_7": [], "edgec_7": []}
    name_in = oracles.onnx_inputs(d / "model.onnx", name)[0]
    cx = calib["x"].astype(np.float32)
    for k in leave_out:
        keep = [i for i in range(len(cx)) if i != k]
        with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):   # quant_pre_process's scratch files
            _, ints, _ = oracles.onnx_runs(d / "model.onnx", name_in, cx[keep], x)
        if ints is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            np.savez(f"{tmp}/calib.npz", **{key: calib[key][keep] for key in calib.files})
            g7 = api.calibrate(d / "model.onnx", f"{tmp}/calib.npz", cache=False, sensitivity_samples=0).graph
        o7 = [np.stack([np.asarray(r[k]) for r in ints]).reshape(n, -1) for k in keys]
        row["leave_out"].append(k)
        row["ort_7"].append(worst(floats, o7))
        row["edgec_7"].append(worst(floats, [edgec_outputs(g7, x)[k] for k in keys]))
    return row


def summary(r: dict) -> str:
    margins = np.subtract(r["edgec_7"], r["ort_7"])
    text = (f"{r['name']}: edgec {r['edgec']:.2f} / ORT {r['ort']:.2f} dB (margin {r['edgec'] - r['ort']:+.2f}); "
            f"float on edgec's output grid {r['float_on_edgec_grid']:.2f}, ORT on it {r['ort_on_edgec_grid']:.2f} "
            f"(ORT output levels {r['ort_output_levels']})")
    if len(margins):
        text += (f"; 7-of-8 calibration (leave out {r['leave_out']}): ORT {min(r['ort_7']):.2f}..{max(r['ort_7']):.2f}, "
                 f"margin {margins.min():+.2f}..{margins.max():+.2f}")
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--leave-out", nargs="*", type=int, default=[0, 2, 4, 6])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for name in args.names:
        rows.append(measure(name, args.leave_out))
        print(summary(rows[-1]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
