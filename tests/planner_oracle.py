"""A brute-force memory planner for tiny graphs, the oracle tests/test_planner.py holds edgec/plan/planner.py
to; not a test module. Independent of the planner: lifetimes and in-place rules come from the contract
(ALIAS_OPS share their input's bytes; an IN_PLACE_OPS op may write over a same-size input no later op reads;
a scratch buffer lives during its op), then every execution order, every choice of in-place pairs and
every placement order are tried.
"""
from __future__ import annotations

import itertools

from edgec.ir import Graph
from edgec.ops.registry import ALIAS_OPS, IN_PLACE_OPS
from edgec.plan.patching import scratch_bytes


def orders(g: Graph):
    """Every execution order the data dependencies allow."""
    writer = {op.output: i for i, op in enumerate(g.ops)}
    deps = [{writer[t] for t in op.inputs if t in writer} for op in g.ops]
    for perm in itertools.permutations(range(len(g.ops))):
        if all(deps[i] <= set(perm[:k]) for k, i in enumerate(perm)):
            yield [g.ops[i] for i in perm]


def lifetimes(g: Graph):
    """({group: [bytes, first op, last op]}, [(op, input group, output group) that may share bytes],
    {op: scratch bytes}) for the ops in their current order; a group is a tensor and its views."""
    root = {t: t for t in g.tensors}
    for op in g.ops:
        if op.kind in ALIAS_OPS:
            root[op.output] = root[op.inputs[0]]
    life, n = {}, len(g.ops)

    def touch(t, i):
        s = life.setdefault(root[t], [0, i, i])
        s[:] = [max(s[0], g.tensors[t].nbytes), min(s[1], i), max(s[2], i)]
    touch(g.input, -1)
    touch(g.output, n)
    for i, op in enumerate(g.ops):
        for t in (op.output, *op.inputs):
            touch(t, i)
    pairs = [(i, root[t], root[op.output]) for i, op in enumerate(g.ops) if op.kind in IN_PLACE_OPS
             for t in dict.fromkeys(op.inputs) if root[t] != root[op.output] and life[root[t]][2] == i
             and g.tensors[t].nbytes == g.tensors[op.output].nbytes == life[root[t]][0] == life[root[op.output]][0]]
    scratch = {i: scratch_bytes(g, op) for i, op in enumerate(g.ops) if scratch_bytes(g, op)}
    return life, pairs, scratch


def peak(g: Graph) -> int:
    """The most bytes live at once, an in-place output sharing its input's bytes where it can."""
    life, pairs, scratch = lifetimes(g)
    shared = {i: life[go][0] for i, _, go in pairs}
    return max(sum(s for s, a, b in life.values() if a <= i <= b) - shared.get(i, 0) + scratch.get(i, 0)
               for i in range(-1, len(g.ops) + 1))


def min_arena(items) -> int:
    """The smallest arena for (bytes, first, last) items: every placement order, each item at the lowest
    offset clear of the items before it that live at the same time (the optimum's order by offset is one)."""
    best = sum(s for s, _, _ in items)
    for perm in itertools.permutations(items):
        placed, top = [], 0
        for s, a, b in perm:
            off = 0
            for lo, hi in sorted((o, o + ps) for o, ps, pa, pb in placed if pa <= b and a <= pb):
                if off + s <= lo:
                    break
                off = max(off, hi)
            placed.append((off, s, a, b))
            top = max(top, off + s)
            if top >= best:
                break
        best = min(best, top)
    return best


def best_arena(g: Graph) -> int:
    """The smallest arena for the ops in their current order over every choice of in-place pairs (at most
    one overwritten input per op)."""
    life, pairs, scratch = lifetimes(g)
    best = None
    for chosen in itertools.product((False, True), repeat=len(pairs)):
        used = [p for p, c in zip(pairs, chosen) if c]
        if len({i for i, _, _ in used}) < len(used):
            continue
        root = {k: k for k in life}
        for _, gi, go in used:
            root[go] = gi
        merged = {}
        for k in life:
            r = k
            while root[r] != r:
                r = root[r]
            s = merged.setdefault(r, list(life[k]))
            s[:] = [max(s[0], life[k][0]), min(s[1], life[k][1]), max(s[2], life[k][2])]
        items = [tuple(v) for v in merged.values()] + [(s, i, i) for i, s in scratch.items()]
        arena = min_arena(items)
        best = arena if best is None else min(best, arena)
    return best
