"""Mixed precision by accuracy budget (`--max-accuracy-drop PTS`): layer by layer, int4 weights where they are
harmless and int16 activations where int8 hurts, the smallest flash (then the fewest int16 layers, the slower
ones) whose top-1 accuracy stays within PTS points of the float model's.

Accuracy is measured on labelled samples kept apart from calibration: `--val DATA.npz` (x and y), else the
calibration set's held-out split (its last samples, which the ranges then leave out; the set needs y). Every
candidate reuses the calibration statistics (the same ranges) and is scored by the NumPy integer reference
(edgec/quant/reference.py, what the C computes bit for bit) on at most EVAL_LIMIT samples:

1. int8 activations and weights everywhere. If that misses the budget, layers get int16 activations
   (edgec/quant/int16.py) one at a time, most sensitive first (the sensitivity table's isolated output SQNR),
   until it is met (at most INT16_TRIALS tries; if it never is, the most accurate mix is kept, with a warning).
2. Then int4 weights (edgec/ops/int4.py): all remaining int4-capable layers at once if that stays in the
   budget, else one layer at a time, the cheapest at 4 bits first (the table's int4 column), each kept if
   the accuracy stays within the budget.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.quant import floatref, int16, int4layers, reference, sensitivity
from edgec.quant.quantize import quantize
from edgec.quant.scheme import quantize_input

EVAL_LIMIT = 256          # samples each candidate is scored on
HOLDOUT = 128             # calibration samples held out for the budget (at most a quarter of the set)
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
    int4: list[str] = field(default_factory=list)
    int16: list[str] = field(default_factory=list)
    weights_bytes_int8: int = 0
    weights_bytes: int = 0
    within_budget: bool = True
    trials: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in vars(self).items()}

    def summary(self) -> str:
        return (f"mixed precision: {len(self.int4)} layers int4 weights, {len(self.int16)} layers int16 activations; "
                f"top-1 {100 * self.accuracy:.1f} % (float {100 * self.float_accuracy:.1f} %, int8 "
                f"{100 * self.int8_accuracy:.1f} %, budget -{self.max_drop_points:g} points) on {self.samples} "
                f"{self.evaluated_on} samples; weights {self.weights_bytes:,} B (int8 {self.weights_bytes_int8:,} B)"
                + ("" if self.within_budget else "; the budget could not be met"))


def labels(y, n: int, where: str) -> np.ndarray:
    """Integer labels for n samples, or one error saying what the budget needs."""
    if y is None or len(y) < n:
        raise EdgecError(f"--max-accuracy-drop needs labelled samples: {where} has no integer labels y; "
                         "give --val DATA.npz with x and y (or add y to the calibration file)")
    return np.asarray(y[:n], np.int64)


def top1(outputs: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(outputs.reshape(len(y), -1), axis=1) == y))


def search(float_graph: Graph, ranges: dict, per_channel: bool, x: np.ndarray, y: np.ndarray,
           float_out: np.ndarray, max_drop: float, evaluated_on: str, finish: Callable[[Graph], None] = lambda g: None,
           log: Callable[[str], None] = lambda _: None) -> tuple[Graph, Choice]:
    """The chosen quantized graph and the record of the choice. float_graph is the canonical float graph
    (not modified), float_out the float model's outputs on x; `finish` runs after quantize on every candidate
    (bias correction)."""
    t0 = time.monotonic()
    x, y, float_out = x[:EVAL_LIMIT], y[:EVAL_LIMIT], float_out[:EVAL_LIMIT]
    floor = top1(float_out, y) - max_drop / 100.0 - 1e-9

    def build(wide: list[str], four: list[str]) -> Graph:
        g = copy.deepcopy(float_graph)
        if wide:
            int16.mark(g, wide)
        int4layers.mark(g, four)
        quantize(g, ranges, per_channel)
        finish(g)
        return g

    def score(g: Graph) -> float:
        xq = quantize_input(g.tensors[g.input], x)
        return top1(np.stack([reference.run(g, q).reshape(-1) for q in xq]), y)

    def trial(what: str, wide: list[str], four: list[str]) -> tuple[Graph, float]:
        g = build(wide, four)
        acc = score(g)
        choice.trials.append({"trial": what, "accuracy": round(acc, 4), "weights_bytes": g.weights_bytes(),
                              "within_budget": acc >= floor})
        log(f"accuracy budget: trial {len(choice.trials)}: {what}: top-1 {100 * acc:.1f} % "
            f"({'within' if acc >= floor else 'outside'} the budget, floor {100 * floor:.1f} %)")
        return g, acc

    choice = Choice(max_drop_points=max_drop, evaluated_on=evaluated_on, samples=len(y),
                    float_accuracy=top1(float_out, y), int8_accuracy=0.0)
    best, acc = trial("int8", [], [])
    choice.int8_accuracy, choice.weights_bytes_int8 = acc, best.weights_bytes()
    rows = [] if floatref.supported(best) else sensitivity.analyse(best, x[:RANK_SAMPLES])
    wide: list[str] = []
    if acc < floor:                      # 1. int16 activations where int8 hurts, worst layer first
        order = [r["layer"] for r in rows if r["layer"] in int16.candidates(float_graph)] or \
            int16.candidates(float_graph)           # (no float reference to rank them: graph order)
        best_acc, best_wide = acc, []
        for name in order[:INT16_TRIALS]:
            g, a = trial(f"int16 {', '.join(wide + [name])}", wide + [name], [])
            if a > best_acc:
                wide, best, best_acc = wide + [name], g, a
            if a >= floor:
                break
        acc = best_acc
    four: list[str] = []
    if acc >= floor:                     # 2. int4 weights where harmless, cheapest at 4 bits first
        cost = {r["layer"]: r.get("int4_output_db") for r in rows}
        order = sorted(int4layers.candidates(float_graph, tuple(wide)), key=lambda n: -(cost.get(n) or 0.0))
        if order:
            g, a = trial("int4 " + ", ".join(order), wide, order)
            if a >= floor:
                best, acc, four = g, a, order
            else:
                for name in order:
                    g, a = trial(f"int4 {', '.join(four + [name])}", wide, four + [name])
                    if a >= floor:
                        best, acc, four = g, a, four + [name]
    choice.accuracy, choice.int4, choice.int16 = acc, four, wide
    choice.weights_bytes, choice.within_budget = best.weights_bytes(), acc >= floor
    choice.seconds = round(time.monotonic() - t0, 2)
    return best, choice
