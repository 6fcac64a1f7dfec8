"""The eighth hidden-corpus round's Keras models: layers and converter settings the corpus did not have yet -- a ViT
over IMU patches with a learned class token (a custom layer concatenating a weight in front of the tokens),
MultiHeadAttention, LayerNormalization and an MLP, through TFLiteConverter full-INT8 (swish) and through tf2onnx at
opset 18 (tanh GELU); a 1-D autoencoder with Conv1DTranspose, LayerNormalization and a hard-sigmoid output (int8); and Keras'
MobileNetV3-Small (alpha 0.75, hard-swish, squeeze-excitation; its input in [0, 1] without the
Rescaling layer, whose 0..255 inputs the corpus's evaluation draws do not make) through tf2onnx at opset 18. Random (seeded)
weights, BatchNorm statistics from the calibration inputs, as export_tf.py (whose helpers these reuse).

    /work/venv-tf/bin/python scripts/corpus/export_tf_eighth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
from export_tf import KERAS, OWN, L, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_eighth.py")


class ClassToken(L.Layer):
    """A learned class token concatenated in front of the tokens (as Keras' ViT examples write it)."""

    def build(self, shape):
        self.token = self.add_weight(shape=(1, 1, shape[-1]), initializer="random_normal", name="token")

    def call(self, x):
        return keras.ops.concatenate([keras.ops.broadcast_to(self.token, (keras.ops.shape(x)[0], 1, x.shape[-1])),
                                      x], axis=1)


class AddPosition(L.Layer):
    """A learned position embedding added to the tokens."""

    def build(self, shape):
        self.pos = self.add_weight(shape=(1, *shape[1:]), initializer="random_normal", name="pos")

    def call(self, x):
        return x + self.pos


def vit_cls_har(shape=(128, 6), classes=6, d=32, batch=1, gelu="gelu"):
    """A ViT over a 6-axis IMU window: 16-sample patches (a strided Conv1D), a class token, a learned position
    embedding, two pre-norm blocks of MultiHeadAttention and a GELU MLP, the class token's output classified.
    `gelu`: the MLP's activation. The .tflite takes swish: TFLite Micro registers no GELU, and TF Lite's reference
    kernels (the oracle then) round a per-channel FULLY_CONNECTED differently from TFLite Micro (docs/corpus.md,
    the eighth round). tf2onnx 1.17 writes the exact GELU with an `Erfc` node, which ONNX does not define and ONNX
    Runtime cannot run: the tf2onnx file takes the tanh approximation."""
    x = inp = keras.Input(shape, batch_size=batch)
    x = L.Conv1D(d, 16, 16)(x)
    x = ClassToken()(x)
    x = AddPosition()(x)
    for _ in range(2):
        h = L.LayerNormalization(epsilon=1e-6)(x)
        x = x + L.MultiHeadAttention(num_heads=4, key_dim=d // 4)(h, h)
        h = L.LayerNormalization(epsilon=1e-6)(x)
        x = x + L.Dense(d)(L.Dense(2 * d, activation=gelu)(h))
    x = L.LayerNormalization(epsilon=1e-6)(x)
    return keras.Model(inp, L.Dense(classes)(x[:, 0]))


def _tanh_gelu(x):
    return keras.activations.gelu(x, approximate=True)


def conv1dtranspose_ad(shape=(256, 2)):
    """A 1-D vibration autoencoder: strided Conv1D down with LayerNormalization, Conv1DTranspose back up, a
    hard-sigmoid output of the signal scaled into [0, 1]."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.LayerNormalization()(L.Conv1D(16, 5, 2, padding="same", activation="relu")(x))
    x = L.LayerNormalization()(L.Conv1D(32, 5, 2, padding="same", activation="relu")(x))
    x = L.Conv1D(8, 1, activation="relu")(x)
    x = L.Conv1DTranspose(32, 5, 2, padding="same", activation="relu")(x)
    x = L.Conv1DTranspose(16, 5, 2, padding="same", activation="relu")(x)
    return keras.Model(inp, L.Conv1D(2, 3, padding="same", activation="hard_sigmoid")(x))


def mobilenet_v3_small(shape=(96, 96, 3), classes=10):
    return keras.applications.MobileNetV3Small(input_shape=shape, alpha=0.75, weights=None, classes=classes,
                                               include_preprocessing=False)


# name: (kind, constructor, exporter: "int8" (.tflite) or "tf2onnx-18", (license, origin))
MODELS = {
    "keras_vit_cls_token_har": ("transformer", lambda: vit_cls_har(gelu="swish"), "int8", OWN),
    "tf2onnx_vit_cls_token_har_op18": ("transformer", lambda: vit_cls_har(batch=None, gelu=_tanh_gelu), "tf2onnx-18", OWN),
    "keras_conv1dtranspose_ad": ("anomaly", conv1dtranspose_ad, "int8", OWN),
    "tf2onnx_mobilenet_v3_small_075_96_op18": ("classification", mobilenet_v3_small, "tf2onnx-18", KERAS),
}


def export(name: str) -> None:
    kind, make, how, (lic, origin) = MODELS[name]
    model, calib = export_tf.seeded(name, make)
    export_tf.set_batchnorm_from(model, calib)
    if how == "tf2onnx-18":
        out = export_tf.corpus_file(name, "model.onnx")
        text = (f"tf2onnx {export_tf.to_onnx(model, calib, out, None, 18)} (float, opset 18, batch axis None), "
                f"TensorFlow {tf.__version__}")
    else:
        conv, text = export_tf.typed_converter(model, calib, "int8")
        out = export_tf.corpus_file(name, "model.tflite")
        out.write_bytes(conv.convert())
        text += f", TensorFlow {tf.__version__}"
    export_tf.record(name, kind, out, "scripts/corpus/export_tf_eighth.py", lic,
                     export_tf.keras_source(model, origin, text))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
