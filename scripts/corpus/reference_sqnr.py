"""SQNR of edgec's INT8 against ONNX Runtime's float beside ONNX Runtime's static INT8, for corpus .onnx models,
without building firmware: api.calibrate with the default options (or those given as JSON), then the NumPy integer
reference on the oracle's samples (what the device computes bit for bit), worst output, as scripts/corpus_table.py
measures it. Quick to compare quantizer changes; a row of the corpus table still needs corpus_table.py.

    python scripts/corpus/reference_sqnr.py --only timm_lcnet_050 torch_har_cnn [--options '{"bias_correction": false}']
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import corpus_table  # noqa: E402  (scripts/corpus_table.py: the same inputs and SQNR)

from edgec import api, ports  # noqa: E402
from edgec.quant import reference  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"


def measure(name: str, options: dict) -> tuple[float, float | None, str]:
    """(edgec dB, ORT dB or None, what the default recipe chose)."""
    d = CORPUS / name
    oracle = np.load(d / "oracle.npz")
    res = api.calibrate(d / "model.onnx", d / "calib.npz", cache=False, sensitivity_samples=0, **options)
    g = res.graph
    x = corpus_table.float_inputs(oracle)
    got = ports.dequantize_outputs(g, reference.run_sequence(g, ports.quantize_inputs(g, x))).reshape(len(x), -1)
    mine, ort = [], []
    for k, port in enumerate(ports.outputs(g)):
        if f"float{k}" not in oracle:          # an NMS selection: rows vary
            continue
        f = oracle[f"float{k}"].reshape(len(x), -1)
        mine.append(corpus_table.sqnr(f, got[:, port.start:port.start + port.size]))
        if f"ort_int8_{k}" in oracle:
            ort.append(corpus_table.sqnr(f, oracle[f"ort_int8_{k}"].reshape(len(x), -1)))
    return min(mine), (min(ort) if ort else None), (res.fixes.summary() if res.fixes else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", help="model names (default: every .onnx with a calib.npz on disk)")
    ap.add_argument("--options", default="{}", help="quantization options as JSON (api.calibrate keywords)")
    args = ap.parse_args(argv)
    names = args.only or sorted(p.parent.name for p in CORPUS.glob("*/model.onnx")
                                if (p.parent / "calib.npz").is_file())
    for name in names:
        e, o, chose = measure(name, json.loads(args.options))
        print(f"{name}: edgec {e:.2f} dB / ORT {'n/a' if o is None else f'{o:.2f}'} dB | {chose}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
