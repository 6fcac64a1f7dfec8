"""Choosing the schedule under a RAM budget: the fastest plan (whole layers) when it fits, else the cheapest
plan with patch-based stages (edgec/plan/patching.py) that does.

`memory_ladder(graph)` walks from the fastest plan towards the smallest: each rung adds the stage (ops,
rows per band) that lowers the arena most at the moment the arena peaks, as long as the arena shrinks.
Each rung is (arena bytes, estimated extra instructions, stages); `choose` takes the cheapest rung whose
arena plus `overhead` (the firmware's other RAM) fits, or says which RAM is the least it can reach.
`choose_lean` tries, when no rung fits, the same on the graph whose ops with a large kernel scratch run on the
offered kernel variant with the least scratch (`lean_scratch`: e.g. VWW's first convolution off the window
kernel's 4,800 B input ring onto the blocked kernel's 160 B), the speed given up for RAM a budget asks for; then
each such op goes back to its own kernel on column bands (`Kernel.narrow`) where the chosen plan leaves it the room
(VWW's first convolution: rgb3x3 in bands of 24 columns).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.ops import select
from edgec.ops.kernel import GENERIC, constant_bytes
from edgec.plan import patching, planner

MAX_STAGE_OPS = 10
BAND_ROWS = (1, 2, 4)
MAX_STAGES = 4
BEAM = 3
LEAN_SCRATCH = 1024      # an op whose kernel scratch is larger may move to a variant with less under a budget


@dataclass
class Rung:
    arena_bytes: int
    extra_instructions: int
    stages: list

    def describe(self, graph: Graph) -> str:
        parts = [f"ops {s.first}-{s.last} in bands of {s.rows} row{'s' if s.rows > 1 else ''}" for s in self.stages]
        return "whole layers" if not parts else "patched " + ", ".join(parts)


def _peak_time(p: planner.Plan) -> int:
    lo = min(b.first for b in p.buffers)
    hi = max(b.last for b in p.buffers)
    load = [0] * (hi - lo + 1)
    for b in p.buffers:
        for t in range(b.first - lo, b.last - lo + 1):
            load[t] += planner._align(b.size)
    return lo + load.index(max(load))


def _candidates(graph: Graph, rung: Rung, cache: dict) -> list[Rung]:
    """The rungs one more stage (one row per band) covering the moment the arena peaks gives."""
    n = len(graph.ops)
    t = _peak_time(planner.plan(graph, exact=False, stages=rung.stages))
    used = {k for s in rung.stages for k in s.ops}
    out = []
    for a in range(max(0, t - MAX_STAGE_OPS + 1), min(t, n - 1) + 1):
        for b in range(max(a, t), min(n, a + MAX_STAGE_OPS)):
            if any(k in used for k in range(a, b + 1)) or not patching.can_stage(graph, a, b):
                continue
            if (a, b, 1) not in cache:
                cache[(a, b, 1)] = patching.build_stage(graph, a, b, 1)
            st = cache[(a, b, 1)]
            stages = sorted(rung.stages + [st], key=lambda s: s.first)
            out.append(Rung(planner.plan(graph, exact=False, stages=stages).arena_bytes,
                            rung.extra_instructions + patching.extra_cost(graph, st), stages))
    return out


def _fewer_calls(graph: Graph, rung: Rung, cache: dict) -> Rung:
    """The same stages with more rows per band (fewer calls) where that does not grow the arena."""
    for i, st in enumerate(rung.stages):
        for rows in BAND_ROWS[1:]:
            key = (st.first, st.last, rows)
            if key not in cache:
                cache[key] = patching.build_stage(graph, st.first, st.last, rows)
            stages = rung.stages[:i] + [cache[key]] + rung.stages[i + 1:]
            arena = planner.plan(graph, exact=False, stages=stages).arena_bytes
            if arena <= rung.arena_bytes:
                cost = sum(patching.extra_cost(graph, s) for s in stages)
                rung = Rung(arena, cost, stages)
    return rung


def _split(graph: Graph, rung: Rung, cache: dict) -> Rung:
    """The rung with a stage cut in two where that lowers the arena (VWW: the first convolution alone writes its
    output over the model's input, then the next ops run in bands from it): the best cut, repeated."""
    while True:
        best = rung
        for i, st in enumerate(rung.stages):
            for m in range(st.first, st.last):
                if not (patching.can_stage(graph, st.first, m) and patching.can_stage(graph, m + 1, st.last)):
                    continue
                for key in ((st.first, m, 1), (m + 1, st.last, 1)):
                    if key not in cache:
                        cache[key] = patching.build_stage(graph, *key)
                stages = rung.stages[:i] + [cache[(st.first, m, 1)], cache[(m + 1, st.last, 1)]] + rung.stages[i + 1:]
                arena = planner.plan(graph, exact=False, stages=stages).arena_bytes
                if arena < best.arena_bytes:
                    best = Rung(arena, sum(patching.extra_cost(graph, s) for s in stages), stages)
        if best is rung:
            return rung
        rung = best


def memory_ladder(graph: Graph) -> list[Rung]:
    """Plans from the fastest to the smallest (see the module doc): a beam search adding one stage at a
    time where the arena peaks."""
    base = planner.plan(graph, exact=False)
    rungs = [Rung(base.arena_bytes, 0, [])]
    cache: dict = {}
    beam = [rungs[0]]
    for _ in range(MAX_STAGES):
        nxt = sorted((c for r in beam for c in _candidates(graph, r, cache)),
                     key=lambda r: (r.arena_bytes, r.extra_instructions))[:BEAM]
        if not nxt or nxt[0].arena_bytes >= rungs[-1].arena_bytes:
            break
        rungs.append(_fewer_calls(graph, _split(graph, nxt[0], cache), cache))
        beam = nxt
    return rungs


def choose(graph: Graph, ram_budget: int | None, board_ram: int | None, overhead: int = 0) -> tuple[list, dict]:
    """The stages of the plan to build and a summary for the log and plan.json (`ram_choice`).

    ram_budget: bytes of RAM the whole firmware may use (arena + `overhead`); None: the board's RAM, and
    then the fastest plan whenever it fits, else the smallest (the fit check refuses it if still too big)."""
    limit = ram_budget if ram_budget is not None else board_ram
    base = planner.plan(graph, exact=False)
    if limit is None or base.arena_bytes + overhead <= limit:
        return [], {"stages": 0, "arena_bytes": base.arena_bytes}
    ladder = memory_ladder(graph)

    def summary(rung: Rung) -> dict:
        return {"stages": len(rung.stages), "arena_bytes": rung.arena_bytes,
                "extra_instructions_estimate": rung.extra_instructions, "schedule": rung.describe(graph),
                "fastest_arena_bytes": base.arena_bytes, "limit_bytes": limit, "overhead_bytes": overhead,
                "trade_off": [{"arena_bytes": r.arena_bytes, "extra_instructions_estimate": r.extra_instructions,
                               "schedule": r.describe(graph)} for r in ladder]}
    fitting = [r for r in ladder if r.arena_bytes + overhead <= limit]
    if fitting:
        rung = min(fitting, key=lambda r: (r.extra_instructions, r.arena_bytes))
        return rung.stages, summary(rung)
    low = min(ladder, key=lambda r: (r.arena_bytes, r.extra_instructions))
    if ram_budget is None:       # the board is too small even so: the fit check says it with its numbers
        return low.stages, summary(low)
    raise EdgecError(f"{graph.name} does not fit --ram-budget of {limit:,} B: the smallest RAM edgec reaches is "
                     f"{low.arena_bytes + overhead:,} B ({low.arena_bytes:,} B of arena + {overhead:,} B of "
                     f"firmware; {low.describe(graph)}, ~{low.extra_instructions:,} more instructions per "
                     "inference); give a larger budget")


def _lean_lowering(graph: Graph, op):
    """The op's lowering on the offered variant with the least scratch, when that is less than its own and its
    own is over LEAN_SCRATCH (None: keep it)."""
    low = op.lowering
    if low is None or len(low.variants) < 2 or low.scratch_bytes <= LEAN_SCRATCH:
        return None
    generic = select.fast(op, select.dtypes(graph, op))
    if generic is None:
        return None
    generic = generic.replace(variant=GENERIC, variants=low.variants, signature=low.signature)
    options = [(select.variant(op, generic, name), name) for name in low.variants]
    best, name = min(options, key=lambda c: c[0].scratch_bytes)
    if best.scratch_bytes >= low.scratch_bytes:
        return None
    return best.replace(variant=name, variants=low.variants, signature=low.signature,
                        extra_bytes=constant_bytes(best) - constant_bytes(generic))


def lean_scratch(graph: Graph) -> tuple[Graph, list[int]]:
    """The graph with every op whose scratch is over LEAN_SCRATCH on its least-scratch variant, and those ops."""
    ops, moved = [], []
    for k, op in enumerate(graph.ops):
        low = _lean_lowering(graph, op)
        ops.append(op if low is None else dataclasses.replace(op, lowering=low))
        if low is not None:
            moved.append(k)
    return (graph.replace_ops(ops) if moved else graph), moved


def choose_lean(graph: Graph, ram_budget: int | None, board_ram: int | None,
                overhead: int = 0) -> tuple[Graph, list, dict]:
    """choose(), and where no plan of the graph fits the budget, choose() on lean_scratch(graph): (the graph
    to build, its stages, the summary; `lean_scratch_ops` names the ops moved to a leaner variant)."""
    try:
        return (graph, *choose(graph, ram_budget, board_ram, overhead))
    except EdgecError:
        lean, moved = lean_scratch(graph)
        if not moved:
            raise
    stages, summary = choose(lean, ram_budget, board_ram, overhead)
    limit = ram_budget if ram_budget is not None else board_ram
    staged = {k for st in stages for k in st.ops}
    for k in list(moved):            # back on its own kernel where the chosen plan still fits without the move
        if k in staged or limit is None:
            continue
        back = lean.replace_ops([graph.ops[k] if j == k else op for j, op in enumerate(lean.ops)])
        if planner.plan(back, exact=False, stages=stages).arena_bytes + overhead <= limit:
            lean = back
            moved.remove(k)
    if limit is not None:
        lean, stages, moved = _own_narrowed(graph, lean, stages, moved, limit - overhead)
    summary["arena_bytes"] = planner.plan(lean, exact=False, stages=stages).arena_bytes
    summary["lean_scratch_ops"] = [{"op": k, "name": lean.ops[k].name, "variant": lean.ops[k].lowering.variant,
                                    "scratch_bytes": lean.ops[k].lowering.scratch_bytes,
                                    **({"band_w": lean.ops[k].lowering.params["band_w"]}
                                       if lean.ops[k].lowering.variant == graph.ops[k].lowering.variant else {})}
                                   for k in moved]
    return lean, stages, summary


def _own_narrowed(graph: Graph, lean: Graph, stages: list, moved: list[int], arena_limit: int):
    """(lean, stages, moved) with each moved op back on its own kernel narrowed (`Kernel.narrow`: column bands,
    the same numbers for a few instructions more than whole rows, far fewer than the leanest variant's: VWW's
    first convolution on rgb3x3 in bands of 24 columns, 1,632 B of scratch, 0.64 M instructions where the blocked
    kernel took 1.72 M) as wide as the chosen plan still fits `arena_limit` with (the widest room found by
    bisection, each answer planned); the stages holding it are built again (a stage's scratch is its ops')."""
    for k in list(moved):
        own = graph.ops[k]
        dtypes = select.dtypes(graph, own)

        def placed(room: int):
            low = select.within_scratch(own, own.lowering, room, dtypes, None)
            if low.scratch_bytes > room:
                return None
            back = lean.replace_ops([dataclasses.replace(own, lowering=low) if j == k else op
                                     for j, op in enumerate(lean.ops)])
            again = [patching.build_stage(back, st.first, st.last, st.rows) if k in st.ops else st for st in stages]
            return (back, again) if planner.plan(back, exact=False, stages=again).arena_bytes <= arena_limit else None

        lo, hi, best = 0, own.lowering.scratch_bytes, None
        while lo <= hi:
            mid = (lo + hi) // 2
            got = placed(mid)
            if got is None:
                hi = mid - 1
            else:
                best, lo = got, mid + 1
        if best is not None:
            lean, stages = best
    return lean, stages, moved
