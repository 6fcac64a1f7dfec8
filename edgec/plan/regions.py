"""Several RAM regions: which region each arena buffer lives in, hottest data in the fastest region.

A board may list several RAM regions ([[memory]] kind = "ram" in its profile): the first is where the
firmware's .data, .bss and stack go; the others are usable by the model when the profile names the linker
`section` the generated arena piece goes to (e.g. the STM32H743's DTCM next to its AXI SRAM). Each region
gets a `speed` (bigger = faster; equal speeds: the listed order).

`assign(plan, spaces)` rewrites a plan made for one arena (edgec/plan/planner.py) into one arena *piece* per
region. The offsets of the plan stay one logical address space, the pieces one after the other (piece k
covers [base_k, base_k + bytes_k)), so everything that speaks in arena offsets (layer outputs, the serial
link's arena reads) keeps working; the generated C turns a logical offset into `arena_<k>.bytes + (offset -
base_k)` (`c_pointer`).

Placement: buffers by heat (accesses per byte: every op that writes or reads the buffer, scratch counted
SCRATCH_HEAT times because a kernel's im2col columns are re-read for every output channel), hottest first,
each into the fastest region whose piece still fits when re-planned with that buffer (planner.place); a
buffer that fits nowhere goes where it overflows least. Pieces planned apart can need more bytes in all than
the one arena (each must hold its own peak): when the placement by heat overflows a region, the one-arena
plan cut at the regions' sizes (fastest region from offset 0, the buffers a boundary cuts placed by heat) is
tried and kept if it overflows less; what still does not fit, the fit check (edgec/targets/fit.py) names.
"""
from __future__ import annotations

from dataclasses import dataclass

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.plan.planner import ALIGN, Buffer, Plan, place

SCRATCH_HEAT = 4.0
REGIONS_LD_SUFFIX = "_regions.ld"   # NAME_regions.ld beside the model library: the linker script of the pieces


@dataclass(frozen=True)
class Space:
    """A RAM region as the planner sees it: the bytes the model may use there and its speed."""

    name: str
    section: str          # linker section of the arena piece; "" = the default .bss of the first region
    capacity: int         # bytes available to the arena in this region
    speed: int = 0
    origin: int = 0       # the region's address (for the linker scripts that place the piece)
    size: int = 0         # the whole region's size


@dataclass
class Piece:
    """One region's part of the arena."""

    name: str
    section: str
    base: int             # logical offset of the piece's first byte
    bytes: int
    capacity: int
    speed: int
    origin: int = 0
    size: int = 0

    def to_json(self) -> dict:
        return {"region": self.name, "section": self.section or ".bss", "base_offset": self.base,
                "bytes": self.bytes, "capacity_bytes": self.capacity, "speed": self.speed}


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def heat(graph: Graph, b: Buffer) -> float:
    """Accesses per byte of a buffer over one inference: one per op that writes or reads it."""
    if b.scratch_op is not None:
        return SCRATCH_HEAT
    names = set(b.tensors)
    touches = sum(1 for op in graph.ops if op.output in names or names & set(op.inputs))
    return float(max(touches, 1))


def _fits(bufs: list[Buffer], capacity: int) -> tuple[bool, int]:
    arena, _, _ = place(bufs, exact=False)
    return arena <= capacity, arena


def _by_heat(graph: Graph, bufs: list[Buffer], usable: list[Space], order: list[int],
             chosen: list[list[Buffer]]) -> None:
    """Each buffer, hottest first, into the fastest region whose re-planned piece still fits it; a buffer
    that fits nowhere into the region it overflows least."""
    for b in sorted(bufs, key=lambda b: (-heat(graph, b), b.size, b.first)):
        overflow = {}                   # region -> bytes it would be short with b in it
        for k in order:
            ok, arena = _fits(chosen[k] + [b], usable[k].capacity)
            if ok:
                break
            overflow[k] = arena - usable[k].capacity
        else:
            k = min(overflow, key=overflow.get)
        chosen[k].append(b)


def _by_address(graph: Graph, plan: Plan, usable: list[Space], order: list[int]) -> list[list[Buffer]]:
    """The one-arena plan cut at the regions' capacities (fastest region from offset 0): a buffer that lies
    wholly inside a region's stretch of offsets goes there; the ones cut by a boundary go by heat."""
    chosen: list[list[Buffer]] = [[] for _ in usable]
    stretches, start = [], 0
    for k in order:
        stretches.append((k, start, start + usable[k].capacity))
        start += usable[k].capacity
    cut = []
    for b in plan.buffers:
        k = next((k for k, lo, hi in stretches if lo <= b.offset and b.offset + _align(b.size) <= hi), None)
        (cut.append(b) if k is None else chosen[k].append(b))
    _by_heat(graph, cut, usable, order, chosen)
    return chosen


def _overflow(chosen: list[list[Buffer]], usable: list[Space]) -> int:
    return sum(max(_fits(c, s.capacity)[1] - s.capacity, 0) for c, s in zip(chosen, usable))


def assign(graph: Graph, plan: Plan, spaces: list[Space], exact: bool = True) -> Plan:
    """The plan with its buffers spread over `spaces` (see the module text); a plan for one space, or one
    with the arena guard, is returned as it was (one piece: the default arena)."""
    usable = [s for s in spaces if s.capacity > 0]
    if len(usable) < 2 or plan.guard_bytes:
        return plan
    order = sorted(range(len(usable)), key=lambda k: (-usable[k].speed, k))    # fastest first, then listed order
    chosen: list[list[Buffer]] = [[] for _ in usable]
    _by_heat(graph, plan.buffers, usable, order, chosen)
    how = "hottest buffers in the fastest"
    if _overflow(chosen, usable):       # by heat the pieces fragment too much: cut the one arena instead
        by_address = _by_address(graph, plan, usable, order)
        if _overflow(by_address, usable) < _overflow(chosen, usable):
            chosen, how = by_address, "the one-arena plan cut at the regions' sizes"
    pieces, base = [], 0
    for k in range(len(usable)):        # pieces in the profile's order: the default region's first
        s = usable[k]
        size, _, _ = place(chosen[k], exact=exact)
        size = _align(size)
        for b in chosen[k]:
            b.offset += base
        pieces.append(Piece(s.name, s.section, base, size, s.capacity, s.speed, s.origin, s.size))
        base += size
    used = [p for p in pieces if p.bytes]
    if len(used) < 2:                   # everything in one region: re-base it as the one arena
        return _single(plan, used[0] if used else pieces[0])
    plan.pieces = pieces
    plan.arena_bytes = base
    plan.offsets = {name: b.offset for b in plan.buffers for name in b.tensors}
    plan.scratch = {b.scratch_op: b.offset for b in plan.buffers if b.scratch_op is not None}
    plan.state = {b.state_op: b.offset for b in plan.buffers if b.state_op is not None}
    plan.buffers.sort(key=lambda b: (b.first, b.offset))
    plan.method += f"; {len(used)} RAM regions, {how}"
    plan.optimal = False
    return plan


def _single(plan: Plan, piece: Piece) -> Plan:
    """All buffers landed in one region: that region's piece is the whole arena (offsets from 0)."""
    for b in plan.buffers:
        b.offset -= piece.base
    plan.arena_bytes = max((b.offset + b.size for b in plan.buffers), default=0)
    plan.arena_bytes = _align(plan.arena_bytes)
    plan.offsets = {name: b.offset for b in plan.buffers for name in b.tensors}
    plan.scratch = {b.scratch_op: b.offset for b in plan.buffers if b.scratch_op is not None}
    plan.state = {b.state_op: b.offset for b in plan.buffers if b.state_op is not None}
    plan.pieces = [Piece(piece.name, piece.section, 0, plan.arena_bytes, piece.capacity, piece.speed,
                         piece.origin, piece.size)] if piece.section else []
    return plan


def piece_of(plan: Plan, offset: int) -> int:
    """Index of the piece holding a logical arena offset."""
    for k, p in enumerate(plan.pieces):
        if p.base <= offset < p.base + p.bytes or (p.bytes == 0 and offset == p.base):
            return k
    raise EdgecError(f"arena offset {offset} is in no region of the plan (internal error)")


def c_arena(plan: Plan, k: int) -> str:
    return "arena" if k == 0 else f"arena_{k}"


def c_pointer(plan: Plan, offset: int) -> str:
    """The C expression of the arena byte at a logical offset."""
    if not plan.pieces:
        return f"arena.bytes + {offset}"
    k = piece_of(plan, offset)
    return f"{c_arena(plan, k)}.bytes + {offset - plan.pieces[k].base}"


def c_pieces(plan: Plan) -> list[dict]:
    """The arena declarations of the generated model: C name, bytes, section ("" = default)."""
    if not plan.pieces:
        return [{"cname": "arena", "bytes": plan.arena_bytes, "section": "", "region": "", "base": 0}]
    return [{"cname": c_arena(plan, k), "bytes": max(p.bytes, ALIGN), "section": p.section, "region": p.name,
             "base": p.base} for k, p in enumerate(plan.pieces)]


def linker_script(plan: Plan) -> str:
    """A GNU ld script (added with -T beside the board's own, INSERTed after .bss) that places each arena
    piece with a section at its region's address, and asserts that it fits the region."""
    lines = ["/* edgec: the model's arena pieces in their RAM regions (see edgec/plan/regions.py). */", "SECTIONS", "{"]
    for p in plan.pieces:
        if not p.section:
            continue
        lines.append(f"  {p.section} 0x{p.origin:08x} (NOLOAD) : {{ KEEP(*({p.section} {p.section}.*)) }}")
        lines.append(f"  ASSERT(SIZEOF({p.section}) <= {p.size}, \"region {p.name} overflowed: the arena piece "
                     f"{p.section} is bigger than {p.size} bytes\")")
    lines += ["}", "INSERT AFTER .bss;", ""]
    return "\n".join(lines)
