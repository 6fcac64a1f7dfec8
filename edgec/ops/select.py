"""Which kernel runs an op: the one place that decides (CMSIS-NN's arm_convolve_wrapper_s8 picks a convolution's
kernel the same way, beside the kernels), from the kernel records the families declare (edgec/ops/kernel.py,
collected by edgec/ops/registry.py).

`select(op, options, dtypes)` answers, in this order:
1. the precision, from the op's tensors and arrays (`precision`): an int16 output -> the kind's TFLite 16x8
   kernel; packed int4 weights (its int4 reference kernel applies) -> the `_s4` kernels; else int8;
2. the reference kernel of that precision (the first that applies): the answer where there is nothing faster
   (`options.fast` off, some tensor not int8, no fast kernel of the kind and precision, or every fast kernel
   declines the op: its lowering returns None);
3. else the first default fast kernel whose lowering succeeds (the generic lowering), then
   - on a Helium target (`options.helium`), that kernel's Helium kernel where it has one;
   - otherwise its speed variant: with `options.optimize` "speed" the tuning log's choice (`options.choose(op,
     generic lowering)`: on a part with flash wait states, the cost model's with its flash reads weighed,
     `memory_chooser`) if it names a variant offered for this op, else the cost model's (`cheapest`: where the
     fast kernel and every variant offered carry a cost estimate, `Kernel.cost`, the cheapest of them, the
     generic kernel included), else the first variant that applies (a variant that needs the Arm DSP extension,
     ISA `DSP`, only on a core that has it, `options.dsp`); with "size" none (the generic kernel). The
     lowering then records the variants offered, the choice, the constant bytes it adds and the layer's tuning
     signature.

The lower stage (edgec/lower/lowering.py) applies it to every op; the reference run (edgec/quant/reference.py:
the twin of `reference(op, dtype)`), the planner (the lowering's scratch) and the C writer read its answer.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Callable

from edgec.ir import Graph, Op
from edgec.ops.kernel import DSP, GENERIC, INT4, INT8, INT16, Kernel, Lowering, constant_bytes
from edgec.ops.registry import FASTS, HELIUM_OF, REFERENCES, REGISTRY, VARIANTS

OPTIMIZE_CHOICES = ("speed", "size")
Chooser = Callable[[Op, Lowering], "str | None"]


@dataclass(frozen=True)
class Options:
    """What the selection may use: the fast kernels at all, the board's core (Helium), `--optimize`, and the
    tuning log's per-layer choice."""

    fast: bool = True                  # False: every op on its reference kernel
    optimize: str = "speed"            # "speed": speed variants; "size": the default fast kernels (least code)
    helium: bool = False               # the board's core has Helium (MVE): the Helium kernels where there is one
    dsp: bool = False                  # the board's core has the Arm DSP extension: the variants that need it too
    choose: Chooser | None = None      # (op, generic lowering) -> the variant to run, or None for the default


REFERENCE_ONLY = Options(fast=False)


def precision(op: Op, out_dtype: str = "int8") -> str:
    """The precision of the kernels an op runs on: int16 for an int16 output (its kind has a 16x8 kernel),
    int4 for packed int4 weights, else int8."""
    if out_dtype == "int16" and (op.kind, INT16) in REFERENCES:
        return INT16
    if any(k.applies(op) for k in REFERENCES.get((op.kind, INT4), ())):
        return INT4
    return INT8


def int4_weights(op: Op) -> bool:
    """Whether a quantized op has packed int4 weights."""
    return precision(op) == INT4


def reference(op: Op, out_dtype: str = "int8") -> Kernel:
    """The reference kernel of an op (whose NumPy twin is what every kernel of the op must equal)."""
    for k in REFERENCES[op.kind, precision(op, out_dtype)]:
        if k.applies is None or k.applies(op):
            return k
    raise AssertionError(f"no reference kernel of {op.kind} applies to op '{op.name}'")


def twin(op: Op, out_dtype: str = "int8"):
    """The NumPy integer twin of an op, `twin(op, inputs)`: its reference kernel's (a view: its input)."""
    if REGISTRY[op.kind].alias:
        return lambda op, inputs: inputs[0]
    return reference(op, out_dtype).run


def dtypes(graph: Graph, op: Op) -> tuple[str, ...]:
    """The dtypes of an op's inputs, then of its output."""
    return tuple(graph.tensors[t].dtype for t in (*op.inputs, op.output))


def fast(op: Op, dtypes: tuple[str, ...] | None = None) -> Lowering | None:
    """The op on its default fast kernel (the generic lowering: no variant, no Helium), or None: no fast kernel of
    its kind and precision takes it (int8 tensors only, or int16 ones where the kind has a fast 16x8 kernel:
    the recurrences')."""
    wide = dtypes is not None and dtypes[-1] == "int16" and (op.kind, INT16) in FASTS
    if dtypes is not None and any(d != "int8" for d in dtypes) and not wide:
        return None
    for k in FASTS.get((op.kind, INT16 if wide else precision(op)), ()):
        if k.applies is None or k.applies(op):
            low = k.lowering(op)
            if low is not None:
                return low
    return None


def offered(generic: Lowering, dsp: bool = False) -> list[Kernel]:
    """The speed variants of a generic lowering that apply to it, fastest first (those that need the Arm DSP
    extension only with `dsp`: the board's core has it)."""
    return [k for k in VARIANTS.get(generic.kernel, ()) if (k.isa != DSP or dsp)
            and (k.applies is None or k.applies(generic))]


def cheapest(generic: Lowering, dsp: bool = False, flash_byte_cycles: float = 0.0) -> str | None:
    """The cost model's choice among a generic lowering's kernel and its variants offered (`offered`): the name of
    the one whose `Kernel.cost` (estimated instructions of the call, on a core with or without the Arm DSP
    extension) is least, the declared order breaking ties; None where one of them has no estimate (no cost
    function, or none for this shape or core). flash_byte_cycles > 0 (a part whose constants sit in flash with
    wait states: `memory_chooser`), where every one of them declares the flash bytes its call reads
    (`Kernel.flash_bytes`): the least cycles, each estimate times its `Kernel.cycles_per_instruction` plus those
    bytes times flash_byte_cycles."""
    kernels = [generic.kernel, *offered(generic, dsp)]
    costs = [None if k.cost is None else k.cost(generic.params, dsp) for k in kernels]
    if any(c is None for c in costs):
        return None
    if flash_byte_cycles > 0 and all(k.flash_bytes is not None for k in kernels):
        costs = [c * k.cycles_per_instruction + flash_byte_cycles * k.flash_bytes(generic.params)
                 for c, k in zip(costs, kernels)]
    best = kernels[costs.index(min(costs))]
    return GENERIC if best is generic.kernel else best.variant


def memory_chooser(flash_byte_cycles: float, dsp: bool, then: Chooser | None = None) -> Chooser:
    """A per-layer chooser (`Options.choose`) for a part whose constants sit in flash with wait states: `then`'s
    choice (a tuning log's record) where it has one, else the cost model's with each flash byte read costing
    flash_byte_cycles (`cheapest`), else None (the default order)."""
    def choose(op: Op, generic: Lowering) -> str | None:
        got = then(op, generic) if then is not None else None
        return got if got is not None else cheapest(generic, dsp, flash_byte_cycles)
    return choose


def variant(op: Op, generic: Lowering, name: str) -> Lowering:
    """The op on one named variant of its generic lowering's kernel, whether or not it is offered for the op
    (GENERIC: the generic lowering itself)."""
    if name == GENERIC:
        return generic
    kernel = next(k for k in VARIANTS.get(generic.kernel, ()) if k.variant == name)
    return kernel.lowering(op, generic)


def signature(op: Op, generic: Lowering) -> str:
    """A layer's timing signature (the tuning log's key beside the board): its kind, its generic fast kernel and
    that kernel's params (every shape, stride, padding and zero point; not the weights' values), hashed."""
    text = json.dumps([op.kind, generic.kernel.name, dict(generic.params)], sort_keys=True)
    return f"{op.kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def select(op: Op, options: Options = REFERENCE_ONLY, dtypes: tuple[str, ...] | None = None) -> Lowering | None:
    """The kernel op runs on and its lowering (None for a view: no code). dtypes: of its inputs then its output
    (default all int8)."""
    if REGISTRY[op.kind].alias:
        return None
    out_dtype = dtypes[-1] if dtypes else "int8"
    generic = fast(op, dtypes) if options.fast else None
    if generic is None:
        return reference(op, out_dtype).lowering(op)
    if options.helium and generic.kernel in HELIUM_OF:
        return HELIUM_OF[generic.kernel].lowering(op, generic)
    names = (GENERIC, *(k.variant for k in offered(generic, options.dsp)))
    sig = signature(op, generic)
    generic = generic.replace(variant=GENERIC, variants=names, signature=sig)
    if options.optimize != "speed":
        name = GENERIC
    else:
        choice = options.choose(op, generic) if options.choose else None
        if choice not in names:
            choice = cheapest(generic, options.dsp)
        name = choice if choice in names else names[1] if len(names) > 1 else GENERIC
    chosen = variant(op, generic, name)
    return chosen.replace(variant=name, variants=names, extra_bytes=constant_bytes(chosen) - constant_bytes(generic),
                          signature=sig)


SWITCH_EXCESS = 4096   # bytes a kernel's scratch, narrowed, may always raise the arena above the tensors' peak
                       # before its op moves to another variant (which can cost up to about twice the layer's
                       # instructions: IC's 3x3 layers on blocked instead of window4); the plan allows more on a
                       # large model (edgec/plan/scratch_fit.py SWITCH_SHARE)


def _narrowed(low: Lowering, limit: int) -> Lowering:
    params = low.kernel.narrow(low.params, limit) if low.kernel.narrow and low.scratch_bytes > limit else None
    return low if params is None else low.replace(params=params, scratch_bytes=low.kernel.scratch_bytes(params))


def within_scratch(op: Op, low: Lowering, limit: int, dtypes: tuple[str, ...] | None = None,
                   switch_above: int | None = SWITCH_EXCESS) -> Lowering:
    """The op on a kernel whose scratch takes at most `limit` bytes, or as near as the selector gets without losing
    much speed: the plan's ask where `low`'s scratch would raise the arena above the tensors' peak
    (edgec/plan/scratch_fit.py). `low` where it is within; else its own kernel with params that need less
    (`Kernel.narrow`: the window kernels' column bands, the same numbers for a few more instructions); where that
    is still more than `switch_above` bytes over `limit` (None: never, `--optimize size`), the first of its other
    variants in the selector's order (the offered ones, then the generic kernel), each narrowed, within `limit`,
    else the one of them and `low` with the least scratch."""
    own = _narrowed(low, limit)
    if switch_above is None or own.scratch_bytes <= limit + switch_above or low.variant is None \
            or len(low.variants) < 2:
        return own
    generic = fast(op, dtypes)
    if generic is None:
        return own
    generic = generic.replace(variant=GENERIC, variants=low.variants, signature=low.signature)
    options = [own]
    for name in (*low.variants[1:], GENERIC):
        if name != low.variant:
            got = _narrowed(variant(op, generic, name), limit)
            options.append(got.replace(variant=name, variants=low.variants, signature=low.signature,
                                       extra_bytes=constant_bytes(got) - constant_bytes(generic)))
            if options[-1].scratch_bytes <= limit:
                return options[-1]
    return min(options, key=lambda c: c.scratch_bytes)


def lowering_of(graph: Graph, op: Op) -> Lowering | None:
    """The lowering an op runs with: the lower stage's (edgec/lower/lowering.py), or in a graph that was not
    lowered, its reference kernel's. None for a view (no code) and for a kind edgec has no kernel for (a
    survey's placeholders)."""
    if op.lowering is not None:
        return op.lowering
    if op.kind not in REGISTRY:
        return None
    return select(op, REFERENCE_ONLY, dtypes(graph, op))
