"""Every emulated board besides the Cortex-M4 (tests/test_examples.py) runs an example end to end: built,
flashed into QEMU, benchmarked on the full test set -- accuracy, bit-exactness, latency -- and a model
too big for the 16 KB Cortex-M0 is refused with the linker's verdict."""
from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import helper

from conftest import EXAMPLES, make_model, save
from edgec import api
from edgec.codegen import cmodel as codegen
from edgec.api import compile_model
from edgec.targets.boards import list_boards, load_board
from edgec.errors import EdgecError
from edgec.targets.firmware import build_firmware, write_project
from edgec.settings import Settings

CASES = [  # (board, example): cancer_conv1d everywhere (fast), digits_cnn on the smallest RAM
    ("qemu-cortex-m3", "cancer_conv1d"),
    ("qemu-cortex-m3-large", "cancer_conv1d"),
    ("qemu-cortex-m7", "cancer_conv1d"),
    ("qemu-cortex-m55", "cancer_conv1d"),
    ("qemu-cortex-m0", "digits_cnn"),
    ("qemu-riscv32", "cancer_conv1d"),
]
# the Cortex-M0's second example runs with the sweeps (digits_cnn above already runs that board end to end)
SWEEP_CASES = [("qemu-cortex-m0", "cancer_conv1d")]


def test_every_emulated_board_has_an_end_to_end_case():
    emulated = {b.name for b in list_boards() if b.emulated}
    # qemu-cortex-m4: tests/test_examples.py; qemu-stm32f405 (the STM32duino harness): tests/test_flash_gdb.py;
    # qemu-cortex-m4-split (an arena over two RAM regions): tests/test_regions_device.py
    assert emulated == {b for b, _ in CASES} | {"qemu-cortex-m4", "qemu-stm32f405", "qemu-cortex-m4-split"}


@pytest.mark.parametrize("board,example", CASES + [pytest.param(*c, marks=pytest.mark.sweep) for c in SWEEP_CASES])
def test_example_on_emulated_board(board, example, tmp_path):
    out = tmp_path / "build"
    report = api.build(EXAMPLES / example / "model.onnx", EXAMPLES / example / "calib.npz", board, out)
    b = load_board(board)
    mem = report["memory"]
    assert mem["arena_bytes"] < mem["ram_bytes"] <= b.ram_bytes
    assert mem["weights_bytes"] < mem["flash_bytes"] <= b.flash_bytes
    r = api.bench(out, EXAMPLES / example / "test.npz")
    acc = r["accuracy"]
    print(f"\n[{board}] {example}: device {acc['device']:.4f} (float {acc['float']:.4f}), agreement "
          f"{r['agreement']['device_vs_reference']:.3f}, latency median {r['latency']['median']:,.0f} "
          f"{r['latency']['unit']}, RAM {mem['ram_bytes']:,} / flash {mem['flash_bytes']:,} B")
    assert r["samples"] > 200
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert acc["device"] == acc["int8_reference"] and abs(acc["device"] - acc["float"]) <= 0.01
    lat = r["latency"]
    assert lat["unit"] == "emulated instructions" and 0 < lat["min"] <= lat["median"] <= lat["max"]
    # -icount: repeatable counts.  Exact where a tick is a whole number of virtual ns; with a
    # fractional tick (16 MHz: 62.5 ns, 32 MHz: 31.25 ns) QEMU's timer rounds and runs differ by one tick.
    first = api.bench(out, EXAMPLES / example / "test.npz", limit=3)["latency"]
    second = api.bench(out, EXAMPLES / example / "test.npz", limit=3)["latency"]
    tolerance = 0 if float(b.units_per_tick).is_integer() else b.units_per_tick
    for key in ("min", "median", "max"):
        assert abs(first[key] - second[key]) <= tolerance, (key, first, second)
    assert json.loads((out / "build-report.json").read_text())["board"] == board


def test_model_too_big_for_the_cortex_m0_is_refused(tmp_path):
    """A 128x128 image needs a 2 x 16 KB arena: more than the micro:bit's 16 KB of RAM.  edgec refuses it
    before building, and the board's linker script would too."""
    model = make_model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                       ("x", [1, 1, 128, 128]), ("y", [1, 1, 128, 128]), {"w": np.ones((1, 1, 3, 3)) / 9})
    path = save(model, tmp_path)
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(0).random((4, 1, 128, 128), np.float32))
    with pytest.raises(EdgecError, match="does not fit board qemu-cortex-m0"):
        api.build(path, calib, "qemu-cortex-m0", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    _, graph, plan = compile_model(path, calib)
    codegen.generate(graph, plan, tmp_path / "lib", graph.name)
    board = load_board("qemu-cortex-m0")
    env = Settings.from_environment()
    project = write_project(tmp_path / "project", board, tmp_path / "lib", graph.name, core=env.platformio_home)
    with pytest.raises(EdgecError, match=r"region .RAM. overflowed by \d+ bytes"):
        build_firmware(project, board, env, log=None)
