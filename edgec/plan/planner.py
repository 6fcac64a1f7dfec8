"""Stage 5: static memory plan. Every activation (and every kernel scratch buffer) gets an offset in one arena.

Three steps, each chosen to make the arena small:

1. `schedule(graph)`: the execution order. Where the graph branches (a residual Add), a search over the
   orders the data dependencies allow picks the one with the smallest peak of live bytes.
2. `buffers(graph)`: what needs bytes, and when. A tensor lives from the op that writes it to the last op
   that reads it (the model input from before the first op, the output to after the last). Views
   (`ALIAS_OPS`) share their input's bytes. An op in `IN_PLACE_OPS` writes its output over an input of the
   same size that dies at that op. The scratch its kernel asks for (`op.lowering.scratch_bytes`, aligned) is a
   buffer that lives during its op only.
3. `plan(graph)`: offsets (the NP-hard "dynamic storage allocation" problem). Several greedy heuristics run
   and the best is kept; if it is above the lower bound (the largest sum of bytes live at one op) and the
   graph is small, a branch-and-bound search over placements finds the optimum or proves the heuristic's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from edgec.ir import Graph, Op
from edgec.ops import state as op_state
from edgec.ops.registry import ALIAS_OPS, IN_PLACE_OPS, state_fields
from edgec.plan.patching import Stage, scratch_bytes, window_bytes

ALIGN = 16
# Kernels that may write their output over an input of the same size at the same offset (output == input
# pointer). Checked against runtime_c/ (edgec_elementwise.c, edgec_softmax.c; tests/test_planner.py runs them
# in place):
#   add:     element i of both inputs is read before element i of the output is written;
#   softmax: a row is read in full (max, sum) before it is written, and y[i] is written after x[i] is read.
# The NumPy reference never writes in place (it makes new arrays), so it is safe by construction.
# Search budgets, in work units rather than seconds so that a plan never depends on the machine's load.
EXACT_MAX_BUFFERS = 64        # branch and bound only below this many buffers ...
EXACT_MAX_NODES = 20000       # ... visiting at most this many search nodes (~0.2 s)
SCHEDULE_MAX_STEPS = 50000    # order search: exact up to this many evaluated steps (~0.2 s), ...
SCHEDULE_BEAM = 32            # ... then only the best partial schedules of each length


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class Buffer:
    tensors: list[str]      # all tensors sharing these bytes (a tensor, its views, in-place outputs)
    size: int
    first: int              # index of the first op that writes it (-1: the model input)
    last: int               # index of the last op that reads it (len(ops): the model output)
    offset: int = 0
    scratch_op: int | None = None   # a scratch buffer: the index of the op that uses it
    inner: dict[str, int] = field(default_factory=dict)   # tensor -> offset inside the buffer (default 0)
    stage_output: int | None = None   # where the stage starting at this op index writes its output (patching)
    state_op: int | None = None     # a persistent state buffer (edgec/ops/state.py): the op that keeps it

    @property
    def label(self) -> str:
        if self.state_op is not None:
            return f"state of op {self.state_op}"
        return self.tensors[0] if self.scratch_op is None else f"scratch of op {self.scratch_op}"

    def live_at(self, t: int) -> bool:
        return self.first <= t <= self.last

    def overlaps_in_time(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass
class Plan:
    arena_bytes: int
    offsets: dict[str, int]                               # tensor name -> offset
    buffers: list[Buffer] = field(default_factory=list)
    scratch: dict[int, int] = field(default_factory=dict)  # op index -> offset of its scratch buffer
    state: dict[int, int] = field(default_factory=dict)    # op index -> offset of its persistent state buffer
    lower_bound_bytes: int = 0    # largest sum of (aligned) buffer bytes live at one op: no plan does better
    method: str = ""              # which heuristic (or the exact search) gave the offsets
    optimal: bool = False         # arena_bytes is proven minimal for this order and these buffers
    planning_s: float = 0.0
    guard_bytes: int = 0          # arena guard (edgec/plan/guard.py): canary bytes before and after every buffer
    stages: list[Stage] = field(default_factory=list)    # patch-based stages (edgec/plan/patching.py)
    stage_outputs: dict[int, int] = field(default_factory=dict)   # stage's first op -> where it writes its
                                                                  # output, when not at the output's offset
    ram_choice: dict = field(default_factory=dict)   # edgec/plan/ram_budget.choose summary: the RAM trade-off
    pieces: list = field(default_factory=list)   # RAM regions (edgec/plan/regions.py); empty: one arena
    caller_io: dict[str, int] = field(default_factory=dict)   # --io-buffers caller: tensor -> its caller buffer

    def live_bytes(self, n_ops: int) -> list[int]:
        """Bytes live at each op index 0..n_ops-1 (before alignment)."""
        return [sum(b.size for b in self.buffers if b.live_at(t)) for t in range(n_ops)]

    def to_json(self) -> dict:
        return {"arena_bytes": self.arena_bytes, "alignment": ALIGN, "lower_bound_bytes": self.lower_bound_bytes,
                **({"guard_bytes": self.guard_bytes} if self.guard_bytes else {}),
                "method": self.method, "optimal": self.optimal, "planning_ms": round(self.planning_s * 1e3, 2),
                **({"patched_stages": [s.report for s in self.stages]} if self.stages else {}),
                **({"ram_choice": self.ram_choice} if self.ram_choice else {}),
                "buffers": [{"tensors": b.tensors, "offset": b.offset, "size": b.size, "first_op": b.first,
                             "last_op": b.last, **({"scratch_op": b.scratch_op} if b.scratch_op is not None else {})}
                            for b in self.buffers],
                **({"regions": [p.to_json() for p in self.pieces]} if self.pieces else {}),
                **({"caller_io": self.caller_io} if self.caller_io else {})}


# ---------------------------------------------------------------- buffers and lifetimes

class _Groups:
    """Union-find over tensor names: which tensors share bytes."""

    def __init__(self, names):
        self.parent = {n: n for n in names}

    def find(self, n: str) -> str:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, keep: str, other: str) -> None:
        self.parent[self.find(other)] = self.find(keep)


def alias_groups(graph: Graph) -> _Groups:
    groups = _Groups(graph.tensors)
    for op in graph.ops:
        if op.kind in ALIAS_OPS:
            groups.union(op.inputs[0], op.output)
    return groups


def in_place_input(graph: Graph, op: Op, groups: _Groups, dies_here) -> str | None:
    """The input `op` may overwrite with its output, or None. `dies_here(group root)` says whether no op
    after this one reads that group (and it is not the model output)."""
    if op.kind not in IN_PLACE_OPS:
        return None
    out_size = graph.tensors[op.output].nbytes
    for name in op.inputs:
        root = groups.find(name)
        if graph.tensors[root].nbytes == out_size and graph.tensors[name].nbytes == out_size and dies_here(root):
            return name
    return None


def buffers(graph: Graph, in_place: bool = True, stages: list[Stage] = ()) -> list[Buffer]:
    """The buffers of the graph in its current op order, with their lifetimes (offsets not yet set).
    With patch-based `stages` (edgec/plan/patching.py), a tensor inside a stage is its window of rows, the
    stage's output lives from the stage's first op, and the stage's ops share one scratch buffer."""
    n = len(graph.ops)
    staged = {k for st in stages for k in st.ops}
    groups = alias_groups(graph)
    last_read = {name: -1 for name in graph.tensors}
    for i, op in enumerate(graph.ops):
        for name in op.inputs:
            last_read[name] = i
    for name in graph.outputs:
        last_read[name] = n
    if in_place:
        members = {name: [name] for name in graph.tensors}
        for name in graph.tensors:
            if groups.find(name) != name:
                members[groups.find(name)].append(name)

        for i, op in enumerate(graph.ops):
            def dies_here(root, i=i):
                return max(last_read[m] for m in members[root]) == i
            name = None if i in staged else in_place_input(graph, op, groups, dies_here)
            if name is not None:
                root, out_root = groups.find(name), groups.find(op.output)
                groups.union(root, out_root)
                members[root] += members.pop(out_root)
    by_root: dict[str, Buffer] = {}
    for name, t in graph.tensors.items():
        b = by_root.setdefault(groups.find(name), Buffer(tensors=[], size=0, first=n, last=-1))
        b.tensors.append(name)
        b.size = max(b.size, t.nbytes)
    for name in graph.inputs:
        by_root[groups.find(name)].first = -1
    for name in graph.outputs:
        by_root[groups.find(name)].last = n
    for i, op in enumerate(graph.ops):
        for name in (op.output, *op.inputs):
            b = by_root[groups.find(name)]
            b.first, b.last = min(b.first, i), max(b.last, i)
    extra = []
    for st in stages:
        for t in st.windows:     # all alive while the stage runs its bands
            w = by_root[groups.find(t)]
            w.size, w.first, w.last = window_bytes(graph, st, t), st.first, st.last
        out = by_root[groups.find(graph.ops[st.last].output)]
        if st.input is None:
            out.first = min(out.first, st.first)
            continue
        # the output is written over the input's rows nothing reads any more, then moved to its own buffer
        # after the stage (no move when the placement puts both at the same offset)
        x = by_root.pop(groups.find(st.input))
        extra.append(Buffer(tensors=x.tensors, size=max(out.size, st.gap + x.size), first=min(x.first, st.first),
                            last=st.last, inner={t: st.gap for t in x.tensors}, stage_output=st.first))
        out.first = st.last + 1
    bufs = [b for b in by_root.values() if b.first <= b.last] + extra   # tensors no op touches: no bytes
    for i, op in enumerate(graph.ops):
        scratch = scratch_bytes(graph, op)
        if scratch > 0 and i not in staged:
            bufs.append(Buffer(tensors=[], size=scratch, first=i, last=i, scratch_op=i))
    for st in stages:
        if st.scratch_bytes:
            bufs.append(Buffer(tensors=[], size=st.scratch_bytes, first=st.first, last=st.last,
                               scratch_op=st.first))
    for i, op in enumerate(graph.ops):     # state kept between inferences: alive through all of them, shared with none
        if state_fields(op):
            bufs.append(Buffer(tensors=[], size=op_state.layout(state_fields(op))[1], first=-1, last=n, state_op=i))
    return bufs


def peak_live_bytes(bufs: list[Buffer], aligned: bool = True) -> int:
    """The largest sum of buffer sizes live at one time: a lower bound for any arena."""
    if not bufs:
        return 0
    lo, hi = min(b.first for b in bufs), max(b.last for b in bufs)
    load = [0] * (hi - lo + 1)
    for b in bufs:
        size = _align(b.size) if aligned else b.size
        for t in range(b.first - lo, b.last - lo + 1):
            load[t] += size
    return max(load)


def live_set_lower_bound(graph: Graph) -> int:
    """The live-set reference bound: largest sum of int8 tensors live at one op, in the graph's own order,
    views shared but without in-place reuse, alignment or kernel scratch."""
    tensors_only = [b for b in buffers(graph, in_place=False) if b.scratch_op is None]
    return peak_live_bytes(tensors_only, aligned=False)


# ---------------------------------------------------------------- execution order

def schedule(graph: Graph) -> list[Op]:
    """The execution order (a permutation of graph.ops respecting data dependencies) with the smallest
    peak of live bytes; the graph's own order when it is as good. A dynamic program over partial schedules
    (sets of executed ops), exact while they are few (chains, a few residual branches), a beam search
    keeping the best SCHEDULE_BEAM of each length once SCHEDULE_MAX_STEPS steps have been evaluated."""
    ops = graph.ops
    n = len(ops)
    if n < 3:
        return list(ops)
    groups = alias_groups(graph)
    roots = sorted({groups.find(t) for t in graph.tensors})
    gid = {r: k for k, r in enumerate(roots)}
    size = [max(graph.tensors[t].nbytes for t in graph.tensors if groups.find(t) == r) for r in roots]
    producer = {gid[groups.find(op.output)]: i for i, op in enumerate(ops) if op.kind not in ALIAS_OPS}
    readers = [0] * len(roots)
    for i, op in enumerate(ops):
        for t in op.inputs:
            readers[gid[groups.find(t)]] |= 1 << i
    out_gs = {gid[groups.find(t)] for t in graph.outputs}
    in_gs = {gid[groups.find(t)] for t in graph.inputs}
    writer = {op.output: i for i, op in enumerate(ops)}
    preds = [0] * n
    for i, op in enumerate(ops):
        for t in op.inputs:
            g = gid[groups.find(t)]
            if g in producer:
                preds[i] |= 1 << producer[g]
            if t in writer:          # a view is an op too: its readers wait for it
                preds[i] |= 1 << writer[t]
    scratch = [scratch_bytes(graph, op) for op in ops]

    def step(done: int, live: int, i: int) -> tuple[int, int]:
        """(bytes live while op i runs, bytes live after it) from the set `done` of executed ops."""
        op = ops[i]
        now = done | (1 << i)
        during, after = live + scratch[i], live
        g_out = gid[groups.find(op.output)]
        if op.kind not in ALIAS_OPS and producer.get(g_out) == i:
            overwritten = None
            if op.kind in IN_PLACE_OPS:
                overwritten = in_place_input(graph, op, groups,
                                             lambda r: gid[r] not in out_gs
                                             and readers[gid[r]] & ~now == 0)
            if overwritten is None:
                during += size[g_out]
            if readers[g_out] or g_out in out_gs:    # an output nobody reads is free again after its op
                after += size[g_out]
        for t in set(op.inputs):
            g = gid[groups.find(t)]
            if g not in out_gs and readers[g] & ~now == 0 and readers[g] & (1 << i):
                after -= size[g]
        return during, after

    start_live = sum(size[g] for g in in_gs)
    # states: done-set -> (peak so far, live now, order)
    layer = {0: (start_live, start_live, ())}
    work = 0
    for _ in range(n):
        nxt: dict[int, tuple[int, int, tuple]] = {}
        for done, (peak, live, order) in layer.items():
            for i in range(n):
                if done >> i & 1 or preds[i] & ~done:
                    continue
                during, after = step(done, live, i)
                cand = (max(peak, during), after, order + (i,))
                key = done | (1 << i)
                if key not in nxt or cand[:2] < nxt[key][:2]:
                    nxt[key] = cand
                work += 1
        if work > SCHEDULE_MAX_STEPS and len(nxt) > SCHEDULE_BEAM:
            nxt = dict(sorted(nxt.items(), key=lambda kv: kv[1][:2])[:SCHEDULE_BEAM])
        layer = nxt
    (best_peak, _, best_order), = layer.values()
    done, live, own_peak = 0, start_live, start_live
    for i in range(n):
        during, live = step(done, live, i)
        own_peak, done = max(own_peak, during), done | (1 << i)
    if own_peak <= best_peak:
        return list(ops)
    return [ops[i] for i in best_order]


# ---------------------------------------------------------------- offsets

def _place_greedy(items: list[tuple[int, int, int]], order: list[int], best_fit: bool) -> list[int]:
    """Place items (size, first, last) one by one in `order`, each in the lowest (first fit) or the
    tightest (best fit) gap between the already placed items whose lifetimes overlap it."""
    offsets = [0] * len(items)
    placed: list[int] = []
    for k in order:
        size, first, last = items[k]
        live = sorted((offsets[p], offsets[p] + items[p][0]) for p in placed
                      if items[p][1] <= last and first <= items[p][2])
        best, best_gap, cursor = None, None, 0
        for lo, hi in live:
            gap = lo - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
                if not best_fit:
                    break
            cursor = max(cursor, hi)
        offsets[k] = best if best is not None else cursor
        placed.append(k)
    return offsets


def _heuristic_orders(items: list[tuple[int, int, int]]) -> dict[str, list[int]]:
    """Placement orders for the greedy placer, each good on some kind of graph."""
    idx = range(len(items))
    lo = min((it[1] for it in items), default=0)
    hi = max((it[2] for it in items), default=0)
    load = [0] * (hi - lo + 1)
    for size, first, last in items:
        for t in range(first - lo, last - lo + 1):
            load[t] += size
    # the most crowded moment of each buffer's life: buffers at the peak first ("greedy by conflicts")
    crowd = [max(load[first - lo:last - lo + 1]) for _, first, last in items]
    return {
        "size": sorted(idx, key=lambda k: (-items[k][0], items[k][1])),
        "conflicts": sorted(idx, key=lambda k: (-crowd[k], -items[k][0], items[k][1])),
        "duration": sorted(idx, key=lambda k: (-(items[k][2] - items[k][1]), -items[k][0])),
        "area": sorted(idx, key=lambda k: (-items[k][0] * (items[k][2] - items[k][1] + 1), items[k][1])),
        "time": sorted(idx, key=lambda k: (items[k][1], -items[k][0])),
    }


def _branch_and_bound(items: list[tuple[int, int, int]], best: int, bound: int, max_nodes: int = EXACT_MAX_NODES):
    """Smallest arena for items (aligned size, first, last), searched below `best`.

    Every packing can be pushed down until each item rests on 0 or on the top of an item overlapping it
    in time; placing items in the order of their offsets then visits it. So the search places items in
    non-decreasing (offset, index) order, each at 0 or on top of a placed overlapping item.
    Returns (arena, offsets or None if nothing below `best` was found, finished)."""
    n = len(items)
    lo = min(it[1] for it in items)
    steps = max(it[2] for it in items) - lo + 1
    span = [range(it[1] - lo, it[2] - lo + 1) for it in items]
    conflicts = [[j for j in range(n) if j != k and items[j][1] <= items[k][2] and items[k][1] <= items[j][2]]
                 for k in range(n)]
    unplaced_load = [0] * steps
    for k in range(n):
        for t in span[k]:
            unplaced_load[t] += items[k][0]
    offsets = [-1] * n
    result = {"best": best, "offsets": None, "nodes": 0, "finished": True}
    order_by_size = sorted(range(n), key=lambda k: -items[k][0])

    def search(placed: int, level: int, last_k: int, top: int) -> None:
        if result["best"] <= bound:
            return
        result["nodes"] += 1
        if result["nodes"] > max_nodes:
            result["finished"] = False
        if not result["finished"]:
            return
        if placed == n:
            if top < result["best"]:
                result["best"], result["offsets"] = top, list(offsets)
            return
        # every unplaced item goes at or above `level`, disjoint from the others live at the same time
        if level + max(unplaced_load) >= result["best"]:
            return
        for k in order_by_size:
            if offsets[k] >= 0:
                continue
            size = items[k][0]
            cands = {0} | {offsets[j] + items[j][0] for j in conflicts[k] if offsets[j] >= 0}
            for off in sorted(cands):
                if off < level or (off == level and k < last_k) or off + size >= result["best"]:
                    continue
                if any(offsets[j] >= 0 and offsets[j] < off + size and off < offsets[j] + items[j][0]
                       for j in conflicts[k]):
                    continue
                offsets[k] = off
                for t in span[k]:
                    unplaced_load[t] -= size
                search(placed + 1, off, k, max(top, off + size))
                for t in span[k]:
                    unplaced_load[t] += size
                offsets[k] = -1

    search(0, 0, -1, 0)
    return result["best"], result["offsets"], result["finished"]


def place(bufs: list[Buffer], exact: bool = True, guard: int = 0) -> tuple[int, str, bool]:
    """Set every buffer's offset; returns (arena bytes, method, proven optimal). With `guard`, every buffer
    gets `guard` private bytes before and after it (the arena guard's canaries)."""
    if not bufs:
        return 0, "empty", True
    items = [(_align(b.size + 2 * guard), b.first, b.last) for b in bufs]
    bound = peak_live_bytes(bufs)
    best = None
    for name, order in _heuristic_orders(items).items():
        for best_fit in (True, False):
            offsets = _place_greedy(items, order, best_fit)
            arena = max(o + it[0] for o, it in zip(offsets, items))
            if best is None or arena < best[0]:
                best = (arena, offsets, f"greedy by {name}, {'best' if best_fit else 'first'} fit")
    arena, offsets, method = best
    optimal = arena <= bound
    if not optimal and exact and len(items) <= EXACT_MAX_BUFFERS:
        found, exact_offsets, finished = _branch_and_bound(items, arena, bound)
        if exact_offsets is not None:
            arena, offsets, method = found, exact_offsets, "branch and bound"
        optimal = finished or found <= bound
        if finished and exact_offsets is None:
            method += " (proven optimal by branch and bound)"
    for b, off in zip(bufs, offsets):
        b.offset = off + guard
    return arena, method, optimal


def plan(graph: Graph, exact: bool = True, guard: int = 0, stages: list[Stage] = ()) -> Plan:
    """The memory plan of the graph in its current op order (see `schedule` to choose the order).
    guard > 0: the arena guard's layout (edgec/plan/guard.py): `guard` canary bytes at both ends of the arena
    and before and after every buffer, private to the buffer while it lives."""
    start = time.perf_counter()
    best = None
    for in_place in (True, False):
        bufs = buffers(graph, in_place, stages)
        arena, method, optimal = place(bufs, exact and in_place, guard)   # the exact search once
        if best is None or arena < best[1]:
            best = (bufs, arena, method + ("" if in_place else ", no in-place"), optimal)
        if optimal:
            break
    bufs, arena, method, optimal = best
    if guard:   # the arena's own canaries: one before everything, one after
        for b in bufs:
            b.offset += guard
        arena += 2 * guard
    offsets = {name: b.offset + b.inner.get(name, 0) for b in bufs for name in b.tensors}
    scratch = {b.scratch_op: b.offset for b in bufs if b.scratch_op is not None}
    stage_outputs = {b.stage_output: b.offset for b in bufs if b.stage_output is not None}
    for st in stages:
        if st.first in scratch:
            scratch.update({k: scratch[st.first] for k in st.ops})
    return Plan(arena_bytes=arena, offsets=offsets, buffers=sorted(bufs, key=lambda b: (b.first, b.offset)),
                scratch=scratch, state={b.state_op: b.offset for b in bufs if b.state_op is not None}, lower_bound_bytes=peak_live_bytes(bufs), method=method, optimal=optimal,
                planning_s=time.perf_counter() - start, guard_bytes=guard, stages=list(stages),
                stage_outputs=stage_outputs)


def check_plan(graph: Graph, p: Plan) -> None:
    """Raise AssertionError if two live buffers overlap, one leaves the arena, or a tensor shares bytes with
    another in a way no kernel allows."""
    g = p.guard_bytes    # with the arena guard, a buffer owns `g` bytes on either side too
    for b in p.buffers:
        assert g <= b.offset - g and b.offset + b.size + g <= p.arena_bytes - g, b
    for i, a in enumerate(p.buffers):
        for b in p.buffers[i + 1:]:
            if a.overlaps_in_time(b):
                assert a.offset + a.size + g <= b.offset - g or b.offset + b.size + g <= a.offset - g, (a, b)
    staged = {k for st in p.stages for k in st.ops}
    for i, op in enumerate(graph.ops):
        out = p.offsets[op.output]
        for name in op.inputs:
            if p.offsets[name] == out and op.kind not in ALIAS_OPS and i not in staged:
                assert op.kind in IN_PLACE_OPS, f"op {i} ({op.kind}) would run in place"
        if i in p.scratch and i not in staged:
            assert scratch_bytes(graph, op) > 0
