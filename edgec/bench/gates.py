"""Pass/fail gates on a bench report, for CI: `edgec bench ... --min-accuracy 0.9 --max-latency 5ms --junit r.xml`.

    gates = parse_gates(min_accuracy="90%", max_latency="5ms")
    check_measurable(gates, "build/model", "test.npz")   # bad input: EdgecError before anything runs
    outcomes = evaluate(gates, bench_result)             # one Outcome per gate
    write_junit("r.xml", bench_result, outcomes)         # one test case per gate and per metric

What each gate measures:
    min-accuracy   device top-1 accuracy against the data's integer labels y (a fraction 0..1 or "90%")
    min-agreement  fraction of samples whose device output is bit-identical to the INT8 reference
    max-latency    median latency: a plain number is in the board's unit (cycles, instructions, ns);
                   "5ms", "800us", "1.5s" need a board whose unit converts to time (`edgec boards`)
    max-ram        the firmware RAM the ELF allocates (.data + .bss + the reserved stack; report.html's
                   "firmware RAM" row): "65536", "64KiB", "64k", "1MiB"
"""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgec.errors import EdgecError

GATES = ("min_accuracy", "min_agreement", "max_latency", "max_ram")
_TIME = {"s": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}
_SIZE = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20}


@dataclass(frozen=True)
class Gate:
    name: str            # the flag without dashes: "min-accuracy"
    limit: float         # fraction, board units, milliseconds or bytes
    unit: str            # "fraction", "board", "ms", "bytes"
    text: str            # as the user wrote it


@dataclass(frozen=True)
class Outcome:
    gate: Gate
    measured: float | None
    passed: bool
    line: str            # one line saying what was measured against what


def _number(flag: str, text: str, pattern: str, what: str) -> re.Match:
    m = re.fullmatch(pattern, str(text).strip(), re.IGNORECASE)
    if not m:
        raise EdgecError(f"--{flag} {text!r}: expected {what}")
    return m


def _fraction(flag: str, text) -> Gate:
    m = _number(flag, text, r"([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(%?)", "a fraction like 0.9 or a percentage like 90%")
    value = float(m.group(1)) / (100 if m.group(2) else 1)
    if not 0 <= value <= 1:
        raise EdgecError(f"--{flag} {text!r}: a fraction must be between 0 and 1 (write 90% for a percentage)")
    return Gate(flag, value, "fraction", str(text))


def _latency(text) -> Gate:
    m = _number("max-latency", text, r"([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*(s|ms|us|µs|ns)?",
                "a number in the board's unit (e.g. 120000) or a time like 5ms, 800us, 1.5s")
    value, unit = float(m.group(1)), (m.group(2) or "").lower()
    if value <= 0:
        raise EdgecError(f"--max-latency {text!r}: must be more than 0")
    return Gate("max-latency", value * _TIME[unit] if unit else value, "ms" if unit else "board", str(text))


def _ram(text) -> Gate:
    m = _number("max-ram", text, r"([0-9]*\.?[0-9]+)\s*([a-z]*)", "bytes like 65536, 64KiB, 64k or 1MiB")
    unit = m.group(2).lower()
    if unit not in _SIZE:
        raise EdgecError(f"--max-ram {text!r}: unknown unit '{m.group(2)}' (use B, KiB or MiB)")
    return Gate("max-ram", float(m.group(1)) * _SIZE[unit], "bytes", str(text))


def parse_gates(min_accuracy=None, min_agreement=None, max_latency=None, max_ram=None) -> list[Gate]:
    """The gates asked for (None: not asked), checked: EdgecError on a value that means nothing."""
    gates = []
    if min_accuracy is not None:
        gates.append(_fraction("min-accuracy", min_accuracy))
    if min_agreement is not None:
        gates.append(_fraction("min-agreement", min_agreement))
    if max_latency is not None:
        gates.append(_latency(max_latency))
    if max_ram is not None:
        gates.append(_ram(max_ram))
    return gates


def check_measurable(gates: list[Gate], outdir: str | Path, data_path: str | Path,
                     junit: str | Path | None = None) -> None:
    """Refuse, before the bench runs, a gate the build or the data cannot measure, or a JUnit file that
    cannot be written."""
    from edgec.bench.runner import ms_basis
    from edgec.targets.build_folder import load_build

    check_junit(junit, (data_path,))
    if not gates:
        return
    _, board, _ = load_build(outdir)
    for g in gates:
        if g.unit == "ms" and ms_basis(board) is None:
            raise EdgecError(f"--max-latency {g.text}: board '{board.name}' counts {board.timing_unit} with no clock "
                             f"rate to turn them into time; give the limit in {board.timing_unit} (a plain number)")
        if g.name == "min-accuracy":
            try:
                with np.load(data_path, allow_pickle=False) as data:
                    labels = data["y"] if "y" in data.files else None
            except (OSError, ValueError):
                return                          # an unreadable file: the bench names what is wrong with it
            if labels is None or not np.issubdtype(labels.dtype, np.integer):
                raise EdgecError(f"--min-accuracy: {data_path} has no integer class labels y to measure accuracy "
                                 "against; add y or use --min-agreement")


def _measure(gate: Gate, r: dict) -> tuple[float | None, str]:
    """The measured value in the gate's unit, and how to print it."""
    if gate.name == "min-accuracy":
        v = (r.get("accuracy") or {}).get("device")
        return v, "n/a" if v is None else f"{100 * v:.2f}%"
    if gate.name == "min-agreement":
        v = r["agreement"]["device_vs_reference"]
        clipped = r.get("input_saturated_samples") or 0
        note = (f" (warning: {clipped} of {r.get('samples', '?')} test inputs were clipped at the calibrated input "
                "range; agreement does not cover their values)") if clipped else ""
        return v, f"{100 * v:.2f}%{note}"
    if gate.name == "max-latency":
        lat = r.get("latency") or {}
        if gate.unit == "ms":
            v = (lat.get("ms") or {}).get("median")
        else:
            v = lat.get("median")
        if v is None:
            return None, f"not measured (board {r.get('board')} reported no latency: the gate cannot be checked)"
        return v, f"{v:.4g} ms" if gate.unit == "ms" else f"{v:,.0f} {lat.get('unit', '')}"
    v = r["memory"].get("ram_bytes")
    return v, "n/a" if v is None else f"{v:,} B"


def _limit_text(g: Gate) -> str:
    return {"fraction": f"{100 * g.limit:.2f}%", "ms": f"{g.limit:.4g} ms", "bytes": f"{g.limit:,.0f} B"}.get(
        g.unit, f"{g.limit:,.0f}")


def evaluate(gates: list[Gate], r: dict) -> list[Outcome]:
    outcomes = []
    for g in gates:
        v, shown = _measure(g, r)
        ok = v is not None and (v >= g.limit if g.name.startswith("min-") else v <= g.limit)
        what = {"min-accuracy": "device accuracy", "min-agreement": "bit-exact agreement with the INT8 reference",
                "max-latency": "median latency", "max-ram": "firmware RAM"}[g.name]
        relation = ("at least" if g.name.startswith("min-") else "at most")
        line = f"gate --{g.name} {'passed' if ok else 'FAILED'}: {what} {shown}, {relation} {_limit_text(g)} required"
        outcomes.append(Outcome(g, v, ok, line))
    return outcomes


def failures(outcomes: list[Outcome]) -> list[str]:
    return [o.line for o in outcomes if not o.passed]


def metrics(r: dict) -> dict[str, float]:
    """The bench's headline numbers, flat, as the JUnit file lists them (one test case each)."""
    out: dict[str, float] = {"agreement.device_vs_reference": r["agreement"]["device_vs_reference"]}
    for k, v in (r.get("accuracy") or {}).items():
        if v is not None:
            out[f"accuracy.{k}"] = v
    lat = r.get("latency") or {}
    for k in ("median", "p90", "min", "max"):
        if lat.get(k) is not None:
            out[f"latency.{k}_{lat.get('unit')}"] = lat[k]
    if lat.get("ms") and lat["ms"].get("median") is not None:
        out["latency.median_ms"] = lat["ms"]["median"]
    for k in ("flash_bytes", "ram_bytes", "arena_bytes", "weights_bytes", "stack_used_bytes"):
        if r["memory"].get(k) is not None:
            out[f"memory.{k}"] = r["memory"][k]
    return out


def junit_xml(r: dict, outcomes: list[Outcome], seconds: float = 0.0) -> str:
    """JUnit XML (the testsuites/testsuite/testcase/failure schema Jenkins, GitLab and GitHub actions read):
    one test case per gate (a failure element when it failed) and one per metric (always passing; the value
    is in its system-out and in the suite's properties)."""
    return junit_suites_xml([(r, outcomes, "")], seconds)


def junit_suites_xml(runs: list[tuple[dict, list[Outcome], str]], seconds: float = 0.0) -> str:
    """JUnit XML with one test suite per bench run (a matrix: per build and unit, `label` naming it)."""
    total = sum(1 if "error" in r else len(o) + len(metrics(r)) for r, o, _ in runs)
    fails = sum(1 if "error" in r else len(failures(o)) for r, o, _ in runs)
    root = ET.Element("testsuites", name="edgec", tests=str(total), failures=str(fails), errors="0",
                      time=f"{seconds:.3f}")
    for r, outcomes, label in runs:
        _suite(root, r, outcomes, label, seconds)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(root, r: dict, outcomes: list[Outcome], label: str, seconds: float) -> None:
    if "error" in r:           # a matrix unit whose bench failed: one failing test case saying why
        suite = ET.SubElement(root, "testsuite", name=f"edgec bench {r['model']} on {r['board']} ({label})",
                              tests="1", failures="1", errors="0", skipped="0", time="0")
        case = ET.SubElement(suite, "testcase", name="bench", classname=f"edgec.{r['model']}.{r['board']}.{label}")
        ET.SubElement(case, "failure", message=r["error"], type="BenchFailed").text = r["error"]
        return
    values = metrics(r)
    suite_name = f"edgec bench {r['model']} on {r['board']}" + (f" ({label})" if label else "")
    fails = failures(outcomes)
    suite = ET.SubElement(root, "testsuite", name=suite_name, tests=str(len(outcomes) + len(values)),
                          failures=str(len(fails)), errors="0", skipped="0", time=f"{seconds:.3f}",
                          timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"))
    props = ET.SubElement(suite, "properties")
    for k, v in (("model", r["model"]), ("model_hash", r.get("model_hash", "")), ("board", r["board"]),
                 ("samples", r["samples"]), ("data", r.get("data", ""))):
        ET.SubElement(props, "property", name=k, value=str(v))
    for k, v in values.items():
        ET.SubElement(props, "property", name=k, value=repr(float(v)))
    classname = f"edgec.{r['model']}.{r['board']}" + (f".{label}" if label else "")
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", name=f"gate {o.gate.name} {o.gate.text}", classname=classname,
                             time="0")
        if not o.passed:
            ET.SubElement(case, "failure", message=o.line, type="GateFailed").text = o.line
        ET.SubElement(case, "system-out").text = o.line
    for k, v in values.items():
        case = ET.SubElement(suite, "testcase", name=f"metric {k}", classname=classname, time="0")
        ET.SubElement(case, "system-out").text = f"{k} = {v!r}"


def write_junit(path: str | Path, r: dict, outcomes: list[Outcome], seconds: float = 0.0, inputs=()) -> Path:
    """The JUnit report through edgec's one writer (edgec/outputs.py: never a user's file, never through a link)."""
    return write_junit_runs(path, [(r, outcomes, "")], seconds, inputs)


def write_junit_runs(path: str | Path, runs, seconds: float = 0.0, inputs=()) -> Path:
    from edgec import outputs
    return outputs.write_text(Path(path), junit_suites_xml(runs, seconds), what="--junit file", inputs=inputs)


def check_junit(junit, inputs=()) -> Path | None:
    """The --junit file, checked before the bench (edgec/outputs.py: new, or a JUnit file edgec wrote)."""
    from edgec import outputs
    return None if junit is None else outputs.check_output_file(junit, inputs, what="--junit file")
