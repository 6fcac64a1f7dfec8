"""Keras networks through TensorFlow's real exporters: TFLiteConverter full-INT8 post-training quantization
(int8 input and output, as TFLite Micro users make them) and tf2onnx (float ONNX). Keras applications at
microcontroller resolutions and the small audio/activity/anomaly/sequence/detection/transformer networks people
train; random (seeded) weights, BatchNorm statistics set from the calibration inputs.

Runs in its own environment (TensorFlow is not a dependency of edgec):

    python3 -m venv /work/venv-tf && /work/venv-tf/bin/pip install tensorflow-cpu tf2onnx onnx
    /work/venv-tf/bin/python scripts/corpus/export_tf.py [--only NAME ...]
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
import manifest  # noqa: E402
from manifest import corpus_file  # noqa: E402,F401  (the Keras exporters take it from here)

KERAS = ("Apache-2.0 (Keras)", "https://github.com/keras-team/keras")
OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_tf.py")
INT16 = tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
WEIGHTS = "random (seeded), BatchNorm statistics from the calibration inputs"


def _app(fn, shape, **kw):
    return lambda: fn(input_shape=shape, weights=None, classes=kw.pop("classes", 2), **kw)


def ds_cnn(shape=(49, 10, 1), classes=12, c=64):
    x = inp = keras.Input(shape)
    x = L.Conv2D(c, (10, 4), (2, 2), padding="same", use_bias=False)(x)
    x = L.ReLU()(L.BatchNormalization()(x))
    for _ in range(4):
        x = L.ReLU()(L.BatchNormalization()(L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)))
        x = L.ReLU()(L.BatchNormalization()(L.Conv2D(c, 1, use_bias=False)(x)))
    x = L.GlobalAveragePooling2D()(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def resnet8(shape=(32, 32, 3), classes=10):
    x = inp = keras.Input(shape)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(x)))
    for c, s in ((16, 1), (32, 2), (64, 2)):
        y = L.ReLU()(L.BatchNormalization()(L.Conv2D(c, 3, s, padding="same")(x)))
        y = L.BatchNormalization()(L.Conv2D(c, 3, padding="same")(y))
        if s != 1:
            x = L.Conv2D(c, 1, s)(x)
        x = L.ReLU()(L.Add()([x, y]))
    x = L.AveragePooling2D(8)(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.Flatten()(x))))


def har_cnn(shape=(128, 9), classes=6):
    x = inp = keras.Input(shape)
    for c, s in ((32, 1), (32, 2), (64, 2)):
        x = L.ReLU()(L.BatchNormalization()(L.Conv1D(c, 5, s, padding="same")(x)))
    x = L.GlobalMaxPooling1D()(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def har_lstm(shape=(128, 9), classes=6):
    x = inp = keras.Input(shape, batch_size=1)
    x = L.LSTM(32)(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def gru_seq(shape=(28, 28), classes=10):
    x = inp = keras.Input(shape, batch_size=1)
    x = L.GRU(32)(x)
    return keras.Model(inp, L.Dense(classes)(x))


def ad_autoencoder(d=640):
    x = inp = keras.Input((d,))
    for u in (128, 128, 8, 128, 128):
        x = L.ReLU()(L.BatchNormalization()(L.Dense(u)(x)))
    return keras.Model(inp, L.Dense(d)(x))


def audio_events(shape=(40, 64, 1), classes=8):
    x = inp = keras.Input(shape)
    for c in (16, 32):
        x = L.MaxPooling2D(2)(L.ReLU()(L.BatchNormalization()(L.Conv2D(c, 3, padding="same")(x))))
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(48, 3, padding="same")(x)))
    x = L.GlobalMaxPooling2D()(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.Dropout(0.2)(x))))


def ssd_head(shape=(96, 96, 3), classes=3, anchors=3):
    base = keras.applications.MobileNetV2(input_shape=shape, alpha=0.35, weights=None, include_top=False)
    a = base.get_layer("block_13_expand_relu").output
    b = base.output
    boxes = [L.Reshape((-1, 4))(L.Conv2D(anchors * 4, 3, padding="same")(t)) for t in (a, b)]
    scores = [L.Reshape((-1, classes))(L.Conv2D(anchors * classes, 3, padding="same")(t)) for t in (a, b)]
    return keras.Model(base.input, [L.Concatenate(1)(boxes), L.Activation("sigmoid")(L.Concatenate(1)(scores))])


def tiny_transformer(shape=(49, 10), classes=12, d=32):
    x = inp = keras.Input(shape)
    x = L.Dense(d)(x)
    for _ in range(2):
        y = L.MultiHeadAttention(2, d // 2)(x, x)
        x = L.LayerNormalization()(L.Add()([x, y]))
        y = L.Dense(d)(L.Dense(2 * d, activation="relu")(x))
        x = L.LayerNormalization()(L.Add()([x, y]))
    x = L.GlobalAveragePooling1D()(x)
    return keras.Model(inp, L.Dense(classes)(x))


# name: (kind, constructor, exporter "tflite" | "tf2onnx", origin)
MODELS = {
    "keras_mobilenet_v1_025_96": ("classification", _app(keras.applications.MobileNet, (96, 96, 3), alpha=0.25), "tflite", KERAS),
    "keras_mobilenet_v2_035_96": ("classification", _app(keras.applications.MobileNetV2, (96, 96, 3), alpha=0.35), "tflite", KERAS),
    "keras_mobilenet_v3_small_96": ("classification", _app(keras.applications.MobileNetV3Small, (96, 96, 3), alpha=0.75, minimalistic=True), "tflite", KERAS),
    "keras_mobilenet_v2_035_96_uint8": ("classification", _app(keras.applications.MobileNetV2, (96, 96, 3), alpha=0.35), "tflite", KERAS),
    "keras_resnet8": ("classification", resnet8, "tflite", OWN),
    "keras_ds_cnn_kws": ("kws", ds_cnn, "tflite", OWN),
    "keras_audio_events_cnn": ("audio-events", audio_events, "tflite", OWN),
    "keras_har_cnn1d": ("har", har_cnn, "tflite", OWN),
    "keras_har_lstm": ("har", har_lstm, "tflite", OWN),
    "keras_gru_rows": ("sequence", gru_seq, "tflite", OWN),
    "keras_ad_autoencoder": ("anomaly", ad_autoencoder, "tflite", OWN),
    "keras_ssd_mobilenet_v2": ("detection", ssd_head, "tflite", OWN),
    "keras_kws_transformer": ("transformer", tiny_transformer, "tflite", OWN),
    "tf2onnx_mobilenet_v1_025_96": ("classification", _app(keras.applications.MobileNet, (96, 96, 3), alpha=0.25), "tf2onnx", KERAS),
    "tf2onnx_ds_cnn_kws": ("kws", ds_cnn, "tf2onnx", OWN),
    "tf2onnx_har_cnn1d": ("har", har_cnn, "tf2onnx", OWN),
    "tf2onnx_ad_autoencoder": ("anomaly", ad_autoencoder, "tf2onnx", OWN),
}


# input and output type of a .tflite when not int8 (TFLiteConverter's inference_input/output_type)
UINT8_IO = {"keras_mobilenet_v2_035_96_uint8"}


def calibration(name: str, shape, n: int) -> np.ndarray:
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.standard_normal((n, *shape)).astype(np.float32)
    if len(shape) == 3 and shape[-1] == 3:          # images: smooth, around [0, 1]
        x = np.cumsum(x, axis=-2) / np.sqrt(shape[-2]) * 0.5 + 0.5
    return x.astype(np.float32)


def set_batchnorm_from(model, x) -> None:
    for layer in model.layers:
        if isinstance(layer, L.BatchNormalization):
            layer.momentum = 0.0
    model(x, training=True)


def seeded(name: str, make):
    """The Keras model `make()` with its weights seeded by `name`, and its 32 calibration inputs."""
    keras.utils.set_random_seed(sum(map(ord, name)))
    model = make()
    return model, calibration(name, tuple(model.inputs[0].shape[1:]), 32)


def ptq_converter(model, calib, ops=None):
    """A TFLiteConverter of `model` set for post-training quantization over `calib` (one sample a step), with
    the operator sets `ops` (full INT8 by default); the caller sets the input and output types."""
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([calib[i:i + 1]] for i in range(len(calib)))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8] if ops is None else ops
    return conv


def typed_converter(model, calib, how: str):
    """ptq_converter with its input and output types: "16x8" (int16 activations, input and output), "uint8-in"
    (full INT8, a uint8 input), else full INT8 with int8 input and output. Returns (converter, its description)."""
    conv = ptq_converter(model, calib, [INT16] if how == "16x8" else None)
    if how == "16x8":
        conv.inference_input_type = conv.inference_output_type = tf.int16
        return conv, "TFLiteConverter PTQ 16x8 (int16 activations, int8 weights, int16 input and output)"
    if how == "uint8-in":
        conv.inference_input_type, conv.inference_output_type = tf.uint8, tf.int8
        return conv, "TFLiteConverter full-INT8 PTQ (uint8 input, int8 output)"
    conv.inference_input_type = conv.inference_output_type = tf.int8
    return conv, "TFLiteConverter full-INT8 PTQ (int8 input and output)"


def keras_source(model, architecture: str, exporter: str) -> dict:
    """The provenance `record` takes of a seeded Keras model: architecture, exporter, batch axis, weights."""
    return {"architecture": architecture, "exporter": exporter, "keras_batch": model.inputs[0].shape[0],
            "weights": WEIGHTS}


def to_onnx(model, calib, out: Path, batch, opset: int) -> str:
    """`model` through tf2onnx to `out` (float; one input, "input", its batch axis `batch`: 1 or None), its
    calibration inputs saved beside it; returns tf2onnx's version."""
    import tf2onnx
    spec = [tf.TensorSpec((batch, *model.inputs[0].shape[1:]), tf.float32, name="input")]
    tf2onnx.convert.from_function(tf.function(lambda x: model(x, training=False)), input_signature=spec,
                                  opset=opset, output_path=str(out))
    manifest.save_calibration(out.parent, calib)
    return tf2onnx.__version__


def record(name: str, kind: str, out: Path, script: str, license: str, source: dict, committed=None,
           **extra) -> None:
    """Record an export in the manifest (manifest.record_export: made by `script`, remade by `script --only name`
    in /work/venv-tf; `source`: the rest of its provenance; committed by default when at most 700 kB)."""
    manifest.record_export(name, kind, out, script, "/work/venv-tf/bin/python", license, source, committed, **extra)


def export(name: str) -> None:
    kind, make, exporter, (lic, origin) = MODELS[name]
    model, calib = seeded(name, make)
    if any(isinstance(layer, L.BatchNormalization) for layer in model.layers):
        set_batchnorm_from(model, calib)
    if exporter == "tflite":
        conv = ptq_converter(model, calib)
        io = tf.uint8 if name in UINT8_IO else tf.int8
        conv.inference_input_type = io
        conv.inference_output_type = io
        out = corpus_file(name, "model.tflite")
        out.write_bytes(conv.convert())
        how = f"TFLiteConverter full-INT8 PTQ ({io.name} input and output), TensorFlow {tf.__version__}"
    else:
        out = corpus_file(name, "model.onnx")
        how = f"tf2onnx {to_onnx(model, calib, out, 1, 17)} (float), TensorFlow {tf.__version__}"
    record(name, kind, out, "scripts/corpus/export_tf.py", lic, keras_source(model, origin, how), committed=True)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
