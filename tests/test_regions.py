"""Several RAM regions (edgec/plan/regions.py): the planner's placement over regions, the generated C with
its arena in pieces (host, bit-exact), board profiles' region fields, and the fit check per region."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import run_generated_c
from synthetic_models import cnn_nchw, quantized
from edgec.codegen import cmodel
from edgec import pipeline
from edgec.errors import EdgecError
from edgec.plan import planner, regions
from edgec.quant import reference
from edgec.fixedpoint import scheme
from edgec.targets import fit
from edgec.targets.boards import load_board, load_board_file


def _planned():
    graph, x = quantized(*cnn_nchw())
    graph = pipeline.lower(graph, "size")   # the generic kernels: buffer sizes these tests' cuts were chosen for
    graph = graph.replace_ops(planner.schedule(graph))
    return graph, x, planner.plan(graph)


def _live_bytes_per_piece(plan):
    return {p.name: sum(b.size for b in plan.buffers if p.base <= b.offset < p.base + max(p.bytes, 1))
            for p in plan.pieces}


def test_a_plan_too_big_for_one_region_uses_both_and_stays_valid():
    graph, _, plan = _planned()
    whole = plan.arena_bytes
    spaces = [regions.Space("A", "", whole // 2, speed=1), regions.Space("B", ".edgec_b", whole, speed=0)]
    split = regions.assign(graph, plan, spaces)
    planner.check_plan(graph, split)               # no two live buffers overlap in the logical offsets
    assert [p.name for p in split.pieces] == ["A", "B"]
    assert all(p.bytes > 0 for p in split.pieces)
    assert split.pieces[0].bytes <= whole // 2 and split.pieces[1].bytes <= whole
    assert split.arena_bytes == sum(p.bytes for p in split.pieces)
    for b in split.buffers:                        # no buffer straddles two pieces
        k = regions.piece_of(split, b.offset)
        assert b.offset + b.size <= split.pieces[k].base + split.pieces[k].bytes
    assert [r["region"] for r in split.to_json()["regions"]] == ["A", "B"]


def test_the_hottest_buffers_go_to_the_fastest_region():
    graph, _, plan = _planned()
    hottest = max(plan.buffers, key=lambda b: (regions.heat(graph, b), -b.size))
    # the fast region is listed second and holds only about a third of the arena
    spaces = [regions.Space("slow", "", plan.arena_bytes, speed=0),
              regions.Space("fast", ".edgec_fast", plan.arena_bytes // 3, speed=5)]
    split = regions.assign(graph, plan, spaces)
    fast = next(k for k, p in enumerate(split.pieces) if p.name == "fast")
    assert regions.piece_of(split, hottest.offset) == fast
    coolest = min(split.buffers, key=lambda b: regions.heat(graph, b))
    assert regions.heat(graph, coolest) <= regions.heat(graph, hottest)


def test_a_plan_that_fits_the_fastest_region_stays_one_arena_there():
    graph, _, plan = _planned()
    before = plan.arena_bytes
    spaces = [regions.Space("big", "", 10 * before, speed=0), regions.Space("tcm", ".edgec_tcm", 10 * before, speed=9)]
    one = regions.assign(graph, plan, spaces)
    assert [p.name for p in one.pieces] == ["tcm"] and one.pieces[0].section == ".edgec_tcm"
    assert min(b.offset for b in one.buffers) >= 0 and one.arena_bytes <= planner._align(before)
    assert ".edgec_tcm" in regions.linker_script(one) and "INSERT AFTER .bss" in regions.linker_script(one)


def test_one_region_or_the_arena_guard_leaves_the_plan_alone():
    graph, _, plan = _planned()
    assert regions.assign(graph, plan, [regions.Space("only", "", 1 << 20)]) is plan and not plan.pieces
    guarded = planner.plan(graph, guard=16)
    spaces = [regions.Space("A", "", 64), regions.Space("B", ".edgec_b", 1 << 20)]
    assert regions.assign(graph, guarded, spaces).pieces == []


def test_generated_c_with_the_arena_in_pieces_is_bit_exact(tmp_path):
    graph, x, plan = _planned()
    spaces = [regions.Space("A", "", plan.arena_bytes // 2), regions.Space("B", ".edgec_b", plan.arena_bytes)]
    split = regions.assign(graph, plan, spaces)
    assert len(split.pieces) == 2
    cmodel.generate(graph, split, tmp_path, graph.name)
    source = (tmp_path / f"{graph.name}.c").read_text()
    assert '__attribute__((section(".edgec_b")))' in source and "arena_1.bytes" in source
    assert (tmp_path / f"{graph.name}{regions.REGIONS_LD_SUFFIX}").is_file()
    xq = scheme.quantize_input(graph.tensors[graph.input], x[:8])
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    got = run_generated_c(tmp_path, graph.name, xq.reshape(len(xq), -1), want.shape[1])
    assert np.array_equal(got, want)


def _profile(tmp_path, text_from: str, **replace) -> object:
    text = load_board(text_from).path.read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "board.toml"
    path.write_text(text)
    return path


def test_region_fields_are_checked(tmp_path):
    board = load_board("nucleo-h743zi2")
    names = [r.name for r in board.arena_regions()]
    assert names[:2] == ["AXI-SRAM", "DTCM"]
    dtcm = board.arena_regions()[1]
    assert dtcm.speed > board.arena_regions()[0].speed and dtcm.section.startswith(".edgec_")
    bad = _profile(tmp_path, "qemu-cortex-m4-split", **{'section = ".edgec_ssram3"': 'section = ".data"'})
    with pytest.raises(EdgecError, match="section"):
        load_board_file(bad)


def test_the_fit_check_counts_each_region(tmp_path):
    graph, _, plan = _planned()
    board = load_board("qemu-cortex-m4-split")
    spaces = fit.region_spaces(graph, board)
    assert [s.name for s in spaces] == ["SSRAM2", "SSRAM3"]
    assert spaces[0].capacity == board.ram_bytes - fit.runtime_ram_bytes(graph) - fit.board_stack_bytes(board)
    split = regions.assign(graph, plan, [regions.Space("SSRAM2", "", 64, 0, 0x20000000, 49152),
                                         regions.Space("SSRAM3", ".edgec_ssram3", 10 ** 6, 0, 0x20200000, 64)])
    with pytest.raises(EdgecError, match="SSRAM3"):
        fit.check(graph, split, board)


def test_the_bench_report_shows_each_regions_piece():
    from edgec.bench.report import memory_rows
    est = {"ram": {"arena": 100, "runtime": 10, "stack": 20, "framework": 0, "total": 130, "board": 1000,
                   "regions": {"DTCM": {"arena": 4624, "board": 131072, "section": ".edgec_dtcm"}}}}
    rows = {what: (value, note) for what, value, note in memory_rows({"fit_estimate": est})}
    assert rows["fit estimate before building: arena in RAM region DTCM"] == \
        ("4,624 B", "linker section .edgec_dtcm; the region has 131,072 B")
    assert "regions" not in rows["fit estimate before building: ram"][1]


def test_when_heat_order_fragments_too_much_the_one_arena_is_cut_instead():
    """Regions whose sizes add up to the one arena: placing by heat alone can overflow (each piece needs its own
    peak); at some cut only the cut of the one-arena plan fits, and the result never overflows more than by heat."""
    graph, _, plan = _planned()
    ends = sorted({b.offset + planner._align(b.size) for b in plan.buffers} - {plan.arena_bytes})
    rescued = 0
    for cut in ends:
        spaces = [regions.Space("A", "", cut, speed=1), regions.Space("B", ".edgec_b", plan.arena_bytes - cut)]
        by_heat = [[], []]
        regions._by_heat(graph, planner.plan(graph).buffers, spaces, [0, 1], by_heat)
        heat_overflow = regions._overflow(by_heat, spaces)
        split = regions.assign(graph, planner.plan(graph), spaces)
        planner.check_plan(graph, split)
        overflow = sum(max(p.bytes - s.capacity, 0) for p, s in zip(split.pieces, spaces))
        assert overflow <= heat_overflow
        rescued += heat_overflow > 0 and overflow == 0 and "cut at the regions' sizes" in split.method
    assert rescued >= 1
