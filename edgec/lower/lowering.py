"""Lowering onto the fast kernels (runtime_c/fast/), an explicit step after quantization and before
planning: each op whose registry entry has a `lower` and whose tensors are int8 gets `op.lowered` (the
fast kernel's name, params struct, packed constant arrays and scratch size, edgec/ops/fast.py explains
the packing); ops it declines keep their portable reference kernels.
"""
from __future__ import annotations

from typing import Callable

from edgec.lower import specialize
from edgec.lower.mve import lower_mve
from edgec.ir import Graph, Op
from edgec.ops import int4
from edgec.ops.registry import REGISTRY

SCRATCH_ALIGN = 16
Chooser = Callable[[Op, dict], "str | None"]


def lower(op: Op) -> dict | None:
    """The fast kernel of one quantized int8 op (its call data and constants), or None."""
    fn = REGISTRY[op.kind].lower
    if int4.is_int4(op):
        return int4.lower(op)          # int4 layers: their own fast kernels, where there is one
    return fn(op) if fn else None


def lower_graph(graph: Graph, optimize: str = "speed", choose: Chooser | None = None, mve: bool = False) -> None:
    """Choose the fast kernel of every op that has one: op.lowered holds its call data and constants
    (what the generated code will contain), op.attrs['scratch_bytes'] its scratch memory (for the planner).
    mve (the board's core has Helium): the Helium kernel where there is one (edgec/lower/mve.py); otherwise
    optimize "speed" puts each op on its fastest variant (`choose(op, generic lowering)`: the variant's name,
    e.g. from a tuning log, or None for the default), "size" keeps the generic fast kernels
    (edgec/lower/specialize.py)."""
    for op in graph.ops:
        int8 = all(graph.tensors[t].dtype == "int8" for t in (*op.inputs, op.output))
        op.lowered = lower(op) if int8 else None       # int16 layers keep their 16x8 kernels
        helium = lower_mve(op, op.lowered) if mve and op.lowered else op.lowered
        if helium is not op.lowered:
            op.lowered = helium
        else:
            specialize.specialize(op, optimize, choose(op, op.lowered) if choose and op.lowered else None)
        reference = REGISTRY[op.kind].scratch
        size = op.lowered["scratch_bytes"] if op.lowered else reference(op) if reference else 0
        if size:
            op.attrs["scratch_bytes"] = (size + SCRATCH_ALIGN - 1) // SCRATCH_ALIGN * SCRATCH_ALIGN
        else:
            op.attrs.pop("scratch_bytes", None)
