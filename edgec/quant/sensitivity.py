"""Where a quantized model loses accuracy: per-layer SQNR of the INT8 reference against float.

For every layer that computes (reshape/transpose only move bytes), over a few calibration samples:
- cumulative: the layer's dequantized INT8 output with the whole model quantized, vs float;
- isolated: the layer alone in INT8 (its float inputs quantized, the integer kernel, dequantized),
  vs float: the error this layer adds by itself;
- isolated, at the output: the model's output when only this layer runs in INT8, vs float: how much
  of the model's output quality this one layer costs. The table is sorted on it, worst first.
- int4, at the output: the same with this layer's weights at 4 bits (registry.INT4_KINDS; layers that can take
  int4 weights, LSTM/GRU included): what `--int4 LAYER` would cost.

A model with several outputs (edgec/ports.py): both output columns are measured on each output on its own
(`outputs`: {output name: {"isolated_output_db", "int4_output_db"}}), and the row's own values are the worst
output's, so that a layer that only hurts a small-valued head is not hidden by a large-valued one.

SQNR = 10 log10(sum(float^2) / sum((float - int8)^2)) in dB; higher is better, +20 dB per 10x less error.
"""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Callable

import numpy as np

from edgec import ports
from edgec.quant import floatref
from edgec.quant import reference
from edgec.templating import environment
from edgec.ir import Graph
from edgec.ops.registry import INT4_KINDS
from edgec.ops.registry import REGISTRY
from edgec.fixedpoint.scheme import dequantize, quantize_input

MAX_DB = 120.0
OP_BUDGET = 250_000     # op runs of the float reference the report may take (the isolated-output runs re-run the
                        # graph after each layer: layers x ops / 2 a sample); a larger model gets fewer samples
MIN_SAMPLES = 2
PROGRESS_S = 15.0       # seconds between progress lines


def sqnr_db(signal: float, noise: float) -> float:
    """10 log10(signal / noise) within +-MAX_DB; a NaN or infinite noise (the output of an op fed a value it is
    not defined at, e.g. a LOG of a quantized 0) is the worst, never a NaN compared into the best."""
    if not math.isfinite(noise) or not math.isfinite(signal):
        return -MAX_DB
    if noise <= 0:
        return MAX_DB
    if signal <= 0:
        return -MAX_DB
    return float(min(MAX_DB, 10.0 * math.log10(signal / noise)))


def _int4_op(graph: Graph, four):
    """fn(op, float inputs) -> float output of the op with int4 weights (`four`), by the reference kernel."""
    def run(op, inputs):
        q = [quantize_input(graph.tensors[t], x) for t, x in zip(op.inputs, inputs)]
        out = graph.tensors[op.output]
        return dequantize(out, reference.run_op(four, q, out.shape, out.dtype))
    return run


def _int8_op(graph: Graph):
    """fn(op, float inputs) -> float output of the op run by the INT8 reference kernel."""
    def run(op, inputs):
        q = [quantize_input(graph.tensors[t], x) for t, x in zip(op.inputs, inputs)]
        out = graph.tensors[op.output]
        return dequantize(out, reference.run_op(op, q, out.shape, out.dtype))
    return run


def with_int4_weights(graph: Graph, op):
    """A copy of a quantized op with its weights requantized to int4 (the graph's scales unchanged)."""
    four = dataclasses.replace(op, attrs={**op.attrs, "weight_bits": 4}, params={}, arrays={}, lowering=None)
    REGISTRY[op.kind].quantize(four, [graph.tensors[t] for t in op.inputs], graph.tensors[op.output])
    return four


def _int4_candidates(graph: Graph, layers: list[int]) -> dict[int, object]:
    return {i: with_int4_weights(graph, graph.ops[i]) for i in layers
            if graph.ops[i].kind in INT4_KINDS and graph.tensors[graph.ops[i].output].dtype == "int8"}


def _output_sums(graph: Graph, out_f: np.ndarray, got: np.ndarray) -> np.ndarray:
    """[signal, noise] of every output (edgec/ports.py: the packed outputs split per output)."""
    outs = ports.outputs(graph)
    f, g = np.asarray(out_f, np.float64).reshape(1, -1), np.asarray(got, np.float64).reshape(1, -1)
    return np.array([[np.sum(p.of(f) ** 2), np.sum((p.of(f) - p.of(g)) ** 2)] for p in outs])


def samples_within(graph: Graph, n: int, layers: int, fours: int = 0) -> int:
    """How many of n samples the report runs on: all while the float runs it costs (each layer's and each int4
    candidate's isolated-output run re-runs the ops after it, about half the graph) stay within OP_BUDGET,
    else fewer, at least MIN_SAMPLES."""
    per_sample = max(1, (layers + fours) * len(graph.ops) // 2)
    return min(n, max(MIN_SAMPLES, OP_BUDGET // per_sample))


def analyse(graph: Graph, samples: np.ndarray, log: Callable[[str], None] = lambda _: None) -> list[dict]:
    """Per-layer SQNR rows (quantized graph with its float attributes, float input samples; a large model's
    report takes fewer of them, samples_within)."""
    # views and data movement, and the int8 <-> int16 conversions (edgec/quant/int16.py), are not layers here
    layers = [i for i, op in enumerate(graph.ops) if REGISTRY[op.kind].sensitivity]
    names = [p.name for p in ports.outputs(graph)]
    sums = {i: np.zeros(4) for i in layers}     # signal, noise: cumulative, isolated
    at_out = {i: np.zeros((2, len(names), 2)) for i in layers}     # int8 / int4, output, signal / noise
    emulate = _int8_op(graph)
    fours = _int4_candidates(graph, layers)
    n = samples_within(graph, len(samples), len(layers), len(fours))
    if n < len(samples):
        log(f"sensitivity report: {n} of {len(samples)} samples ({len(layers)} layers, {len(graph.ops)} ops: each "
            f"layer's isolated-output run re-runs the graph after it; within {OP_BUDGET:,} float op runs)")
    samples = samples[:n]
    t0 = last = time.monotonic()
    for s, x in enumerate(samples):
        fl = floatref.run(graph, x)
        q = reference.run(graph, ports.quantize_inputs(graph, x[None])[0], keep_all=True)
        out_f = ports.result(graph, fl)        # several outputs: all of them, packed
        for i in layers:
            op = graph.ops[i]
            f = fl[op.output]
            cum = dequantize(graph.tensors[op.output], q[op.output])
            iso = emulate(op, [fl[t] for t in op.inputs])
            sig = float(np.sum(f.astype(np.float64) ** 2))
            sums[i] += [sig, float(np.sum((f - cum) ** 2.0)), sig, float(np.sum((f - iso) ** 2.0))]
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):    # a NaN here is the floor
                got = ports.result(graph, floatref.run(graph, x, override={i: emulate}, env=fl, start=i))
                at_out[i][0] += _output_sums(graph, out_f, got)
                if i in fours:
                    run4 = _int4_op(graph, fours[i])
                    at4 = ports.result(graph, floatref.run(graph, x, override={i: run4}, env=fl, start=i))
                    at_out[i][1] += _output_sums(graph, out_f, at4)
            if time.monotonic() - last > PROGRESS_S:
                last = time.monotonic()
                log(f"sensitivity report: sample {s + 1} of {len(samples)}, layer {layers.index(i) + 1} of "
                    f"{len(layers)} ({last - t0:.0f} s)")
    rows = []
    for i in layers:
        op, s = graph.ops[i], sums[i]
        db = [[round(sqnr_db(*at_out[i][b, k]), 2) for k in range(len(names))] for b in (0, 1)]
        row = {"index": i, "layer": op.name, "kind": op.kind, "tensor": op.output,
               "cumulative_db": round(sqnr_db(s[0], s[1]), 2), "isolated_db": round(sqnr_db(s[2], s[3]), 2),
               "isolated_output_db": min(db[0]), "int4_output_db": min(db[1]) if i in fours else None}
        if len(names) > 1:
            row["outputs"] = {n: {"isolated_output_db": db[0][k], "int4_output_db": db[1][k] if i in fours else None}
                              for k, n in enumerate(names)}
        rows.append(row)
    rows.sort(key=lambda r: (r["isolated_output_db"], r["isolated_db"]))
    return rows


def table(rows: list[dict], limit: int | None = None) -> str:
    """The rows as a text table, worst first; a model with several outputs gets the two output columns of each
    output after them (int8 / int4), and its own output columns are the worst output's."""
    names = list(rows[0].get("outputs", {})) if rows else []
    lines = [f"(several outputs: '-> output' is the worst of {', '.join(names)}; each one's follows)"] if names else []
    lines.append(f"{'layer':40} {'kind':17} {'isolated dB':>11} {'-> output dB':>12} {'cumulative dB':>13} "
                 f"{'int4 -> output dB':>17}" + "".join(f"  -> {n[-20:]} dB int8/int4" for n in names))

    def db(v):
        return "-" if v is None else f"{v:.1f}"
    for r in rows[:limit]:
        per = r.get("outputs", {})
        lines.append(f"{r['layer'][-40:]:40} {r['kind']:17} {r['isolated_db']:11.1f} "
                     f"{r['isolated_output_db']:12.1f} {r['cumulative_db']:13.1f} "
                     f"{db(r.get('int4_output_db')):>17}"
                     + "".join(f"  {db(per[n]['isolated_output_db']) + ' / ' + db(per[n]['int4_output_db']):>{len(n[-20:]) + 16}}"
                               for n in names if n in per))
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
    names = list(rows[0].get("outputs", {})) if rows else []
    if names:           # several outputs: the bars are the worst output's (sensitivity.json has each one's)
        title += f" (at the worst of the outputs {', '.join(names)})"
    path.write_text(environment().get_template("sensitivity.svg.j2").render(title=title, bars=bars, ticks=ticks))
