"""Whether a model the default recipe cannot judge takes minmax ranges widened for samples not seen
(ranges.unseen), decided on its calibration samples alone, by cross-validation.

The widening lowers one new sample's expected squared error tensor by tensor; whether it brings the model's
outputs closer to float depends on the model (on the corpus it raised small MLPs, recurrences and autoencoders by
1 to 9 dB and lowered some deep image networks and a detector: docs/corpus.md, h45-calib). So it is measured: the
first samples (at most calibrate.EXTREMES_SAMPLES) are cut into FOLDS contiguous folds (one sample each when there
are no more: leave-one-out); each fold's outputs are computed by the model quantized from the other folds' ranges,
as observed and widened (ranges.unseen on the other folds' per-sample extremes); the widened ranges are kept when the
pooled outputs' worst-output SQNR against float rises by more than fixes.MIN_GAIN_DB and falls on neither
interleaved half of the samples (fixes.FOLDS), the rule of every fix of the default recipe (fixes.choose). The float
model runs once (its outputs on those samples); the ranges come from the per-sample extremes calibration kept
(Stats.extremes). The folds leave bias correction out (the ranges alone are
judged): fitted again in each fold, it made the choice 6x slower on a deep network (timm_edgenext_xx_small_64,
8 folds: 320 s against its 75 s for the final correction on a loaded machine); the final model's correction and
its own check (fixes.check_unjudged_bias) follow the choice as before.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import onnx

from edgec.ir import Graph
from edgec.quant import calibrate, fixes
from edgec.quant.quantize import quantize
from edgec.quant.ranges import sample_extremes, unseen

FOLDS = 8          # at most this many folds (8 samples: leave-one-out)
MIN_SAMPLES = 3    # fewer: a fold's other samples give no spacing to widen by


def widened(stats) -> dict[str, tuple[float, float]]:
    """The ranges of every ONNX value that ranges.unseen widens on all the calibration samples."""
    return {k: r for k in stats.lo if (r := unseen(stats.lo[k], stats.hi[k], stats.spread.get(k)))
            != (stats.lo[k], stats.hi[k])}


def widened_ranges(stats, ranges: dict) -> dict:
    """`ranges` of every calibrated value, each end widened where unseen samples likely pass it (ranges.unseen)."""
    return {k: unseen(*ranges[k], stats.spread.get(k)) for k in stats.lo}


def describe(widen: bool) -> str:
    """A choice in words."""
    return "widened" if widen else "as observed"


def pinned(fixes_made) -> dict:
    """The options an int16 variant takes so its ranges are its int8 model's (ptq._int16_choice same_recipe: a tail
    changes the output, not the ranges; judged anew on the calibration samples, tf2onnx_tcn_kws's widening was
    dropped under an int16 Softmax tail and it fell 3.7 dB on its evaluation set)."""
    return {} if fixes_made is None else {"unseen_ranges": fixes_made.unseen}


def say_pinned(fixes_made, options: dict) -> None:
    """The variant's report: its ranges the int8 variant's cross-validated choice, not an option's (forced)."""
    if options and fixes_made is not None:
        v = options["unseen_ranges"]
        fixes_made.reason = fixes_made.reason.replace(
            forced(v), f"ranges as the int8 variant's cross-validation chose them ({describe(v)})")


def forced(widen: bool) -> str:
    """The build report's words for a choice the options made (QuantOptions.unseen_ranges True or False)."""
    return (f"ranges {'widened for unseen samples' if widen else 'as observed'}: "
            f"forced (unseen_ranges={widen}, --{'' if widen else 'no-'}unseen-ranges), not cross-validated")


def choose(model: onnx.ModelProto, graph: Graph, stats, own: dict, x: np.ndarray, per_channel: bool,
           settle: Callable[[dict], dict] = lambda r: r,
           log: Callable[[str], None] = lambda _: None) -> tuple[bool, str]:
    """(widen, what was measured) for `graph` as it is quantized (int16 / int4 layers marked), x the calibration
    samples, own the ranges of edgec's own tensors, settle: what the caller does to ranges before quantizing
    (saturation cuts, tied state ranges)."""
    if not widened(stats):
        return False, "no range to widen"
    ext = stats.extremes
    k = min([len(x)] + [len(e) for e in ext.values()])
    if k < MIN_SAMPLES or set(ext) != set(stats.lo):
        return False, f"{k} samples with their own extremes, too few to cross-validate"
    t0 = time.monotonic()
    x = x[:k]
    folds = np.array_split(np.arange(k), min(k, FOLDS))
    parts: tuple[list, list] = ([], [])
    for i, f in enumerate(folds):
        rest = np.delete(np.arange(k), f)
        seen = {n: (float(e[rest, 0].min()), float(e[rest, 1].max())) for n, e in ext.items()}
        wide = {n: unseen(*seen[n], sample_extremes(None, ext[n][rest, 0], ext[n][rest, 1], stats.spread[n][7]))
                for n in ext}
        for j, r in enumerate((seen, wide)):
            if j and r == seen:                                     # nothing widened in this fold: the same model
                parts[1].append((parts[0][-1][0], f))
                continue
            q = quantize(graph, settle({**r, **own}), per_channel)
            parts[j].append((q, f))
        log(f"ranges for unseen samples: fold {i + 1} of {len(folds)} quantized both ways "
            f"({time.monotonic() - t0:.0f} s)")
    floats = calibrate.run_float_each(model, x)
    got = [fixes.pooled_outputs(parts[0], x)]
    same = [j for j, (q, _) in enumerate(parts[1]) if q is parts[0][j][0]]       # folds nothing widened in
    got.append(fixes.pooled_outputs([p for j, p in enumerate(parts[1]) if j not in same], x)
               if len(same) < len(folds) else got[0].copy())
    for j in same:
        got[1][folds[j]] = got[0][folds[j]]
    g = parts[0][0][0]
    before, after = (fixes.worst_sqnr(g, floats, o) for o in got)
    halves = [[fixes.worst_sqnr(g, [floats[i] for i in h], o[h]) for o in got]
              for h in (np.arange(k)[i::fixes.FOLDS] for i in range(fixes.FOLDS))]
    keep = after > before + fixes.MIN_GAIN_DB and all(a >= b for b, a in halves)
    return keep, (f"ranges widened for unseen samples {'kept' if keep else 'not kept'}: cross-validated output SQNR "
                  f"{before:.1f} -> {after:.1f} dB, interleaved halves "
                  + ", ".join(f"{b:.1f} -> {a:.1f}" for b, a in halves)
                  + f" ({len(folds)} folds of {k} calibration samples; kept when it gains more than "
                  f"{fixes.MIN_GAIN_DB} dB and loses on neither half, as the default recipe's fixes)")
