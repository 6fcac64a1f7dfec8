"""The memory planner: execution order, in-place ops, scratch buffers, offsets (heuristics and exact search).

The central check (`simulate`) runs a plan on a model of the arena: every byte remembers which value was last
written to it; an op must find all its inputs intact, and its scratch must survive until its output is written.
It knows nothing about lifetimes or buffers, so it checks the planner instead of repeating it.
"""
from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckernels import make, ptr
from conftest import require_mlperf, MLPERF
from planner_oracle import best_arena, min_arena, orders, peak
from edgec.ir import Graph, Op, Tensor
from edgec.ops import binary, softmax
from edgec.ops.kernel import REFERENCE, Kernel, Lowering
from edgec.ops.registry import ALIAS_OPS, IN_PLACE_OPS
from edgec.plan import planner
from edgec.plan.patching import scratch_bytes

# a kernel that asks for scratch (the planner reads only a lowering's scratch bytes)
SCRATCH_KERNEL = Kernel("planner_test_kernel", ("conv2d",), REFERENCE, lambda op, low, site: "",
                        run=lambda op, inputs: inputs[0])


def make_graph(sizes: dict[str, int], ops: list[tuple], inp: str = "x", out: str | None = None) -> Graph:
    """A graph from {tensor: bytes} and (kind, [inputs], output[, scratch bytes]) tuples."""
    tensors = {n: Tensor(n, (1, s), n) for n, s in sizes.items()}
    graph_ops = [Op(kind=o[0], name=f"op_{o[2]}", inputs=tuple(o[1]), output=o[2],
                    lowering=Lowering(SCRATCH_KERNEL, {}, {}, o[3]) if len(o) > 3 else None) for o in ops]
    return Graph("g", tensors, tuple(graph_ops), inp, out or ops[-1][2])


def simulate(graph: Graph, plan: planner.Plan) -> None:
    """Run the plan on a tagged arena; AssertionError on any clobbered value or out-of-arena byte."""
    arena = np.full(plan.arena_bytes, -1, np.int64)
    value = {}                                   # tensor -> the tag its bytes must hold
    next_tag = iter(itertools.count())

    def span(name):
        off, size = plan.offsets[name], graph.tensors[name].size
        assert 0 <= off and off + size <= plan.arena_bytes, f"{name} leaves the arena"
        return slice(off, off + size)

    def write(name):
        value[name] = next(next_tag)
        arena[span(name)] = value[name]

    def intact(name, when):
        assert name in value, f"{name} read before it is written ({when})"
        assert np.all(arena[span(name)] == value[name]), f"{name} clobbered {when}"

    write(graph.input)
    for i, op in enumerate(graph.ops):
        if op.kind in ALIAS_OPS:
            intact(op.inputs[0], f"before view op {i}")
            assert plan.offsets[op.output] == plan.offsets[op.inputs[0]]
            value[op.output] = value[op.inputs[0]]
            continue
        scratch = scratch_bytes(graph, op)
        if scratch:
            off = plan.scratch[i]
            assert 0 <= off and off + scratch <= plan.arena_bytes
            arena[off:off + scratch] = tag = next(next_tag)
        for name in op.inputs:
            intact(name, f"by the scratch of op {i}")
        out = span(op.output)
        for name in op.inputs:
            same = plan.offsets[name] == plan.offsets[op.output] and graph.tensors[name].size == graph.tensors[op.output].size
            overlap = span(name).start < out.stop and out.start < span(name).stop
            assert not overlap or (same and op.kind in IN_PLACE_OPS), f"op {i} output overlaps input {name}"
        write(op.output)
        if scratch:
            assert np.all(arena[off:off + scratch] == tag), f"op {i} output overwrites its scratch"
    intact(graph.output, "at the end")


def test_greedy_by_size_trap_reaches_lower_bound():
    # The start of MobileNet (VWW, NHWC file): greedy by size alone needs 64,512 bytes; the bound is 55,296.
    g = make_graph({"x": 27648, "a": 18432, "b": 18432, "c": 36864, "d": 9216, "e": 18432},
                   [("conv2d", ["x"], "a"), ("depthwise_conv2d", ["a"], "b"), ("conv2d", ["b"], "c"),
                    ("depthwise_conv2d", ["c"], "d"), ("conv2d", ["d"], "e")])
    items = [(b.size, b.first, b.last) for b in planner.buffers(g)]
    by_size = planner._heuristic_orders(items)["size"]
    assert max(o + it[0] for o, it in zip(planner._place_greedy(items, by_size, True), items)) == 64512
    p = planner.plan(g)
    simulate(g, p)
    assert p.arena_bytes == p.lower_bound_bytes == 55296 and p.optimal


def _best_greedy(items):
    """The smallest arena any of the planner's greedy placements reaches."""
    return min(max(o + it[0] for o, it in zip(planner._place_greedy(items, order, fit), items))
               for order in planner._heuristic_orders(items).values() for fit in (True, False))


def _brute_force(items):
    """Smallest arena over every assignment of aligned offsets (tiny instances only)."""
    sizes = [s for s, _, _ in items]
    grid = range(0, sum(sizes) + 1, planner.ALIGN)
    best = sum(sizes)
    for offs in itertools.product(grid, repeat=len(items)):
        if max(o + s for o, s in zip(offs, sizes)) >= best:
            continue
        ok = all(offs[a] + items[a][0] <= offs[b] or offs[b] + items[b][0] <= offs[a]
                 for a, b in itertools.combinations(range(len(items)), 2)
                 if items[a][1] <= items[b][2] and items[b][1] <= items[a][2])
        if ok:
            best = max(o + s for o, s in zip(offs, sizes))
    return best


def _random_items(rng, n_max, t_max, units_max):
    """Random (aligned size, first, last) buffers."""
    items = []
    for _ in range(int(rng.integers(2 if n_max < 6 else 4, n_max + 1))):
        a, b = sorted(int(v) for v in rng.integers(0, t_max, size=2))
        items.append((16 * int(rng.integers(1, units_max + 1)), a, b))
    return items


def test_branch_and_bound_is_exact_on_small_instances():
    rng = np.random.default_rng(5)
    for _ in range(60):
        items = _random_items(rng, 5, 5, 3)
        greedy = _best_greedy(items)
        arena, offsets, finished = planner._branch_and_bound(items, greedy + 16, 0, max_nodes=10**7)
        assert finished and offsets is not None
        assert arena == _brute_force(items)


def test_exact_search_improves_on_the_heuristics():
    # Lifetimes arranged so that greedy placement leaves a hole: found by exhaustive search over tiny cases.
    rng = np.random.default_rng(0)
    for _ in range(3000):
        items = _random_items(rng, 6, 6, 4)
        bufs = [planner.Buffer([f"t{k}"], s, a, b) for k, (s, a, b) in enumerate(items)]
        greedy = _best_greedy(items)
        arena, method, optimal = planner.place(bufs)
        assert optimal and arena <= greedy
        if arena < greedy:
            assert method == "branch and bound"
            for a, b in itertools.combinations(bufs, 2):
                if a.overlaps_in_time(b):
                    assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset
            return
    pytest.fail("no instance where the heuristics miss the optimum: the exact search is never exercised")


def test_schedule_runs_one_branch_to_the_end_first():
    # two branches, each a big intermediate and a small result; interleaving them holds both big ones
    sizes = {"x": 100, "a1": 400, "b1": 400, "a2": 16, "b2": 16, "y": 16}
    g = make_graph(sizes, [("conv2d", ["x"], "a1"), ("conv2d", ["x"], "b1"), ("conv2d", ["a1"], "a2"),
                           ("conv2d", ["b1"], "b2"), ("add", ["a2", "b2"], "y")])
    before = planner.plan(g)
    assert before.lower_bound_bytes >= 900
    g = g.replace_ops(planner.schedule(g))
    order = [op.output for op in g.ops]
    assert order.index("a2") < order.index("b1") or order.index("b2") < order.index("a1")
    after = planner.plan(g)
    simulate(g, after)
    assert after.arena_bytes == after.lower_bound_bytes <= 528


def test_schedule_keeps_a_good_order():
    g = make_graph({"x": 64, "a": 64, "b": 64}, [("conv2d", ["x"], "a"), ("conv2d", ["a"], "b")])
    assert tuple(planner.schedule(g)) == g.ops


def test_add_writes_over_its_dying_operand():
    # residual block: y = conv(conv(x)) + x; x dies at the add, so the sum goes into x's bytes
    g = make_graph({"x": 1024, "a": 1024, "b": 1024, "y": 1024, "z": 64},
                   [("conv2d", ["x"], "a"), ("conv2d", ["a"], "b"), ("add", ["b", "x"], "y"),
                    ("conv2d", ["y"], "z")])
    p = planner.plan(g)
    simulate(g, p)
    assert p.offsets["y"] in (p.offsets["b"], p.offsets["x"])
    assert planner.live_set_lower_bound(g) == 3072 and p.arena_bytes == 3072
    # an operand still needed later is never overwritten
    g2 = make_graph({"x": 1024, "a": 1024, "y": 1024, "z": 1024},
                    [("conv2d", ["x"], "a"), ("add", ["a", "x"], "y"), ("add", ["y", "x"], "z")])
    p2 = planner.plan(g2)
    simulate(g2, p2)
    assert p2.offsets["y"] == p2.offsets["a"] != p2.offsets["x"]


def test_in_place_add_goes_below_the_live_set_bound():
    # the add is the peak: a, b and the sum are live at once unless the sum overwrites a dying operand
    g = make_graph({"x": 16, "a": 512, "b": 512, "y": 512},
                   [("conv2d", ["x"], "a"), ("conv2d", ["a"], "b"), ("add", ["a", "b"], "y")])
    p = planner.plan(g)
    simulate(g, p)
    assert planner.live_set_lower_bound(g) == 1536 and p.arena_bytes == 1024
    g2 = make_graph({"x": 16, "a": 512, "y": 512}, [("conv2d", ["x"], "a"), ("add", ["a", "a"], "y")])
    p2 = planner.plan(g2)
    simulate(g2, p2)
    assert planner.live_set_lower_bound(g2) == 1024 and p2.arena_bytes == 528


def test_scratch_lives_during_its_op_only():
    g = make_graph({"x": 256, "a": 256, "b": 256, "c": 256},
                   [("conv2d", ["x"], "a", 512), ("conv2d", ["a"], "b"), ("conv2d", ["b"], "c", 512)])
    p = planner.plan(g)
    simulate(g, p)
    assert set(p.scratch) == {0, 2}
    scratch = [b for b in p.buffers if b.scratch_op is not None]
    assert [(b.first, b.last, b.size) for b in scratch] == [(0, 0, 512), (2, 2, 512)]
    assert p.arena_bytes == 1024     # 2 tensors + one scratch at a time, the two scratches share bytes
    assert p.to_json()["buffers"][0]["tensors"]
    assert any(b.get("scratch_op") == 2 for b in p.to_json()["buffers"])


def test_softmax_and_views_share_bytes():
    g = make_graph({"x": 640, "a": 40, "r": 40, "y": 40},
                   [("fully_connected", ["x"], "a"), ("reshape", ["a"], "r"), ("softmax", ["r"], "y")])
    p = planner.plan(g)
    simulate(g, p)
    assert p.offsets["a"] == p.offsets["r"] == p.offsets["y"]


def test_in_place_kernels_are_safe_in_place(ck):
    """edgec_add_s8 and edgec_softmax_s8 give the reference result with output == an input."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(1, 300))
        a, b = (rng.integers(-128, 128, size=n, dtype=np.int8) for _ in range(2))
        s1, s2, so = np.exp(rng.uniform(-5, 0, size=3))
        z1, z2, zo = (int(v) for v in rng.integers(-128, 128, size=3))
        p = binary.add_params(s1, z1, s2, z2, so, zo)
        want = binary.add_s8(p, a, b)
        for which in (0, 1, 2):
            x, y = a.copy(), (a.copy() if which == 2 else b.copy())
            dst = y if which == 1 else x
            ck.lib.edgec_add_s8(ctypes.byref(make("edgec_add_params", dict(p, n=n))), ptr(x), ptr(y), ptr(dst))
            assert np.array_equal(dst, want if which < 2 else binary.add_s8(p, a, a))
        rows, cols = int(rng.integers(1, 4)), int(rng.integers(1, 40))
        x = rng.integers(-128, 128, size=(rows, cols), dtype=np.int8)
        table = softmax.softmax_table(float(rng.uniform(0.01, 0.5)))
        want = softmax.softmax_s8(x, table)
        buf = np.ascontiguousarray(x)
        tab = np.ascontiguousarray(table, np.uint32)
        ck.lib.edgec_softmax_s8(ctypes.byref(make("edgec_softmax_params", dict(rows=rows, cols=cols))), ptr(buf),
                                ptr(tab), ptr(buf))
        assert np.array_equal(buf, want)


# ---------------------------------------------------------------- property test on random graphs

KINDS = ["conv2d", "add", "softmax", "reshape", "max_pool", "fully_connected"]


@st.composite
def random_graphs(draw):
    sizes = {"t0": draw(st.integers(1, 300))}
    ops = []
    for k in range(1, draw(st.integers(1, 14)) + 1):
        names = list(sizes)
        kind = draw(st.sampled_from(KINDS))
        a = draw(st.sampled_from(names))
        out = f"t{k}"
        if kind == "add":
            same = [n for n in names if sizes[n] == sizes[a]]
            ops.append(("add", [a, draw(st.sampled_from(same))], out))
            sizes[out] = sizes[a]
        elif kind in ("softmax", "reshape"):
            ops.append((kind, [a], out))
            sizes[out] = sizes[a]
        else:
            sizes[out] = draw(st.integers(1, 300))
            scratch = draw(st.sampled_from([0, 0, 0, 1, 40, 200]))
            ops.append((kind, [a], out, scratch) if scratch else (kind, [a], out))
    return make_graph(sizes, ops, "t0", draw(st.sampled_from([o[2] for o in ops])))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs())
def test_random_graphs_never_clobber_a_live_value(g):
    own = list(g.ops)
    g = g.replace_ops(planner.schedule(g))
    assert sorted(map(id, g.ops)) == sorted(map(id, own))     # a permutation (simulate checks dependencies)
    p = planner.plan(g)
    planner.check_plan(g, p)
    simulate(g, p)
    assert p.arena_bytes >= p.lower_bound_bytes
    for b in p.buffers:                      # everything inside the arena, aligned
        assert 0 <= b.offset and b.offset + b.size <= p.arena_bytes and b.offset % planner.ALIGN == 0
    for a, b in itertools.combinations(p.buffers, 2):
        if a.overlaps_in_time(b):
            assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset


# ---------------------------------------------------------------- the MLPerf Tiny models

@pytest.mark.parametrize("model", ["kws_dscnn_fp32", "vww_mobilenetv1_025_fp32", "vww_mobilenetv1_025_fp32_nchw",
                                   "ic_resnet8_fp32", "ad_fc_autoencoder_fp32"])
def test_mlperf_arena_within_2k_of_the_live_set_bound(model):
    from edgec.frontend import canonicalize
    from edgec.frontend import loader
    path = MLPERF / f"{model}.onnx"
    require_mlperf(path)
    g = canonicalize.canonicalize(loader.load_model(path), model)
    bound = planner.live_set_lower_bound(g)
    assert bound == {"kws": 16000, "vww": 55296, "ic_": 49152, "ad_": 768}[model[:3]]   # the live-set bounds of docs/memory.md
    g = g.replace_ops(planner.schedule(g))
    p = planner.plan(g)
    planner.check_plan(g, p)
    simulate(g, p)
    assert p.arena_bytes <= bound + 2048


def test_many_branches_use_the_beam_and_stay_valid():
    # 8 parallel chains of 8 ops summed up: far too many partial schedules for the exact order search
    sizes, ops, ends = {"x": 64}, [], []
    for b in range(8):
        prev = "x"
        for k in range(8):
            t = f"b{b}_{k}"
            sizes[t] = 32 if k == 7 else 64 * (1 + (b * 7 + k * 3) % 5)
            ops.append(("conv2d", [prev], t))
            prev = t
        ends.append(prev)
    acc = ends[0]
    for k, e in enumerate(ends[1:]):
        ops.append(("add", [acc, e], f"s{k}"))
        sizes[f"s{k}"] = 32
        acc = f"s{k}"
    g = make_graph(sizes, ops)
    own_peak = planner.plan(g).lower_bound_bytes
    g = g.replace_ops(planner.schedule(g))
    p = planner.plan(g)
    simulate(g, p)
    assert p.lower_bound_bytes <= own_peak
    assert [op.output for op in g.ops][-1] == acc


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs())
def test_random_graphs_with_the_arena_guard_keep_canaries_private(g):
    """Arena guard layout (edgec/plan/guard.py): every buffer, scratch and in-place outputs included, owns GUARD bytes
    on either side that no buffer alive at the same time touches, and the arena's own canaries touch nothing."""
    from edgec.plan import guard
    g = g.replace_ops(planner.schedule(g))
    p = planner.plan(g, guard=guard.GUARD_BYTES)
    planner.check_plan(g, p)
    simulate(g, p)
    n = len(g.ops)
    regions = guard.regions(g, p)
    assert any(b.scratch_op is not None for b in p.buffers) or all(op.lowering is None for op in g.ops)
    for off, size, first, last in regions:
        assert 0 <= off and off + size <= p.arena_bytes
        for b in p.buffers:
            if b.first <= last and first <= b.last:
                assert off + size <= b.offset or b.offset + b.size <= off, (off, size, first, last, b)
    for (o1, s1, f1, l1), (o2, s2, f2, l2) in itertools.combinations(regions, 2):
        if f1 <= l2 and f2 <= l1:
            assert o1 + s1 <= o2 or o2 + s2 <= o1
    assert regions[0][2:] == (-1, n) and regions[1][2:] == (-1, n)


# ---------------------------------------------------------------- brute force on small random graphs
# (tests/planner_oracle.py: every execution order, every choice of in-place pairs, exhaustive placement)

def small_graph(rng) -> Graph:
    """3-5 ops over tensors of 16-48 bytes (no alignment slack): convs (some with scratch), adds and softmaxes
    (in place), reshapes (views); the output is usually the last op's, sometimes an earlier one's."""
    sizes, ops = {"t0": 16 * int(rng.integers(1, 4))}, []
    for k in range(1, int(rng.integers(3, 6)) + 1):
        names = list(sizes)
        a, kind, out = names[int(rng.integers(len(names)))], str(rng.choice(KINDS[:4] + ["conv2d"])), f"t{k}"
        if kind == "add":
            same = [n for n in names if sizes[n] == sizes[a]]
            ops.append(("add", [a, same[int(rng.integers(len(same)))]], out))
        elif kind in ("softmax", "reshape"):
            ops.append((kind, [a], out))
        else:
            scratch = 16 * int(rng.choice([0, 0, 1, 2]))
            ops.append((kind, [a], out, scratch) if scratch else (kind, [a], out))
        sizes[out] = sizes[a] if kind != "conv2d" else 16 * int(rng.integers(1, 4))
    outs = [o[2] for o in ops]
    return make_graph(sizes, ops, "t0", outs[int(rng.integers(len(outs)))] if rng.random() < 0.3 else outs[-1])


def test_schedule_reaches_the_smallest_peak_of_every_order():
    rng = np.random.default_rng(21)
    for _ in range(60):
        g = small_graph(rng)
        best = min(peak(Graph(g.name, g.tensors, tuple(order), g.input, g.output)) for order in orders(g))
        g = g.replace_ops(planner.schedule(g))
        assert peak(g) == best, [(op.kind, op.inputs, op.output, op.attrs) for op in g.ops]


def test_place_and_plan_match_exhaustive_search():
    """place() on the planner's buffers (in-place outputs merged, scratch included) against every placement;
    plan() against every placement over every choice of in-place pairs."""
    rng = np.random.default_rng(22)
    checked = 0
    while checked < 40:
        g = small_graph(rng)
        g = g.replace_ops(planner.schedule(g))
        bufs = planner.buffers(g)
        if len(bufs) > 6:                       # 6! placement orders at most
            continue
        arena, _, _ = planner.place(bufs)
        assert arena == min_arena([(b.size, b.first, b.last) for b in bufs])
        p = planner.plan(g)
        simulate(g, p)
        assert p.arena_bytes == best_arena(g)
        checked += 1
