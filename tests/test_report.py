"""report.html (edgec/bench/report.py, templates/report.html.j2): the Memory table's fit estimate as its sums and
the code by part (never a Python dict), one RAM figure with its parts naming what --max-ram gates on, the live-set
figure named for what it is, the CI gates' results, readable serial-link labels, and a latency histogram with one
tick at the value when every sample took the same time; rendered by headless Chromium."""
from __future__ import annotations

import importlib.util
import re

from conftest import REPO, require
from edgec import svgplot
from edgec.bench import gates as bench_gates
from edgec.bench import report

CODE = {"model": 408, "runtime": 13870, "harness": 2014, "board": 532, "libraries": 716, "total": 17540,
        "model_and_runtime": 14278}
MEMORY = {"arena_bytes": 4624, "weights_bytes": 9000, "flash_bytes": 40000, "ram_bytes": 12000,
          "live_set_lower_bound_bytes": 6144, "plan": "plan.json", "picture": "memory.svg",
          "fit_estimate": {"ram": {"arena": 4624, "runtime": 100, "stack": 4096, "framework": 0, "total": 8820,
                                   "board": 65536},
                           "flash": {"constants": 9000, "code": 6000, "framework": 0, "total": 15000,
                                     "board": 262144}},
          "stack_estimate_bytes": 800, "stack_estimate_method": "gcc -fstack-usage, deepest call chain",
          "code": CODE, "static_ram_bytes": 5300, "total_ram_bytes": 6100, "stack_used_bytes": None}
LINK = {"payload_bytes": 9000, "wire_bytes": 9400, "io_seconds": 0.25, "throughput_bytes_per_s": 36000.0,
        "retransmissions": 0, "sample_retries": 0, "line_bytes_per_s": None, "fraction_of_line_rate": None}


def _result(**more):
    r = {"model": "m", "board": "b", "samples": 12, "task": "regression", "data": "d.npz",
         "error": {"against": "float model", "device": {"mse": 0.0, "max_abs": 0.0},
                   "int8_reference": {"mse": 0.0, "max_abs": 0.0}},
         "agreement": {"device_vs_reference": 1.0, "mismatched_samples": []},
         "latency": {"unit": "instructions", "median": 51234.0, "p90": 51234.0, "min": 51234.0, "max": 51234.0,
                     "samples": [51234.0] * 12, "ms": None, "per_mac": None},
         "memory": dict(MEMORY, stack_reserved_bytes=None), "link": LINK, "model_hash": "h", "macs": 1,
         "output_error": {"max_abs_vs_float": 0.0}}
    r.update(more)
    return r


def _section(html: str, title: str) -> str:
    part = html[html.index(title):]
    return part[:part.index("</table>")]


def test_memory_rows():
    rows = {label: (value, note) for label, value, note in report.memory_rows(MEMORY)}
    assert rows["arena (activations and scratch)"][0] == "4,624 B"
    assert rows["fit estimate before building: flash"][0] == "15,000 B"
    live = rows["live tensors at the peak, ONNX order, no in-place reuse"]
    assert live[0] == "6,144 B" and "not a bound on the arena" in live[1]
    assert rows["arena plan"][0] == "plan.json"
    assert rows["code (functions) of the model library + runtime"][0] == "14,278 B"
    assert "code" not in rows                     # the code by part was also printed as a raw dict
    assert not any("{" in value or "{" in note for value, note in rows.values())


def test_one_ram_figure_with_its_parts():
    rows = report.memory_rows(MEMORY)
    ram = [(label, value, note) for label, value, note in rows if "RAM" in label or "ram" in label.split(": ")[-1]]
    assert len(ram) == 1, ram                     # not ram_bytes, static RAM, total device RAM and the estimate
    label, value, note = ram[0]
    assert "--max-ram" in label and value == "12,000 B"
    # arena + the other static data (static 5,300 - arena) + the reserved stack (12,000 - 5,300)
    assert note.startswith("arena 4,624 B + other static data 676 B + stack reserved 6,700 B")
    assert "stack needed about 800 B" in note and "needs 6,100 B of it" in note
    assert "estimated 8,820 B before building, of the board's 65,536 B" in note
    # the gate reads the same figure the row shows
    gate = bench_gates.evaluate(bench_gates.parse_gates(max_ram="11KiB"), {"memory": MEMORY})[0]
    assert gate.measured == 12000 and not gate.passed


def test_unmeasured_build_keeps_the_estimate():
    rows = {label: value for label, value, _ in report.memory_rows(dict(MEMORY, ram_bytes=None, static_ram_bytes=None,
                                                                        total_ram_bytes=None))}
    assert rows["fit estimate before building: ram"] == "8,820 B" and rows["firmware static RAM"] == "n/a"


def test_gates_in_the_report(tmp_path):
    gates = bench_gates.parse_gates(min_agreement="1.0", max_ram="11KiB")
    r = _result()
    r["gates"] = [{"gate": o.gate.name, "limit": o.gate.text, "measured": o.measured, "passed": o.passed,
                   "line": o.line} for o in bench_gates.evaluate(gates, r)]
    table = _section(report.render_html(r, tmp_path), '<h2 id="gates">')
    assert "<td>--min-agreement 1.0</td><td class=\"good\">passed</td>" in table
    assert "<td>--max-ram 11KiB</td><td class=\"bad\">FAILED</td>" in table
    assert "firmware RAM 12,000 B, at most 11,264 B required" in table
    assert "no gates given" in report.render_html(_result(), tmp_path)


def test_serial_link_labels(tmp_path):
    rows = dict(report.link_rows(LINK))
    assert rows["payload throughput"] == "36.0 kB/s" and rows["time spent moving data"] == "0.25 s"
    assert rows["nominal line rate (8N1)"] == "n/a (a socket: no baud rate)"
    assert rows["bytes on the wire (with framing and CRCs)"] == "9,400 B"
    table = _section(report.render_html(_result(), tmp_path), "<h2>Serial link</h2>")
    assert not any(key in table for key in LINK), table       # no raw key names


def _axis_labels(svg: str) -> list[str]:
    return re.findall(r'<text x="[0-9.]+" y="[0-9.]+" text-anchor="middle" fill="#888">([^<]*)</text>', svg)


def test_histogram_ticks_when_every_sample_is_the_same():
    svg = svgplot.histogram([51234.0] * 12, "t", "instructions", bins=5)
    assert _axis_labels(svg) == ["51,234"]
    bar = re.search(r'<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"', svg)
    centre = float(bar.group(1)) + float(bar.group(2)) / 2
    assert abs(centre - (60 + (760 - 60 - 48) / 2)) < 1.5      # one bar, centred on its value
    spread = _axis_labels(svgplot.histogram([100.0, 150.0, 200.0], "t", "cycles"))
    assert len(spread) > 2 and "100" in spread


def test_report_renders_in_chromium(tmp_path):
    spec = importlib.util.spec_from_file_location("screenshot_report", REPO / "scripts" / "screenshot_report.py")
    shot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shot)
    require(shot.chromium() is not None, "chromium (report.html not rendered)", "scripts/setup.sh installs it")
    r = _result()
    r["gates"] = [{"gate": o.gate.name, "limit": o.gate.text, "measured": o.measured, "passed": o.passed,
                   "line": o.line} for o in bench_gates.evaluate(bench_gates.parse_gates(min_agreement="1",
                                                                                         max_ram="11KiB"), r)]
    html = tmp_path / "report.html"
    html.write_text(report.render_html(r, tmp_path))
    png = shot.screenshot(html, tmp_path / "report.png")
    blue = tuple(int(svgplot.BLUE[i:i + 2], 16) for i in (1, 3, 5))
    counts = shot.colour_counts(png, {"histogram bar": blue, "gate FAILED (red, only there)": (0xC0, 0x3D, 0x3E)})
    assert all(v > 20 for v in counts.values()), counts


def test_detector_without_ground_truth_shows_box_agreement(tmp_path):
    """A detector benched on data without boxes has no mAP: its page shows the box agreement (the template read a
    missing 'map' and the bench stopped with jinja2's UndefinedError)."""
    agree = {"min_iou": 0.5, "boxes_base": 40, "boxes_other": 41, "matched": 37, "missed": 3, "extra": 4,
             "identical_boxes": 0, "images_all_matched": 9, "images": 12,
             "iou": {"min": 0.5, "p10": 0.6, "median": 0.8, "mean": 0.75}, "max_abs_score_diff": 0.1}
    same = dict(agree, boxes_other=40, matched=40, missed=0, extra=0, identical_boxes=40)
    counts = {"total": 40, "mean": 40 / 12, "max": 5}
    det = {"max_detections": 5, "float_model": "onnxruntime", "ground_truth": None, "example": None,
           "detections": {"float": counts, "int8_reference": counts, "device": counts},
           "agreement": {"device_vs_reference": same, "device_vs_float": agree, "int8_vs_float": agree}}
    html = report.render_html(_result(task="detection", detection=det), tmp_path)
    assert "device boxes matching the reference<b>40</b>" in html
    assert "mAP@0.5<b>" not in html
