"""More Keras networks through TFLiteConverter (full-INT8 PTQ) and tf2onnx, built from layers the first Keras set
(scripts/corpus/export_tf.py) does not use: dilated causal Conv1D (a TCN), Conv2DTranspose and UpSampling2D
(nearest and bilinear), SeparableConv2D, PReLU and LeakyReLU, Keras's dot-product Attention, GELU and a class
token broadcast to the batch (a Keras-style ViT), MobileNetV3-Small with squeeze-excite and hard-swish, and a
CenterNet-style detector head. Random (seeded) weights, BatchNorm statistics from the calibration inputs, as in
export_tf.py (whose export function makes and records each file).

    /work/venv-tf/bin/python scripts/corpus/export_tf_layers.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
from export_tf import KERAS, OWN, L, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_layers.py")


def tcn_kws(shape=(49, 40), classes=12, c=32):
    """A temporal convolutional network: causal Conv1D with dilations 1, 2, 4, 8 and residual adds."""
    x = inp = keras.Input(shape)
    x = L.Conv1D(c, 1)(x)
    for d in (1, 2, 4, 8):
        y = L.ReLU()(L.BatchNormalization()(L.Conv1D(c, 3, padding="causal", dilation_rate=d)(x)))
        y = L.BatchNormalization()(L.Conv1D(c, 3, padding="causal", dilation_rate=d)(y))
        x = L.ReLU()(L.Add()([x, y]))
    x = L.GlobalAveragePooling1D()(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def conv_autoencoder(shape=(32, 32, 1)):
    """An image/spectrogram-patch anomaly autoencoder: strided and separable convs down, transposed convs and
    upsampling back up."""
    x = inp = keras.Input(shape)
    x = L.PReLU(shared_axes=[1, 2])(L.BatchNormalization()(L.Conv2D(16, 3, 2, padding="same")(x)))
    x = L.LeakyReLU(0.1)(L.BatchNormalization()(L.SeparableConv2D(32, 3, 2, padding="same")(x)))
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(8, 1)(x)))
    x = L.ReLU()(L.BatchNormalization()(L.Conv2DTranspose(32, 3, 2, padding="same")(x)))
    x = L.UpSampling2D(2)(x)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(x)))
    return keras.Model(inp, L.Conv2D(1, 3, padding="same")(x))


def attention_har(shape=(128, 6), classes=6, c=32):
    """Activity recognition: Conv1D features, then Keras's (Luong) dot-product self-attention."""
    x = inp = keras.Input(shape)
    x = L.ReLU()(L.BatchNormalization()(L.Conv1D(c, 5, 2, padding="same")(x)))
    x = L.ReLU()(L.BatchNormalization()(L.Conv1D(c, 5, 2, padding="same")(x)))
    x = L.Add()([x, L.Attention(use_scale=True)([x, x])])
    x = L.GlobalAveragePooling1D()(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


class ClassToken(L.Layer):
    """keras.io's ViT class token: a learned vector broadcast to the batch and put before the patches."""

    def build(self, shape):
        self.token = self.add_weight(shape=(1, 1, shape[-1]), initializer="random_normal", name="token")

    def call(self, x):
        token = tf.broadcast_to(self.token, [tf.shape(x)[0], 1, x.shape[-1]])
        return tf.concat([token, x], axis=1)


class PositionEmbedding(L.Layer):
    def build(self, shape):
        self.pos = self.add_weight(shape=(1, shape[1], shape[2]), initializer="random_normal", name="pos")

    def call(self, x):
        return x + self.pos


def vit_gelu(shape=(32, 32, 3), classes=10, d=32, patch=4):
    x = inp = keras.Input(shape)
    x = L.Conv2D(d, patch, patch)(x)
    x = L.Reshape((-1, d))(x)
    x = PositionEmbedding()(ClassToken()(x))
    for _ in range(2):
        y = L.LayerNormalization(epsilon=1e-6)(x)
        x = L.Add()([x, L.MultiHeadAttention(2, d // 2)(y, y)])
        y = L.LayerNormalization(epsilon=1e-6)(x)
        y = L.Dense(d)(L.Dense(2 * d, activation="gelu")(y))
        x = L.Add()([x, y])
    x = L.LayerNormalization(epsilon=1e-6)(x)
    x = L.Lambda(lambda t: t[:, 0])(x)
    return keras.Model(inp, L.Dense(classes)(x))


def centernet(shape=(96, 96, 3), classes=2):
    """A CenterNet-style detector: MobileNetV2 features at stride 16, a transposed conv and a bilinear upsampling
    back to stride 4, a class heatmap (sigmoid) and a box-size head."""
    base = keras.applications.MobileNetV2(input_shape=shape, alpha=0.35, weights=None, include_top=False)
    x = base.get_layer("block_13_expand_relu").output
    x = L.ReLU()(L.BatchNormalization()(L.Conv2DTranspose(32, 4, 2, padding="same", use_bias=False)(x)))
    x = L.UpSampling2D(2, interpolation="bilinear")(x)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, 3, padding="same")(x)))
    heat = L.Activation("sigmoid")(L.Conv2D(classes, 1)(x))
    size = L.Conv2D(2, 1)(x)
    return keras.Model(base.input, [heat, size])


def gru_unrolled(shape=(20, 9), classes=6):
    x = inp = keras.Input(shape, batch_size=1)
    x = L.GRU(24, unroll=True)(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def _mnv3_small_se():
    return keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), alpha=0.75, minimalistic=False,
                                               weights=None, classes=2, include_preprocessing=True)


MODELS = {
    "keras_tcn_kws": ("kws", tcn_kws, "tflite", OWN),
    "keras_attention_har": ("har", attention_har, "tflite", OWN),
    "keras_vit_gelu_32": ("transformer", vit_gelu, "tflite", OWN),   # not in the manifest: no TFLM oracle (docs/corpus.md)
    "keras_centernet_mnv2": ("detection", centernet, "tflite", OWN),
    "keras_gru_unrolled": ("sequence", gru_unrolled, "tflite", OWN),
    "keras_mobilenet_v3_small_se_96": ("classification", _mnv3_small_se, "tflite", KERAS),
    "tf2onnx_tcn_kws": ("kws", tcn_kws, "tf2onnx", OWN),
    "tf2onnx_conv_autoencoder": ("anomaly", conv_autoencoder, "tf2onnx", OWN),
}
# Tried, not in the corpus: conv_autoencoder through TFLiteConverter (Keras 3's UpSampling2D is a TILE v3 of int8
# activations, which neither TFLite Micro nor TF Lite's reference resolver runs: no oracle), and vit_gelu through
# tf2onnx 1.17 (it writes an `Erfc` node, no ONNX operator: ONNX Runtime refuses the file too).


def _mine(name: str) -> None:
    """export_tf.export recorded itself as the maker and the file as committed: name this script instead, and keep
    a file over export_torch.py's size limit out of the repository."""
    entries = export_tf.manifest.load()
    entries[name]["source"]["made_by"] = "scripts/corpus/export_tf_layers.py"
    size = (export_tf.manifest.CORPUS / entries[name]["file"]).stat().st_size
    entries[name]["committed"] = size <= export_tf.manifest.COMMITTED_LIMIT
    entries[name]["regenerate"] = f"/work/venv-tf/bin/python scripts/corpus/export_tf_layers.py --only {name}"
    export_tf.manifest.save(entries)


def main(argv=None) -> int:
    export_tf.MODELS.update(MODELS)

    def export(name: str) -> None:
        export_tf.export(name)
        _mine(name)
    return export_tf.manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
