"""benchmarks/corpus_sweep.py: one row a model from a checkout's api.build and api.bench (an error a row, not the
end of the run), resumable JSON lines, and the before/after table flagging what rose."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "corpus_sweep.py"


def _load():
    spec = importlib.util.spec_from_file_location("corpus_sweep_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeApi:
    def __init__(self):
        self.calls = []

    def build(self, path, calib, board, out):
        self.calls.append((Path(path).name, calib and Path(calib).name, board))
        if "broken" in str(path):
            raise ValueError("first line\nedgec cannot honour 1 operator(s)")
        return {"memory": {"arena_bytes": 64}}

    def bench(self, out, data, limit):
        assert limit == 1 and np.load(data)["x"].shape[0] == 1
        return {"latency": {"median": 1040.0, "cycles_estimate": {"plugin_instructions_median": 1023.0}},
                "memory": {"total_ram_bytes": 1036, "stack_used_bytes": 316, "flash_bytes": 8740},
                "agreement": {"device_vs_reference": 1.0}}


def test_measure_rows_and_errors(tmp_path):
    m = _load()
    for name, oracle in (("a", {"x": np.ones((3, 4), np.float32)}),
                         ("b", {"x_q": np.ones((2, 4), np.int8), "x_zero_point": 1, "x_scale": 0.5}),
                         ("broken", {"x": np.ones((1, 4), np.float32)})):
        (tmp_path / name).mkdir()
        np.savez(tmp_path / name / "oracle.npz", **oracle)
    api = FakeApi()
    a = m.measure(api, {"name": "a", "file": "a/model.onnx", "format": "onnx"}, tmp_path, "qemu-cortex-m4", tmp_path / "w")
    b = m.measure(api, {"name": "b", "file": "b/model.tflite", "format": "tflite"}, tmp_path, "qemu-cortex-m4",
                  tmp_path / "w")
    bad = m.measure(api, {"name": "broken", "file": "broken/model.tflite", "format": "tflite"}, tmp_path,
                    "qemu-cortex-m4", tmp_path / "w")
    assert a["instr"] == 1023.0 and a["exact"] and a["ram"] == 1036 and a["stack"] == 316 and a["arena"] == 64
    assert api.calls[0] == ("model.onnx", "calib.npz", "qemu-cortex-m4") and api.calls[1][1] is None
    assert b["flash"] == 8740 and bad["error"] == "edgec cannot honour 1 operator(s)" and "instr" not in bad
    assert np.allclose(m.first_sample(np.load(tmp_path / "b" / "oracle.npz")), 0.0)


def test_compare_flags_what_rose_and_skips_what_either_could_not_build(tmp_path):
    m = _load()
    before = {"x": {"name": "x", "instr": 100, "ram": 50, "stack": 10, "flash": 7},
              "y": {"name": "y", "instr": 100, "ram": 50, "stack": 10, "flash": 7},
              "z": {"name": "z", "error": "cannot"}}
    after = {"x": {"name": "x", "instr": 90, "ram": 50, "stack": 12, "flash": 9, "agree": 1.0},
             "y": {"name": "y", "instr": 101, "ram": 49, "stack": 9, "flash": 7, "agree": 1.0},
             "z": {"name": "z", "instr": 1, "ram": 1, "stack": 1, "flash": 1}}
    text, above = m.compare(before, after)
    assert above == ["y"]
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()[2:]}
    assert set(rows) == {"x", "y"}
    assert "| 100 / 90 |" in rows["x"] and "**10 / 12**" in rows["x"] and "**100 / 101**" in rows["y"]
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in after.values()) + "\n")
    assert m.load(jsonl)["y"]["instr"] == 101 and m.load(tmp_path / "missing.jsonl") == {}
