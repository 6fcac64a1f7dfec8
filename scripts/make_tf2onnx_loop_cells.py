"""Small Keras 3 GRU / LSTM layers exported by tf2onnx as ONNX Loops (the test fixtures of
tests/test_loop_recurrent.py, in tests/data/tf2onnx_loops/): 5 steps, 3 features, 4 units, seeded random weights.
Run with /work/venv-tf/bin/python (TensorFlow + tf2onnx); the files are committed, the suite needs neither."""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf2onnx  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "tf2onnx_loops"
L = keras.layers

# name: (layer, batch axis of the exported input)
CELLS = {
    "gru_last_b1": (lambda: L.GRU(4), 1),
    "gru_seq_bnone": (lambda: L.GRU(4, return_sequences=True), None),
    "gru_reset_before_b1": (lambda: L.GRU(4, reset_after=False), 1),
    "gru_backwards_b1": (lambda: L.GRU(4, go_backwards=True, return_sequences=True), 1),
    "gru_relu_b1": (lambda: L.GRU(4, activation="relu"), 1),
    "lstm_seq_b1": (lambda: L.LSTM(4, return_sequences=True), 1),
    "lstm_state_b1": (lambda: L.LSTM(4, return_state=True), 1),
    "gru_hard_sigmoid_b1": (lambda: L.GRU(4, recurrent_activation="hard_sigmoid"), 1),
}


def export(name: str) -> None:
    make, batch = CELLS[name]
    keras.utils.set_random_seed(sum(map(ord, name)))
    inp = keras.Input((5, 3))
    out = make()(inp)
    model = keras.Model(inp, out)
    for w in model.weights:      # biases away from zero, so a misplaced bias shows
        w.assign(tf.random.uniform(w.shape, -0.8, 0.8, seed=len(name)))
    spec = [tf.TensorSpec((batch, 5, 3), tf.float32, name="input")]
    tf2onnx.convert.from_function(tf.function(lambda x: model(x, training=False)), input_signature=spec,
                                  opset=18, output_path=str(OUT / f"{name}.onnx"))


def main(argv=None) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in (argv if argv else CELLS):
        export(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
