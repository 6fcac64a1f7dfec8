"""Measurements of the decomposed GELU / LayerNorm recognition and int16 softmax on the transformer digits
examples: each file built for a board and benched on the 540 test digits (device vs NumPy reference, top-1,
emulated instructions per inference):

- `fused` vs `unfused`: decomposed GELU and LayerNorm read as one op (edgec/frontend/decomposed.py) or, for
  comparison, left as the exporter's nodes (the recognition switched off in this process only);
- `int16-softmax`: `--int16` on every Softmax node (Q0.15 probabilities; edgec/ops/softmax/__init__.py).

    .venv/bin/python benchmarks/transformer_ops.py [--board qemu-cortex-m4]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from edgec import api
from edgec.frontend import decomposed
from edgec.quant import ptq

REPO = Path(__file__).resolve().parent.parent
FOLDER = REPO / "examples" / "transformer_digits"
RUNS = [("pytorch/encoder_bf_torchscript.onnx", "unfused"), ("pytorch/encoder_bf_torchscript.onnx", "fused"),
        ("pytorch/encoder_bf_torchscript_opset14.onnx", "unfused"),
        ("pytorch/encoder_bf_torchscript_opset14.onnx", "fused"), ("pytorch/encoder_bf_dynamo.onnx", "fused"),
        ("model.onnx", "fused"), ("model.onnx", "int16-softmax"),
        ("pytorch/mha_bf_torchscript.onnx", "fused"), ("pytorch/mha_bf_torchscript.onnx", "int16-softmax"),
        ("pytorch/encoder_bf_dynamo.onnx", "int16-softmax")]


def _as_exported(model, consts, shapes, opset):
    return list(enumerate(model.graph.node)), {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--board", default="qemu-cortex-m4")
    args = ap.parse_args()
    fuse = decomposed.fuse
    print(f"| file | build | ops | device = reference | top-1 float | top-1 device | latency median ({args.board}) |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for k, (rel, mode) in enumerate(RUNS):
            model, calib = FOLDER / rel, FOLDER / "calib.npz"
            decomposed.fuse = _as_exported if mode == "unfused" else fuse
            graph, options = api.compile_model(model, calib)[1], None
            if mode == "int16-softmax":
                options = ptq.QuantOptions(int16=tuple(op.name for op in graph.ops if op.kind == "softmax"))
                graph = api.compile_model(model, calib, options=options)[1]
            out = Path(tmp) / str(k)
            api.build(model, calib, args.board, out, options=options)
            r = api.bench(out, FOLDER / "test.npz")
            ops = len(graph.ops)
            print(f"| {rel} | {mode} | {ops} | {r['agreement']['device_vs_reference'] == 1.0} | "
                  f"{100 * r['accuracy']['float']:.2f} | {100 * r['accuracy']['device']:.2f} | "
                  f"{r['latency']['median']:,.0f} {r['latency']['unit']} |", flush=True)
    decomposed.fuse = fuse


if __name__ == "__main__":
    main()
