"""The sixth hidden-corpus round's Keras models: architectures and converter settings the corpus did not have yet --
a model with three heads of different kinds (keyword classes, a voice-activity sigmoid, an embedding) and int8
input and outputs, a 1-D U-Net autoencoder (MaxPooling1D, UpSampling1D, Conv1DTranspose, skip Concatenate), a
Conformer block (MultiHeadAttention, LayerNormalization, a GLU and a DepthwiseConv1D in the convolution module),
a depthwise-separable causal TCN with dilated SeparableConv1D at batch None, and Keras' MobileNetV3-Large
minimalistic at 96 px. Random (seeded) weights, BatchNorm statistics from the calibration inputs, as export_tf.py
(whose helpers these reuse).

    /work/venv-tf/bin/python scripts/corpus/export_tf_sixth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
from export_tf import OWN, L, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_sixth.py")
KERAS = ("Apache-2.0 (Keras)", "https://github.com/keras-team/keras")


def three_heads_kws(shape=(49, 10, 1), classes=12):
    """A DS-CNN body over MFCC frames with three heads: the keyword classes (softmax), voice activity (sigmoid),
    a 16-value embedding (tanh); int8 input and outputs, batch 1."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, (5, 3), 2, padding="same")(x)))
    for _ in range(2):
        x = L.ReLU()(L.BatchNormalization()(L.DepthwiseConv2D(3, padding="same")(x)))
        x = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, 1)(x)))
    f = L.GlobalAveragePooling2D()(x)
    kws = L.Softmax(name="keyword")(L.Dense(classes)(f))
    vad = L.Dense(1, activation="sigmoid", name="voice")(f)
    emb = L.Dense(16, activation="tanh", name="embedding")(f)
    return keras.Model(inp, [kws, vad, emb])


def unet1d_ad(shape=(128, 3)):
    """A 1-D U-Net autoencoder over a 3-axis, 128-sample vibration window: Conv1D/BatchNorm/ReLU levels with
    MaxPooling1D, UpSampling1D on one skip and Conv1DTranspose on the other, Concatenate; the reconstruction out."""
    x = inp = keras.Input(shape, batch_size=1)

    def block(t, c):
        return L.ReLU()(L.BatchNormalization()(L.Conv1D(c, 5, padding="same")(t)))
    a = block(x, 16)
    b = block(L.MaxPooling1D(2)(a), 32)
    m = block(L.MaxPooling1D(2)(b), 48)
    b = block(L.Concatenate()([L.UpSampling1D(2)(m), b]), 32)
    a = block(L.Concatenate()([L.Conv1DTranspose(16, 2, 2)(b), a]), 16)
    return keras.Model(inp, L.Conv1D(3, 1)(a))


def conformer_kws(shape=(49, 10), classes=12, d=32):
    """One Conformer block over MFCC frames: half-step feed-forward modules (swish), MultiHeadAttention, the
    convolution module (pointwise Conv1D to 2d, a GLU written as a split, sigmoid and multiply, DepthwiseConv1D,
    BatchNormalization, swish, pointwise), LayerNormalization; batch 1."""
    x = inp = keras.Input(shape, batch_size=1)
    t = L.Dense(d)(x)

    def ff(u):
        return L.Dense(d)(L.Dense(2 * d, activation="swish")(L.LayerNormalization(epsilon=1e-5)(u)))
    t = t + 0.5 * ff(t)
    h = L.LayerNormalization(epsilon=1e-5)(t)
    t = t + L.MultiHeadAttention(num_heads=4, key_dim=d // 4)(h, h)
    h = L.Conv1D(2 * d, 1)(L.LayerNormalization(epsilon=1e-5)(t))
    h = h[..., :d] * keras.activations.sigmoid(h[..., d:])
    h = L.Activation("swish")(L.BatchNormalization()(L.DepthwiseConv1D(7, padding="same")(h)))
    t = t + L.Conv1D(d, 1)(h)
    t = L.LayerNormalization(epsilon=1e-5)(t + 0.5 * ff(t))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.GlobalAveragePooling1D()(t))))


def dstcn_kws(shape=(98, 40), classes=12):
    """A depthwise-separable causal TCN over log-mel frames: dilated SeparableConv1D (1, 2, 4, 8) with causal
    ZeroPadding1D, BatchNormalization, ReLU, residual adds; batch None."""
    x = inp = keras.Input(shape)
    x = L.ReLU()(L.BatchNormalization()(L.Conv1D(32, 3, padding="same")(x)))
    for d in (1, 2, 4, 8):
        h = L.ZeroPadding1D((2 * d, 0))(x)
        x = x + L.ReLU()(L.BatchNormalization()(L.SeparableConv1D(32, 3, dilation_rate=d)(h)))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.GlobalAveragePooling1D()(x))))


def grouped_shuffle_cifar(shape=(32, 32, 3), classes=10):
    """A ShuffleNet-style image classifier with the layers TFLite writes in less common forms: Conv2D(groups=4)
    (a CONV_2D whose filter has fewer input channels than its input), a channel shuffle (Reshape, Permute,
    Reshape), DepthwiseConv2D(depth_multiplier=2), a Dense on a 4-D tensor (a 1x1 projection per pixel),
    Maximum and Subtract merges, GlobalMaxPooling2D; batch 1."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(24, 3, 2, padding="same")(x)))
    g = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, 1, groups=4)(L.Conv2D(32, 1)(x))))
    g = L.Reshape((16, 16, 32))(L.Permute((1, 2, 4, 3))(L.Reshape((16, 16, 4, 8))(g)))
    d = L.BatchNormalization()(L.DepthwiseConv2D(3, 2, padding="same", depth_multiplier=2)(g))
    p = L.Dense(64)(L.MaxPooling2D(2)(g))
    x = L.Maximum()([d, L.Concatenate()([p[..., :32], p[..., 32:]])])
    x = L.Subtract()([L.ReLU()(x), L.BatchNormalization()(L.Conv2D(64, 1, groups=8)(x))])
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.GlobalMaxPooling2D()(x))))


def groupnorm_har(shape=(128, 6), classes=6):
    """Activity recognition as a sensor user writes it in Keras 3: a Normalization layer with the IMU's mean and
    variance baked in, grouped Conv1D, GroupNormalization (groups 4), LeakyReLU, Cropping1D, GlobalMaxPooling1D;
    batch 1."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.Normalization(mean=[0.1, -0.2, 9.8, 0.0, 0.0, 0.0], variance=[1.0, 1.0, 2.0, 0.5, 0.5, 0.5])(x)
    x = L.LeakyReLU(0.1)(L.GroupNormalization(4)(L.Conv1D(32, 5, 2, padding="same")(x)))
    x = L.LeakyReLU(0.1)(L.GroupNormalization(4)(L.Conv1D(32, 3, padding="same", groups=4)(x)))
    x = L.Cropping1D((2, 2))(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.GlobalMaxPooling1D()(x))))


def mobilenet_v3_large_min(shape=(96, 96, 3)):
    return keras.applications.MobileNetV3Large(input_shape=shape, alpha=0.75, minimalistic=True, weights=None,
                                               classes=10, include_preprocessing=False)


# name: (kind, constructor, exporter, (license, architecture))
MODELS = {
    "keras_three_heads_kws": ("kws", three_heads_kws, "int8", OWN),
    "keras_unet1d_ad": ("anomaly", unet1d_ad, "int8", OWN),
    "keras_conformer_kws": ("transformer", conformer_kws, "int8", OWN),
    "keras_dstcn_kws": ("kws", dstcn_kws, "int8", OWN),
    "keras_grouped_shuffle_cifar": ("classification", grouped_shuffle_cifar, "int8", OWN),
    "keras_groupnorm_har": ("har", groupnorm_har, "int8", OWN),
    "keras_mobilenet_v3_large_min_075_96": ("classification", mobilenet_v3_large_min, "int8", KERAS),
}


def export(name: str) -> None:
    kind, make, how, (lic, origin) = MODELS[name]
    model, calib = export_tf.seeded(name, make)
    export_tf.set_batchnorm_from(model, calib)
    conv, text = export_tf.typed_converter(model, calib, how)
    out = export_tf.corpus_file(name, "model.tflite")
    out.write_bytes(conv.convert())
    export_tf.record(name, kind, out, "scripts/corpus/export_tf_sixth.py", lic,
                     export_tf.keras_source(model, origin, f"{text}, TensorFlow {tf.__version__}"))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
