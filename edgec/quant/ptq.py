"""Post-training quantization, the whole recipe: canonical float graph + calibration samples -> INT8 graph.

    [cross-layer equalization] -> calibration statistics (streamed, cached) -> [bias correction, float
    variant] -> [int16 layers, edgec/quant/int16.py] -> range method (minmax / percentile / entropy / mse;
    `auto-model`: the one whose INT8 output is closest to float on held-out calibration samples;
    `auto`: that, then refined tensor by tensor, edgec/quant/autorange.py) -> quantize -> [bias correction
    on the quantized model's own activations, edgec/quant/biascorr.py] -> [sensitivity report]

Each step takes a graph and returns a new one: the canonical graph `quantize_model` is given stays as it
is, and the searches (auto ranges, the accuracy budget) quantize that one graph as often as they need.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from edgec.quant import accuracy_budget, autorange, biascorr, calibrate
from edgec.quant import equalize
from edgec.quant import fixes as fixes_mod
from edgec.quant import floatref
from edgec.quant import int16
from edgec.quant import int4layers
from edgec.quant import numerics
from edgec.quant import reference
from edgec.quant import rounding
from edgec.quant import saturation
from edgec.quant import sensitivity
from edgec.quant import unseen_choice
from edgec import ports
from edgec.data import Samples, load_dataset
from edgec.errors import EdgecError
from edgec.ir import SYNTHETIC, Graph
from edgec.quant.quantize import quantize
from edgec.fixedpoint.scheme import dequantize, quantize_input
from edgec.quant.ranges import METHODS

REQUANTIZE = ("tflite", "once")    # --requantize: TFLite's normalized multiplier, or one rounding (one_rounding)
AUTO_METHODS = ("auto", "auto-model")       # per tensor (from the best per-model method), per model
ALL_METHODS = METHODS + AUTO_METHODS
HOLDOUT = 32          # samples `auto` keeps aside (at most a quarter of the set)
BIAS_SAMPLES = 64     # samples bias correction measures the mean shift on
OWN_RANGE_SAMPLES = 256   # samples the ranges of edgec's own (non-ONNX) tensors are measured on


@dataclass
class QuantOptions:
    method: str | None = None            # None: minmax, or the range method the default recipe measures better
    percentile: float = 99.99
    per_channel: bool = True
    bias_correction: bool | str | None = None   # True / "quantized": on the INT8 model's own activations; "float";
    equalize: bool | None = None                # None (both): the default recipe chooses (edgec/quant/fixes.py)
    saturation: bool | None = None              # saturating layers' input ranges cut (edgec/quant/saturation.py);
                                                # None: the default recipe chooses when it runs, else off
    cache: bool = True
    sensitivity_samples: int = 16      # 0: no sensitivity report
    int16: tuple[str, ...] = ()        # ONNX node names run with int16 activations (edgec/quant/int16.py)
    recurrent_int16: bool | None = None   # a float LSTM/GRU and its readers int16 (int16.recurrent_default,
                                          # --int16-recurrence on/off); None: where it gains (recurrence_choice)
    tail_int16: bool | None = None     # a float model's output layer of an int16 tail kind (an L2 normalization) and
                                       # the 16x8 layer feeding it int16, the output an int16 port
                                       # (int16.tail_default); None: where it gains (tail_choice)
    attention_int16: bool | None = None   # a transformer's rows int16 (int16.attention_default); None: attention_choice
    auto_seconds: float = autorange.BUDGET_S   # time budget of auto's per-tensor search
    weights: str = "int8"              # "int4": every layer that can takes int4 weights (edgec/quant/int4layers.py)
    int4: tuple[str, ...] = ()         # ONNX node names with int4 weights
    max_accuracy_drop: float | None = None   # points of top-1: edgec chooses int4 / int16 layers (accuracy_budget.py)
    min_sqnr: float | None = None            # or a budget in output SQNR dB (models that are not classifiers)
    rounding: str | None = None              # weight rounding: "nearest", "gptq" (edgec/quant/rounding.py);
                                             # None: gptq for int4 weights, nearest for int8
    val: str | None = None             # labelled data the budget is measured on (else the calibration held-out split)
    state: tuple[str, ...] = ()        # OUTPUT=INPUT: a state fed back, both quantized alike (edgec/ports.py)
    input_layout: str | None = None    # "nhwc": an NCHW model's C input channels-last (edgec/frontend/canonicalize.py)
    requantize: str = "tflite"         # "once": every int8 layer rounds its accumulator once (one_rounding, below)
    unseen_ranges: bool | None = None  # a model the recipe cannot judge: minmax ends widened (ranges.unseen); None:
                                       # where it gains, cross-validated on the calibration set (unseen_choice.py)

    @classmethod
    def plain(cls, **kw) -> QuantOptions:
        """The recipe without the default's choices: minmax ranges, no equalization, no bias correction, nearest
        weight rounding (what edgec did by default before edgec/quant/fixes.py and rounding.py), other options
        as given."""
        return cls(**{"method": "minmax", "equalize": False, "bias_correction": False, "rounding": "nearest",
                      "saturation": False, **kw})

    def checked(self) -> QuantOptions:
        """These options checked (one EdgecError naming a bad one), as a new value with bias_correction
        True spelled "quantized"."""
        o = self.normalized()
        if o.method is not None and o.method not in ALL_METHODS:
            raise EdgecError(f"unknown calibration method '{o.method}'; use one of {', '.join(ALL_METHODS)}")
        if o.rounding not in (None, *rounding.MODES):
            raise EdgecError(f"unknown weight rounding '{o.rounding}'; use one of {', '.join(rounding.MODES)}")
        if o.bias_correction not in (False, None, *biascorr.VARIANTS):
            raise EdgecError(f"unknown bias correction '{o.bias_correction}'; use one of {', '.join(biascorr.VARIANTS)}")
        if o.requantize not in REQUANTIZE:
            raise EdgecError(f"unknown --requantize '{o.requantize}'; use one of {', '.join(REQUANTIZE)}")
        if not 50.0 < o.percentile <= 100.0:
            raise EdgecError(f"--percentile {o.percentile} is out of range; give a value in (50, 100], e.g. 99.99")
        if not (isinstance(o.sensitivity_samples, int) and o.sensitivity_samples >= 0):
            raise EdgecError(f"--sensitivity-samples {o.sensitivity_samples}: give a whole number >= 0")
        if not (o.auto_seconds >= 0 and o.auto_seconds != float("inf")):    # NaN fails the first test
            raise EdgecError(f"--auto-seconds {o.auto_seconds}: give a number of seconds >= 0 "
                             "(0: keep auto-model's choice, no per-tensor search)")
        if o.min_sqnr is not None:
            if o.max_accuracy_drop is not None:
                raise EdgecError("--min-sqnr and --max-accuracy-drop are two budgets; give one of them")
            if not -100 < o.min_sqnr < 120:
                raise EdgecError(f"--min-sqnr {o.min_sqnr}: give the output SQNR in dB the model must keep, e.g. 30")
        if o.budgeted:
            if o.max_accuracy_drop is not None and not 0 <= o.max_accuracy_drop < 100:
                raise EdgecError(f"--max-accuracy-drop {o.max_accuracy_drop}: give points of top-1 accuracy "
                                 "in [0, 100), e.g. 1")
            if o.int16 or o.int4 or o.weights != "int8":
                raise EdgecError(f"{o.budget_flag} chooses the int4 and int16 layers itself; "
                                 "leave out --int16, --int4 and --weights int4")
        elif o.val is not None:
            raise EdgecError("--val is the data of --max-accuracy-drop (or --min-sqnr); give both or neither")
        return o

    @property
    def budgeted(self) -> bool:
        """Whether edgec chooses int4 / int16 layers by a budget (--max-accuracy-drop or --min-sqnr)."""
        return self.max_accuracy_drop is not None or self.min_sqnr is not None

    @property
    def budget_flag(self) -> str:
        return "--min-sqnr" if self.min_sqnr is not None else "--max-accuracy-drop"

    def normalized(self) -> QuantOptions:
        """A copy with bias_correction True spelled "quantized" (not checked)."""
        return replace(self, bias_correction="quantized") if self.bias_correction is True else replace(self)


@dataclass
class QuantResult:
    graph: Graph
    method: str                                      # the method used (what `auto` chose)
    ranges: dict[str, tuple[float, float]]
    scores: dict[str, float] = field(default_factory=dict)   # auto: output SQNR (dB) of each method
    search: autorange.Search | None = None           # auto: the per-tensor search
    sensitivity: list[dict] = field(default_factory=list)
    samples: int = 0
    calib_seconds: float = 0.0
    cached: bool = False
    batch: int = 1
    warnings: list[str] = field(default_factory=list)          # numeric hazards (edgec/quant/numerics.py)
    mixed: accuracy_budget.Choice | None = None                          # --max-accuracy-drop's choice
    fixes: fixes_mod.Fixes | None = None             # what the default recipe chose (edgec/quant/fixes.py)
    options: QuantOptions | None = None              # the options as applied (the default recipe's choices in)
    recurrence: str = ""                             # the int16-recurrence choice, measured (recurrence_choice)
    tail: str = ""                                   # the int16-tail choice, measured (tail_choice)
    attention: str = ""                              # the int16-transformer choice, measured (attention_choice)

    @property
    def label(self) -> str:
        """The method, with the per-tensor changes of `auto` ('mse + 3 tensors')."""
        n = len(self.search.changed) if self.search else 0
        return f"{self.method} + {n} tensor{'s' if n > 1 else ''}" if n else self.method

    def tensor_method(self, source: str) -> str:
        """The range method of one ONNX value (edgec's own tensors: min/max of its float interpreter)."""
        if source.startswith(SYNTHETIC):
            return "minmax"
        return self.search.choice.get(source, self.method) if self.search else self.method

    def to_json(self, options: QuantOptions) -> dict:
        g = self.graph
        return {"method": self.method, "options": vars(options), "samples": self.samples,
                "calibration_seconds": round(self.calib_seconds, 3), "from_cache": self.cached,
                "auto_scores_db": self.scores, "auto_per_tensor": self.search.to_json() if self.search else None,
                "input": {"scale": g.tensors[g.input].scale, "zero_point": g.tensors[g.input].zero_point},
                "output": {"scale": g.tensors[g.output].scale, "zero_point": g.tensors[g.output].zero_point},
                "tensors": {t.name: {"source": t.source, "range": list(self.ranges.get(t.source, (None, None))),
                                     "scale": t.scale, "zero_point": t.zero_point, "dtype": t.dtype,
                                     "method": self.tensor_method(t.source)}
                            for t in g.tensors.values()},
                "sensitivity": self.sensitivity,
                **({"fixes": self.fixes.to_json()} if self.fixes else {}),
                **({"mixed_precision": self.mixed.to_json()} if self.mixed else {})}


def check_options(graph: Graph, options: QuantOptions) -> QuantOptions:
    """The options checked against the canonical graph (node names, --state pairs...), before any data is
    read: a typo fails fast. Returns them checked (QuantOptions.checked)."""
    return _checked(graph, options)[0]


def one_rounding(graph: Graph) -> Graph:
    """`graph` with every op marked to requantize once (op.attrs['one_rounding'], what a QDQ file's ops get): a
    weighted int8 layer whose multiplier TFLite's form writes as a right shift of 1..10 bits gets shift 0 and
    round(real * 2^31), so its int32 accumulator is rounded once, to the nearest output level, where TFLite's
    MultiplyByQuantizedMultiplier rounds twice (scheme.quantize_multiplier_one_rounding; the same C calls and
    kernels, a few % more instructions in the fast convolutions). docs/corpus.md measures it on the corpus."""
    return graph.replace_ops([op.fresh(attrs={**op.attrs, "one_rounding": True}, params=op.params,
                                       arrays=op.arrays) for op in graph.ops])


def _checked(graph: Graph, options: QuantOptions):
    """(checked options, int16 layers, int4 layers, state pairs)."""
    options = options.checked()
    numerics.check_finite(graph)
    wide = int16.check_names(graph, options.int16)
    if options.recurrent_int16 and not options.budgeted and options.weights == "int8":   # (int4 asked: left as is)
        wide = list(dict.fromkeys(wide + [n for n in int16.recurrent_default(graph) if n not in options.int4]))
    if options.tail_int16 and not options.budgeted and options.weights == "int8":
        wide = list(dict.fromkeys(wide + [n for n in int16.tail_default(graph)[0] if n not in options.int4]))
    if options.attention_int16 and not options.budgeted and options.weights == "int8":
        wide = list(dict.fromkeys(wide + [n for n in int16.attention_default(graph) if n not in options.int4]))
    four = int4layers.chosen(graph, options.weights, options.int4, tuple(wide))
    if ports.multi(graph) and (options.method in AUTO_METHODS or options.budgeted):
        raise EdgecError(f"{options.budget_flag if options.budgeted else '--calibration ' + options.method}"
                         f" judges one output against float; this model has {len(graph.inputs)} inputs and "
                         f"{len(graph.outputs)} outputs: use --calibration minmax, percentile, entropy or mse")
    return options, wide, four, ports.state_pairs(graph, options.state)


def quantize_model(model: onnx.ModelProto, graph: Graph, samples: Samples, options: QuantOptions,
                   log: Callable[[str], None] = lambda _: None, progress=None,
                   cache_dir: Path | None = None) -> QuantResult:
    """Calibrate on `samples` (edgec/data.py: the calibration file, opened once by the caller) and quantize
    the canonical `graph` as `options` say: the result holds a new, quantized graph (`graph` does not change).
    cache_dir: where calibration statistics are cached (Settings.calib_cache), None: not cached."""
    if options.recurrent_int16 is None:
        return recurrence_choice(model, graph, samples, options, log, progress, cache_dir)
    if options.tail_int16 is None:
        return tail_choice(model, graph, samples, options, log, progress, cache_dir)
    if options.attention_int16 is None:
        return attention_choice(model, graph, samples, options, log, progress, cache_dir)
    options, wide, four, states = _checked(graph, options)
    if options.requantize == "once":
        graph = one_rounding(graph)
    stream, held = samples, None
    if options.budgeted and options.val is None:   # the budget's held-out split
        keep = samples.n - min(accuracy_budget.HOLDOUT, samples.n // 4)
        y = accuracy_budget.labels(samples.labels(), samples.n, str(samples.path))
        held = (fixes_mod.held_out(samples, keep), None if y is None else y[keep:],
                f"held-out calibration (the last {samples.n - keep} of {samples.path}; ranges from its first {keep})")
        stream = samples.head(keep)
    options, chosen = _default_recipe(model, graph, stream, options, states, cache_dir, log)
    g, rescale = equalize.equalize(graph) if options.equalize else (graph, None)
    if rescale is not None:
        log(f"cross-layer equalization: {len(rescale)} layer pairs")
    holdout = min(HOLDOUT, stream.n // 4) if options.method in AUTO_METHODS else 0
    log(f"calibrating on {stream.n} samples ({options.method})")
    sources = {t.source for t in g.tensors.values() if t.dtype != "float32"}   # float32 (NMS's selection): no range
    own = {s for s in sources if s.startswith(SYNTHETIC)}
    stats = calibrate.collect_cached(model, stream, sorted(sources - own),
                                     histograms=options.method != "minmax", holdout=holdout, rescale=rescale,
                                     cache_dir=cache_dir if options.cache else None, progress=progress, log=log)
    # tensors edgec made up (decomposed operators) are not ONNX values: their ranges come from edgec's
    # float interpreter (min/max over the first calibration samples)
    own_ranges = floatref.ranges(g, stream.first(OWN_RANGE_SAMPLES), own) if own else {}
    if options.bias_correction == "float":
        g = biascorr.correct_float(g, stream.first(BIAS_SAMPLES), options.per_channel)
    if wide:
        g, converters = int16.mark(g, wide, int16.tail_ports(g) if options.tail_int16 else (),
                                   int16.ATTENTION_KINDS if options.attention_int16 else int16.INT16_NAMEABLE)
        log(f"int16 activations (16x8) for {', '.join(wide)}; {converters} int8<->int16 conversions")
    if four:
        g, n = int4layers.mark(g, four)
        log(f"int4 weights for {n} layers")
    if options.per_channel and (options.rounding == "gptq" or (four and options.rounding is None)):
        g, rounded = rounding.apply(g, stream.first(rounding.SAMPLES), options.rounding == "gptq", log)
        log(f"weight rounding (GPTQ) for {len(rounded)} layers")
    method, scores, search = options.method, {}, None
    ranges = {**stats.ranges(method, options.percentile), **own_ranges} if method in METHODS else None
    if chosen is not None and chosen.unseen and method == "minmax":     # the default on few samples
        if options.unseen_ranges is None:
            def settle(r):
                r = saturation.clamp(g, r)[0] if options.saturation else r
                return ports.tie_ranges(g, r, states) if states else r
            chosen.unseen, measured = unseen_choice.choose(model, g, stats, own_ranges, stream.first(BIAS_SAMPLES),
                                                           options.per_channel, settle, log)
            chosen.reason += f"; {measured}"
            log(measured)
        if chosen.unseen:
            ranges.update(unseen_choice.widened_ranges(stats, ranges))
    if method in AUTO_METHODS:
        method, scores, search = _auto(g, stats, options, stream, own_ranges, log)
        by_method = {m: stats.ranges(m, options.percentile) for m in METHODS}
        ranges = {**(autorange.ranges_of(search, by_method) if search else by_method[method]), **own_ranges}
    if options.saturation:
        ranges, cut = saturation.clamp(g, ranges)
        log("saturation-aware ranges: " + ("; ".join(saturation.describe(cut)) or "no saturating layer"))
    if options.tail_int16 and wide:
        ranges = int16.tail_ranges(graph, ranges)
    if states:
        ranges = ports.tie_ranges(g, ranges, states)
    bias_x = stream.first(BIAS_SAMPLES) if options.bias_correction in ("quantized", "weights") else None

    def finish(q: Graph) -> Graph:
        return biascorr.correct_quantized(q, bias_x, options.per_channel, options.bias_correction)[0] if bias_x is not None else q
    mixed = None
    if options.budgeted:
        if held is None:
            val = load_dataset(options.val, graph.input_onnx_shape, limit=accuracy_budget.EVAL_LIMIT,
                               memory_limit=samples.memory_limit)
            held = (val.x, accuracy_budget.labels(val.y, len(val.x), str(options.val)), str(options.val))
        x_eval, y_eval, where = held
        rounded = None
        if options.per_channel and options.rounding != "nearest":     # GPTQ for every layer int4 may take
            every4, _ = int4layers.mark(g, int4layers.candidates(g))
            r, names = rounding.apply(every4, stream.first(rounding.SAMPLES), False, log)
            rounded = {op.name: op.attrs["weights"] for op in r.ops if op.name in names and "float_weights" in op.attrs}
        q, mixed = accuracy_budget.search(g, ranges, options.per_channel, x_eval, y_eval,
                                          calibrate.run_float(model, x_eval[:accuracy_budget.EVAL_LIMIT]),
                                          options.max_accuracy_drop or 0.0, where, finish, log,
                                          safety=1.0 if options.val else accuracy_budget.SAFETY,
                                          min_sqnr=options.min_sqnr, rounded=rounded)
        log("accuracy budget: the trade-off measured\n" + mixed.table())
        log(mixed.summary())
    else:
        q = quantize(g, ranges, options.per_channel)
        if bias_x is not None:
            corrected, n = biascorr.correct_quantized(q, bias_x, options.per_channel, options.bias_correction)
            if chosen is not None and not chosen.judged and chosen.bias_correction:   # the default, unmeasured
                corrected = fixes_mod.check_unjudged_bias(model, q, corrected, bias_x, chosen, log,
                                                             options.per_channel, options.bias_correction)
                options = replace(options, bias_correction=chosen.bias_correction and chosen.bias_variant)
            if corrected is not q:
                log(f"bias correction ({options.bias_correction}): {n} layers, on the quantized model's own activations")
            q = corrected
    ports.check_tied(q, states)
    if set(q.fixed_qparams) - {q.tensors[n].source for n in q.inputs if q.tensors[n].dtype == "int16"}:
        log(qdq_summary(q))           # (an int16 input, an audio front end's PCM, is not a QDQ scale)
    result = QuantResult(graph=q, method=method, ranges=ranges, scores=scores, search=search,
                         samples=stats.samples, fixes=chosen, options=options,
                         calib_seconds=stats.seconds, cached=stats.cached, batch=stats.batch, mixed=mixed,
                         warnings=numerics.warnings(q, ranges) + ([] if mixed is None or mixed.within_budget else [
                             f"{options.budget_flag} {options.min_sqnr if options.min_sqnr is not None else options.max_accuracy_drop:g}: "
                             "no mix of int16 activations and int4 weights kept within the budget ("
                             + (f"output SQNR {mixed.sqnr_db:.1f} dB" if options.min_sqnr is not None else
                                f"{100 * mixed.lost:.1f} % of the predictions changed against float")
                             + " at best); check the model with the sensitivity table"]))
    for w in result.warnings:
        log(f"warning: {w}")
    return _with_sensitivity(result, stream, options.sensitivity_samples, log)


def _with_sensitivity(result: QuantResult, stream: Samples, n: int, log) -> QuantResult:
    if n > 0:
        missing = floatref.supported(result.graph)
        if missing:
            log(f"sensitivity report skipped: no float reference for op kinds {', '.join(missing)}")
        else:
            result.sensitivity = sensitivity.analyse(result.graph, stream.first(n), log)
    return result


def recurrence_choice(model, graph: Graph, samples: Samples, options: QuantOptions, log, progress,
                      cache_dir) -> QuantResult:
    """recurrent_int16 None (the default): a float model's LSTMs and GRUs run int16 (int16.recurrent_default) only
    where that raises the worst output's SQNR on the calibration samples by more than the default recipe asks of
    any fix (fixes.MIN_GAIN_DB): the int8 grid of the sequence leaving a recurrence is what ONNX Runtime's INT8
    (recurrence in float) does not have, and where it costs measurably the int16 sequence (up to twice its arena
    bytes) pays for itself. Both variants take the same ranges, so the samples they were calibrated on judge them
    alike. A QDQ file (its own grids), int4 weights, a state fed back (--state) and the accuracy budget (its own
    choice) stay int8 unless asked."""
    if (graph.fixed_qparams or options.budgeted or options.weights != "int8" or options.state
            or not [n for n in int16.recurrent_default(graph) if n not in options.int4]):
        return quantize_model(model, graph, samples, replace(options, recurrent_int16=False), log, progress, cache_dir)
    keep, keep.recurrence = _int16_choice(model, graph, samples, options, "recurrent_int16", "recurrence", log,
                                          progress, cache_dir)
    return _with_sensitivity(keep, samples, options.sensitivity_samples, log)


def tail_choice(model, graph: Graph, samples: Samples, options: QuantOptions, log, progress,
                cache_dir) -> QuantResult:
    """tail_int16 None (the default): a float model's output layer of an int16 tail kind (int16.tail_default: an L2
    normalization, with the 16x8 layer feeding it, leaving as an int16 port; a Softmax, rounded once to its int8
    grid) runs int16 only where that raises the worst output's SQNR on the calibration samples by more than
    fixes.MIN_GAIN_DB (recurrence_choice's rule). A tail on the int8 model's output grid takes the int8 variant's
    unseen-range choice; an int16 port, another output grid, is judged anew."""
    if (graph.fixed_qparams or options.budgeted or options.weights != "int8" or options.state
            or not [n for n in int16.tail_default(graph)[0] if n not in options.int4]):
        return quantize_model(model, graph, samples, replace(options, tail_int16=False), log, progress, cache_dir)
    keep, keep.tail = _int16_choice(model, graph, samples, options, "tail_int16", "output tail", log, progress,
                                    cache_dir, judged=int16.tail_default(graph)[1],
                                    same_recipe=not int16.tail_ports(graph))
    return _with_sensitivity(keep, samples, options.sensitivity_samples, log)


def attention_choice(model, graph: Graph, samples: Samples, options: QuantOptions, log, progress,
                     cache_dir) -> QuantResult:
    """attention_int16 None (the default): a float transformer's rows (int16.attention_default) run int16 only where
    that gains more than fixes.ROWS_GAIN_DB (a bit: they double the activations' bytes) on the calibration samples."""
    if (graph.fixed_qparams or options.budgeted or options.weights != "int8" or options.state
            or not [n for n in int16.attention_default(graph) if n not in options.int4]):
        return quantize_model(model, graph, samples, replace(options, attention_int16=False), log, progress, cache_dir)
    keep, keep.attention = _int16_choice(model, graph, samples, options, "attention_int16", "transformer rows", log,
                                         progress, cache_dir, gain=fixes_mod.ROWS_GAIN_DB)
    return _with_sensitivity(keep, samples, options.sensitivity_samples, log)


def _int16_choice(model, graph: Graph, samples: Samples, options: QuantOptions, field: str, what: str, log,
                  progress, cache_dir, judged=None, gain=fixes_mod.MIN_GAIN_DB, same_recipe=False):
    """The model quantized with `field` False and True (same ranges and recipe), the one kept (int16 only where the
    calibration samples' worst output gains more than `gain` dB), and the line saying so. judged: the outputs the
    int16 variant changes (a tail's) when the model has others: their worst must gain so, the model's not fall.
    same_recipe: the int16 variant takes the int8 one's unseen-range choice (unseen_choice.pinned)."""
    quiet = dict(sensitivity_samples=0)
    r8 = quantize_model(model, graph, samples, replace(options, **{field: False}, **quiet), log, progress, cache_dir)
    pinned = unseen_choice.pinned(r8.fixes) if same_recipe and options.unseen_ranges is None else {}
    try:
        r16 = quantize_model(model, graph, samples, replace(options, **{field: True}, **quiet, **pinned),
                             lambda _: None, progress, cache_dir)
    except EdgecError as exc:       # (an int16 grid its kernel cannot take): the int8 variant, as before the choice
        r8.options = replace(r8.options, sensitivity_samples=options.sensitivity_samples)
        note = f"{what} int8: its int16 variant does not quantize ({exc})"
        log(note)
        return r8, note
    unseen_choice.say_pinned(r16.fixes, pinned)
    x = samples.first(fixes_mod.BIAS_SAMPLES)
    s8, s16 = (fixes_mod.worst_output_sqnr(model, r.graph, x) for r in (r8, r16))
    if judged is None or set(judged) >= set(graph.outputs):
        t8, t16, also = s8, s16, ""
    else:       # the outputs the tail writes gain, and the worst of all does not fall
        t8, t16 = (fixes_mod.worst_output_sqnr(model, r.graph, x, only=set(judged)) for r in (r8, r16))
        also = (f"; on the {len(judged)} of {len(graph.outputs)} outputs it writes, the worst of all "
                f"{s8:.1f} -> {s16:.1f} dB, not to fall")
    keep = r16 if t16 > t8 + gain and s16 >= s8 - 1e-9 else r8
    keep.cached = r8.cached     # (the int16 variant read the statistics the int8 one had just stored)
    note = (f"{what} {'int16' if keep is r16 else 'int8'}: output SQNR of the {len(x)} calibration samples "
            f"{t8:.1f} dB int8, {t16:.1f} dB int16 (int16 where it gains more than {gain} dB{also})")
    log(note)
    keep.options = replace(keep.options, sensitivity_samples=options.sensitivity_samples)
    return keep, note


def _default_recipe(model, graph: Graph, stream: Samples, options: QuantOptions, states, cache_dir, log):
    """(the options with the open choices made, the record of them; None when none was open)."""
    if not fixes_mod.open_choices(options.method, options.equalize, options.bias_correction):
        return options, None
    why = fixes_mod.not_judged(graph, stream.n, states)
    if why:
        chosen = fixes_mod.unjudged(graph, stream.n, states, why, options.method, options.equalize,
                                    options.bias_correction)
        if chosen.unseen and options.unseen_ranges is not None:     # forced: --unseen-ranges / --no-unseen-ranges
            chosen.unseen = options.unseen_ranges
            chosen.reason += f"; {unseen_choice.forced(options.unseen_ranges)}"
    else:
        chosen = fixes_mod.choose(model, graph, stream, options.method, options.equalize, options.bias_correction,
                                  options.per_channel, options.percentile, cache_dir if options.cache else None,
                                  log, saturation_opt=options.saturation)
    log(chosen.summary())
    bias = options.bias_correction if options.bias_correction is not None else \
        ("quantized" if chosen.bias_correction else False)
    return replace(options, method=options.method or chosen.method, equalize=chosen.equalize,
                   bias_correction=bias,
                   saturation=options.saturation if options.saturation is not None else chosen.saturation), chosen


def output_sqnr(graph: Graph, x: np.ndarray, y_float: np.ndarray) -> float:
    """SQNR (dB) of the INT8 reference's dequantized output against the float output."""
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    xq = quantize_input(tin, x)
    got = np.stack([dequantize(tout, reference.run(graph, xq[i])).reshape(-1) for i in range(len(x))])
    want = y_float.reshape(len(x), -1).astype(np.float64)
    return sensitivity.sqnr_db(float(np.sum(want ** 2)), float(np.sum((want - got) ** 2)))


def _auto(graph: Graph, stats, options: QuantOptions, stream: Samples, own_ranges: dict, log):
    """auto-model: the best range method for the whole model; auto: then the per-tensor search."""
    if stats.holdout_x is not None and len(stats.holdout_x):
        x, part = stats.holdout_x, "fit"
    else:  # too few samples to hold any out: judge on the calibration samples themselves
        x, part = stream.first(HOLDOUT), "all"
    y = np.stack([floatref.run(graph, xi)[graph.output] for xi in x])
    by_method = {m: stats.ranges(m, options.percentile, part=part) for m in METHODS}
    method, scores = autorange.per_model(graph, by_method, own_ranges, x, y, options.per_channel)
    log("auto: output SQNR " + ", ".join(f"{m} {s:.1f} dB" for m, s in scores.items()) + f" -> {method}")
    if options.method != "auto":
        return method, scores, None
    search = autorange.per_tensor(graph, by_method, own_ranges, x, y, method, options.per_channel,
                                  options.auto_seconds)
    log(f"auto per tensor: {search.start_db:.1f} -> {search.final_db:.1f} dB held out, {len(search.changed)} of "
        f"{search.tensors} tensors changed, {search.trials} trials in {search.seconds:.1f} s"
        + ("" if search.reached == search.tensors else f" (budget reached after {search.reached} tensors)"))
    return method, scores, search


def qdq_summary(graph: Graph) -> str:
    """What a QDQ model's own quantization became: tensors that took it, tensors where the scheme's won."""
    fixed = graph.fixed_qparams
    took = [t for t in graph.tensors.values() if t.source in fixed]
    own = [t.name for t in took if (t.scale, t.zero_point) != fixed[t.source]]
    weighted = [op for op in graph.ops if "weights" in op.attrs]
    n_w = sum("weight_scale" in op.attrs for op in weighted)
    n4 = sum("weight_scale" in op.attrs and "weights4" in op.arrays for op in weighted)
    return (f"QDQ model: {len(took) - len(own)} of {len(graph.tensors)} activations and {n_w} of {len(weighted)} "
            "weighted layers take the model's own scales and zero points"
            + (f" ({n4} of them its 4-bit weights: packed two per byte with --optimize size, int8 on the speed "
               "kernels with --optimize speed)" if n4 else "")
            + (f"; the int8 scheme fixes its own for {', '.join(own)}" if own else ""))
