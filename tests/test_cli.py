"""The CLI's contract for bad input: exit code 2, one line naming the file/node/board, no traceback,
nothing half-written left behind."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import EXAMPLES, assert_clean_error, edgec, make_model, save

DIGITS = EXAMPLES / "digits_cnn"


def _bad_model_files(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(np.random.default_rng(1).bytes(3000))
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    text = tmp_path / "notes.onnx"
    text.write_text("this is not a model\n" * 20)
    return {"garbage": garbage, "empty": empty, "text": text, "missing": tmp_path / "missing.onnx"}


@pytest.mark.parametrize("kind", ["garbage", "empty", "text", "missing"])
def test_unreadable_models(kind, tmp_path):
    path = _bad_model_files(tmp_path)[kind]
    out = tmp_path / "out"
    proc = edgec("build", path, "--calib", DIGITS / "calib.npz", "--board", "host", "-o", out)
    assert_clean_error(proc, str(path))
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_unsupported_ops_listed(tmp_path):
    nodes = [helper.make_node("Hardmax", ["x"], ["a"], name="sine"), helper.make_node("Relu", ["a"], ["b"], name="r"),
             helper.make_node("Mod", ["b", "b"], ["y"], name="erf_node", fmod=1)]
    path = save(make_model(nodes, ("x", [1, 8]), ("y", [1, 8]), {}), tmp_path)
    calib = tmp_path / "c.npz"
    np.savez(calib, x=np.zeros((4, 8), np.float32))
    proc = edgec("build", path, "--calib", calib, "--board", "host", "-o", tmp_path / "out")
    assert_clean_error(proc, "Hardmax (sine, opset 13)", "Mod (erf_node, opset 13)")
    assert not (tmp_path / "out").exists()
    insp = edgec("inspect", path)
    assert insp.returncode == 1 and "Hardmax (sine, opset 13)" in insp.stdout and "Mod (erf_node, opset 13)" in insp.stdout


@pytest.mark.parametrize("case", ["wrong_shape", "no_x", "not_npz", "missing"])
def test_bad_calibration_data(case, tmp_path):
    calib = tmp_path / "calib.npz"
    if case == "wrong_shape":
        np.savez(calib, x=np.zeros((5, 8, 8), np.float32))
    elif case == "no_x":
        np.savez(calib, data=np.zeros((5, 1, 8, 8), np.float32))
    elif case == "not_npz":
        calib.write_text("1,2,3\n")
    proc = edgec("build", DIGITS / "model.onnx", "--calib", calib, "--board", "host", "-o", tmp_path / "out")
    assert_clean_error(proc, str(calib))
    assert not (tmp_path / "out").exists()


def test_unknown_board(tmp_path):
    proc = edgec("build", DIGITS / "model.onnx", "--calib", DIGITS / "calib.npz", "--board", "pdp11",
                 "-o", tmp_path / "out")
    assert_clean_error(proc, "pdp11", "qemu-cortex-m4")
    assert not (tmp_path / "out").exists()


def test_bench_on_a_folder_that_is_not_a_build(tmp_path):
    proc = edgec("bench", tmp_path, "--data", DIGITS / "test.npz")
    assert_clean_error(proc, str(tmp_path), "edgec build")


def test_debug_shows_the_traceback(tmp_path):
    proc = edgec("--debug", "build", tmp_path / "nope.onnx", "--calib", DIGITS / "calib.npz", "--board", "host")
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_inspect_and_boards():
    proc = edgec("inspect", DIGITS / "model.onnx")
    assert proc.returncode == 0, proc.stderr
    assert "BatchNormalization" in proc.stdout and "327,680 MACs" in proc.stdout
    boards = edgec("boards")
    assert boards.returncode == 0 and "qemu-cortex-m4" in boards.stdout and "host" in boards.stdout


def test_build_bench_flash_on_host_through_the_cli(tmp_path):
    import json
    cancer = EXAMPLES / "cancer_conv1d"
    out = tmp_path / "b"
    proc = edgec("build", cancer / "model.onnx", "--calib", cancer / "calib.npz", "--board", "host", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "built cancer_conv1d for host" in proc.stdout
    report = json.loads((out / "build-report.json").read_text())
    assert set(report["memory"]) >= {"arena_bytes", "weights_bytes", "flash_bytes", "ram_bytes"}
    assert report["board"] == "host" and report["model"] == "cancer_conv1d"

    flash = edgec("flash", out)
    assert flash.returncode == 0 and report["model_hash"] in flash.stdout, flash.stderr

    bench = edgec("bench", out, "--data", cancer / "test.npz", "--limit", "50", "--json", tmp_path / "r.json")
    assert bench.returncode == 0, bench.stderr
    assert "accuracy: float" in bench.stdout and "latency: median" in bench.stdout
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["samples"] == 50 and r["board"] == "host" and r["model"] == "cancer_conv1d"
    assert set(r["accuracy"]) >= {"float", "int8_reference", "device"}
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["latency"]["unit"] == "ns" and r["latency"]["min"] <= r["latency"]["median"] <= r["latency"]["max"]

    unlabeled = tmp_path / "x_only.npz"
    import numpy as np
    np.savez(unlabeled, x=np.load(cancer / "test.npz")["x"][:5])
    bench = edgec("bench", out, "--data", unlabeled, "--json", tmp_path / "r2.json")
    assert bench.returncode == 0, bench.stderr
    assert json.loads((tmp_path / "r2.json").read_text())["accuracy"]["device"] is None


@pytest.mark.parametrize("command", [["inspect", str(EXAMPLES / "digits_cnn" / "model.onnx")], ["packages", "list"],
                                     ["config"], ["boards"]])
def test_output_into_a_closed_pipe_ends_quietly(command, tmp_path):
    """`edgec inspect ... | head` ended in a BrokenPipeError traceback: with the pipe's reader gone before edgec
    writes a byte (its read end closed before edgec starts, so no timing is involved), edgec exits 141
    (128 + SIGPIPE) and says nothing on stderr."""
    import os
    import subprocess
    import sys
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "edgec", *command], stdout=write, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path, timeout=300)
    finally:
        os.close(write)
    assert proc.stderr == "" and proc.returncode == 141, proc.stderr
