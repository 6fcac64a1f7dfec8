"""Where edgec's integers depart from ONNX Runtime's run of a QDQ corpus file, layer by layer: the file run by ONNX
Runtime with every QuantizeLinear output exposed (its int8 tensors; graph optimizations as the oracle's default
session, or off with --unfused), against edgec's integer reference on the same samples: for every tensor both have,
the share of values that differ and by how many levels; with --ops, each edgec op run on ORT's own int8 input against
ORT's int8 output (a per-op difference, free of what came before). uint8 tensors are compared shifted by 128 (edgec's
int8 grid of a uint8 pair). Feature maps [1, C, H, W] are compared channels last, as edgec holds them; other ranks
in ONNX order, so a tensor edgec holds transposed (attention's heads, the graph input before its layout change)
shows as nearly every value differing: read those rows as a layout mismatch, not a numerical one. The oracle's
evaluation inputs (or its stored ones).

    python scripts/corpus/qdq_layers.py tiny13_kj_ic_resnet_qdq [--ops] [--unfused]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent))
import evaluation  # noqa: E402
import manifest  # noqa: E402
from oracles import float_inputs, onnx_inputs  # noqa: E402

from edgec import api, ports  # noqa: E402
from edgec.quant import reference  # noqa: E402


def ort_ints(path: Path, name: str, x: np.ndarray, unfused: bool) -> dict[str, np.ndarray]:
    """{ONNX value read by a QuantizeLinear (and each DequantizeLinear output of it): ORT's integers, [n, ...] int64,
    uint8 shifted to int8}."""
    m = onnx.load(str(path))
    q_of = {n.input[0]: n.output[0] for n in m.graph.node if n.op_type == "QuantizeLinear"}
    q_of.update({n.output[0]: n.input[0] for n in m.graph.node
                 if n.op_type == "DequantizeLinear" and n.input[0] in set(q_of.values())})
    m.graph.output.extend(onnx.ValueInfoProto(name=o) for o in sorted(set(q_of.values())))
    so = ort.SessionOptions()
    if unfused:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    runs = [dict(zip(names, s.run(None, {name: xi[None]}))) for xi in x]
    out = {}
    for value, q in q_of.items():
        v = np.stack([r[q] for r in runs])
        out[value] = v.astype(np.int64) - (128 if v.dtype == np.uint8 else 0)
    return out


def as_edgec(v: np.ndarray, size: int) -> np.ndarray | None:
    """ORT's [n, 1, C, ...] value as edgec's [n, size] (channels last), or None if not that size."""
    v = v.reshape(len(v), *v.shape[2:]) if v.ndim > 3 and v.shape[1] == 1 else v
    if v[0].size != size:
        return None
    return (np.moveaxis(v, 1, -1) if v.ndim == 4 else v).reshape(len(v), -1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--ops", action="store_true", help="also each op on ORT's own int8 input")
    ap.add_argument("--unfused", action="store_true", help="ORT with graph optimizations off (each pair simulated)")
    args = ap.parse_args(argv)
    d = manifest.CORPUS / args.name
    oracle = np.load(d / "oracle.npz")
    x = evaluation.stored_inputs(args.name, manifest.load()[args.name], oracle)
    x = float_inputs(oracle) if x is None else x
    ints = ort_ints(d / "model.onnx", onnx_inputs(d / "model.onnx", args.name)[0], x, args.unfused)
    g = api.calibrate(d / "model.onnx", d / "calib.npz", cache=False, sensitivity_samples=0).graph
    envs = [reference.run(g, xi, keep_all=True) for xi in ports.quantize_inputs(g, x)]

    def ort_value(tensor: str) -> np.ndarray | None:
        t = g.tensors[tensor]
        return None if t.source not in ints else as_edgec(ints[t.source], int(np.prod(t.shape)))

    print(f"{'tensor':60s} {'differ':>7s} {'max':>4s} {'mean':>8s}")
    for t in g.tensors.values():
        o = ort_value(t.name)
        if o is None or t.name not in envs[0]:
            continue
        diff = np.stack([e[t.name].reshape(-1) for e in envs]).astype(np.int64) - o
        print(f"{t.source[-60:]:60s} {np.mean(diff != 0):7.2%} {np.abs(diff).max():4d} {diff.mean():+8.4f}")
    if args.ops:
        print(f"\n{'op on ORT int8 input':60s} {'differ':>7s} {'max':>4s} {'mean':>8s}")
        for op in g.ops:
            ins, out = [ort_value(i) for i in op.inputs], ort_value(op.output)
            if out is None or any(i is None for i in ins):
                continue
            to = g.tensors[op.output]
            got = np.stack([reference.run_op(op, [a[k].reshape(g.tensors[i].shape).astype(np.int8)
                                                  for a, i in zip(ins, op.inputs)], to.shape, to.dtype).reshape(-1)
                            for k in range(len(x))]).astype(np.int64)
            diff = got - out
            print(f"{(op.kind + ' ' + op.name)[-60:]:60s} {np.mean(diff != 0):7.2%} {np.abs(diff).max():4d} "
                  f"{diff.mean():+8.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
