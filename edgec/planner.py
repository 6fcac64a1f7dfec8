"""Stage 5: static memory plan. Every activation gets an offset in one arena.

Lifetimes come from the execution order (a tensor lives from the op that writes
it to the last op that reads it; the input from before the first op, the output
to after the last). Views (reshape) share their input's buffer. Offsets are
chosen greedily, largest buffer first, each in the tightest gap between the
buffers already placed whose lifetimes overlap it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import ALIAS_OPS, Graph

ALIGN = 16


@dataclass
class Buffer:
    tensors: list[str]      # all tensors sharing these bytes (a tensor and its views)
    size: int
    first: int              # index of the first op that writes it (-1: the model input)
    last: int               # index of the last op that reads it (len(ops): the model output)
    offset: int = 0


@dataclass
class Plan:
    arena_bytes: int
    offsets: dict[str, int]
    buffers: list[Buffer] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"arena_bytes": self.arena_bytes, "alignment": ALIGN,
                "buffers": [{"tensors": b.tensors, "offset": b.offset, "size": b.size,
                             "first_op": b.first, "last_op": b.last} for b in self.buffers]}


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def scratch_name(op_index: int) -> str:
    """The plan's name for the scratch buffer of op number op_index (op.attrs['scratch_bytes'])."""
    return f"scratch:op{op_index}"


def buffers(graph: Graph) -> list[Buffer]:
    """Group views with their base tensor and compute each group's lifetime; plus one buffer per op
    that declares op.attrs['scratch_bytes'], live only while that op runs."""
    root = {name: name for name in graph.tensors}
    for op in graph.ops:
        if op.kind in ALIAS_OPS:
            root[op.output] = root[op.inputs[0]]
    n = len(graph.ops)
    groups: dict[str, Buffer] = {}
    for name, t in graph.tensors.items():
        b = groups.setdefault(root[name], Buffer(tensors=[], size=0, first=n, last=-1))
        b.tensors.append(name)
        b.size = max(b.size, t.size)
    groups[root[graph.input]].first = -1
    groups[root[graph.output]].last = n
    for i, op in enumerate(graph.ops):
        b = groups[root[op.output]]
        b.first, b.last = min(b.first, i), max(b.last, i)
        for name in op.inputs:
            b = groups[root[name]]
            b.first, b.last = min(b.first, i), max(b.last, i)
    scratch = [Buffer(tensors=[scratch_name(i)], size=int(op.attrs["scratch_bytes"]), first=i, last=i)
               for i, op in enumerate(graph.ops) if op.attrs.get("scratch_bytes")]
    return list(groups.values()) + scratch


def plan(graph: Graph) -> Plan:
    bufs = buffers(graph)
    placed: list[Buffer] = []
    for b in sorted(bufs, key=lambda b: (-b.size, b.first)):
        live = sorted((p for p in placed if p.first <= b.last and b.first <= p.last), key=lambda p: p.offset)
        best, best_gap, cursor = None, None, 0
        for p in live:
            gap = p.offset - cursor
            if gap >= b.size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, _align(p.offset + p.size))
        b.offset = best if best is not None else cursor
        placed.append(b)
    arena = _align(max((b.offset + b.size for b in bufs), default=0))
    offsets = {name: b.offset for b in bufs for name in b.tensors}
    return Plan(arena_bytes=arena, offsets=offsets, buffers=sorted(bufs, key=lambda b: (b.first, b.offset)))


def check_plan(graph: Graph, p: Plan) -> None:
    """Raise AssertionError if two live buffers overlap or one leaves the arena."""
    for b in p.buffers:
        assert 0 <= b.offset and b.offset + b.size <= p.arena_bytes, b
    for i, a in enumerate(p.buffers):
        for b in p.buffers[i + 1:]:
            if a.first <= b.last and b.first <= a.last:
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (a, b)
