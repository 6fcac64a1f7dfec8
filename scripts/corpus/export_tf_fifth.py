"""The fifth hidden-corpus round's Keras models: layers and converter settings the corpus did not have yet -- a 16x8
(int16 activations) attention model, a Bidirectional LSTM (unrolled), SeparableConv1D / DepthwiseConv1D with swish,
a uint8 image input through a Rescaling layer into an inception-style block (ZeroPadding2D, AveragePooling2D,
Concatenate), and tf2onnx at opset 13 of a Keras MultiHeadAttention model. Random (seeded) weights, BatchNorm
statistics from the calibration inputs, as export_tf.py (whose helpers these reuse).

    /work/venv-tf/bin/python scripts/corpus/export_tf_fifth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
from export_tf import OWN, L, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_fifth.py")


def attention_har(shape=(64, 6), classes=6):
    """Activity recognition: a strided Conv1D embedding, one MultiHeadAttention block with residual adds and a ReLU
    MLP, GlobalAveragePooling1D, the classes (batch 1). No LayerNormalization: Keras 3 writes it with a NEG, which
    TFLiteConverter 2.21 cannot quantize to 16x8 ("not yet supported for op: 'NEG'")."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.Conv1D(32, 5, 2, padding="same", activation="relu")(x)
    x = x + L.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)
    x = x + L.Dense(32)(L.Dense(64, activation="relu")(x))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.GlobalAveragePooling1D()(x))))


def bilstm_har(shape=(32, 6), classes=6):
    """Activity recognition: a Bidirectional LSTM (unrolled: TFLiteConverter crashes on rolled Keras recurrent
    layers, export_tf.py) over a 32-step IMU window, its two last states to the classes."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.Bidirectional(L.LSTM(16, unroll=True))(L.Dense(12, activation="relu")(x))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def sepconv1d_kws(shape=(49, 10), classes=12):
    """A 1-D keyword spotter over MFCC frames: Conv1D, SeparableConv1D and DepthwiseConv1D blocks with swish,
    a global max pool."""
    x = inp = keras.Input(shape)
    x = L.Activation("swish")(L.BatchNormalization()(L.Conv1D(32, 3, padding="same")(x)))
    x = L.Activation("swish")(L.BatchNormalization()(L.SeparableConv1D(48, 5, 2, padding="same")(x)))
    x = L.Activation("swish")(L.BatchNormalization()(L.DepthwiseConv1D(3, padding="same")(x)))
    x = L.Dropout(0.2)(L.GlobalMaxPooling1D()(x))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def rescaling_inception(shape=(64, 64, 3), classes=2):
    """A person / no-person classifier fed uint8 pixels: Rescaling(1/127.5, -1) in the model, then an
    inception-style block (1x1, ZeroPadding2D + 3x3, AveragePooling2D + 1x1, Concatenate)."""
    x = inp = keras.Input(shape)
    x = L.Rescaling(1 / 127.5, offset=-1)(x)
    x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(16, 3, 2)(L.ZeroPadding2D(1)(x))))
    a = L.ReLU()(L.Conv2D(8, 1)(x))
    b = L.ReLU()(L.Conv2D(8, 3)(L.ZeroPadding2D(1)(x)))
    c = L.ReLU()(L.Conv2D(8, 1)(L.AveragePooling2D(3, 1, padding="same")(x)))
    x = L.Concatenate()([a, b, c])
    x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(32, 3, 2, padding="same")(x)))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.GlobalAveragePooling2D()(x))))


def mha_kws(shape=(49, 10), classes=12):
    """A keyword transformer over MFCC frames: MultiHeadAttention, LayerNormalization, a swish MLP (not GELU:
    tf2onnx 1.17 writes GELU with an `Erfc` node, which ONNX does not define), batch None."""
    x = inp = keras.Input(shape)
    x = L.Dense(32)(x)
    a = L.MultiHeadAttention(num_heads=4, key_dim=8)(x, x)
    x = L.LayerNormalization(epsilon=1e-6)(x + a)
    x = L.LayerNormalization(epsilon=1e-6)(x + L.Dense(32)(L.Dense(64, activation="swish")(x)))
    return keras.Model(inp, L.Dense(classes)(L.GlobalAveragePooling1D()(x)))


# name: (kind, constructor, exporter: "int8" / "16x8" / "uint8-in" (.tflite) or "tf2onnx-13")
MODELS = {
    "keras16x8_attention_har": ("har", attention_har, "16x8"),
    "keras_bilstm_har_unrolled": ("har", bilstm_har, "int8"),
    "keras_sepconv1d_swish_kws": ("kws", sepconv1d_kws, "int8"),
    "keras_rescaling_uint8_person": ("classification", rescaling_inception, "uint8-in"),
    "tf2onnx_mha_kws_op13": ("transformer", mha_kws, "tf2onnx-13"),
}


def export(name: str) -> None:
    kind, make, how = MODELS[name]
    model, calib = export_tf.seeded(name, make)
    if how == "uint8-in":                           # pixels as the camera gives them
        calib = (calib.clip(0, 1) * 255).round().astype("float32")
    export_tf.set_batchnorm_from(model, calib)
    if how == "tf2onnx-13":
        out = export_tf.corpus_file(name, "model.onnx")
        version = export_tf.to_onnx(model, calib, out, None, 13)
        text = f"tf2onnx {version} (float, opset 13, batch axis None), TensorFlow {tf.__version__}"
    else:
        conv, text = export_tf.typed_converter(model, calib, how)
        text += f", TensorFlow {tf.__version__}"
        out = export_tf.corpus_file(name, "model.tflite")
        out.write_bytes(conv.convert())
    export_tf.record(name, kind, out, OWN[1], OWN[0], export_tf.keras_source(model, OWN[1], text))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
