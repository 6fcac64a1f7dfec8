"""The CLI's error matrix: bad --data for bench, bad export and calibrate command lines. Every case exits 2
with exactly one line on stderr (no usage dump, no traceback, no progress) naming what is wrong, and writes
nothing. The cases run `edgec.cli.main` in this process (a subprocess each would cost seconds); one runs the
real `edgec` command to show it behaves the same."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import EXAMPLES, assert_clean_error, edgec
from edgec import api, cli

CANCER = EXAMPLES / "cancer_conv1d"
MODEL, CALIB = CANCER / "model.onnx", CANCER / "calib.npz"


def run_cli(capsys, *args):
    """cli.main as the `edgec` command runs it: (returncode, stdout, stderr) like subprocess.run's result."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exc:           # argparse's own exits
        code = exc.code
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


def data_files(folder):
    """Broken test/calibration data files, by name."""
    x = np.load(CANCER / "test.npz")["x"][:6]
    files = {"missing": folder / "missing.npz", "text": folder / "text.npz", "no_x": folder / "no_x.npz",
             "shape": folder / "shape.npz", "empty": folder / "empty.npz", "nan": folder / "nan.npz",
             "strings": folder / "strings.npz", "y_length": folder / "y_length.npz",
             "y_nan": folder / "y_nan.npz"}
    files["text"].write_text("1,2,3\n")
    np.savez(files["no_x"], data=x)
    np.savez(files["shape"], x=x.reshape(6, 30, 1)[:, :7])
    np.savez(files["empty"], x=x[:0])
    np.savez(files["nan"], x=np.where(np.arange(30) == 3, np.nan, x))
    np.savez(files["strings"], x=np.array([["a"] * 30] * 6).reshape(6, 1, 30))
    np.savez(files["y_length"], x=x, y=np.zeros(4, np.int64))
    np.savez(files["y_nan"], x=x, y=np.full(6, np.nan))
    return files


DATA_NEEDLES = {"missing": "no such data file", "text": "not a readable .npz", "no_x": "has no array 'x'",
                "shape": "x has shape [6, 7, 1]", "empty": "x holds no samples", "nan": "NaN or Inf",
                "strings": "must hold real numbers", "y_length": "y must", "y_nan": "y must hold 6 finite targets"}


@pytest.fixture(scope="module")
def build_folder(tmp_path_factory):
    """A build folder of the cancer example for the host. Its firmware is a placeholder file: bench reads and
    checks --data before it starts the device, so no case here ever runs it (a firmware build costs ~20 s)."""
    out = tmp_path_factory.mktemp("cli_errors") / "b"
    api.build(MODEL, CALIB, "host", out, firmware=False)
    report = json.loads((out / "build-report.json").read_text())
    (out / "firmware-placeholder").write_bytes(b"")
    report["firmware"] = "firmware-placeholder"
    (out / "build-report.json").write_text(json.dumps(report))
    return out


@pytest.mark.parametrize("case", sorted(DATA_NEEDLES))
def test_bench_bad_data(case, build_folder, tmp_path, capsys):
    path = data_files(tmp_path)[case]
    before = sorted(p.name for p in build_folder.iterdir())
    proc = run_cli(capsys, "bench", build_folder, "--data", path, "--json", tmp_path / "r.json")
    assert_clean_error(proc, str(path), DATA_NEEDLES[case])
    assert sorted(p.name for p in build_folder.iterdir()) == before and not (tmp_path / "r.json").exists()


def assert_error_after_progress(proc, *needles):
    """Calibration data is streamed (a file may be larger than memory), so a NaN deep inside it is found after
    the progress lines: exit 2, the error is the last line and the only one, the rest is progress."""
    lines = proc.stderr.strip().splitlines()
    assert_clean_error(SimpleNamespace(returncode=proc.returncode, stdout=proc.stdout, stderr=lines[-1]), *needles)
    assert not any("error" in ln or "Traceback" in ln for ln in lines[:-1]), lines
    assert lines[:-1] == [ln for ln in lines[:-1] if ln.startswith("calibrat")], lines


@pytest.mark.parametrize("case", ["shape", "nan", "no_x", "missing", "empty", "text"])
def test_export_and_calibrate_bad_calibration_data(case, tmp_path, capsys):
    path = data_files(tmp_path)[case]
    out = tmp_path / "lib"
    check = assert_error_after_progress if case == "nan" else assert_clean_error
    check(run_cli(capsys, "export", MODEL, "--calib", path, "--board", "host", "--format", "c", "-o", out),
          str(path), DATA_NEEDLES[case])
    check(run_cli(capsys, "calibrate", MODEL, "--calib", path, "-o", tmp_path / "q.json"),
          str(path), DATA_NEEDLES[case])
    assert not out.exists() and not (tmp_path / "q.json").exists()


EXPORT = ["export", MODEL, "--calib", CALIB, "--board", "host"]
EXPORT_CASES = {
    "bad_format": (["--format", "zip", "-o", "{out}"], ["argument --format: invalid choice: 'zip'"]),
    "no_output": (["--format", "c"], ["required: -o/--output"]),
    "unknown_board": (["--format", "c", "-o", "{out}", "--board", "pdp11"], ["unknown board 'pdp11'"]),
    "bad_int16_node": (["--format", "c", "-o", "{out}", "--int16", "nosuchnode"], ["--int16 'nosuchnode'"]),
    "bad_method": (["--format", "c", "-o", "{out}", "--method", "guess"], ["argument --method: invalid choice"]),
}


@pytest.mark.parametrize("case", sorted(EXPORT_CASES))
def test_export_errors(case, tmp_path, capsys):
    extra, needles = EXPORT_CASES[case]
    out = tmp_path / "lib"
    proc = run_cli(capsys, *EXPORT, *[a.replace("{out}", str(out)) for a in extra])
    assert_clean_error(proc, *needles)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []


def test_export_never_overwrites_a_folder_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    proc = run_cli(capsys, *EXPORT, "--format", "c", "-o", out)
    assert_clean_error(proc, str(out), "not written by edgec")
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and (out / "notes.txt").read_text() == "keep me"


CALIBRATE_CASES = {
    "missing_model": (["calibrate", "{tmp}/nope.onnx", "--calib", CALIB], ["nope.onnx", "no such file"]),
    "bad_int16_node": (["calibrate", MODEL, "--calib", CALIB, "--int16", "nosuchnode"], ["--int16 'nosuchnode'"]),
    "percentile": (["calibrate", MODEL, "--calib", CALIB, "--method", "percentile", "--percentile", "120"],
                   ["--percentile: 120 is not a percentile in (0, 100]"]),
    "negative_samples": (["calibrate", MODEL, "--calib", CALIB, "--sensitivity-samples", "-3"],
                         ["--sensitivity-samples: -3 is less than 0"]),
    "output_folder_missing": (["calibrate", MODEL, "--calib", CALIB, "-o", "{tmp}/no/such/q.json"],
                              ["the folder", "does not exist"]),
    "output_is_a_folder": (["calibrate", MODEL, "--calib", CALIB, "-o", "{tmp}"], ["is a folder"]),
    "no_calib": (["calibrate", MODEL], ["required: --calib"]),
}


@pytest.mark.parametrize("case", sorted(CALIBRATE_CASES))
def test_calibrate_errors(case, tmp_path, capsys):
    args, needles = CALIBRATE_CASES[case]
    proc = run_cli(capsys, *[str(a).replace("{tmp}", str(tmp_path)) for a in args])
    assert_clean_error(proc, *needles)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_the_edgec_command_gives_the_same_one_line(tmp_path, capsys):
    args = [*EXPORT, "--format", "zip", "-o", tmp_path / "lib"]
    proc = edgec(*args)
    assert_clean_error(proc, "argument --format: invalid choice: 'zip'", "see `edgec export --help`")
    assert proc.stderr == run_cli(capsys, *args).stderr


def test_fifos_and_bad_mlperf_numbers_are_one_line(tmp_path, capsys):
    """build/inspect/calibrate of a FIFO used to block forever; mlperf --limit 0 / -1 (which silently dropped
    the last file) and --window-seconds nan went on to run."""
    import os
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    calib = EXAMPLES / "cancer_conv1d" / "calib.npz"
    for argv in (["inspect", fifo], ["calibrate", fifo, "--calib", calib],
                 ["build", fifo, "--calib", calib, "--board", "host", "-o", tmp_path / "out"]):
        assert cli.main([str(a) for a in argv]) == 2
        err = capsys.readouterr().err
        assert "not a regular file" in err and err.count("\n") == 1, err
    for flag, value in (("--limit", "0"), ("--limit", "-1"), ("--window-seconds", "nan"), ("--window-seconds", "0")):
        with pytest.raises(SystemExit) as e:
            cli.main(["mlperf", str(tmp_path), "--dataset", str(tmp_path), flag, value])
        err = capsys.readouterr().err
        assert e.value.code == 2 and flag in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()
