"""Lowering onto the fast kernels (runtime_c/fast/), an explicit step after quantization and before
planning: each op whose registry entry has a `lower` and whose tensors are int8 gets `op.lowered` (the
fast kernel's name, params struct, packed constant arrays and scratch size, edgec/ops/fast.py explains
the packing); ops it declines keep their portable reference kernels.
"""
from __future__ import annotations

from edgec.ir import Graph, Op
from edgec.ops.registry import REGISTRY

SCRATCH_ALIGN = 16


def lower(op: Op) -> dict | None:
    """The fast kernel of one quantized int8 op (its call data and constants), or None."""
    fn = REGISTRY[op.kind].lower
    return fn(op) if fn else None


def lower_graph(graph: Graph) -> None:
    """Choose the fast kernel of every op that has one: op.lowered holds its call data and constants
    (what the generated code will contain), op.attrs['scratch_bytes'] its scratch memory (for the planner)."""
    for op in graph.ops:
        int8 = all(graph.tensors[t].dtype == "int8" for t in (*op.inputs, op.output))
        op.lowered = lower(op) if int8 else None       # int16 layers keep their 16x8 kernels
        reference = REGISTRY[op.kind].scratch
        size = op.lowered["scratch_bytes"] if op.lowered else reference(op) if reference else 0
        if size:
            op.attrs["scratch_bytes"] = (size + SCRATCH_ALIGN - 1) // SCRATCH_ALIGN * SCRATCH_ALIGN
        else:
            op.attrs.pop("scratch_bytes", None)
