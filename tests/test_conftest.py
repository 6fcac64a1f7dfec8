"""The suite's own contract about test material from outside the repository (../shared/models/mlperf_tiny):
with CI=true (.ci/run exports it, scripts/test.sh passes it through) a run without it stops at once with a
message naming what is missing; without CI the tests that need it skip
(tests/conftest.py: require, pytest_sessionstart)."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import MLPERF, MLPERF_FILES, REPO, missing_test_material, require_mlperf

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
