"""Kernel scratch within the tensors' peak: the plan's check that no speed kernel's scratch raises the arena above
what the tensors alone need, without a budget.

The lower stage picks each op's kernel for speed, not knowing what else is alive while it runs; the plan knows.
`fit_scratch(graph)` finds, in the scheduled graph, the tensors' peak (the largest sum of aligned tensor buffers
alive at one op, in-place reuse included: planner.buffers) and every op whose scratch would lift its moment above
it, and asks the selector (edgec/ops/select.py `within_scratch`) for that op's kernel within the room left at that
moment: the same kernel on narrower column bands where it has them (the window convolutions: a few instructions
more, never narrower than im2col.WINDOW_MIN_BAND columns), another variant only where the scratch would still
raise the peak by more than select.SWITCH_EXCESS and 1/SWITCH_SHARE of the peak (MobileNet v2's whole-image
depthwise kernel on a large image: 40,768 B over a peak of 138,240 B). Ops whose scratch fits under the peak keep
their kernel: the fastest plan is kept wherever it costs no RAM.
"""
from __future__ import annotations

import dataclasses

from edgec.ir import Graph
from edgec.ops import select
from edgec.plan import planner
from edgec.plan.patching import scratch_bytes

SWITCH_SHARE = 8     # a narrowed scratch up to 1/8 of the tensors' peak above it keeps the op's kernel (IC's largest
                     # ResNet: 6,240 B over 122,880 B on window4 in bands of 8, where blocked would cost ~2x the layer)


def tensor_load(graph: Graph) -> list[int]:
    """The aligned bytes of tensor (and state) buffers alive at each op of the graph in its order, in-place reuse
    included, kernel scratch left out."""
    bufs = [b for b in planner.buffers(graph) if b.scratch_op is None]
    load = [0] * len(graph.ops)
    for b in bufs:
        for t in range(max(b.first, 0), min(b.last, len(graph.ops) - 1) + 1):
            load[t] += planner._align(b.size)
    return load


def fit_scratch(graph: Graph, switch: bool = True) -> tuple[Graph, list[dict]]:
    """The graph with every op whose kernel scratch would raise the arena above the tensors' peak on the kernel
    the selector gives for the room left (switch False: `--optimize size`, the op's own kernel only, narrowed),
    and what changed: op index, name, variant, scratch bytes before and after, the room the tensors left under
    the peak the narrowed scratch gives."""
    load = tensor_load(graph)
    peak = max(load, default=0)
    switch_above = max(select.SWITCH_EXCESS, peak // SWITCH_SHARE) if switch else None
    dtypes = [select.dtypes(graph, op) for op in graph.ops]
    got = {}
    for i, op in enumerate(graph.ops):
        if op.lowering is not None and load[i] + scratch_bytes(graph, op) > peak:
            got[i] = select.within_scratch(op, op.lowering, peak - load[i], dtypes[i], switch_above)
    # where a narrowed scratch still lifts the peak, that lifted peak is the arena's anyway: an op narrowed further
    # than it needs to stay under it gets its widest bands within it (fewer bands, fewer instructions)
    lifted = max([peak] + [load[i] + planner._align(low.scratch_bytes) for i, low in got.items()])
    for i, low in got.items():
        if low.variant == graph.ops[i].lowering.variant and lifted > peak:
            got[i] = select.within_scratch(graph.ops[i], graph.ops[i].lowering, lifted - load[i], dtypes[i], None)
    ops, changed = list(graph.ops), []
    for i, low in sorted(got.items()):
        op = graph.ops[i]
        if low is op.lowering:
            continue
        ops[i] = dataclasses.replace(op, lowering=low)
        changed.append({"op": i, "name": op.name, "variant": low.variant, "scratch_bytes": low.scratch_bytes,
                        "fastest_scratch_bytes": op.lowering.scratch_bytes, "room_bytes": lifted - load[i],
                        **({"band_w": low.params["band_w"]} if low.kernel.narrow and low.params["band_w"] else {})})
    return (graph.replace_ops(ops) if changed else graph), changed
