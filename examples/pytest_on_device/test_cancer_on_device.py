"""On-device tests of a model with edgec's pytest plugin (installed with edgec; nothing to configure).

    pytest examples/pytest_on_device                                   # on the host board
    pytest examples/pytest_on_device --edgec-board qemu-cortex-m4      # on an emulated Cortex-M4
    pytest examples/pytest_on_device --edgec-board nucleo-l4r5zi --edgec-port /dev/ttyACM0   # a flashed board

The first run builds the model for the board; later runs reuse the build until the model, the calibration
set, the board or the options change.
"""
from pathlib import Path

import numpy as np
import pytest

MODEL_DIR = Path(__file__).resolve().parent.parent / "cancer_conv1d"
TEST = np.load(MODEL_DIR / "test.npz")
X, Y = TEST["x"][:40], TEST["y"][:40]
LATENCY_BUDGET_MS = 20.0


@pytest.fixture(scope="module")
def dut(edgec_device):
    return edgec_device(MODEL_DIR / "model.onnx", MODEL_DIR / "calib.npz")


def test_accuracy(dut):
    predicted = np.array([dut.run(x).float.argmax() for x in X])
    assert np.mean(predicted == Y) >= 0.9


def test_bit_exact_with_the_reference(dut):
    for x in X[:10]:
        out = dut.run(x)
        assert np.array_equal(out.int8, dut.reference(x).int8)
    assert np.allclose(out.float, dut.float_model(x), atol=0.1)     # INT8 stays close to the float model


def test_latency_budget(dut):
    latency = dut.latency(X[0], repeats=3)
    if latency.ms is None:
        pytest.skip(f"board {dut.board.name} counts {latency.unit} with no conversion to time")
    assert latency.ms <= LATENCY_BUDGET_MS, f"{latency.ms:.3f} ms ({latency.units:,.0f} {latency.unit})"


def test_every_layer_takes_time_and_the_arena_fits(dut):
    layers = dut.profile(X[0])
    assert layers and all(layer["units"] > 0 for layer in layers)
    assert dut.report["memory"]["arena_bytes"] <= 4096
