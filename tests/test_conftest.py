"""The suite's own contract about test material from outside the repository (../shared/models/mlperf_tiny):
with CI=true (.ci/run exports it, scripts/test.sh passes it through) a run without it stops at once with a
message naming what is missing; without CI the tests that need it skip
(tests/conftest.py: require, pytest_sessionstart)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import (MLPERF, MLPERF_FILES, REPO, file_weights, heaviest_files_first, missing_test_material,
                      require_mlperf)

NEEDS_MLPERF = "tests/test_planner.py::test_mlperf_arena_within_2k_of_the_live_set_bound[kws_dscnn_fp32]"


def _suite(tmp_path, ci: str | None, *args):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["EDGEC_MLPERF_DIR"] = str(tmp_path / "no-shared")          # as in a clean clone without ../shared
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(["bash", "scripts/test.sh", "-p", "no:cacheprovider", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_ci_without_shared_fails_and_names_what_is_missing(tmp_path):
    proc = _suite(tmp_path, "true", NEEDS_MLPERF)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "test material is missing" in out and "../shared" in out, out
    assert f"the folder {tmp_path / 'no-shared'}" in out, out
    assert "passed" not in out and "skipped" not in out, out


@pytest.mark.parametrize("ci", ["true", "", "false"])
def test_a_missing_file_skips_outside_ci_and_fails_in_ci(ci, tmp_path, monkeypatch):
    monkeypatch.setenv("CI", ci)
    missing = tmp_path / "kws_dscnn_fp32.onnx"
    outcome = pytest.fail.Exception if ci == "true" else pytest.skip.Exception
    with pytest.raises(outcome, match=f"{missing} is missing"):
        require_mlperf(missing)
    require_mlperf(tmp_path)        # present: nothing happens


def test_ci_run_exports_ci_and_the_test_script_passes_it_through():
    ci_run = (REPO / ".ci" / "run").read_text()
    assert "export CI=true" in ci_run and "scripts/test.sh" in ci_run
    assert 'export CI="${CI:-}"' in (REPO / "scripts" / "test.sh").read_text()


def test_the_material_list_names_files_that_exist_here():
    """MLPERF_FILES is what the session check looks for: all present beside this checkout (else the whole
    suite would stop in CI for a file no test reads)."""
    require_mlperf(MLPERF)
    assert len(MLPERF_FILES) == 15 and missing_test_material() == []


def test_the_heaviest_files_go_first_and_a_files_tests_keep_their_order():
    """The order scripts/test.sh hands files to its workers in (tests/conftest.py: pytest_collection_modifyitems):
    by measured seconds, heaviest first, a new file as its tests times the mean per test, each file's tests in
    their own order."""
    class Item:
        def __init__(self, nodeid):
            self.nodeid = nodeid
    ids = ["t/a.py::t1", "t/b.py::t1", "t/a.py::t2", "t/new.py::t", "t/c.py::t[x]",
           "t/b.py::t2", "t/d.py::t"]
    items = [Item(i) for i in ids]
    heaviest_files_first(items, {"files": {"t/a.py": 1.0, "t/b.py": 40.0, "t/c.py": 12.5,
                                           "t/d.py": 3.0}, "seconds_per_test": 5.0})   # new.py: 1 x 5.0
    assert [i.nodeid for i in items] == ["t/b.py::t1", "t/b.py::t2", "t/c.py::t[x]", "t/new.py::t",
                                         "t/d.py::t", "t/a.py::t1", "t/a.py::t2"]


def test_the_measured_durations_name_test_files_and_the_script_reads_a_durations_log(tmp_path):
    """tests/durations.json (written by scripts/test_durations.py from a --durations=0 log) holds seconds per test
    file of this suite; the script sums setup, call and teardown per file."""
    files = file_weights()["files"]
    assert files and all(f.startswith("tests/") and f.endswith(".py") and s >= 0 for f, s in files.items())
    assert sum((REPO / f).is_file() for f in files) > 0.9 * len(files)     # a renamed file or two may lag
    assert 0 < file_weights()["seconds_per_test"] < 10
    log = tmp_path / "run.log"
    log.write_text("== slowest durations ==\n2.50s call     tests/kernels/test_compilers.py::test_a[p]\n"
                   "0.50s setup    tests/kernels/test_compilers.py::test_a[p]\n"
                   "1.00s teardown tests/test_conftest.py::test_b\n3 passed in 5.00s\n")
    proc = subprocess.run([sys.executable, REPO / "scripts" / "test_durations.py", log, "--simulate", "2"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| `tests/kernels/test_compilers.py` | 3.0 | 75.0 % | 1 |" in proc.stdout
    assert "| `tests/test_conftest.py` | 1.0 | 25.0 % | 1 |" in proc.stdout
    assert "heaviest first: workers end at 3, 1 s; the run takes 3 s, 2 s with a worker idle" in proc.stdout
