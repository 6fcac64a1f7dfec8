"""Many boards at once and board farms: the dataset-in-flash mode (inputs compiled into firmware
images, chunk by chunk, shared out among emulators), the model x board matrix run in parallel on emulated
boards, and a labgrid board farm on loopback: a coordinator, an exporter serving the serial ports of running
emulated boards (QEMU's UART on a pty) over RFC2217 with ser2net, `edgec bench --labgrid` on its places.
Two tiny models are built once for two emulated boards and shared by every test here."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from conftest import edgec, make_model, require, save
from edgec import api
from edgec import matrix
from edgec.targets.boards import load_board

BOARDS = ("qemu-cortex-m4", "qemu-cortex-m3")
VENV_BIN = Path(sys.executable).parent


def tiny_model(seed: int, hidden: int):
    rng = np.random.default_rng(seed)
    return make_model(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"])],
        ("x", [1, 16]), ("y", [1, 4]),
        {"w1": rng.normal(0, 0.5, (16, hidden)), "b1": rng.normal(0, 0.1, hidden),
         "w2": rng.normal(0, 0.5, (hidden, 4)), "b2": rng.normal(0, 0.1, 4)})


class Builds(dict):
    """{(model, board): build folder}, each built on first use (the default run needs tiny_a only)."""

    def __init__(self, root: Path, calib: Path):
        super().__init__()
        self.root, self.calib = root, calib

    def __missing__(self, key):
        name, board = key
        seed, hidden = {"tiny_a": (1, 8), "tiny_b": (2, 12)}[name]
        model = save(tiny_model(seed, hidden), self.root, f"{name}.onnx")
        self[key] = self.root / f"{name}-{board}"
        api.build(model, self.calib, board, self[key])
        return self[key]


@pytest.fixture(scope="module")
def farm_builds(tmp_path_factory):
    """(tiny models built per board on demand, test data of 120 samples, 500 samples)."""
    require(shutil.which("qemu-system-arm") is not None, "qemu-system-arm", "apt-get install qemu-system-arm")
    root = tmp_path_factory.mktemp("farm")
    rng = np.random.default_rng(0)
    calib, data, big = root / "calib.npz", root / "test.npz", root / "big.npz"
    np.savez(calib, x=rng.normal(0, 1, (64, 16)).astype(np.float32))
    np.savez(data, x=rng.normal(0, 1, (120, 16)).astype(np.float32), y=rng.integers(0, 4, 120))
    np.savez(big, x=rng.normal(0, 1, (500, 16)).astype(np.float32))
    return Builds(root, calib), data, big


def test_dataset_in_flash_runs_chunks_on_several_emulators_bit_exact(farm_builds):
    """The inputs go into firmware images (3 chunks of at most 50), shared by 2 emulators; only outputs and ticks
    come back, bit-exact with the reference; the report says how the time went."""
    builds, data, _ = farm_builds
    r = api.bench(builds["tiny_a", "qemu-cortex-m4"], data, dataset_in_flash=True, units=2, max_chunk=50)
    assert r["samples"] == 120 and r["agreement"]["device_vs_reference"] == 1.0
    link = r["link"]
    assert link["mode"] == "dataset-in-flash" and link["chunks"] == 3 and link["units"] == 2
    assert sorted(c["first"] for c in link["per_chunk"]) == [0, 50, 100]
    assert {c["unit"] for c in link["per_chunk"]} <= {0, 1}
    assert link["result_bytes"] == 3 * 46 + 120 * (12 + 4)       # per image a header and tail, per input 16 B
    assert r["latency"]["median"] > 0                      # ticks measured on the device, per input
    over_link = api.bench(builds["tiny_a", "qemu-cortex-m4"], data, limit=10)
    assert over_link["latency"]["samples"][:10] == r["latency"]["samples"][:10]   # same exact instruction counts


@pytest.mark.sweep          # four firmware builds: ~55 s on the shared 2-core machine
def test_matrix_of_two_models_on_two_emulated_boards_in_parallel(farm_builds, tmp_path):
    builds, data, _ = farm_builds
    folders = [builds[m, b] for m in ("tiny_a", "tiny_b") for b in BOARDS]
    proc = edgec("bench", *folders, "--data", data, "--report", tmp_path / "rep")
    assert proc.returncode == 0, proc.stderr
    r = json.loads((tmp_path / "rep" / matrix.JSON_NAME).read_text())
    cells = {(c["model"], c["board"]): c for c in r["cells"]}
    assert set(cells) == {(m, b) for m in ("tiny_a", "tiny_b") for b in BOARDS}
    for c in cells.values():
        assert c["ok"] and c["samples"] == 120 and c["agreement"] == 1.0 and 0 <= c["accuracy"] <= 1
    # in parallel: the four ran at once, so the wall time is below the sum of the units' times
    assert r["wall_seconds"] < sum(u["seconds"] for c in cells.values() for u in c["per_unit"])
    html = (tmp_path / "rep" / matrix.HTML_NAME).read_text()
    assert all(b in html for b in BOARDS) and "tiny_a" in html and "tiny_b" in html
    assert "4 cells" in proc.stdout


def test_units_of_each_board_split_the_test_set_and_show_the_spread(farm_builds, tmp_path):
    """A build on two emulated boards, two emulators each sharing the test set: two cells, four units at once."""
    builds, data, _ = farm_builds
    r = matrix.run([builds["tiny_a", b] for b in BOARDS], data, units=2, split=True, log=lambda m: None,
                   report_dir=tmp_path)
    assert [c["board"] for c in r["cells"]] == list(BOARDS)
    for cell in r["cells"]:
        assert cell["ok"] and [u["samples"] for u in cell["per_unit"]] == [60, 60] and cell["samples"] == 120
        assert cell["agreement"] == 1.0 and cell["spread"]["relative"] is not None
    assert json.loads((tmp_path / matrix.JSON_NAME).read_text())["cells"] == r["cells"]


# ---- a labgrid board farm on loopback ----

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _client(coordinator: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "labgrid-client"), "-x", coordinator, *args], capture_output=True,
                          text=True, timeout=60)


def acquired_by(coordinator: str, place: str) -> str:
    """What labgrid's own client says about who holds the place."""
    out = _client(coordinator, "-p", place, "show").stdout
    m = re.search(r"^\s*acquired:\s*(.*)$", out, re.MULTILINE)
    assert m, out
    return m.group(1).strip()


@pytest.fixture(scope="module")
def lab(farm_builds, tmp_path_factory):
    """Three running emulated boards exported by a labgrid exporter: places m4-a and m4-b (tiny_a on
    qemu-cortex-m4), m3 (tiny_a on qemu-cortex-m3); yields (coordinator, {place: QEMU process})."""
    have_labgrid = (importlib.util.find_spec("labgrid") is not None
                    and shutil.which(str(VENV_BIN / "labgrid-coordinator")) is not None)
    require(have_labgrid, "labgrid", "pip install 'edgec[farm]' (scripts/setup.sh does)")
    ser2net = shutil.which("ser2net") or ("/usr/sbin/ser2net" if os.path.exists("/usr/sbin/ser2net") else None)
    require(ser2net is not None, "ser2net", "apt-get install ser2net (scripts/setup.sh does)")
    builds, _, _ = farm_builds
    root = tmp_path_factory.mktemp("lab")
    procs, qemus = [], {}
    try:
        for place, board in (("m4-a", "qemu-cortex-m4"), ("m4-b", "qemu-cortex-m4"), ("m3", "qemu-cortex-m3")):
            fw = builds["tiny_a", board] / "project" / "firmware.elf"
            argv = [*load_board(board).emulator_command, "-serial", "pty", "-kernel", str(fw)]
            q = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            procs.append(q)
            qemus[place] = (q, re.search(r"(/dev/pts/\d+)", q.stdout.readline().decode()).group(1), board)
        coordinator = f"127.0.0.1:{_free_port()}"
        procs.append(subprocess.Popen([str(VENV_BIN / "labgrid-coordinator"), "-l", coordinator], cwd=root,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        (root / "exporter.yaml").write_text("".join(
            f"{place}:\n  RawSerialPort:\n    port: {pty}\n    speed: 115200\n" for place, (_, pty, _) in qemus.items()))
        time.sleep(1.0)
        procs.append(subprocess.Popen([str(VENV_BIN / "labgrid-exporter"), "-c", coordinator, "-n", "lab",
                                       "--hostname", "127.0.0.1", str(root / "exporter.yaml")], cwd=root,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while _client(coordinator, "resources").stdout.count("NetworkSerialPort") < 3:
            assert time.monotonic() < deadline, "the labgrid exporter did not register its serial ports"
            time.sleep(0.5)
        for place, (_, _, board) in qemus.items():
            for args in (["create"], ["add-match", f"lab/{place}/NetworkSerialPort"], ["set-tags", f"board={board}"]):
                p = _client(coordinator, "-p", place, *args)
                assert p.returncode == 0, p.stderr
        yield coordinator, {place: q for place, (q, _, _) in qemus.items()}
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def test_bench_labgrid_runs_a_build_on_two_places_bit_exact_and_releases_them(lab, farm_builds, tmp_path):
    coordinator, _ = lab
    builds, data, _ = farm_builds
    build = builds["tiny_a", "qemu-cortex-m4"]
    # no flashing resource on these places: edgec says the firmware must already be there
    proc = edgec("bench", build, "--data", data, "--labgrid", "m4-a", "--no-report", env={"LG_COORDINATOR": coordinator})
    assert proc.returncode == 1 and "must already be on the board; give --no-flash" in proc.stdout, proc.stdout
    assert acquired_by(coordinator, "m4-a") == "None"
    proc = edgec("bench", build, "--data", data, "--labgrid", "m4-a", "--labgrid", "m4-b", "--no-flash",
                 "--json", tmp_path / "r.json", "--no-report", env={"LG_COORDINATOR": coordinator})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (cell,) = json.loads((tmp_path / "r.json").read_text())["cells"]
    assert cell["ok"] and cell["units"] == ["m4-a", "m4-b"] and cell["agreement"] == 1.0
    assert [u["agreement"] for u in cell["per_unit"]] == [1.0, 1.0]
    for place in ("m4-a", "m4-b"):
        assert acquired_by(coordinator, place) == "None"


def test_a_board_killed_mid_run_fails_only_its_cell_and_no_place_stays_acquired(lab, farm_builds):
    coordinator, qemus = lab
    builds, _, big = farm_builds
    kill_m3 = threading.Timer(0.3, qemus["m3"].kill)

    def bench(build, data, log, **kw):
        def watch(message):
            if "m3" in str(build) and message.startswith("reference"):
                kill_m3.start()             # the references are computed, the device is about to be opened
            log(message)
        return api.bench(build, data, log=watch, **kw)

    r = matrix.run([builds["tiny_a", "qemu-cortex-m4"], builds["tiny_a", "qemu-cortex-m3"]], big,
                   places=["m4-a", "m3"], coordinator=coordinator, log=lambda m: None, bench=bench, flash=False)
    cells = {c["board"]: c for c in r["cells"]}
    assert cells["qemu-cortex-m4"]["ok"] and cells["qemu-cortex-m4"]["agreement"] == 1.0
    assert cells["qemu-cortex-m4"]["samples"] == 500
    failed = cells["qemu-cortex-m3"]
    assert not failed["ok"] and failed["failed"][0]["unit"] == "m3"
    error = failed["failed"][0]["error"]                  # the link lost while opening it or during a sample
    assert "at sample" in error or "cannot open serial port" in error, failed
    for place in ("m4-a", "m3"):
        assert acquired_by(coordinator, place) == "None"


def test_split_reads_only_sample_arrays_bounded_and_keeps_every_input(tmp_path):
    """--split cuts the data file with edgec's bounded reader: an array whose header claims more than the
    memory limit is refused before anything is allocated; a multi-input file keeps x_<input> and y."""
    import zipfile
    from edgec.errors import EdgecError
    multi = tmp_path / "multi.npz"
    np.savez(multi, x_a=np.zeros((6, 2), np.float32), x_b=np.ones((6, 3), np.float32), y=np.arange(6))
    parts = matrix._slices(multi, 2, tmp_path)
    with np.load(parts[1]) as p:
        assert sorted(p.files) == ["x_a", "x_b", "y"] and list(p["y"]) == [3, 4, 5]
    bomb = tmp_path / "bomb.npz"
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 8), np.float32))
    header["shape"] = (100_000_000, 8)
    with zipfile.ZipFile(bomb, "w") as z, z.open("x.npy", "w") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.write(b"\0" * 64)                       # the rest is a claim
    with pytest.raises(EdgecError, match="x"):
        matrix._slices(bomb, 2, tmp_path, 1 << 30)
