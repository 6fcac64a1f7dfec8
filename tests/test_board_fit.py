"""edgec/board_fit.py: `edgec inspect MODEL --board B` gives the arena the build plans, byte for byte, and a
flash figure within 2 % of the built firmware's, without building anything; a model that does not fit says so."""
from __future__ import annotations

import json

import pytest

from conftest import EXAMPLE_NAMES, EXAMPLES, MLPERF, require_mlperf
from edgec import api, board_fit, cli

BOARD = "qemu-cortex-m4"
CASES = {"digits_cnn": (EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz"),
         "cancer_conv1d": (EXAMPLES / "cancer_conv1d" / "model.onnx", EXAMPLES / "cancer_conv1d" / "calib.npz"),
         "ad": (MLPERF / "ad_fc_autoencoder_int8.tflite", None),
         "kws": (MLPERF / "kws_dscnn_int8.tflite", None),
         "ic": (MLPERF / "ic_resnet8_int8.tflite", None),
         "vww": (MLPERF / "vww_mobilenetv1_025_int8.tflite", None)}


def _agrees_with_build(key, tmp_path, example_build):
    model, calib = CASES[key]
    if calib is None:
        require_mlperf(model)
    info = board_fit.inspect_board(model, BOARD, calib)
    # an example's build is the run's one (conftest.example_build, which tests/test_examples.py benches)
    report = example_build(key, BOARD)[0] if key in EXAMPLE_NAMES else api.build(model, calib, BOARD, tmp_path / key)
    built = report["memory"]
    assert info["fits"] and info["problem"] is None
    assert info["arena_bytes"] == built["arena_bytes"] == info["ram"]["arena"]
    assert info["flash"]["constants"] == built["weights_bytes"]
    assert abs(info["flash"]["total"] - built["flash_bytes"]) <= 0.02 * built["flash_bytes"], \
        (info["flash"], built["flash_bytes"])
    assert 0 <= info["scratch_bytes"] <= info["arena_bytes"]


@pytest.mark.parametrize("key", ["digits_cnn", "cancer_conv1d", "ad"])
def test_inspect_board_agrees_with_the_build(key, tmp_path, example_build):
    _agrees_with_build(key, tmp_path, example_build)


@pytest.mark.sweep
@pytest.mark.parametrize("key", ["kws", "ic", "vww"])
def test_inspect_board_agrees_with_the_build_mlperf(key, tmp_path, example_build):
    _agrees_with_build(key, tmp_path, example_build)


def test_random_calibration_gives_the_same_plan():
    model, calib = CASES["digits_cnn"]
    given = board_fit.inspect_board(model, BOARD, calib)
    random = board_fit.inspect_board(model, BOARD)
    assert "random" in random["quantized_on"]
    assert (random["arena_bytes"], random["flash"]) == (given["arena_bytes"], given["flash"])
    # the live-set bound the plain inspect printed is not the arena the build plans
    assert given["live_set_lower_bound_bytes"] != given["arena_bytes"]


def test_cli_says_whether_it_fits(capsys):
    model, calib = CASES["digits_cnn"]
    assert cli.main(["inspect", str(model), "--board", BOARD, "--calib", str(calib), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["fits"] and info["board"] == BOARD and info["optimize"] == "speed"
    assert cli.main(["inspect", str(model), "--board", BOARD, "--optimize", "size", "--calib", str(calib)]) == 0
    text = capsys.readouterr().out
    assert "--optimize size" in text and "live-set lower bound" in text
    assert text.rstrip().endswith("fits")
    assert cli.main(["inspect", str(model), "--calib", str(calib)]) == 0      # (it sizes a dynamic axis)
    assert "MACs" in capsys.readouterr().out


def test_a_model_too_big_for_the_board_is_reported_not_raised(capsys):
    model = CASES["vww"][0]
    require_mlperf(model)
    info = board_fit.inspect_board(model, "qemu-cortex-m0")
    assert not info["fits"] and "does not fit board" in info["problem"]
    assert info["ram"]["total"] > info["ram"]["board"] or info["flash"]["total"] > info["flash"]["board"]
    assert cli.main(["inspect", str(model), "--board", "qemu-cortex-m0"]) == 1
    assert "does NOT fit" in capsys.readouterr().out


BUDGET = 7000      # below digits_cnn's fastest plan (arena 4,416 B + firmware): the build patches stages


def test_inspect_with_a_ram_budget_agrees_with_the_budgeted_build(tmp_path):
    """inspect --board --ram-budget plans what `edgec build --ram-budget` builds (a patch-based stage, the same
    arena), and its stack is the estimate the budget counts, said so; the built firmware's stack, measured from
    gcc's -fstack-usage files, stays within it."""
    model, calib = CASES["digits_cnn"]
    plain = board_fit.inspect_board(model, BOARD, calib)
    info = board_fit.inspect_board(model, BOARD, calib, ram_budget=BUDGET)
    built = api.build(model, calib, BOARD, tmp_path / "budget", ram_budget=BUDGET)["memory"]
    assert info["fits"] and info["patched_stages"] >= 1 and plain["patched_stages"] == 0
    assert info["arena_bytes"] == built["arena_bytes"] < plain["arena_bytes"]
    assert info["budget_ram_bytes"] <= BUDGET == info["ram_budget"]
    assert info["stack_method"].startswith("estimate") and "-fstack-usage" in info["stack_method"]
    assert "--ram-budget" in info["stack_method"] and "--ram-budget" not in plain["stack_method"]
    assert built["stack_estimate_bytes"] is not None and built["stack_estimate_bytes"] <= info["stack_bytes"]


def test_cli_ram_budget(capsys):
    model, calib = CASES["digits_cnn"]
    args = ["inspect", str(model), "--board", BOARD, "--calib", str(calib), "--ram-budget"]
    assert cli.main(args + [str(BUDGET)]) == 0
    text = capsys.readouterr().out
    assert f"of --ram-budget {BUDGET:,} B" in text and "patch-based stage" in text and "stack   2,048 B, estimate" in text
    assert cli.main(args + ["1000"]) == 1       # no schedule reaches it: the smallest plan and the build's error
    text = capsys.readouterr().out
    assert "does NOT fit" in text and "smallest RAM edgec reaches" in text
    assert cli.main(["inspect", str(model), "--ram-budget", "9000"]) == 2
    assert "--ram-budget is read with --board only" in capsys.readouterr().err


def test_a_build_for_a_part_with_flash_wait_states_weighs_the_flash_reads(tmp_path):
    """build_chooser: on the NUCLEO-L4R5ZI (5 wait states, weights in flash) a layer the tuning log has no record
    for runs the kernel the flash-aware cost finds cheapest (AD's 640 -> 128 layer: the pairs kernel's int8
    weights, not rows8's int16 nor the generic kernel's slower loop); on the emulated board, whose memory has no wait states, or with the weights in
    RAM, the cost model's usual choice (the chooser answers nothing)."""
    from edgec.ops import select
    from edgec.settings import Settings
    from edgec.targets.boards import load_board
    import numpy as np
    from edgec.ir import Op
    rng = np.random.default_rng(0)
    op = Op("fully_connected", "fc", ("x",), "y",
            params=dict(in_features=640, out_features=128, input_zp=3, output_zp=-5, act_min=-128, act_max=127),
            arrays=dict(weights=rng.integers(-100, 101, (128, 640)).astype(np.int8),
                        bias=np.zeros(128, np.int32), mult=np.full(128, 1_500_000_000, np.int32),
                        shift=np.full(128, -9, np.int32)))
    generic = select.fast(op)
    log = tmp_path / "tuning.json"
    real = board_fit.build_chooser(load_board("nucleo-l4r5zi"), "speed", log, Settings.from_environment())
    assert real(op, generic) == "pairs"
    emulated = board_fit.build_chooser(load_board(BOARD), "speed", log, Settings.from_environment())
    assert emulated(op, generic) is None
    in_ram = board_fit.build_chooser(load_board("nucleo-l4r5zi"), "speed", log, Settings.from_environment(),
                                     weights_in_ram=True)     # --weights-in-ram: no flash reads to weigh
    assert in_ram(op, generic) is None
    assert board_fit.build_chooser(load_board("nucleo-l4r5zi"), "size", log, Settings.from_environment()) is None
