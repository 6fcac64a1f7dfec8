"""The arena guard: a debug build (`edgec build --arena-guard`) that catches a layer writing outside its buffer.

The planner leaves GUARD_BYTES private bytes at both ends of the arena and before and after every buffer
(`planner.plan(graph, guard=GUARD_BYTES)`). The generated model fills each buffer's two canaries with a
known pattern when the buffer comes to life (runtime_c/harness/edgec_guard.c) and, after every layer, checks the
canaries of every buffer alive at that layer and the arena's own two; the first layer that damaged one stops
the run and `NAME_invoke()` returns STATUS_BASE + that layer's index. The bench link reports the status, and
`describe_status` turns it into the layer's name for the host's error message.
"""
from __future__ import annotations

from edgec.ir import Graph
from edgec.plan.planner import Plan

GUARD_BYTES = 16                 # a multiple of planner.ALIGN: buffers stay aligned
STATUS_BASE = 0x47000000         # 'G' << 24: NAME_invoke()'s status when layer (status - STATUS_BASE) overran
RUNTIME_FILES = ["edgec_guard.h", "edgec_guard.c"]


def regions(graph: Graph, plan: Plan) -> list[tuple[int, int, int, int]]:
    """The canaries as (offset, bytes, first op, last op): each buffer's two while it lives (op indices,
    -1 = before the first op, len(ops) = after the last), the arena's two for the whole run."""
    g, n = plan.guard_bytes, len(graph.ops)
    out = [(0, g, -1, n), (plan.arena_bytes - g, g, -1, n)]
    for b in sorted(plan.buffers, key=lambda b: (b.first, b.offset)):
        out += [(b.offset - g, g, b.first, b.last), (b.offset + b.size, g, b.first, b.last)]
    return out


def describe_status(status: int, layer_names: list[str] | None = None) -> str:
    """A device's invoke status in words (the arena guard's statuses name the layer)."""
    layer = status - STATUS_BASE
    if 0 <= layer < 1 << 24:
        name = f" '{layer_names[layer]}'" if layer_names and layer < len(layer_names) else ""
        return (f"the arena guard caught layer {layer}{name} writing outside its buffer (status 0x{status:08x}); "
                "the memory plan or that layer's kernel is wrong")
    return f"status {status}"
