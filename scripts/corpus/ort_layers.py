"""Where a corpus .onnx model's INT8 parts from ONNX Runtime's static INT8, layer by layer: for every tensor both
quantize, the SQNR against float of edgec's integer reference and of ORT's `quantize_static` model (QDQ, as
oracles.py makes it, run with graph optimizations off: each QDQ pair simulated), whether the two chose the same
grid, and, with --ops, each edgec op run on ORT's own int8 input against ORT's int8 output (the share of values
that differ, at most by how many steps). The first samples of the oracle's stored inputs.

    python scripts/corpus/ort_layers.py timm_lcnet_050 [--samples 4] [--ops]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime import quantization as q

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracles import calibration, float_inputs, onnx_input_list  # noqa: E402

from edgec import api, ports  # noqa: E402
from edgec.fixedpoint.scheme import dequantize  # noqa: E402
from edgec.quant import reference  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"


def sqnr(want: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10(max(np.sum(want ** 2), 1e-30) / max(np.sum((want - got) ** 2), 1e-30)))


def every_value(model: onnx.ModelProto, feeds: list[dict]) -> list[dict]:
    """Every node output of the model on each sample (feeds: one {input name: array} a sample; graph optimizations
    off)."""
    m = onnx.ModelProto.FromString(model.SerializeToString())
    m.graph.output.extend(onnx.ValueInfoProto(name=o) for n in m.graph.node for o in n.output)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return [dict(zip(names, s.run(None, feed))) for feed in feeds]


def sample_feeds(inputs: list[tuple[str, tuple]], x: np.ndarray) -> list[dict]:
    """One {input name: [1, ...] array} per sample of x (several inputs: packed, each flattened, in the model's
    order, as the oracle's float_inputs gives them)."""
    sizes = [int(np.prod(shape)) for _, shape in inputs]
    if len(inputs) == 1:
        return [{inputs[0][0]: xi[None]} for xi in x]
    cuts = np.cumsum([0, *sizes])
    return [{n: xi.reshape(-1)[a:b].reshape(shape) for (n, shape), a, b in zip(inputs, cuts[:-1], cuts[1:])}
            for xi in x]


def ort_int8(path: Path, calib: list[dict]) -> onnx.ModelProto:
    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            return next(self.it, None)
    with tempfile.TemporaryDirectory() as tmp:
        # per-tensor where per-channel cannot run, as oracles.py: an old opset's DequantizeLinear takes no axis
        for per_channel in (True, False):
            q.quantize_static(str(path), f"{tmp}/q.onnx", Reader(), quant_format=q.QuantFormat.QDQ,
                              per_channel=per_channel, activation_type=q.QuantType.QInt8,
                              weight_type=q.QuantType.QInt8)
            try:
                ort.InferenceSession(f"{tmp}/q.onnx", providers=["CPUExecutionProvider"])
            except Exception:   # noqa: BLE001  the per-tensor run below is the one ORT's oracle made
                Reader.__init__ = lambda self: setattr(self, "it", iter(calib))
                continue
            return onnx.load(f"{tmp}/q.onnx")
        raise SystemExit(f"{path}: ONNX Runtime cannot run its own static INT8 of this model")


def quantize_nodes(qm: onnx.ModelProto) -> dict:
    """ONNX value name -> the QuantizeLinear ORT's QDQ model puts on it. A graph output's QuantizeLinear reads the
    value renamed (`<name>_QuantizeLinear_Input`) and its DequantizeLinear writes the output's own name: keyed by
    that name, so the output's grid is ORT's int8 one, not "ORT float"."""
    outputs = {o.name for o in qm.graph.output}
    dq = {n.input[0]: n.output[0] for n in qm.graph.node if n.op_type == "DequantizeLinear"}
    found = {}
    for n in qm.graph.node:
        if n.op_type == "QuantizeLinear":
            out = dq.get(n.output[0])
            found[out if out in outputs else n.input[0]] = n
    return found


def as_edgec(v: np.ndarray, size: int, moved: bool = True) -> np.ndarray | None:
    """An ONNX value [n, C, ...] flattened per sample, channels moved last (edgec's layout of a feature map) or
    not (None: not that size)."""
    v = np.asarray(v)
    if v.shape[1:2] == (1,) and v.ndim > 3:     # the per-sample batch axis of a stacked run
        v = v.reshape(len(v), *v.shape[2:])
    if v[0].size != size:
        return None
    return (np.moveaxis(v, 1, -1) if moved and v.ndim > 2 else v).reshape(len(v), -1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--ops", action="store_true", help="also each op on ORT's own int8 input")
    args = ap.parse_args(argv)
    d = CORPUS / args.name
    x = float_inputs(np.load(d / "oracle.npz"))[:args.samples]
    inputs = onnx_input_list(d / "model.onnx")
    calib = calibration(d / "calib.npz", [n for n, _ in inputs])
    qm = ort_int8(d / "model.onnx", [{n: c[k][None] for (n, _), c in zip(inputs, calib)} for k in range(len(calib[0]))])
    inits = {i.name: numpy_helper.to_array(i) for i in qm.graph.initializer}
    quantized = quantize_nodes(qm)
    dq_of = {n.input[0]: n.output[0] for n in qm.graph.node if n.op_type == "DequantizeLinear"}
    feeds = sample_feeds(inputs, x)
    floats, ints = every_value(onnx.load(str(d / "model.onnx")), feeds), every_value(qm, feeds)
    g = api.calibrate(d / "model.onnx", d / "calib.npz", cache=False, sensitivity_samples=0).graph
    envs = [reference.run(g, xi, keep_all=True) for xi in ports.quantize_inputs(g, x)]

    def ort_value(source):           # ORT's int8 value of an ONNX value, dequantized (None: ORT keeps it float)
        qn = quantized.get(source)
        return None if qn is None or dq_of.get(qn.output[0]) not in ints[0] else \
            np.stack([v[dq_of[qn.output[0]]] for v in ints])

    moved = {}                       # edgec tensor -> its ONNX value's channels moved last
    print(f"{'tensor':50s} {'edgec':>6s} {'ORT':>6s}  grid")
    for t in g.tensors.values():
        if t.source not in floats[0] or t.name not in envs[0]:
            continue
        got = np.stack([dequantize(t, e[t.name]).reshape(-1) for e in envs])
        f = np.stack([v[t.source] for v in floats])
        if as_edgec(f, got.shape[1]) is None:
            continue
        moved[t.name] = sqnr(as_edgec(f, got.shape[1]), got) >= sqnr(as_edgec(f, got.shape[1], False), got)
        want = as_edgec(f, got.shape[1], moved[t.name])
        o, grid = ort_value(t.source), "ORT float"
        if o is not None:
            qn = quantized[t.source]
            s, z = float(inits[qn.input[1]]), int(inits[qn.input[2]])
            grid = "same" if (np.float32(t.scale), t.zero_point) == (np.float32(s), z) else \
                f"edgec {t.scale:.4g}/{t.zero_point}, ORT {s:.4g}/{z}"
        ort_db = "" if o is None else f"{sqnr(want, as_edgec(o, want.shape[1], moved[t.name])):6.1f}"
        print(f"{t.source[-50:]:50s} {sqnr(want, got):6.1f} {ort_db:>6s}  {grid}")
    if args.ops:
        print(f"\n{'op on ORT int8 input':50s} differ  max step")
        for op in g.ops:
            ti, to = g.tensors[op.inputs[0]], g.tensors[op.output]
            a, b = ort_value(ti.source), ort_value(to.source)
            if len(op.inputs) != 1 or a is None or b is None or ti.name not in moved or to.name not in moved:
                continue
            a, b = as_edgec(a, int(np.prod(ti.shape)), moved[ti.name]), as_edgec(b, int(np.prod(to.shape)), moved[to.name])
            if a is None or b is None:
                continue
            a_q = np.round(a / ti.scale + ti.zero_point).astype(np.int8)
            b_q = np.round(b / to.scale + to.zero_point).astype(np.int64)
            got = np.stack([reference.run_op(op, [ai.reshape(ti.shape)], to.shape, to.dtype).reshape(-1)
                            for ai in a_q]).astype(np.int64)
            diff = got - b_q
            print(f"{op.name[-50:]:50s} {np.mean(diff != 0):6.2%}  {np.abs(diff).max()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
