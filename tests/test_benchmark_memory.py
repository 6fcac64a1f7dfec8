"""benchmarks/memory.py's table: the device RAM columns, the --ram-budget columns and their latency cost, and
where each TFLM figure comes from (the M4 ones measured by benchmarks/peers.py, empty when TFLM did not run)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "memory.py"


def _load():
    spec = importlib.util.spec_from_file_location("memory_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_has_device_ram_budget_and_sourced_tflm_columns():
    m = _load()
    row = {"key": "kws", "title": "KWS DS-CNN", "bound": 16000, "arena": 16976,
           "device": {"static": 17664, "stack": 512, "total": 18176, "insns": 4377320.0},
           "budget": {"arena": 12000, "total": 13000, "insns": 4800000.0},
           "tflm": {"total": 24272, "source": "landscape.md"},
           "tflm_m4": {"arena_bytes": 22832, "ram_total_bytes": 24996}}
    header, _, line = m.table([row], 40960)
    cells = [c.strip() for c in line.strip("|").split("|")]
    cols = [c.strip() for c in header.strip("|").split("|")]
    got = dict(zip(cols, cells))
    assert got["total device RAM"] == "18,176" and got["insns / inference"] == "4,377,320"
    assert got["arena @ 40,960"] == "12,000" and got["latency cost"] == f"{4800000 / 4377320:.3f}x"
    assert got["TFLM x86 arena"] == "24,272 (landscape.md)" and got["TFLM M4 arena"] == "22,832"
    assert got["TFLM M4 total"] == "24,996"
    assert "arena @ 40,960" not in m.table([row], None)[0]
    peerless = m.table([dict(row, tflm_m4={"error": "no bundle"})], None)[2]
    assert peerless.endswith("| 24,272 (landscape.md) | n/a | n/a |"), peerless


def test_the_budget_goes_through_to_the_build_when_edgec_has_it(monkeypatch):
    m = _load()
    seen = {}

    def fake_build(model, calib, board, out, ram_budget=None):
        seen["ram_budget"] = ram_budget
        return {"memory": {"arena_bytes": 1}}

    def fake_bench(out, data, limit, report_dir):
        return {"memory": {"static_ram_bytes": 10, "stack_used_bytes": 2, "total_ram_bytes": 12},
                "latency": {"median": 5.0}, "agreement": {"device_vs_reference": 1.0}}

    monkeypatch.setattr(m.api, "build", fake_build)
    monkeypatch.setattr(m.api, "bench", fake_bench)
    assert "ram_budget" in m.build_options_accepted()
    r = m.device_run(Path("x.onnx"), Path("c.npz"), Path("out"), ram_budget=40960)
    assert seen["ram_budget"] == 40960 and r["total"] == 12 and r["insns"] == 5.0
