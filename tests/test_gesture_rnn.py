"""examples/gesture_rnn (PyTorch-style LSTM and GRU classifiers on accelerometer gestures) built for host,
qemu-cortex-m4 and qemu-cortex-m3: bit-exact with the NumPy reference on the whole test set, top-1 within 1
point of float, the recurrent layer one layer of the profile, no layer diverging. Acceptance-scale (six
firmware builds and 6000 emulated inferences): marker sweep, outside the default run."""
from __future__ import annotations

from pathlib import Path

import pytest

from edgec import api

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gesture_rnn"
pytestmark = pytest.mark.sweep


@pytest.mark.parametrize("board", ["host", "qemu-cortex-m4", "qemu-cortex-m3"])
@pytest.mark.parametrize("model", ["lstm", "gru"])
def test_gesture_rnn_on_board(model, board, tmp_path):
    out = tmp_path / f"{model}-{board}"
    api.build(EXAMPLE / f"{model}.onnx", EXAMPLE / "calib.npz", board, out)
    r = api.bench(out, EXAMPLE / "test.npz", profile=True, compare_layers=True)
    acc = r["accuracy"]
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert acc["float"] - acc["device"] <= 0.01
    rows = [row for row in r["profile"]["layers"] if row["kind"] == model]
    assert len(rows) == 1 and rows[0]["macs"] > 0
    assert r["divergence"]["first_divergent_layer"] is None
