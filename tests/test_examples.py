"""End to end: every example model built, flashed and benchmarked on the host board and the emulated
Cortex-M4. Device accuracy must be within 1 point of float and every device output byte-identical to the
NumPy INT8 reference."""
from __future__ import annotations

import json

import pytest

from conftest import EXAMPLE_NAMES, EXAMPLES
from edgec import api
from edgec.errors import EdgecError

BOARDS = ["host", "qemu-cortex-m4"]


@pytest.fixture(scope="module")
def builds(example_build):
    """builds(example, board) -> build folder: once per run (conftest.example_build, shared with test_flash_gdb.py
    and test_elf.py)."""
    return lambda example, board: example_build(example, board)[1]


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_example_on_board(example, board, builds):
    out = builds(example, board)
    report = json.loads((out / "build-report.json").read_text())
    assert report["board"] == board
    mem = report["memory"]
    assert mem["arena_bytes"] > 0 and mem["weights_bytes"] > 0
    assert mem["flash_bytes"] > mem["weights_bytes"] and mem["ram_bytes"] > mem["arena_bytes"]
    assert (out / "model" / f"{report['model']}.c").is_file() and (out / "plan.json").is_file()
    if board != "host":       # read back from the model object's recorded command line (-frecord-gcc-switches)
        assert mem["model_optimization"] == "-O2"

    r = api.bench(out, EXAMPLES / example / "test.npz")
    assert r["samples"] > 200
    acc = r["accuracy"]
    assert abs(acc["device"] - acc["float"]) <= 0.01, acc
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert acc["device"] == acc["int8_reference"]
    lat = r["latency"]
    assert 0 < lat["min"] <= lat["median"] <= lat["max"]
    assert lat["unit"] == ("ns" if board == "host" else "emulated instructions")


def test_qemu_timing_is_repeatable(builds):
    """Emulated instruction counts under -icount are exact: the same sample gives the same count."""
    out = builds("cancer_conv1d", "qemu-cortex-m4")
    a = api.bench(out, EXAMPLES / "cancer_conv1d" / "test.npz", limit=5)
    b = api.bench(out, EXAMPLES / "cancer_conv1d" / "test.npz", limit=5)
    assert a["latency"] == b["latency"]


def test_stale_firmware_is_refused(builds, tmp_path):
    """A build folder whose firmware runs another model is caught by the handshake."""
    import shutil
    digits = builds("digits_cnn", "host")
    cancer = builds("cancer_conv1d", "host")
    mixed = tmp_path / "mixed"
    shutil.copytree(digits, mixed)
    report = json.loads((cancer / "build-report.json").read_text())
    fw = mixed / report["firmware"]
    shutil.copyfile(cancer / report["firmware"], fw)
    with pytest.raises(EdgecError, match="cancer_conv1d.*digits_cnn"):
        api.bench(mixed, EXAMPLES / "digits_cnn" / "test.npz", limit=2)
