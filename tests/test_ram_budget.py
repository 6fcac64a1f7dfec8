"""The RAM budget's choices (edgec/plan/ram_budget.py): under a budget no schedule of the speed kernels reaches,
ops with a large kernel scratch move to the offered variant with the least (lean_scratch, choose_lean) and back to
their own kernel on column bands where the plan leaves the room, and a
stage cut in two where that lowers the arena (VWW's first convolution alone, written over the model's input).
The patched plans' values are checked in tests/test_patching.py; here the generated C of a lean plan too."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import make_model, run_generated_c
from edgec.codegen import cmodel
from edgec.errors import EdgecError
from edgec.fixedpoint import scheme
from edgec.plan import planner, ram_budget
from edgec.quant import reference
from synthetic_models import W, quantized

H, WIDTH = 24, 64


@pytest.fixture(scope="module")
def first_conv_net():
    """An image model's start: a 3x3 stride-2 convolution of a 3-channel input (the window kernel: an input ring
    of over 1 KB of scratch), a depthwise 3x3 and a 1x1 convolution, global pooling, a dense layer."""
    inits = {"w1": W(8, 3, 3, 3), "b1": W(8, scale=0.1), "w2": W(8, 1, 3, 3), "b2": W(8, scale=0.1),
             "w3": W(16, 8, 1, 1), "b3": W(16, scale=0.1), "wf": W(3, 16), "bf": W(3)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1] * 4, name="conv1"),
             helper.make_node("Relu", ["c1"], ["a1"], name="relu1"),
             helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"], pads=[1] * 4, group=8, name="dw2"),
             helper.make_node("Relu", ["c2"], ["a2"], name="relu2"),
             helper.make_node("Conv", ["a2", "w3", "b3"], ["c3"], name="pw3"),
             helper.make_node("Relu", ["c3"], ["a3"], name="relu3"),
             helper.make_node("GlobalAveragePool", ["a3"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    graph, x = quantized(make_model(nodes, ("x", [1, 3, H, WIDTH]), ("y", [1, 3]), inits), (3, H, WIDTH), n=8)
    graph = graph.replace_ops(planner.schedule(graph))
    return graph, scheme.quantize_input(graph.tensors[graph.input], x[:2])


def test_lean_scratch_moves_large_scratch_onto_the_leanest_offered_variant(first_conv_net):
    graph, _ = first_conv_net
    lean, moved = ram_budget.lean_scratch(graph)
    assert moved, [(op.name, op.lowering and op.lowering.scratch_bytes) for op in graph.ops]
    for k in moved:
        before, after = graph.ops[k].lowering, lean.ops[k].lowering
        assert before.scratch_bytes > ram_budget.LEAN_SCRATCH and after.scratch_bytes < before.scratch_bytes
        assert after.variant in before.variants and after.variants == before.variants
    untouched = [k for k in range(len(graph.ops)) if k not in moved]
    assert all(lean.ops[k] is graph.ops[k] for k in untouched)
    assert planner.plan(lean, exact=False).arena_bytes < planner.plan(graph, exact=False).arena_bytes


def test_choose_lean_fits_a_budget_only_the_lean_kernels_reach(first_conv_net, tmp_path):
    graph, xq = first_conv_net
    lean, _ = ram_budget.lean_scratch(graph)
    least = min(r.arena_bytes for r in ram_budget.memory_ladder(lean))
    assert least < min(r.arena_bytes for r in ram_budget.memory_ladder(graph))
    with pytest.raises(EdgecError, match="does not fit --ram-budget"):
        ram_budget.choose(graph, least, None)
    built, stages, summary = ram_budget.choose_lean(graph, least, None)
    assert summary["lean_scratch_ops"] and summary["arena_bytes"] <= least
    p = planner.plan(built, stages=stages)
    planner.check_plan(built, p)
    assert p.arena_bytes <= least
    cmodel.generate(built, p, tmp_path, built.name)        # the lean variants' generated C is bit-exact
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    for flags in (("-O2",), ("-O2", "-DEDGEC_EMULATE_DSP")):
        got = run_generated_c(tmp_path, built.name, xq.reshape(len(xq), -1), want.shape[1], flags=flags)
        assert np.array_equal(got, want), flags


def test_choose_lean_puts_a_moved_op_back_on_its_own_kernel_in_column_bands(first_conv_net, tmp_path):
    """Where the lean plan leaves room, the op moved off its kernel goes back to it on column bands
    (`Kernel.narrow`, _own_narrowed: the window kernel, not blocked) as wide as the plan still fits the budget: wider
    bands with more room; whole rows would not fit. Its generated C is bit-exact."""
    graph, xq = first_conv_net
    lean, moved = ram_budget.lean_scratch(graph)
    least = min(r.arena_bytes for r in ram_budget.memory_ladder(lean))
    widths = []
    for budget in (least, least + 1536):
        built, stages, summary = ram_budget.choose_lean(graph, budget, None)
        (k,) = moved
        own, low = graph.ops[k].lowering, built.ops[k].lowering
        assert lean.ops[k].lowering.variant == "blocked" and low.variant == own.variant, summary
        assert [o["band_w"] for o in summary["lean_scratch_ops"]] == [low.params["band_w"]] and \
            low.params["band_w"] < own.params["band_w"] and low.scratch_bytes > lean.ops[k].lowering.scratch_bytes
        p = planner.plan(built, stages=stages)
        assert p.arena_bytes <= budget and summary["arena_bytes"] <= budget
        whole = built.replace_ops([graph.ops[k] if j == k else op for j, op in enumerate(built.ops)])
        assert planner.plan(whole, exact=False, stages=stages).arena_bytes > budget
        widths.append(low.params["band_w"])
    assert widths[0] < widths[1]
    cmodel.generate(built, p, tmp_path, built.name)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    for flags in (("-O2",), ("-O2", "-DEDGEC_EMULATE_DSP")):
        got = run_generated_c(tmp_path, built.name, xq.reshape(len(xq), -1), want.shape[1], flags=flags)
        assert np.array_equal(got, want), flags


def test_choose_lean_keeps_the_speed_kernels_when_they_fit(first_conv_net):
    graph, _ = first_conv_net
    fastest = planner.plan(graph, exact=False).arena_bytes
    built, stages, summary = ram_budget.choose_lean(graph, fastest, None)
    assert built is graph and stages == [] and "lean_scratch_ops" not in summary


def test_split_takes_the_best_cut_of_a_stage(first_conv_net):
    """_split cuts a stage in two where that lowers the arena: no worse than the whole stage nor than the best
    single cut (found here by trying every one), the same ops covered, each piece a stage of its own."""
    from edgec.plan import patching
    graph, _ = first_conv_net
    n = len(graph.ops)
    a, b = max(((a, b) for a in range(n) for b in range(a + 1, n) if patching.can_stage(graph, a, b)),
               key=lambda ab: ab[1] - ab[0])
    whole = patching.build_stage(graph, a, b, 1)
    rung = ram_budget.Rung(planner.plan(graph, exact=False, stages=[whole]).arena_bytes, 0, [whole])
    cuts = [planner.plan(graph, exact=False, stages=[patching.build_stage(graph, a, m, 1),
                                                     patching.build_stage(graph, m + 1, b, 1)]).arena_bytes
            for m in range(a, b) if patching.can_stage(graph, a, m) and patching.can_stage(graph, m + 1, b)]
    got = ram_budget._split(graph, rung, {})
    assert got.arena_bytes <= min([rung.arena_bytes, *cuts])
    assert [k for st in got.stages for k in st.ops] == list(range(a, b + 1))
    assert got.arena_bytes == planner.plan(graph, exact=False, stages=got.stages).arena_bytes


def test_a_stage_with_the_fused_depthwise_runs_in_bands_of_several_rows(first_conv_net, tmp_path):
    """The fused depthwise kernel takes the image's top and bottom padding into its edge weight sets; a band of the
    image takes them only on the image's own first and last rows (depthwise3x3.band_flags), so bands of any height
    are bit-exact in the generated C (2 rows: wrong until h49-dwband, when a stage holding such a layer kept bands
    of 1 row; 3: an odd height; the last band's first input row a multiple of 3 at 2 rows, not at 3), and
    _fewer_calls gives such a stage more rows per band again."""
    from edgec.ops.conv.depthwise3x3 import FUSED, edge_rows
    from edgec.plan import patching
    graph, xq = first_conv_net
    k = next(i for i, op in enumerate(graph.ops) if op.lowering is not None and op.lowering.kernel is FUSED)
    assert edge_rows(graph.ops[k].lowering.params)
    one = patching.build_stage(graph, k, k, 1)
    room = planner.plan(graph, exact=False).arena_bytes      # the unpatched plan's: room for bands of 2
    rung = ram_budget.Rung(room, patching.extra_cost(graph, one), [one])
    assert [s.rows for s in ram_budget._fewer_calls(graph, rung, {}).stages] > [1]
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    for rows in (2, 3):
        p = planner.plan(graph, stages=[patching.build_stage(graph, k, k, rows)])
        out = tmp_path / f"rows{rows}"
        cmodel.generate(graph, p, out, graph.name)
        assert "edgec_depthwise_conv2d_3x3_fused_band_" in (out / f"{graph.name}.c").read_text()
        got = run_generated_c(out, graph.name, xq.reshape(len(xq), -1), want.shape[1], flags=("-O2",))
        assert np.array_equal(got, want), rows
