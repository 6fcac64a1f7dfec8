"""An arena split over two RAM regions, run bit-exact on the emulated two-region board (qemu-cortex-m4-split with
regions made small enough that the digits model's arena fits neither alone), and the device RAM figures the
bench reports (static RAM from the ELF, stack high-water mark measured on the device, their sum)."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import EXAMPLES
from edgec import api
from edgec.targets import fit
from edgec.targets.boards import load_board, load_board_file

DIGITS = EXAMPLES / "digits_cnn"
SECOND_REGION_BYTES = 8192


def _small_split_profile(folder, first_bytes: int):
    """qemu-cortex-m4-split with its two regions shrunk: first_bytes for SSRAM2, SECOND_REGION_BYTES for SSRAM3."""
    text = load_board("qemu-cortex-m4-split").path.read_text()
    first, second = text.index('name = "SSRAM2"'), text.index('name = "SSRAM3"')
    text = (text[:first].replace("ram_bytes = 49152", f"ram_bytes = {first_bytes}")
            + text[first:second].replace("size = 49152", f"size = {first_bytes}")
            + text[second:].replace("size = 49152", f"size = {SECOND_REGION_BYTES}"))
    path = folder / "split.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def split_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    from edgec import pipeline
    _, graph, plan = pipeline.compile_model(DIGITS / "model.onnx", DIGITS / "calib.npz", lambda *a: None, None)
    board = load_board("qemu-cortex-m4-split")
    # the firmware's own RAM plus half the model's one-region arena: the arena cannot fit the first region alone
    first = fit.runtime_ram_bytes(graph) + fit.board_stack_bytes(board) + plan.arena_bytes // 2
    profile = _small_split_profile(root, (first + 15) // 16 * 16)
    assert fit.region_spaces(graph, load_board_file(profile))[0].capacity < plan.arena_bytes
    out = root / "build"
    report = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", str(profile), out)
    bench = api.bench(out, DIGITS / "test.npz", limit=24)
    return report, out, bench, plan.arena_bytes


def _sections(elf) -> dict[str, tuple[int, int]]:
    out = subprocess.run(["arm-none-eabi-size", "-A", "-d", str(elf)], check=True, capture_output=True, text=True)
    rows = [line.split() for line in out.stdout.splitlines()]
    return {r[0]: (int(r[1]), int(r[2])) for r in rows if len(r) == 3 and r[0].startswith(".") and r[1].isdigit()}


def _symbol_address(elf, name: str) -> int:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], check=True, capture_output=True, text=True).stdout
    return next(int(p[0], 16) for p in (line.split() for line in out.splitlines()) if len(p) == 3 and p[2] == name)


def test_the_split_arena_uses_both_regions_and_runs_bit_exact(split_build):
    report, out, bench, _ = split_build
    plan = json.loads((out / "plan.json").read_text())
    regions = {r["region"]: r for r in plan["regions"]}
    assert set(regions) == {"SSRAM2", "SSRAM3"} and all(r["bytes"] > 0 for r in regions.values())
    elf = out / report["firmware"]
    sections = _sections(elf)
    size, address = sections[".edgec_ssram3"]
    assert address == 0x20200000 and size == regions["SSRAM3"]["bytes"] <= SECOND_REGION_BYTES
    assert 0x20000000 <= _symbol_address(elf, "arena") < 0x20200000
    assert _symbol_address(elf, "arena_1") == 0x20200000
    assert bench["agreement"]["device_vs_reference"] == 1.0 and bench["samples"] == 24
    assert "SSRAM3" in (out / "memory.svg").read_text()


def test_device_ram_is_static_plus_measured_stack(split_build):
    report, out, bench, _ = split_build
    m = bench["memory"]
    sections = _sections(out / report["firmware"])
    assert m["static_ram_bytes"] == sum(sections[s][0] for s in (".data", ".bss", ".edgec_ssram3"))
    assert 0 < m["stack_used_bytes"] < m["stack_reserved_bytes"] < m["static_ram_bytes"] + m["stack_reserved_bytes"]
    assert m["total_ram_bytes"] == m["static_ram_bytes"] + m["stack_used_bytes"]
    assert m["total_ram_bytes"] < load_board("qemu-cortex-m4-split").ram_bytes + SECOND_REGION_BYTES


@pytest.mark.sweep
@pytest.mark.parametrize("key", ["vww", "ic"])
def test_mlperf_models_too_big_for_one_region_run_bit_exact_over_two(key, mlperf_build):
    """Acceptance-scale: VWW and IC, whose arenas fit neither 48 KB region of qemu-cortex-m4-split alone, built
    with the profile as shipped and run bit-exact over both regions."""
    report, out, test = mlperf_build(key, "qemu-cortex-m4-split")
    board = load_board("qemu-cortex-m4-split")
    plan = json.loads((out / "plan.json").read_text())
    assert len(plan["regions"]) == 2 and all(r["bytes"] > 0 for r in plan["regions"])
    assert report["memory"]["arena_bytes"] > max(r.size for r in board.arena_regions()) - fit.board_stack_bytes(board)
    r = api.bench(out, test)
    assert r["agreement"]["device_vs_reference"] == 1.0
    print(f"\n[{key} on qemu-cortex-m4-split] regions {[(x['region'], x['bytes']) for x in plan['regions']]}, "
          f"static RAM {r['memory']['static_ram_bytes']:,} B, stack {r['memory']['stack_used_bytes']} B, "
          f"{r['latency']['median']:,.0f} instructions")
