"""report.html's Memory table: the fit estimate as its sums (never a Python dict), the live-set figure
named for what it is (a reference the arena may go below), and every value as bytes."""
from __future__ import annotations

from edgec.bench import report

MEMORY = {"arena_bytes": 4624, "weights_bytes": 9000, "flash_bytes": 40000, "ram_bytes": 12000,
          "live_set_lower_bound_bytes": 6144, "plan": "plan.json", "picture": "memory.svg",
          "fit_estimate": {"ram": {"arena": 4624, "runtime": 100, "stack": 4096, "framework": 0, "total": 8820,
                                   "board": 65536},
                           "flash": {"constants": 9000, "code": 6000, "framework": 0, "total": 15000,
                                     "board": 262144}},
          "stack_estimate_bytes": 800, "stack_estimate_method": "gcc -fstack-usage, deepest call chain",
          "stack_used_bytes": None}


def test_memory_rows():
    rows = {label: (value, note) for label, value, note in report.memory_rows(MEMORY)}
    assert rows["arena (activations and scratch)"][0] == "4,624 B"
    assert rows["fit estimate before building: ram"] == (
        "8,820 B", "arena 4,624 B + runtime 100 B + stack 4,096 B + framework 0 B; the board has 65,536 B")
    assert rows["fit estimate before building: flash"][0] == "15,000 B"
    live = rows["live tensors at the peak, ONNX order, no in-place reuse"]
    assert live[0] == "6,144 B" and "not a bound on the arena" in live[1]
    assert rows["stack, estimated"] == ("800 B", "gcc -fstack-usage, deepest call chain")
    assert rows["stack used, measured"][0] == "n/a" and rows["arena plan"][0] == "plan.json"
    assert not any("{" in value or "{" in note for value, note in rows.values())


def test_memory_table_in_the_html(tmp_path):
    result = {"model": "m", "board": "b", "samples": 1, "task": "regression", "data": "d.npz",
              "error": {"against": "float model", "device": {"mse": 0.0, "max_abs": 0.0},
                        "int8_reference": {"mse": 0.0, "max_abs": 0.0}},
              "agreement": {"device_vs_reference": 1.0, "mismatched_samples": []},
              "latency": {"unit": "cycles", "median": 1.0, "p90": 1.0, "min": 1.0, "max": 1.0, "samples": [1.0],
                          "ms": None, "per_mac": None},
              "memory": dict(MEMORY, stack_reserved_bytes=None), "link": None, "model_hash": "h", "macs": 1,
              "output_error": {"max_abs_vs_float": 0.0}}
    html = report.render_html(result, tmp_path)
    table = html[html.index("<h2>Memory</h2>"):]
    table = table[:table.index("</table>")]
    assert "{&#39;" not in table and "{'" not in table and "'ram'" not in table
    assert "<td>fit estimate before building: ram</td><td class=\"n\">8,820 B</td>" in table
