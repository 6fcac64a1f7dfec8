"""Kernels as data: one `Kernel` record per C entry point edgec emits, declared beside its op family (the
family's `KERNELS` list, collected by edgec/ops/registry.py), and the `Lowering` that puts one op on one kernel.

A family declares its kernels the way CMSIS-NN and IREE keep the variants of a kernel beside it: the reference
kernels (int8, the TFLite 16x8 `_s16` ones, the int4-weight `_s4` ones), the default fast kernels
(runtime_c/fast/), the speed variants that repack a fast kernel's constants for another inner loop, and the
Helium (MVE) kernels. Which one runs an op is decided in one place, edgec/ops/select.py; the stages read the
op's `Lowering` (edgec/lower/lowering.py sets it on every op, a new graph).

A record says what the kernel runs (kinds, precision, the ISA it needs), when it applies (`applies`), how its
constants are packed (`lower`), its scratch memory (`scratch_bytes`: the C runtime's
`edgec_<kernel>_get_buffer_size` of its params, read by edgec/cheader.py, the one definition), its params struct,
its code estimate for the fit check, its cost estimate (`cost`: the selector's cost model), its NumPy twin
(reference kernels; a fast kernel is bit-exact with its precision's reference twin) and how its C call is written
(`call`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from edgec import cheader
from edgec.ir import Op

# roles
REFERENCE = "reference"      # the portable kernel of a kind and precision (runtime_c/edgec_<family>.c)
FAST = "fast"                # the default fast kernel (runtime_c/fast/), where it applies and its lowering succeeds
VARIANT = "variant"          # a speed variant of a fast kernel (--optimize speed, edgec tune): its constants repacked
HELIUM = "helium"            # the Helium (MVE) kernel of a fast kernel (boards whose core has it)
ROLES = (REFERENCE, FAST, VARIANT, HELIUM)
# precisions
INT8 = "int8"                # int8 activations and weights
INT16 = "int16"              # TFLite 16x8: int16 activations (the op's output tensor is int16), int8 weights
INT4 = "int4"                # int8 activations, packed int4 weights
PRECISIONS = (INT8, INT16, INT4)
# instruction sets
ANY = "any"                  # any core (portable C, with an Arm DSP path where the core has one)
DSP = "dsp"                  # any core, but worth choosing only where its Arm DSP path compiles (__ARM_FEATURE_DSP:
                             # Cortex-M4/M7/M33/M55): its portable path is correct everywhere, not faster there
MVE = "helium"               # compiled only under __ARM_FEATURE_MVE (Cortex-M55)

GENERIC = "generic"          # the variant name of the default fast kernel (the tuning log, the build report)
DEFAULT_CODE_BYTES = 1024    # a kind's code estimate when its reference kernel gives none


@dataclass(frozen=True, eq=False)
class Kernel:
    """One C entry point of runtime_c/ the generated code may call."""

    name: str                                     # the C function
    kinds: tuple[str, ...]                        # the op kinds it runs
    role: str                                     # REFERENCE, FAST, VARIANT or HELIUM
    call: Callable                                # (op, Lowering, CallSite) -> the C statement
    precision: str = INT8                         # INT8, INT16 or INT4
    isa: str = ANY                                # ANY, DSP or MVE
    base: Kernel | None = None                    # a variant's or Helium kernel's fast kernel, whose lowering it
                                                  # repacks
    variant: str | None = None                    # a speed variant's name (tuning log, --optimize summary)
    applies: Callable | None = None               # when it applies (None: always): of the op (reference, fast) or
                                                  # of the base kernel's Lowering (variant, Helium)
    lower: Callable | None = None                 # how its constants are packed: fast: op -> (params, arrays) or
                                                  # None (declined); variant, Helium: (op, base Lowering) ->
                                                  # (params, arrays); reference: none (the op's own)
    struct: str | None = None                     # params struct the generated file declares at file scope (None:
                                                  # the call declares its own, or takes none)
    run: Callable | None = None                   # the NumPy twin (op, inputs) -> output: reference kernels
    c_arrays: Callable | None = None              # constant arrays the C call needs beyond the lowering's, from
                                                  # the op (declared by the C file, not counted as weights)
    code_bytes: int | None = None                 # fit-check code estimate: a reference int8 kernel's stands for its
                                                  # kinds whichever of their kernels runs; a speed variant's is
                                                  # counted on top, once per build; None: inside its kind's
    shares_code: tuple[Kernel, int] | None = None  # (variant, bytes): that much of code_bytes is code it links
                                                  # with that variant (its assembly), counted once where both run
    cost: Callable | None = None                  # (params of the base kernel's lowering, dsp) -> estimated
                                                  # instructions of one call (dsp: the core has the Arm DSP
                                                  # extension): the selector's cost model (edgec/ops/select.py);
                                                  # or None; None: no estimate (the declared order
                                                  # decides)
    flash_bytes: Callable | None = None           # (params of the base kernel's lowering) -> bytes of its
                                                  # constants one call reads, each re-read counted (weights
                                                  # streamed once per pass over the pixels): the selector weighs
                                                  # them where constants sit in flash with wait states; None:
                                                  # not declared
    narrow: Callable | None = None                # (params, bytes) -> params computing the same numbers with
                                                  # less scratch, as near `bytes` as it can, or None (cannot):
                                                  # the plan's ask where the scratch would raise the arena's peak
                                                  # (edgec/ops/select.py within_scratch; the window kernels'
                                                  # column bands)
    entries: tuple[str, ...] = ()                 # other C entry points its `call` names, by its params (the
                                                  # loops `name` would choose between at run time: a firmware
                                                  # then links only the one it calls)
    entry_code: tuple[Callable, int, int] | None = None  # (Lowering -> the entry its call names, n, bytes): code_bytes
                                                  # holds n entries' code, each further entry the build's calls
                                                  # name adds `bytes` (the fit check: a loop per entry)
    cycles_per_instruction: float = 1.0          # its cycle estimate per instruction at zero wait states on
                                                  # the Cortex-M4 (the cycle plugin, the kernel alone): with
                                                  # flash_bytes, the flash-aware cost's cycles
    reads: Callable | None = None                 # (its own Lowering) -> {key of an array its call names as
                                                  # `<prefix>_<key>`: bytes of it one call reads, each re-read
                                                  # counted}: where those sit in flash with wait states, a build
                                                  # may copy them into RAM scratch before the call
                                                  # (edgec/lower/weight_staging.py); None: never staged

    def __post_init__(self):
        assert self.role in ROLES and self.precision in PRECISIONS and self.isa in (ANY, DSP, MVE), self.name
        assert (self.base is not None) == (self.role in (VARIANT, HELIUM)), self.name
        assert (self.variant is not None) == (self.role == VARIANT), self.name
        assert (self.run is not None) == (self.role == REFERENCE), self.name
        assert (self.lower is None) == (self.role == REFERENCE), self.name

    def lowering(self, op: Op, base: Lowering | None = None) -> Lowering | None:
        """The op on this kernel: a reference kernel takes the op's own params and arrays, a fast kernel its
        packing (None where it declines the op), a variant or Helium kernel repacks `base` (its base kernel's
        lowering of the op)."""
        if self.role == REFERENCE:
            params, arrays = op.params, op.arrays
        else:
            packed = self.lower(op) if self.role == FAST else self.lower(op, base)
            if packed is None:
                return None
            params, arrays = packed
        # a float op (`edgec inspect`'s arena estimate) has no params yet: its scratch from its attributes
        scratch = self.scratch_bytes(params if params or self.role != REFERENCE else op.attrs)
        return Lowering(self, frozen(params), frozen(arrays, arrays=True), scratch)

    def scratch_bytes(self, params: Mapping) -> int:
        """The scratch bytes a call with these params needs: the kernel's edgec_<kernel>_get_buffer_size in
        edgec_nn.h (0 where it has none)."""
        return cheader.buffer_size(self.name, params)


@dataclass(frozen=True, eq=False)
class Lowering:
    """An op put on one kernel: what the generated code holds for it and the scratch its call needs. Every op
    but a view has one (edgec/lower/lowering.py); read-only, like everything the stages pass on."""

    kernel: Kernel
    params: Mapping[str, Any]                     # the params struct's fields (read-only)
    arrays: Mapping[str, np.ndarray]              # the constant arrays the C file declares (read-only)
    scratch_bytes: int = 0                        # as the kernel gives them (the planner aligns the buffer)
    variant: str | None = None                    # the speed variant it runs (GENERIC: the default fast kernel);
                                                  # None: no choice was made (reference, Helium)
    variants: tuple[str, ...] = ()                # the variants the op was offered, GENERIC first
    extra_bytes: int = 0                          # constant bytes the variant adds over the default fast kernel
    signature: str | None = None                  # the tuning log's key of the layer (with the board)
    staged: tuple[tuple[str, int, int], ...] = ()  # (array key, offset in its scratch, bytes): arrays the generated
                                                  # code copies from flash into the op's scratch before the call,
                                                  # the call then reading the copy (edgec/lower/weight_staging.py;
                                                  # scratch_bytes counts them, after the kernel's own)

    @property
    def struct(self) -> str | None:
        """The params struct the generated file declares for the call."""
        return self.kernel.struct

    def replace(self, **changes) -> Lowering:
        """A copy with some fields changed (params and arrays made read-only)."""
        if "params" in changes:
            changes["params"] = frozen(changes["params"])
        if "arrays" in changes:
            changes["arrays"] = frozen(changes["arrays"], arrays=True)
        return dataclasses.replace(self, **changes)

    def __deepcopy__(self, memo):      # immutable: a copied graph shares it
        return self

    def __copy__(self):
        return self


def frozen(mapping: Mapping, arrays: bool = False) -> Mapping:
    """A read-only copy of a mapping; with arrays, its values as read-only views (the op's own arrays stay
    writable)."""
    if isinstance(mapping, MappingProxyType) and not arrays:
        return mapping
    items = dict(mapping)
    if arrays:
        for key, a in items.items():
            if isinstance(a, np.ndarray) and a.flags.writeable:
                items[key] = a.view()
                items[key].flags.writeable = False
    return MappingProxyType(items)


def constant_bytes(low: Lowering) -> int:
    """Bytes of a lowering's constant arrays (what the generated code holds in flash for it)."""
    return sum(a.nbytes for a in low.arrays.values())
