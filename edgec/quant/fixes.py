"""The default quantization recipe: what hurts INT8 in this model, and which fixes measurably help.

When the options leave them open (no --method, no --[no-]equalize, no --bias-correction), edgec chooses
cross-layer equalization, a per-model range method and bias correction itself, each only when it raises the
INT8 model's output SQNR against float on held-out calibration samples:

- the calibration set is split: ranges (and everything else that is fitted) come from its first samples,
  the decision is measured on its last HOLD (at most a quarter of the set), which no range has seen;
- greedy, in this order, starting from the plain recipe (minmax ranges, nothing else):
  1. cross-layer equalization (edgec/quant/equalize.py), when the model has conv pairs to equalize;
  2. the range method (minmax / percentile / entropy / mse) whose held-out SQNR is highest;
  3. saturation-aware ranges (edgec/quant/saturation.py), when an activation table's input range reaches far
     into where its function is flat (a Tanh whose input spans -140..110): that range cut to where it moves;
  4. bias correction on the quantized model's own activations (edgec/quant/biascorr.py);
  a fix is kept when it gains more than MIN_GAIN_DB in total and loses nothing on either interleaved
  half of the held-out samples (one half's gain alone is noise of a small held-out set);
- what it saw (outlier channels, wide per-tensor ranges, saturating layers) and what it measured goes into the build
  summary and quant.json (`fixes`).

The final model is then quantized as if those options had been given (ranges over all calibration samples),
so the generated C and the integer reference are the ones of explicit flags: bit-exact as ever. Models
this does not judge (several outputs, a QDQ model's own scales, --state, fewer than MIN_SAMPLES samples)
get the plain recipe, and the record says why.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx

from edgec import ports
from edgec.data import Samples
from edgec.errors import EdgecError
from edgec.ir import SYNTHETIC, Graph
from edgec.quant import autorange, biascorr, calibrate, equalize, floatref, reference, saturation
from edgec.ops.registry import REGISTRY
from edgec.quant.quantize import quantize
from edgec.quant.ranges import METHODS

HOLD = 64              # held-out samples the decision is measured on (at most a quarter of the set)
MIN_SAMPLES = 16       # fewer calibration samples: no held-out split worth the name (under 4), the plain recipe
CV_FOLDS = 4           # the unjudged bias correction is also cross-validated in this many folds ...
LOO_FOLDS = 8          # ... and its variant chosen in this many (8 samples: leave-one-out)
MIN_CV_SAMPLES = 8     # ... given at least this many samples (2 a fold)
MIN_GAIN_DB = 0.5      # a fix must raise the held-out output SQNR by more than this ...
ROWS_GAIN_DB = 6.02    # a transformer's int16 rows (twice the activation bytes): at least one bit of output SQNR
FOLDS = 2              # ... and lose nothing on either interleaved half of the held-out samples
BUDGET_S = 60.0        # time the trials may take; the fixes not tried by then are left out (and said so)
OUTLIER_RATIO = 8.0    # a channel whose weight range is this many times its layer's median: an outlier
WIDE_RATIO = 4.0       # a tensor whose min/max range is this many times its 99.99th percentile range: wide
BIAS_SAMPLES = 64
OWN_RANGE_SAMPLES = 256


@dataclass
class Fixes:
    """What the default recipe found and chose (quant.json's `fixes`)."""

    equalize: bool = False
    method: str = "minmax"
    bias_correction: bool = False
    bias_variant: str = "quantized"                # biascorr variant; bias_open: left to check_unjudged_bias's choice
    bias_open: bool = False
    saturation: bool = False                       # saturating layers' input ranges cut (saturation.py)
    unseen: bool = False                           # not judged: minmax ends widened to unseen samples (ranges.unseen)
    judged: bool = True
    reason: str = ""                               # why not judged, or what cut the trials short
    findings: list[str] = field(default_factory=list)
    trials: list[dict] = field(default_factory=list)   # {"fix", "held_out_db", "folds_db", "kept"} or {"fix", "error", "kept"}
    fit_samples: int = 0
    held_out_samples: int = 0
    seconds: float = 0.0

    @property
    def chosen(self) -> list[str]:
        return ((["cross-layer equalization"] if self.equalize else [])
                + ([f"{self.method} ranges"] if self.method != "minmax" else [])
                + (["saturation-aware ranges"] if self.saturation else [])
                + (["bias correction"] if self.bias_correction else []))

    def summary(self) -> str:
        if not self.judged:
            return (f"calibration (default recipe): {self.method} ranges"
                    + (" (widened where unseen samples likely pass them), " if self.unseen else ", ")
                    + f"{'equalization' if self.equalize else 'no equalization'}, "
                    + ("bias correction (shrunk to what the samples agree on)" if self.bias_correction
                       else "no bias correction")
                    + f" ({self.reason})")
        start = self.trials[0]["held_out_db"] if self.trials else 0.0
        end = max([t["held_out_db"] for t in self.trials if t["kept"]] or [start])
        what = ", ".join(self.chosen) or "nothing (minmax ranges as they are)"
        return (f"calibration (default recipe): {what}; output SQNR {start:.1f} -> {end:.1f} dB on {self.held_out_samples} "
                f"held-out calibration samples (ranges from the other {self.fit_samples}; "
                f"{len(self.trials)} trials, {self.seconds:.1f} s)"
                + (f"; found: {'; '.join(self.findings)}" if self.findings else "")
                + (f"; {self.reason}" if self.reason else ""))

    def to_json(self) -> dict:
        return {**{k: (round(v, 3) if isinstance(v, float) else v) for k, v in vars(self).items()},
                "chosen": self.chosen}


def open_choices(method, equalize_opt, bias) -> bool:
    """Whether the options leave any of the three choices to the default recipe (None: not given; with all
    three given, saturation-aware ranges are left out unless asked for too)."""
    return method is None or equalize_opt is None or bias is None


def not_judged(graph: Graph, n: int, states) -> str:
    """Why the default recipe cannot judge this model ('' when it can)."""
    if ports.multi(graph):
        return "a model with several inputs or outputs"
    if graph.fixed_qparams:
        return "a QDQ model (or an audio front end) keeps its own scales"
    if states:
        return "a stateful model (--state)"
    if n < MIN_SAMPLES:
        return f"{n} calibration samples, fewer than {MIN_SAMPLES} (no held-out split)"
    return ""


def unjudged(graph: Graph, n: int, states, why: str, method, equalize_opt, bias) -> Fixes:
    """The recipe of a model it cannot judge: minmax ranges (no method given and QuantOptions.unseen_ranges: each
    end widened where samples not seen likely pass it, ranges.unseen), no equalization, and bias correction when the
    options leave it open and the model is one bias correction takes (not a QDQ model's own scales, not a
    stateful one) with at least 2 samples: its shift is shrunk by how much the samples agree on it
    (biascorr.shrunk_shift), so on a few samples it takes off only the shifts they agree on."""
    plain = graph.fixed_qparams or states or n < 2
    return Fixes(judged=False, reason=why, method=method or "minmax", equalize=bool(equalize_opt),
                 bias_correction=bool(bias) if bias is not None or plain else True, unseen=method is None,
                 bias_variant=bias if bias in biascorr.VARIANTS else "quantized", bias_open=bias is None)


def worst_output_sqnr(model: onnx.ModelProto, graph: Graph | list[tuple[Graph, np.ndarray]], x: np.ndarray,
                      only=None) -> float:
    """SQNR (dB) of the quantized graph's dequantized outputs against float on x, the worst output's (outputs of
    a varying shape, a NonMaxSuppression's selection, left out); `graph` may be a list of (graph, indices of the
    samples of x it computes): cross-validation folds, their outputs pooled. only: the outputs (tensor names) to
    judge, None: all."""
    floats = calibrate.run_float_each(model, x)
    parts = [(graph, np.arange(len(x)))] if isinstance(graph, Graph) else graph
    return worst_sqnr(parts[0][0], floats, pooled_outputs(parts, x), only)


def pooled_outputs(parts: list[tuple[Graph, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """The dequantized outputs (packed, one row per sample of x) of each (graph, indices of x it computes)."""
    got = None
    for g, rows in parts:
        out = ports.dequantize_outputs(g, reference.run_sequence(g, ports.quantize_inputs(g, x[rows]),
                                                                 reset_each=True)).reshape(len(rows), -1)
        got = np.empty((len(x), out.shape[1]), out.dtype) if got is None else got
        got[rows] = out
    return got


def worst_sqnr(graph: Graph, floats: list[dict], got: np.ndarray, only=None) -> float:
    """The worst output's SQNR (dB) of outputs `got` (pooled_outputs) against float outputs `floats` (only: of
    the outputs with these tensor names)."""
    worst = np.inf
    outs = ports.outputs(graph)
    for k, p in enumerate(outs):
        if only is not None and p.tensor not in only:
            continue
        w = [np.asarray(_float_output(f, p.name, k, len(outs)), np.float64).reshape(-1) for f in floats]
        if graph.tensors[p.tensor].dtype == "float32" or any(v.size != p.size for v in w):
            continue
        w, g = np.stack(w), got[:, p.start:p.start + p.size]
        if not np.isfinite(w).all():     # min(inf, nan) is inf: a NaN here would read as a perfect output
            raise EdgecError(f"the float model computes {'NaN' if np.isnan(w).any() else 'an infinity'} at output "
                             f"'{p.name}' on the calibration samples: its SQNR cannot be measured; check the model "
                             "in onnxruntime on these samples")
        worst = min(worst, float(10 * np.log10(max(np.sum(w ** 2), 1e-30) / max(np.sum((w - g) ** 2), 1e-30))))
    return worst


def _float_output(floats: dict, name: str, k: int, n: int):
    """Output `name` (the k-th of n) of onnxruntime's float outputs {ONNX output name: array}: by name, else by
    position (a single-output model's port is named after its tensor, which an Identity or a view at the end of the
    ONNX graph names otherwise: matched by name alone, no output was judged and every SQNR read inf)."""
    if name in floats:
        return floats[name]
    return list(floats.values())[k] if len(floats) == n else ()


def cross_validated_bias(model: onnx.ModelProto, plain: Graph, x: np.ndarray, per_channel: bool, variant: str) -> float:
    """Worst output SQNR of the samples x, each of CV_FOLDS contiguous folds corrected (this variant) on the others."""
    folds = np.array_split(np.arange(len(x)), CV_FOLDS)
    return worst_output_sqnr(model, [(biascorr.correct_quantized(plain, np.delete(x, f, axis=0), per_channel,
                                                                  variant)[0], f) for f in folds], x)


def own_rounding_pays(model: onnx.ModelProto, plain: Graph, x: np.ndarray, per_channel: bool) -> tuple[bool, str]:
    """(whether the `weights` bias correction replaces the default's `quantized`, the figures): leave-one-out over
    the first LOO_FOLDS samples' folds, both variants fitted on the other folds; `weights` when its pooled worst
    output SQNR gains more than MIN_GAIN_DB and loses on neither interleaved half (the rule of every fix)."""
    folds = np.array_split(np.arange(len(x)), min(len(x), LOO_FOLDS))
    floats = calibrate.run_float_each(model, x)
    t = biascorr.float_targets(plain, x)              # each sample's float means once, not once per fold
    got = [pooled_outputs([(biascorr.correct_quantized(plain, np.delete(x, f, axis=0), per_channel, v, [
        None if a is None else np.delete(a, f, axis=0) for a in t])[0], f) for f in folds], x)
        for v in ("quantized", "weights")]
    q, w = (worst_sqnr(plain, floats, o) for o in got)
    halves = [[worst_sqnr(plain, [floats[i] for i in h], o[h]) for o in got]
              for h in (np.arange(len(x))[i::FOLDS] for i in range(FOLDS))]
    return (w > q + MIN_GAIN_DB and all(b >= a for a, b in halves),
            f"cross-validated output SQNR quantized {q:.2f} -> weights {w:.2f} dB, interleaved halves "
            + ", ".join(f"{a:.2f} -> {b:.2f}" for a, b in halves) + f" ({len(folds)} folds)")


def _bias_kept(model, plain: Graph, corrected: Graph, x: np.ndarray, before: float, per_channel: bool,
               variant: str) -> tuple[bool, str]:
    """(whether check_unjudged_bias keeps this correction, its figures) against `before`, the uncorrected SQNR."""
    seen = [(f"output SQNR of the {len(x)} calibration samples", worst_output_sqnr(model, corrected, x))]
    if len(x) >= MIN_CV_SAMPLES and seen[0][1] < before:
        seen.append((f"cross-validated ({CV_FOLDS} folds)",
                     cross_validated_bias(model, plain, x, per_channel, variant)))
    return (any(after >= before for _, after in seen),
            ", ".join(f"{w} {before:.1f} -> {after:.1f} dB" for w, after in seen))


def check_unjudged_bias(model: onnx.ModelProto, plain: Graph, corrected: Graph, x: np.ndarray, fixes: Fixes,
                        log: Callable[[str], None] = lambda _: None, per_channel: bool = True,
                        variant: str = "quantized") -> Graph:
    """The default bias correction of a model the recipe could not judge, left out only when it brings the
    calibration samples' outputs further from float (worst output SQNR) by every measure there is: the graph kept.
    Measured on the samples it was fitted on (which favours it) and, with at least MIN_CV_SAMPLES samples,
    cross-validated (which does not: the samples cut into CV_FOLDS contiguous folds, each fold's outputs computed
    with the correction fitted on the other folds, fewer samples than the final correction has; the ranges are the
    final model's). Either alone is the noise of a few samples; a correction both say hurts is left out.
    When the options leave the variant open (fixes.bias_open), `weights` (each layer's own rounding alone) replaces
    the default's `quantized` (that and the shift inherited from the layers before) where own_rounding_pays and this
    check would keep it (fixes.bias_variant; docs/quantization.md, h48-bias)."""
    before = worst_output_sqnr(model, plain, x)
    if fixes.bias_open and len(x) >= MIN_CV_SAMPLES and variant == "quantized":
        pays, what = own_rounding_pays(model, plain, x, per_channel)
        if pays:
            weights = biascorr.correct_quantized(plain, x, per_channel, "weights")[0]
            kept, why = _bias_kept(model, plain, weights, x, before, per_channel, "weights")
            what += "" if kept else f"; weights would be left out ({why})"
            if kept:
                variant, corrected = "weights", weights
        log(f"bias correction variant: {variant} ({what})")
        fixes.reason += f"; bias correction variant {variant} ({what})"
    fixes.bias_variant = variant
    kept, what = _bias_kept(model, plain, corrected, x, before, per_channel, variant)
    log(f"bias correction: {what}")
    if kept:
        return corrected
    fixes.bias_correction = False
    fixes.reason += f"; bias correction left out ({what})"
    return plain


def held_out(samples: Samples, keep: int) -> np.ndarray:
    """The samples after the first `keep` (streamed, only those kept)."""
    rows = [x[max(0, keep - i):] for i, x in samples.batches(256) if i + len(x) > keep]
    return np.concatenate(rows)


def findings(graph: Graph, stats) -> list[str]:
    """What hurts INT8 here: outlier output channels of equalizable layers, tensors whose min/max range is
    much wider than where their values are, activation tables whose input range is mostly where they are flat."""
    found = []
    for a, _ in equalize.pairs(graph):
        r = np.asarray(REGISTRY[a.kind].equalize.out_range(a), np.float64)
        med = float(np.median(r[r > 0])) if np.any(r > 0) else 0.0
        if med > 0 and r.max() / med >= OUTLIER_RATIO:
            found.append(f"outlier channels in {a.name} ({r.max() / med:.0f}x the median weight range)")
    if stats.with_histograms:
        mm, pc = stats.ranges("minmax", part="fit"), stats.ranges("percentile", 99.99, part="fit")
        wide = [s for s in mm if (pc[s][1] - pc[s][0]) > 0 and
                (mm[s][1] - mm[s][0]) / (pc[s][1] - pc[s][0]) >= WIDE_RATIO]
        if wide:
            found.append(f"{len(wide)} tensor{'s' if len(wide) > 1 else ''} with wide min/max ranges "
                         f"({', '.join(wide[:3])}{', ...' if len(wide) > 3 else ''})")
    found += saturation.describe(saturation.clamp(graph, stats.ranges("minmax", part="fit"))[1])
    return found


def choose(model: onnx.ModelProto, graph: Graph, samples: Samples, method, equalize_opt, bias, per_channel: bool,
           percentile: float, cache_dir, log: Callable[[str], None] = lambda _: None,
           budget_s: float = BUDGET_S, saturation_opt: bool | None = None) -> Fixes:
    """The fixes for this model: those the options give are kept as given, the open ones (None) measured."""
    t0 = time.monotonic()
    hold = min(HOLD, samples.n // 4)
    keep = samples.n - hold
    fixes = Fixes(fit_samples=keep, held_out_samples=hold, equalize=bool(equalize_opt),
                  method=method or "minmax", bias_correction=bool(bias), saturation=bool(saturation_opt))
    if fixes.method not in METHODS:      # auto / auto-model choose their ranges later: judged with minmax's
        fixes.method = "minmax"
    fit = samples.head(keep)
    x_hold = held_out(samples, keep)
    y_hold = calibrate.run_float(model, x_hold)
    x_bias = fit.first(BIAS_SAMPLES)

    def stats_of(g: Graph, rescale):
        sources = {t.source for t in g.tensors.values()}
        own = {s for s in sources if s.startswith(SYNTHETIC)}
        st = calibrate.collect_cached(model, fit, sorted(sources - own), histograms=True, holdout=0,
                                      rescale=rescale, cache_dir=cache_dir, log=log)
        return st, (floatref.ranges(g, fit.first(OWN_RANGE_SAMPLES), own) if own else {})

    plain = (graph, *stats_of(graph, None))
    fixes.findings = findings(graph, plain[1])
    current = {"eq": plain, "method": fixes.method, "bias": bias or False, "sat": fixes.saturation}
    best = None

    def score(eq, m, b, sat):
        g, st, own = eq
        ranges = {**st.ranges(m, percentile), **own}
        if sat:
            ranges = saturation.clamp(g, ranges)[0]
        if b == "float":                       # (given: the float variant, before quantization)
            g = biascorr.correct_float(g, x_bias, per_channel)
        q = quantize(g, ranges, per_channel)
        if b and b != "float":
            q = biascorr.correct_quantized(q, x_bias, per_channel)[0]
        return autorange.output_sqnr_of(q, [e[q.output] for e in autorange.run_envs(q, x_hold)], y_hold, FOLDS)

    def trial(name: str, **change) -> bool:
        nonlocal best
        if time.monotonic() - t0 > budget_s:
            fixes.reason = f"time budget of {budget_s:g} s reached before '{name}'"
            return False
        cand = {**current, **change}
        try:
            total, folds = score(cand["eq"], cand["method"], cand["bias"], cand["sat"])
        except EdgecError as e:   # a fix the integer kernels cannot take (equalization's scales: a multiplier
            if best is None:      # out of range) is a trial lost, not a failed build; the plain recipe's is one
                raise
            fixes.trials.append({"fix": name, "error": str(e), "kept": False})
            log(f"calibration (default recipe): {name}: not kept, it cannot be quantized ({e})")
            return False
        kept = best is None or (total > best[0] + MIN_GAIN_DB and all(f >= b for f, b in zip(folds, best[1])))
        fixes.trials.append({"fix": name, "held_out_db": round(total, 2), "folds_db": [round(f, 2) for f in folds],
                             "kept": kept})
        log(f"calibration (default recipe): {name}: held-out output SQNR {total:.1f} dB" + ("" if best is None else
            f" ({'kept' if kept else 'not kept'}, best so far {best[0]:.1f} dB)"))
        if kept:
            best = (total, folds)
            current.update(change)
        return kept

    if equalize_opt:
        g_eq, rescale = equalize.equalize(graph)
        current["eq"] = (g_eq, *stats_of(g_eq, rescale))
    trial("plain (" + ", ".join([f"{current['method']} ranges"] + (["equalization"] if fixes.equalize else [])
                                  + (["bias correction"] if fixes.bias_correction else [])) + ")")
    if equalize_opt is None and equalize.pairs(graph):
        g_eq, rescale = equalize.equalize(graph)
        if trial("cross-layer equalization", eq=(g_eq, *stats_of(g_eq, rescale))):
            fixes.equalize = True
    if method is None:
        for m in METHODS[1:]:
            if trial(f"{m} ranges", method=m):
                fixes.method = m
    if saturation_opt is None and saturation.clamp(current["eq"][0], current["eq"][1].ranges(current["method"],
                                                                                         percentile))[1]:
        if trial("saturation-aware ranges", sat=True):
            fixes.saturation = True
    if bias is None and trial("bias correction", bias="quantized"):
        fixes.bias_correction = True
    fixes.seconds = time.monotonic() - t0
    return fixes
