"""SQNR of edgec's INT8 against ONNX Runtime's float beside ONNX Runtime's static INT8, for corpus .onnx models,
without building firmware: api.calibrate with the default options (or those given as JSON), then the NumPy integer
reference on the oracle's evaluation set (what the device computes bit for bit), worst output, as scripts/corpus_table.py
measures it. Quick to compare quantizer changes; a row of the corpus table still needs corpus_table.py.

    python scripts/corpus/reference_sqnr.py --only timm_lcnet_050 torch_har_cnn [--options '{"bias_correction": false}']
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import corpus_table  # noqa: E402  (scripts/corpus_table.py: the same inputs and SQNR)

from edgec import api, ports  # noqa: E402
from edgec.quant import reference  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"


def measure(name: str, options: dict) -> corpus_table.Row:
    """The row's SQNRs (edgec, ORT), samples and closer samples, as corpus_table.py measures them (the oracle's
    evaluation set where it has one); extra: what the default recipe chose and the calibration's seconds."""
    d = CORPUS / name
    entry = corpus_table.manifest.load()[name]
    oracle = np.load(d / "oracle.npz")
    t0 = time.perf_counter()
    res = api.calibrate(CORPUS / entry["file"], d / "calib.npz", cache=False, sensitivity_samples=0, **options)
    seconds = time.perf_counter() - t0
    g = res.graph
    x = corpus_table.float_inputs(oracle)
    row = corpus_table.Row(name, entry["kind"], entry["format"], "reference")
    corpus_table.accuracy(row, g, entry, oracle, x, reference.run_sequence(g, ports.quantize_inputs(g, x)))
    row.extra = {"chose": "; ".join(filter(None, (res.fixes.summary() if res.fixes else "", res.recurrence, res.tail, res.attention))),
                 "calibrate_s": round(seconds, 1)}
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", help="model names (default: every .onnx with a calib.npz on disk)")
    ap.add_argument("--options", default="{}", help="quantization options as JSON (api.calibrate keywords)")
    ap.add_argument("--json", type=Path, help="write the rows here too")
    args = ap.parse_args(argv)
    rows = []
    names = args.only or sorted(p.parent.name for p in CORPUS.glob("*/model.onnx")
                                if (p.parent / "calib.npz").is_file())
    for name in names:
        try:
            r = measure(name, json.loads(args.options))
        except Exception as e:       # noqa: BLE001  one model's failure is reported, the others measured
            print(f"{name}: FAILED: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}", flush=True)
            continue
        o = r.sqnr_ort
        verdict = "" if o is None else (f" margin {r.sqnr_edgec - o:+.2f} dB, edgec at least as close on "
                                        f"{r.closer_samples} of {r.samples}")
        print(f"{name}: edgec {r.sqnr_edgec:.2f} dB / ORT {'n/a' if o is None else f'{o:.2f}'} dB (n={r.samples})"
              f"{verdict} | calibrate {r.extra['calibrate_s']} s | {r.extra['chose']}", flush=True)
        if args.json:
            rows.append(asdict(r))
            args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
