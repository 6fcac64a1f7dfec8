"""Keras networks through TensorFlow's exporters in the shapes the other Keras exporters do not make: uint8 input and
output with two outputs and a Keras Reshape left with batch None (a run-time SHAPE -> STRIDED_SLICE -> PACK
subgraph), a float .tflite (TFLiteConverter without quantization: edgec quantizes it from calib.npz) of a
convolutional GRU, a non-square int8 autoencoder with Conv2DTranspose, bilinear UpSampling2D and a skip
Concatenate, and tf2onnx files with their batch axis left dynamic (NHWC input, opset 18) of a Keras 3 GRU and LSTM, which
tf2onnx writes as ONNX Loops (and a Bidirectional GRU, batch 1: a ReverseSequence before the backward Loop). Random (seeded)
weights, BatchNorm statistics from the calibration inputs, as export_tf.py (whose helpers these reuse).

    /work/venv-tf/bin/python scripts/corpus/export_tf_variety.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
from export_tf import OWN, L, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_variety.py")


def two_head_har(shape=(64, 6), classes=5):
    """Activity recognition with an anomaly head: Conv1D features, a Reshape to frames of 8 features (batch None),
    a class softmax and a sigmoid novelty score."""
    x = inp = keras.Input(shape)
    x = L.ReLU()(L.BatchNormalization()(L.Conv1D(16, 5, 2, padding="same")(x)))
    x = L.Reshape((-1, 8))(x)                              # (32, 16) -> (64, 8)
    x = L.ReLU()(L.BatchNormalization()(L.Conv1D(24, 3, 2, padding="valid")(x)))
    f = L.GlobalMaxPooling1D()(x)
    return keras.Model(inp, [L.Softmax()(L.Dense(classes)(f)), L.Activation("sigmoid")(L.Dense(1)(f))])


def crnn_kws(shape=(49, 10, 1), classes=12):
    """A convolutional-recurrent keyword spotter: strided Conv2D over the MFCC image, frames to a GRU (unrolled:
    TFLiteConverter crashed on Keras recurrent layers left rolled, export_tf.py)."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, (3, 3), (1, 2), padding="same")(x)))
    x = L.Reshape((shape[0], 16 * 5))(x)
    x = L.GRU(32, unroll=True)(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def skip_autoencoder(shape=(48, 64, 1)):
    """A spectrogram-patch anomaly autoencoder on a non-square input: strided convs and a max pool down,
    Conv2DTranspose and bilinear UpSampling2D up, a skip Concatenate."""
    x = inp = keras.Input(shape)
    a = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, 2, padding="same")(x)))     # 24x32
    b = L.MaxPooling2D(2)(L.ReLU()(L.BatchNormalization()(L.Conv2D(32, 3, padding="same")(a))))   # 12x16
    b = L.ReLU()(L.BatchNormalization()(L.Conv2DTranspose(16, 3, 2, padding="same")(b)))         # 24x32
    c = L.Concatenate()([a, b])
    c = L.UpSampling2D(2, interpolation="bilinear")(L.Conv2D(8, 3, padding="same", activation="relu")(c))
    return keras.Model(inp, L.Conv2D(1, 3, padding="same")(c))


def gru_kws(shape=(49, 10, 1), classes=12):
    x = inp = keras.Input(shape)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(8, 3, padding="same")(x)))
    x = L.Reshape((shape[0], 8 * shape[1]))(x)
    x = L.GRU(32)(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def lstm_har(shape=(32, 6), classes=6):
    """Activity recognition: a Keras LSTM over a 32-step IMU window, its last state to the classes."""
    x = inp = keras.Input(shape)
    x = L.LSTM(24)(L.Dense(16, activation="relu")(x))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def bigru_kws(shape=(49, 10, 1), classes=12):
    """gru_kws with a Keras Bidirectional GRU: tf2onnx reverses the backward half's input with a ReverseSequence
    (its go_backwards), then both halves are Loops."""
    x = inp = keras.Input(shape)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(8, 3, padding="same")(x)))
    x = L.Reshape((shape[0], 8 * shape[1]))(x)
    x = L.Bidirectional(L.GRU(16))(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


# name: (kind, constructor, exporter: "uint8" / "float" / "int8" (.tflite) or "tf2onnx-batch-none" / "-batch-1")
MODELS = {
    "keras_uint8_two_head_har": ("har", two_head_har, "uint8"),
    "keras_float_crnn_kws": ("kws", crnn_kws, "float"),     # not in the manifest (below)
    "keras_skip_autoencoder_48x64": ("anomaly", skip_autoencoder, "int8"),
    "tf2onnx_gru_kws_batch_none": ("kws", gru_kws, "tf2onnx-batch-none"),
    "tf2onnx_lstm_har_batch_none": ("har", lstm_har, "tf2onnx-batch-none"),    # tf2onnx writes an ONNX LSTM
    "tf2onnx_lstm_har_batch_1": ("har", lstm_har, "tf2onnx-batch-1"),          # the same network: a Loop
    "tf2onnx_bigru_kws_batch_1": ("kws", bigru_kws, "tf2onnx-batch-1"),        # ReverseSequence, two Loops
}
# Tried, not in the corpus: keras_float_crnn_kws (crnn_kws as a float .tflite) is refused: edgec cannot translate
# the float UNPACK, SPLIT and STRIDED_SLICE of the unrolled GRU to quantize it (and so has no oracle).


def export(name: str) -> None:
    kind, make, how = MODELS[name]
    model, calib = export_tf.seeded(name, make)
    export_tf.set_batchnorm_from(model, calib)
    if how.startswith("tf2onnx"):
        batch = None if how == "tf2onnx-batch-none" else 1
        out = export_tf.corpus_file(name, "model.onnx")
        version = export_tf.to_onnx(model, calib, out, batch, 18)
        text = f"tf2onnx {version} (float, opset 18, batch axis {batch}), TensorFlow {tf.__version__}"
    else:
        if how == "float":
            conv = tf.lite.TFLiteConverter.from_keras_model(model)
        else:
            conv = export_tf.ptq_converter(model, calib)
            conv.inference_input_type = conv.inference_output_type = tf.uint8 if how == "uint8" else tf.int8
        out = export_tf.corpus_file(name, "model.tflite")
        out.write_bytes(conv.convert())
        if how == "float":
            manifest.save_calibration(out.parent, calib)
        text = (f"TFLiteConverter, no quantization (float32 .tflite)" if how == "float" else
                f"TFLiteConverter full-INT8 PTQ ({how} input and output)") + f", TensorFlow {tf.__version__}"
    export_tf.record(name, kind, out, OWN[1], OWN[0], export_tf.keras_source(model, OWN[1], text))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
