"""Mixed precision by accuracy budget (`--max-accuracy-drop PTS`): layer by layer, int4 weights where they are
harmless and int16 activations where int8 hurts, the smallest flash (then the fewest int16 layers, the slower
ones) whose top-1 accuracy stays within PTS points of the float model's.

The budget bounds the samples whose top-1 class changes against the float model's (a sample lost counts, and
so does one gained: on a few hundred samples, gains on some samples paying for losses on others are mostly
noise, and the changed predictions are what carries over to unseen data). Counting them needs no label: they are
counted on `--val DATA.npz` (kept apart from calibration), else on the calibration set, whose ranges then come from
its first three quarters only; labels y, where the data has them, add the top-1 accuracy to the record (without
them, "top-1" is agreement with the float model). Calibration samples are often training samples, whose
float margins are wider than unseen data's: a model can change none of their predictions and still lose
points on its test set. So on the calibration set a prediction counts as changed when SAFETY times the
measured quantization error of the outputs would change it (float + SAFETY * (quantized - float)): the error
itself carries over to unseen data (its SQNR is the same on training and test samples), the margins do not.
Every candidate reuses the calibration statistics (the same ranges) and is scored by the NumPy integer
reference (edgec/quant/reference.py, what the C computes bit for bit) on at most EVAL_LIMIT samples:

1. int8 activations and weights everywhere. If that misses the budget, layers get int16 activations
   (edgec/quant/int16.py), most sensitive first (the sensitivity table's isolated output SQNR), each with the
   layers reading its output (so the wide tensor stays int16), kept if they help, until it is met (at most
   INT16_TRIALS tries; if it never is, the mix that loses fewest samples is kept, with a warning).
For a model that is not a classifier, `--min-sqnr DB` bounds the output SQNR against float (on the same held-out
samples) instead: a candidate is within the budget when its SQNR is at least DB; the search is the same.

2. Then int4 weights (edgec/quant/int4layers.py): all remaining int4-capable layers at once if that stays in the
   budget, else one layer at a time, the cheapest at 4 bits first (the table's int4 column), each kept if
   the mix stays within the budget. Their weights are GPTQ-rounded (edgec/quant/rounding.py, unless
   --rounding nearest), computed once per layer before the search.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.quant import floatref, int16, int4layers, reference, sensitivity
from edgec.quant.quantize import quantize
from edgec.fixedpoint.scheme import quantize_input

EVAL_LIMIT = 512          # samples each candidate is scored on
HOLDOUT = 128             # calibration samples the ranges leave out (at most a quarter of the set)
SAFETY = 3.0              # on the calibration set, the quantization error a prediction must withstand
INT16_TRIALS = 6          # int16 layers tried before giving up on the budget
RANK_SAMPLES = 8          # samples the sensitivity ranking runs on


@dataclass
class Choice:
    """What the search chose and what it measured (quant.json's `mixed_precision`)."""

    max_drop_points: float
    evaluated_on: str
    samples: int
    float_accuracy: float
    int8_accuracy: float
    accuracy: float = 0.0
    lost: float = 0.0                  # fraction of the samples whose top-1 class the choice changes against float
    safety_factor: float = 1.0         # times the measured output error a prediction must withstand (SAFETY)
    int4: list[str] = field(default_factory=list)
    int16: list[str] = field(default_factory=list)
    weights_bytes_int8: int = 0
    weights_bytes: int = 0
    within_budget: bool = True
    trials: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    min_sqnr_db: float | None = None    # --min-sqnr: the budget is output SQNR (dB) instead of changed predictions
    sqnr_db: float = 0.0               # the choice's output SQNR against float on the samples

    def to_json(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in vars(self).items()}

    def table(self) -> str:
        """Every trial of the search: the trade-off it measured."""
        lines = [f"{'trial':48} {'top-1 %':>7} {'changed %':>9} {'SQNR dB':>7} {'constants B':>11}  budget"]
        for t in self.trials:
            lines.append(f"{t['trial'][:48]:48} {100 * t['accuracy']:7.1f} {100 * t['lost']:9.1f} "
                         f"{t['sqnr_db']:7.1f} {t['weights_bytes']:11,}  {'within' if t['within_budget'] else 'outside'}")
        return "\n".join(lines)

    def summary(self) -> str:
        if self.min_sqnr_db is not None:
            return (f"mixed precision: {len(self.int4)} layers int4 weights, {len(self.int16)} layers int16 activations; "
                    f"output SQNR {self.sqnr_db:.1f} dB (budget >= {self.min_sqnr_db:g} dB) on {self.samples} "
                    f"{self.evaluated_on} samples; constants {self.weights_bytes:,} B (int8 {self.weights_bytes_int8:,} B)"
                    + ("" if self.within_budget else "; the budget could not be met"))
        return (f"mixed precision: {len(self.int4)} layers int4 weights, {len(self.int16)} layers int16 activations; "
                f"top-1 {100 * self.accuracy:.1f} % (float {100 * self.float_accuracy:.1f} %, int8 "
                f"{100 * self.int8_accuracy:.1f} %, budget -{self.max_drop_points:g} points) on {self.samples} "
                f"{self.evaluated_on} samples"
                + (f", predictions under {self.safety_factor:g}x the quantization error" if self.safety_factor != 1 else "")
                + f"; constants {self.weights_bytes:,} B (int8 {self.weights_bytes_int8:,} B)"
                + ("" if self.within_budget else "; the budget could not be met"))


def labels(y, n: int, where: str) -> np.ndarray | None:
    """Integer labels for n samples; None when the data has none (the budget then counts the predictions that
    change against the float model's, which needs no label); an error when y is too short."""
    if y is None:
        return None
    if len(y) < n:
        raise EdgecError(f"--max-accuracy-drop: {where} has {len(y)} labels y for {n} samples; give one integer "
                         "label per sample, or none (the budget then counts predictions changed against float)")
    return np.asarray(y[:n], np.int64)


def top1(outputs: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(outputs.reshape(len(y), -1), axis=1) == y))


def _with_readers(graph: Graph, name: str) -> list[str]:
    """The layer and the int16-capable layers that read its output: its int16 output then stays int16
    (a lone int16 layer's output goes back to int8 before an int8 reader, which loses what int16 kept), read
    directly or through views and pools (int16 too between two int16 layers)."""
    return list(dict.fromkeys([name, *int16.layers_reading(graph, name)]))


def changed(float_out: np.ndarray, q: np.ndarray, scale: float, zero_point: int, safety: float) -> np.ndarray:
    """Per sample: does the top-1 class differ from float's when the quantized outputs q (int, [n, classes])
    carry `safety` times their measured error? (safety 1: the quantized model's own top-1.)"""
    f = float_out.reshape(len(q), -1)
    if safety == 1.0:
        return np.argmax(q, axis=1) != np.argmax(f, axis=1)
    error = (q.astype(np.float64) - zero_point) * scale - f
    return np.argmax(f + safety * error, axis=1) != np.argmax(f, axis=1)


def search(float_graph: Graph, ranges: dict, per_channel: bool, x: np.ndarray, y: np.ndarray,
           float_out: np.ndarray, max_drop: float, evaluated_on: str, finish: Callable[[Graph], Graph] = lambda g: g,
           log: Callable[[str], None] = lambda _: None, safety: float = 1.0,
           min_sqnr: float | None = None, rounded: dict[str, np.ndarray] | None = None) -> tuple[Graph, Choice]:
    """The chosen quantized graph and the record of the choice. float_graph is the canonical float graph
    (every candidate is made from it anew), float_out the float model's outputs on x; `finish` turns each
    quantized candidate into the final one (bias correction); safety the error factor predictions must
    withstand (SAFETY on the calibration set); min_sqnr: the budget in output SQNR dB instead (max_drop unused);
    rounded: {layer: float weights} of int4 layers rounded by edgec/quant/rounding.py (each layer's rounding
    depends on float inputs only, so it is computed once for every candidate), used where a layer takes int4."""
    t0 = time.monotonic()
    if y is None:            # no labels: top-1 is agreement with the float model (what the budget bounds anyway)
        y = np.argmax(float_out.reshape(len(float_out), -1), axis=1)
        evaluated_on += " (no labels: top-1 is agreement with the float model)"
    x, y, float_out = x[:EVAL_LIMIT], y[:EVAL_LIMIT], float_out[:EVAL_LIMIT]
    amplified = f" under {safety:g}x the quantization error" if safety != 1.0 else ""
    allowed = max_drop / 100.0 + 1e-9 if min_sqnr is None else -min_sqnr

    def badness(lost: float, db: float) -> float:
        """What the budget bounds, lower is better: the changed fraction, or minus the SQNR."""
        return lost if min_sqnr is None else -db

    def build(wide: list[str], four: list[str]) -> Graph:
        g = int4layers.mark(int16.mark(float_graph, wide)[0] if wide else float_graph, four)[0]
        if rounded:
            g = g.replace_ops(replace(op, attrs={**op.attrs, "weights": rounded[op.name],
                                                 "float_weights": op.attrs.get("float_weights", op.attrs["weights"])})
                              if op.name in rounded and op.attrs.get("weight_bits") == 4 else op for op in g.ops)
        return finish(quantize(g, ranges, per_channel))

    def trial(what: str, wide: list[str], four: list[str]) -> tuple[Graph, float, float]:
        """Build and score a candidate: (graph, top-1, the fraction of samples whose top-1 class is not float's)."""
        g = build(wide, four)
        xq = quantize_input(g.tensors[g.input], x)
        q = np.stack([reference.run(g, q).reshape(-1) for q in xq])
        out = g.tensors[g.output]
        acc = float(np.mean(np.argmax(q, axis=1) == y))
        frac = float(np.mean(changed(float_out, q, float(out.scale), int(out.zero_point), safety)))
        f = float_out.reshape(len(q), -1).astype(np.float64)
        db = sensitivity.sqnr_db(float(np.sum(f ** 2)),
                                 float(np.sum(((q - int(out.zero_point)) * float(out.scale) - f) ** 2)))
        lost = badness(frac, db)
        measured[id(g)] = (frac, db)     # (ids of live graphs: best's stays its own)
        choice.trials.append({"trial": what, "accuracy": round(acc, 4), "lost": round(frac, 4), "sqnr_db": round(db, 2),
                              "weights_bytes": g.weights_bytes(), "within_budget": lost <= allowed})
        log(f"accuracy budget: trial {len(choice.trials)}: {what}: top-1 {100 * acc:.1f} %, {100 * frac:.1f} % of "
            f"the predictions changed against float{amplified}, output SQNR {db:.1f} dB "
            f"({'within' if lost <= allowed else 'outside'} the budget)")
        return g, acc, lost

    measured: dict[int, tuple[float, float]] = {}
    if min_sqnr is None and len(y) * max_drop / 100.0 < 2:
        log(f"accuracy budget: {len(y)} samples: {max_drop:g} points allow fewer than 2 changed predictions, a "
            "coarse and noisy measure; give --val DATA.npz with a few hundred labelled samples for a reliable choice")
    choice = Choice(max_drop_points=max_drop, evaluated_on=evaluated_on, samples=len(y),
                    float_accuracy=top1(float_out, y), int8_accuracy=0.0, safety_factor=safety, min_sqnr_db=min_sqnr)
    best, acc, lost = trial("int8", [], [])
    choice.int8_accuracy, choice.weights_bytes_int8 = acc, best.weights_bytes()
    rows = [] if floatref.supported(best) else sensitivity.analyse(best, x[:RANK_SAMPLES])
    wide: list[str] = []
    if lost > allowed:                   # 1. int16 activations where int8 hurts, worst layer first
        order = [r["layer"] for r in rows if r["layer"] in int16.candidates(float_graph)] or \
            int16.candidates(float_graph)           # (no float reference to rank them: graph order)
        for name in order[:INT16_TRIALS]:
            more = [n for n in _with_readers(float_graph, name) if n not in wide]
            if not more:
                continue
            g, a, m = trial(f"int16 {', '.join(wide + more)}", wide + more, [])
            if m < lost:
                wide, best, acc, lost = wide + more, g, a, m
            if lost <= allowed:
                break
    four: list[str] = []
    if lost <= allowed:                  # 2. int4 weights where harmless, cheapest at 4 bits first
        cost = {r["layer"]: r.get("int4_output_db") for r in rows}
        order = sorted(int4layers.candidates(float_graph, tuple(wide)), key=lambda n: -(cost.get(n) or 0.0))
        if order:
            g, a, m = trial("int4 " + ", ".join(order), wide, order)
            if m <= allowed:
                best, acc, lost, four = g, a, m, order
            else:
                for name in order:
                    g, a, m = trial(f"int4 {', '.join(four + [name])}", wide, four + [name])
                    if m <= allowed:
                        best, acc, lost, four = g, a, m, four + [name]
    choice.accuracy, choice.int4, choice.int16 = acc, four, wide
    choice.lost, choice.sqnr_db = measured[id(best)]
    choice.weights_bytes, choice.within_budget = best.weights_bytes(), lost <= allowed
    choice.seconds = round(time.monotonic() - t0, 2)
    return best, choice
