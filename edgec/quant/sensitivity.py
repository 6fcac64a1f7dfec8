"""Where a quantized model loses accuracy: per-layer SQNR of the INT8 reference against float.

For every layer that computes (reshape/transpose only move bytes), over a few calibration samples:
- cumulative: the layer's dequantized INT8 output with the whole model quantized, vs float;
- isolated: the layer alone in INT8 (its float inputs quantized, the integer kernel, dequantized),
  vs float: the error this layer adds by itself;
- isolated, at the output: the model's output when only this layer runs in INT8, vs float: how much
  of the model's output quality this one layer costs. The table is sorted on it, worst first.

SQNR = 10 log10(sum(float^2) / sum((float - int8)^2)) in dB; higher is better, +20 dB per 10x less error.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from edgec.quant import floatref
from edgec.quant import reference
from edgec.templating import environment
from edgec.ir import Graph
from edgec.ops.registry import REGISTRY
from edgec.quant.scheme import dequantize, quantize_input

MAX_DB = 120.0


def sqnr_db(signal: float, noise: float) -> float:
    if noise <= 0:
        return MAX_DB
    if signal <= 0:
        return -MAX_DB
    return float(min(MAX_DB, 10.0 * math.log10(signal / noise)))


def _int8_op(graph: Graph):
    """fn(op, float inputs) -> float output of the op run by the INT8 reference kernel."""
    def run(op, inputs):
        q = [quantize_input(graph.tensors[t], x) for t, x in zip(op.inputs, inputs)]
        out = graph.tensors[op.output]
        return dequantize(out, reference.run_op(op, q, out.shape, out.dtype))
    return run


def analyse(graph: Graph, samples: np.ndarray) -> list[dict]:
    """Per-layer SQNR rows (quantized graph with its float attributes, float input samples)."""
    # views and data movement, and the int8 <-> int16 conversions (edgec/quant/int16.py), are not layers here
    layers = [i for i, op in enumerate(graph.ops) if REGISTRY[op.kind].sensitivity]
    sums = {i: np.zeros(6) for i in layers}     # signal, noise: cumulative, isolated, at the output
    emulate = _int8_op(graph)
    tin = graph.tensors[graph.input]
    for x in samples:
        fl = floatref.run(graph, x)
        q = reference.run(graph, quantize_input(tin, x), keep_all=True)
        out_f = fl[graph.output]
        for i in layers:
            op = graph.ops[i]
            f = fl[op.output]
            cum = dequantize(graph.tensors[op.output], q[op.output])
            iso = emulate(op, [fl[t] for t in op.inputs])
            at_out = floatref.run(graph, x, override={i: emulate}, env=fl, start=i)[graph.output]
            sig = float(np.sum(f.astype(np.float64) ** 2))
            sums[i] += [sig, float(np.sum((f - cum) ** 2.0)), sig, float(np.sum((f - iso) ** 2.0)),
                        float(np.sum(out_f.astype(np.float64) ** 2)), float(np.sum((out_f - at_out) ** 2.0))]
    rows = []
    for i in layers:
        op, s = graph.ops[i], sums[i]
        rows.append({"index": i, "layer": op.name, "kind": op.kind, "tensor": op.output,
                     "cumulative_db": round(sqnr_db(s[0], s[1]), 2), "isolated_db": round(sqnr_db(s[2], s[3]), 2),
                     "isolated_output_db": round(sqnr_db(s[4], s[5]), 2)})
    rows.sort(key=lambda r: (r["isolated_output_db"], r["isolated_db"]))
    return rows


def table(rows: list[dict], limit: int | None = None) -> str:
    """The rows as a text table, worst first."""
    lines = [f"{'layer':40} {'kind':17} {'isolated dB':>11} {'-> output dB':>12} {'cumulative dB':>13}"]
    for r in rows[:limit]:
        lines.append(f"{r['layer'][-40:]:40} {r['kind']:17} {r['isolated_db']:11.1f} "
                     f"{r['isolated_output_db']:12.1f} {r['cumulative_db']:13.1f}")
    return "\n".join(lines)


def write_svg(rows: list[dict], path: Path, title: str) -> None:
    """A horizontal bar chart of the rows (worst first): isolated-at-output and cumulative SQNR."""
    top = max([40.0] + [min(r[k], 80.0) for r in rows for k in ("isolated_output_db", "cumulative_db")])
    bars = []
    for r in rows:
        bars.append({"label": r["layer"][-38:], "kind": r["kind"],
                     "iso": max(0.0, min(r["isolated_output_db"], 80.0)) / top,
                     "cum": max(0.0, min(r["cumulative_db"], 80.0)) / top,
                     "iso_db": r["isolated_output_db"], "cum_db": r["cumulative_db"]})
    ticks = [{"x": t / top, "label": str(t)} for t in range(0, int(top) + 1, 10)]
    path.write_text(environment().get_template("sensitivity.svg.j2").render(title=title, bars=bars, ticks=ticks))
