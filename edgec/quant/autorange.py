"""`--method auto`: the range method chosen per tensor (or, `auto-model`, one for the whole model),
judged by the INT8 model's output against float on held-out calibration samples.

- per model: quantize with each method (minmax / percentile / entropy / mse), keep the one whose
  output SQNR on the held-out samples is highest;
- per tensor (greedy coordinate search): start from that per-model choice; then, tensor by tensor in
  execution order, try each other method's range for that tensor alone and keep it when the held-out
  output SQNR improves by more than MIN_GAIN_DB and gets no worse on either half (interleaved folds)
  of the held-out samples: a gain that only one half sees is noise of a small held-out set. A trial quantizes the
  float graph anew (milliseconds; quantize returns a new graph, the float one stays as it is) and
  reruns the integer reference only from the first op the tensor affects (the held-out samples'
  earlier tensors are reused). The search stops at its time budget; tensors it did not reach keep
  the per-model method, and the result says so.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from edgec.quant import reference
from edgec.quant import sensitivity
from edgec.ir import Graph
from edgec.ops.registry import own_qparams
from edgec.quant.quantize import quantize
from edgec.fixedpoint.scheme import dequantize, quantize_input
from edgec.quant.ranges import METHODS

MIN_GAIN_DB = 0.05        # a per-tensor change must gain at least this much held-out SQNR ...
FOLDS = 2                 # ... and lose nothing on any of these interleaved folds of the held-out samples
BUDGET_S = 20.0           # default time budget of the per-tensor search
SAME_RANGE = 1e-3         # ranges closer than this (relative to their width) are not worth a trial

Ranges = dict[str, tuple[float, float]]


@dataclass
class Search:
    """What the per-tensor search did."""

    start: str                                  # the per-model method it started from
    start_db: float
    final_db: float
    choice: dict[str, str] = field(default_factory=dict)    # ONNX value -> method, for every searched tensor
    trials: int = 0
    tensors: int = 0                            # tensors whose range comes from calibration
    reached: int = 0                            # of them, how many the search tried before the budget ran out
    seconds: float = 0.0

    @property
    def changed(self) -> dict[str, str]:
        return {s: m for s, m in self.choice.items() if m != self.start}

    def to_json(self) -> dict:
        return {"start_method": self.start, "start_db": self.start_db, "final_db": self.final_db,
                "tensors": self.tensors, "reached": self.reached, "complete": self.reached == self.tensors,
                "trials": self.trials, "seconds": round(self.seconds, 3), "changed": self.changed}


def output_sqnr_of(graph: Graph, outputs: list[np.ndarray], y_float: np.ndarray, folds: int = 1):
    """Held-out output SQNR (dB) of the dequantized outputs against float; with folds > 1, also the SQNR
    of each interleaved fold of the samples: (total, [fold...])."""
    tout = graph.tensors[graph.output]
    got = np.stack([dequantize(tout, o).reshape(-1) for o in outputs])
    want = y_float.reshape(len(outputs), -1).astype(np.float64)
    sig, noise = np.sum(want ** 2, axis=1), np.sum((want - got) ** 2, axis=1)
    total = sensitivity.sqnr_db(float(sig.sum()), float(noise.sum()))
    if folds <= 1:
        return total
    return total, [sensitivity.sqnr_db(float(sig[k::folds].sum()), float(noise[k::folds].sum())) for k in range(folds)]


def run_envs(graph: Graph, x: np.ndarray, envs: list[dict] | None = None, start: int = 0) -> list[dict]:
    """Every tensor of the integer reference for each sample; with envs, ops before `start` are reused."""
    out = []
    xq = quantize_input(graph.tensors[graph.input], x) if start == 0 or envs is None else None
    for k in range(len(x)):
        if start == 0 or envs is None:
            env = {graph.input: xq[k].reshape(graph.tensors[graph.input].shape)}
            first = 0
        else:
            env, first = dict(envs[k]), start
        for op in graph.ops[first:]:
            t = graph.tensors[op.output]
            env[op.output] = reference.run_op(op, [env[i] for i in op.inputs], t.shape, t.dtype)
        out.append(env)
    return out


def per_model(graph: Graph, by_method: dict[str, Ranges], own: Ranges, x, y, per_channel: bool):
    """(best method, {method: held-out output SQNR dB})."""
    scores = {}
    for m in METHODS:
        g = quantize(graph, {**by_method[m], **own}, per_channel)
        scores[m] = round(output_sqnr_of(g, [e[g.output] for e in run_envs(g, x)], y), 2)
    return max(scores, key=lambda m: (scores[m], -METHODS.index(m))), scores


def searchable(graph: Graph, by_method: dict[str, Ranges]) -> list[tuple[str, int]]:
    """(ONNX value, index of the first op it affects) of every tensor whose range comes from calibration,
    in execution order (the model input first)."""
    found: dict[str, int] = {}
    first = next(iter(by_method.values()))
    src = graph.tensors[graph.input].source
    if src in first:
        found[src] = 0
    for i, op in enumerate(graph.ops):
        t = graph.tensors[op.output]
        if t.source in first and not own_qparams(op) and t.source not in found:
            found[t.source] = i
    return sorted(found.items(), key=lambda kv: kv[1])


def per_tensor(graph: Graph, by_method: dict[str, Ranges], own: Ranges, x, y, start: str, per_channel: bool,
               budget_s: float = BUDGET_S) -> Search:
    """Greedy per-tensor choice of range methods, starting from `start` everywhere (see the module doc)."""
    t0 = time.monotonic()
    choice = {s: start for s in by_method[start]}
    ranges = {**by_method[start], **own}
    g = quantize(graph, ranges, per_channel)
    envs = run_envs(g, x)
    best, best_folds = output_sqnr_of(g, [e[g.output] for e in envs], y, FOLDS)
    order = searchable(graph, by_method)
    search = Search(start=start, start_db=round(best, 2), final_db=round(best, 2), tensors=len(order))
    for src, first_op in order:
        if time.monotonic() - t0 > budget_s:
            break
        search.reached += 1
        for m in METHODS:
            lo, hi = by_method[m][src]
            cur_lo, cur_hi = ranges[src]
            if m == choice[src] or abs(lo - cur_lo) + abs(hi - cur_hi) <= SAME_RANGE * max(cur_hi - cur_lo, 1e-12):
                continue
            trial_ranges = {**ranges, src: (lo, hi)}
            tg = quantize(graph, trial_ranges, per_channel)
            trial_envs = run_envs(tg, x, envs, first_op)
            score, folds = output_sqnr_of(tg, [e[tg.output] for e in trial_envs], y, FOLDS)
            search.trials += 1
            if score > best + MIN_GAIN_DB and all(f >= b for f, b in zip(folds, best_folds)):
                best, best_folds, ranges, envs, choice[src] = score, folds, trial_ranges, trial_envs, m
    search.choice = choice
    search.final_db = round(best, 2)
    search.seconds = time.monotonic() - t0
    return search


def ranges_of(search: Search, by_method: dict[str, Ranges]) -> Ranges:
    """The ranges (over all calibration samples) the search's per-tensor choice selects."""
    return {s: by_method[search.choice.get(s, search.start)][s] for s in by_method[search.start]}
