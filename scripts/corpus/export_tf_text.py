"""Keras text models over int32 token ids through TFLiteConverter full-INT8 post-training quantization: the
int32 input stays int32 and feeds a GATHER (the embedding lookup). Random (seeded) weights.

- keras_text_cnn: Keras' own Embedding (it writes LESS / ADD / SELECT_V2 on the int32 ids before its GATHER,
  wrapping negative ids; TFLite Micro's SELECT_V2 takes no int32, so its oracle is TF Lite's interpreter with
  reference kernels), Conv1D, GlobalMaxPooling1D, Dense.
- keras_text_gap and keras_text_attention: the table looked up with tf.gather (a plain GATHER, as TFLite Micro
  runs it), then GlobalAveragePooling1D and Dense, or one multi-head self-attention block with LayerNormalization.
- keras_text_lstm: the tf.gather table, an unrolled Keras LSTM (unroll=True: the fused one does not convert), Dense.

    /work/venv-tf/bin/python scripts/corpus/export_tf_text.py [--only NAME ...]
    python scripts/corpus/oracles.py --only NAME            # TFLite Micro's oracle (token ids in input_range)
    /work/venv-tf/bin/python scripts/corpus/oracles.py --tensorflow-lite --only keras_text_cnn
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402
from keras import layers as L  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402

VOCAB, TOKENS, DIM, CLASSES = 500, 32, 16, 4


class GatherEmbedding(L.Layer):
    """An embedding table looked up with tf.gather: a plain GATHER in the .tflite."""

    def __init__(self, initializer="uniform", **kw):
        super().__init__(**kw)
        self.initializer = initializer

    def build(self, shape):
        self.table = self.add_weight(shape=(VOCAB, DIM), initializer=self.initializer)

    def call(self, ids):
        return tf.gather(self.table, ids)


def text_cnn():
    x = inp = keras.Input((TOKENS,), dtype="int32")
    x = L.Embedding(VOCAB, DIM)(x)
    x = L.GlobalMaxPooling1D()(L.Conv1D(32, 3, activation="relu")(x))
    return keras.Model(inp, L.Dense(CLASSES, activation="softmax")(x))


def text_gap():
    x = inp = keras.Input((TOKENS,), dtype="int32")
    x = L.GlobalAveragePooling1D()(GatherEmbedding()(x))
    return keras.Model(inp, L.Dense(CLASSES, activation="softmax")(L.Dense(16, activation="relu")(x)))


def text_attention():
    x = inp = keras.Input((TOKENS,), dtype="int32")
    x = GatherEmbedding()(x)
    x = L.LayerNormalization()(L.Add()([x, L.MultiHeadAttention(2, DIM // 2)(x, x)]))
    x = L.GlobalAveragePooling1D()(x)
    return keras.Model(inp, L.Dense(CLASSES, activation="softmax")(x))


def text_lstm():
    """Keras' fused LSTM does not convert (TFLiteConverter crashes); unrolled it does, as per-step FULLY_CONNECTED,
    LOGISTIC, TANH, MUL, ADD (the first step's gate projection through DEQUANTIZE, a float32 SPLIT, QUANTIZE)."""
    x = inp = keras.Input((TOKENS // 2,), dtype="int32", batch_size=1)
    x = L.LSTM(DIM, unroll=True)(GatherEmbedding(keras.initializers.RandomNormal(stddev=1.0))(x))
    return keras.Model(inp, L.Dense(CLASSES)(x))


# name: (kind, constructor, the token ids the oracle draws [lo, hi))
MODELS = {
    "keras_text_cnn": ("sequence", text_cnn, (-VOCAB, VOCAB)),        # Keras' Embedding wraps ids below 0
    "keras_text_gap": ("sequence", text_gap, (0, VOCAB)),
    "keras_text_attention": ("transformer", text_attention, (0, VOCAB)),
    "keras_text_lstm": ("sequence", text_lstm, (0, VOCAB)),
}


def export(name: str) -> None:
    kind, make, ids = MODELS[name]
    keras.utils.set_random_seed(sum(map(ord, name)))
    model = make()
    calib = np.random.default_rng(sum(map(ord, name))).integers(0, VOCAB, (32, model.inputs[0].shape[1]))
    calib = calib.astype(np.int32)
    conv = export_tf.ptq_converter(model, calib)
    conv.inference_input_type = conv.inference_output_type = tf.int8     # (the int32 ids stay int32)
    out = export_tf.corpus_file(name, "model.tflite")
    out.write_bytes(conv.convert())
    how = f"TFLiteConverter full-INT8 PTQ (int32 token ids in, int8 out), TensorFlow {tf.__version__}"
    export_tf.record(name, kind, out, "scripts/corpus/export_tf_text.py", "Apache-2.0 (this repository)",
                     {"architecture": "scripts/corpus/export_tf_text.py", "exporter": how, "keras_batch": None,
                      "weights": "random (seeded)"}, committed=True, input_range=list(ids))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
