"""CI gates on `edgec bench` (edgec/bench/gates.py): a CI-style run that passes (exit 0), an impossible gate
(exit 1, one line naming it), bad gate values (exit 2 before the bench runs) and the JUnit XML file checked
against the structure JUnit consumers (Jenkins, GitLab, GitHub test reporters) read."""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import EXAMPLES, assert_clean_error, edgec
from edgec import cli
from edgec.testing import build_cached
from edgec.bench import gates
from edgec.errors import EdgecError

CANCER = EXAMPLES / "cancer_conv1d"


@pytest.fixture(scope="module")
def host_build(tmp_path_factory):
    """One host build of the session, shared with test_pytest_plugin.py (edgec.testing.build_cached)."""
    return build_cached(CANCER / "model.onnx", CANCER / "calib.npz", "host", tmp_path_factory.getbasetemp() / "edgec-builds")


def check_junit(path, failures: int) -> ET.Element:
    """The JUnit schema's structure: testsuites > testsuite > testcase (> failure), with counts that match."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("tests")) == len(cases) == int(root.get("tests"))
    assert int(suite.get("failures")) == len(failed) == int(root.get("failures")) == failures
    assert int(suite.get("errors")) == 0 and suite.get("name") and float(suite.get("time")) >= 0
    for c in cases:
        assert c.get("name") and c.get("classname") and float(c.get("time")) >= 0
        assert set(child.tag for child in c) <= {"failure", "system-out"}
    for c in failed:
        assert c.find("failure").get("message") and c.find("failure").get("type")
    return suite


def test_ci_script_passes_fails_and_writes_junit(host_build, tmp_path):
    ok = edgec("bench", host_build, "--data", CANCER / "test.npz", "--limit", "40", "--no-report",
               "--min-accuracy", "80%", "--min-agreement", "1", "--max-latency", "1s", "--max-ram", "1MiB",
               "--junit", tmp_path / "ok.xml")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("passed:") == 4 and "FAILED" not in ok.stdout + ok.stderr
    suite = check_junit(tmp_path / "ok.xml", failures=0)
    names = [c.get("name") for c in suite.findall("testcase")]
    assert sum(n.startswith("gate ") for n in names) == 4
    assert "metric accuracy.device" in names and "metric agreement.device_vs_reference" in names

    bad = edgec("bench", host_build, "--data", CANCER / "test.npz", "--limit", "40", "--no-report",
                "--min-accuracy", "0.999", "--min-agreement", "1", "--junit", tmp_path / "bad.xml")
    assert bad.returncode == 1, bad.stderr
    failed = [line for line in bad.stderr.splitlines() if "FAILED" in line]
    assert len(failed) == 1 and failed[0].startswith("gate --min-accuracy FAILED: device accuracy"), bad.stderr
    suite = check_junit(tmp_path / "bad.xml", failures=1)
    (case,) = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert case.get("name") == "gate min-accuracy 0.999" and "99.90%" in case.find("failure").get("message")


def in_process(capsys, *args):
    """The CLI called in this process (no interpreter start-up), as a CompletedProcess-like result."""
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_bad_gate_values_are_exit_2_before_the_bench(host_build, tmp_path, capsys):
    data = CANCER / "test.npz"
    for flag, value, needle in (("--min-accuracy", "1.5", "between 0 and 1"), ("--max-ram", "12 parsecs", "unit"),
                                ("--max-latency", "fast", "a time like 5ms"),
                                ("--junit", tmp_path / "no" / "r.xml", "does not exist")):
        assert_clean_error(in_process(capsys, "bench", host_build, "--data", data, flag, value), flag, needle)
    unlabeled = tmp_path / "x.npz"
    np.savez(unlabeled, x=np.load(data)["x"][:4])
    proc = edgec("bench", host_build, "--data", unlabeled, "--min-accuracy", "0.5", "--junit", tmp_path / "r.xml")
    assert_clean_error(proc, "no integer class labels")
    assert not (tmp_path / "r.xml").exists() and not (host_build / "bench-report.json").exists()


def report(accuracy=0.9, agreement=1.0, median=1000.0, ms=0.04, ram=2048) -> dict:
    return {"model": "m", "model_hash": "h", "board": "b", "samples": 3,
            "accuracy": {"float": accuracy, "int8_reference": accuracy, "device": accuracy},
            "agreement": {"device_vs_reference": agreement},
            "latency": {"unit": "cycles", "median": median, "p90": median, "min": median, "max": median,
                        "ms": {"median": ms} if ms is not None else None},
            "memory": {"ram_bytes": ram, "flash_bytes": 1, "arena_bytes": 1, "weights_bytes": 1}}


def test_gate_values_and_units():
    g = {x.name: x for x in gates.parse_gates("90%", "0.5", "2.5ms", "64KiB")}
    assert g["min-accuracy"].limit == pytest.approx(0.9) and g["min-agreement"].limit == 0.5
    assert g["max-latency"].limit == 2.5 and g["max-latency"].unit == "ms"
    assert g["max-ram"].limit == 65536
    assert gates.parse_gates(max_latency="800us")[0].limit == pytest.approx(0.8)
    assert gates.parse_gates(max_latency="120000")[0].unit == "board"

    def failed(r, **kw):
        return [o.gate.name for o in gates.evaluate(gates.parse_gates(**kw), r) if not o.passed]
    assert failed(report(), min_accuracy="0.9", max_latency="1000", max_ram="2KiB") == []
    assert failed(report(accuracy=0.89), min_accuracy="0.9") == ["min-accuracy"]
    assert failed(report(agreement=0.99), min_agreement="1") == ["min-agreement"]
    assert failed(report(median=1001), max_latency="1000") == ["max-latency"]
    assert failed(report(ms=0.05), max_latency="40us") == ["max-latency"]
    assert failed(report(ram=2049), max_ram="2k") == ["max-ram"]
    assert failed(report(ms=None), max_latency="1ms") == ["max-latency"]     # unmeasurable: never a pass
    with pytest.raises(EdgecError, match="unknown unit"):
        gates.parse_gates(max_ram="3 GB")


def test_gates_from_the_project_settings(host_build, tmp_path, monkeypatch, capsys):
    """min-accuracy in an edgec.toml gates the bench; the command line overrides it."""
    (tmp_path / "edgec.toml").write_text('min-accuracy = "99.9%"\nlimit = 20\n')
    monkeypatch.chdir(tmp_path)
    failed = in_process(capsys, "bench", host_build, "--data", CANCER / "test.npz", "--no-report")
    assert failed.returncode == 1 and "gate --min-accuracy FAILED" in failed.stderr
    assert "20 samples" in failed.stdout
    passed = in_process(capsys, "bench", host_build, "--data", CANCER / "test.npz", "--no-report",
                        "--min-accuracy", "0.5")
    assert passed.returncode == 0 and "gate --min-accuracy passed" in passed.stdout


def test_a_gate_the_board_cannot_measure_fails_with_a_line_not_a_type_error():
    """A board that reports no latency: --max-latency (board units or a time) fails saying so; the JUnit file
    lists the metrics there are."""
    r = report(median=None, ms=None)
    for limit in ("1000", "1ms"):
        (o,) = gates.evaluate(gates.parse_gates(max_latency=limit), r)
        assert not o.passed and "not measured" in o.line and "cannot be checked" in o.line
    root = ET.fromstring(gates.junit_xml(r, gates.evaluate(gates.parse_gates(max_latency="1000"), r)))
    assert root.get("failures") == "1" and "latency.median_cycles" not in gates.metrics(r)


def test_gates_and_junit_apply_to_every_unit_and_build_of_a_matrix(host_build, tmp_path, capsys):
    """Several builds or --units N: every gate is evaluated on every unit (one JUnit suite each) and a failed
    gate exits 1; two builds of one model on one board are two cells, not one with a "unit spread"."""
    other = tmp_path / "other-build"
    shutil.copytree(host_build, other, symlinks=True)
    junit = tmp_path / "matrix.xml"
    r = in_process(capsys, "bench", host_build, "--units", "2", "--data", CANCER / "test.npz", "--limit", "20",
                   "--no-report", "--min-agreement", "1", "--max-latency", "1", "--junit", junit)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("gate --max-latency FAILED") == 2 and r.stdout.count("gate --min-agreement passed") == 2
    root = ET.parse(junit).getroot()
    assert len(root.findall("testsuite")) == 2 and root.get("failures") == "2"
    r = in_process(capsys, "bench", host_build, other, "--data", CANCER / "test.npz", "--limit", "20",
                   "--no-report", "--min-agreement", "1", "--json", tmp_path / "m.json")
    assert r.returncode == 0, r.stderr
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert len(cells) == 2 and {c["build"] for c in cells} == {str(host_build), str(other)}
    assert all(c["gates_passed"] for c in cells)


def test_inputs_clipped_at_the_calibrated_range_are_warned(host_build, tmp_path):
    """Test inputs far beyond the calibrated range are clipped on the device and in the reference alike: a
    passing --min-agreement 1.0 must say so (it passed silently)."""
    with np.load(CANCER / "test.npz") as d:
        x, y = d["x"][:20], d["y"][:20]
    x = x.copy()
    x[:5] *= 1000.0
    np.savez(tmp_path / "wide.npz", x=x, y=y)
    r = edgec("bench", host_build, "--data", tmp_path / "wide.npz", "--no-report", "--min-agreement", "1",
              "--json", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    assert "5 of 20 test inputs" in r.stderr and "clipped" in r.stderr
    gate = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("gate --min-agreement")]
    assert gate and "5 of 20 test inputs were clipped" in gate[0]
    assert json.loads((tmp_path / "r.json").read_text())["input_saturated_samples"] == 5
    plain = edgec("bench", host_build, "--data", CANCER / "test.npz", "--limit", "20", "--no-report")
    assert "clipped" not in plain.stderr
