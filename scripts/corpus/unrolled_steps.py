"""Where an unrolled recurrence (a Loop / Scan that edgec/frontend/unroll.py wrote out step by step) loses accuracy,
step by step: for every tensor of a corpus .onnx model's quantized graph, the SQNR (dB) of edgec's integer
reference against ONNX Runtime's float run of the same prepared (unrolled) graph, over the oracle's first samples;
a tensor of the unrolled body printed once a body value, its SQNR at a few steps.

    python scripts/corpus/unrolled_steps.py tf2onnx_mlkws_lstm_s_scan [--samples 8]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracles import float_inputs  # noqa: E402

from edgec import api, ports  # noqa: E402
from edgec.fixedpoint.scheme import dequantize  # noqa: E402
from edgec.frontend import loader  # noqa: E402
from edgec.quant import reference  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"
SHOWN = (0, 1, 2, 5, 10, 15, 20, 24, 30, 40, 48)


def sqnr(want: np.ndarray, got: np.ndarray) -> float:
    noise = float(np.sum((want - got) ** 2))
    return float("inf") if noise == 0 else 10 * np.log10(float(np.sum(want ** 2)) / noise)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--samples", type=int, default=8)
    args = ap.parse_args(argv)
    d = CORPUS / args.name
    x = float_inputs(np.load(d / "oracle.npz"))[:args.samples]
    model = loader.prepare(onnx.load(str(d / "model.onnx")))
    g = api.calibrate(d / "model.onnx", d / "calib.npz", sensitivity_samples=0).graph
    envs = [reference.run(g, xi, keep_all=True) for xi in ports.quantize_inputs(g, x)]
    values = {o for n in model.graph.node for o in n.output} & {t.source for t in g.tensors.values()}
    model.graph.output.extend(helper.make_tensor_value_info(v, onnx.TensorProto.FLOAT, None) for v in sorted(values))
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    shape = [dim.dim_value for dim in model.graph.input[0].type.tensor_type.shape.dim]
    floats = [dict(zip(names, s.run(None, {model.graph.input[0].name: xi.reshape(shape)}))) for xi in x]
    steps: dict = {}
    for t in g.tensors.values():
        if t.source not in floats[0] or t.name not in envs[0]:
            continue
        got = np.stack([dequantize(t, e[t.name]).reshape(-1) for e in envs])
        want = np.stack([v[t.source].reshape(-1) for v in floats])
        if got.shape != want.shape:
            continue
        m = re.search(r"/unrolled/(\d+)/(.*)", t.source)
        if m:
            steps.setdefault(m.group(2), {})[int(m.group(1))] = sqnr(want, got)
        elif "/unrolled/in" not in t.source:
            print(f"{t.source[-60:]:60s} {sqnr(want, got):6.1f}")
    for value, by_step in steps.items():
        print(f"{value[-55:]:55s}", " ".join(f"t{k}:{by_step[k]:5.1f}" for k in sorted(by_step) if k in SHOWN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
