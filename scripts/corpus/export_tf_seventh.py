"""The seventh hidden-corpus round's Keras models: layers and converter settings the corpus did not have yet -- a
SimpleRNN (unroll=True) with a TimeDistributed Dense over sensor windows, a convolutional autoencoder with
Conv2DTranspose through TFLiteConverter's 16x8 mode (int16 TRANSPOSE_CONV), a keyword spotter with
AdditiveAttention, UnitNormalization, Permute, AveragePooling1D and a leaky ReLU6 (ReLU with max_value and
negative_slope), and a HAR CNN through TFLiteConverter's legacy quantizer (_experimental_new_quantizer False).
Random (seeded) weights, BatchNorm statistics from the calibration inputs, as export_tf.py (whose helpers these
reuse).

    /work/venv-tf/bin/python scripts/corpus/export_tf_seventh.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
from export_tf import OWN, L, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_seventh.py")


def simplernn_har(shape=(64, 6), classes=6):
    """Conv1D features, a SimpleRNN (tanh, unroll=True) over the 32 pooled steps, a TimeDistributed Dense per step,
    global average pooling, softmax."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.MaxPooling1D(2)(L.Conv1D(16, 5, padding="same", activation="relu")(x))
    x = L.SimpleRNN(24, return_sequences=True, unroll=True)(x)
    x = L.TimeDistributed(L.Dense(16, activation="relu"))(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.GlobalAveragePooling1D()(x))))


def conv_autoencoder(shape=(32, 32, 1)):
    """A spectrogram-patch autoencoder: strided Conv2D down, two strided Conv2DTranspose back up (int16
    TRANSPOSE_CONV; a bilinear UpSampling2D here is refused at 16x8: TFLite Micro's RESIZE_BILINEAR takes int8 only)."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, 2, padding="same")(x)))
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, 3, 2, padding="same")(x)))
    x = L.ReLU()(L.Conv2DTranspose(16, 3, 2, padding="same")(x))
    x = L.ReLU()(L.Conv2DTranspose(8, 3, 2, padding="same")(x))
    return keras.Model(inp, L.Conv2D(1, 3, padding="same")(x))


def additive_attention_kws(shape=(49, 10), classes=12):
    """Conv1D features over MFCC frames, a leaky ReLU6, AdditiveAttention (Bahdanau) of the frames on themselves,
    UnitNormalization of each frame, Permute to channels-first and AveragePooling1D over the channels, then Dense."""
    x = inp = keras.Input(shape, batch_size=1)
    x = L.ReLU(max_value=6.0, negative_slope=0.1)(L.Conv1D(32, 3, padding="same")(x))
    x = L.AdditiveAttention()([x, x])
    x = L.UnitNormalization()(x)
    x = L.AveragePooling1D(4)(L.Permute((2, 1))(x))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(L.Flatten()(x))))


def har_cnn_old_quantizer(shape=(128, 3), classes=6):
    x = inp = keras.Input(shape, batch_size=1)
    x = L.MaxPooling1D(2)(L.Conv1D(24, 7, activation="relu")(x))
    x = L.MaxPooling1D(2)(L.Conv1D(32, 5, activation="relu")(x))
    x = L.Dense(32, activation="relu")(L.Flatten()(x))
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


# name: (kind, constructor, exporter: "int8" / "16x8" / "old-quantizer")
MODELS = {
    "keras_simplernn_har_unrolled": ("har", simplernn_har, "int8"),
    "keras16x8_conv_autoencoder_ad": ("anomaly", conv_autoencoder, "16x8"),
    "keras_additive_attention_kws": ("kws", additive_attention_kws, "int8"),
    "keras_old_quantizer_har_cnn": ("har", har_cnn_old_quantizer, "old-quantizer"),
}


def export(name: str) -> None:
    kind, make, how = MODELS[name]
    model, calib = export_tf.seeded(name, make)
    export_tf.set_batchnorm_from(model, calib)
    conv, text = export_tf.typed_converter(model, calib, how)
    if how == "old-quantizer":
        conv._experimental_new_quantizer = False
        text += ", the legacy quantizer (_experimental_new_quantizer = False)"
    text += f", TensorFlow {tf.__version__}"
    out = export_tf.corpus_file(name, "model.tflite")
    out.write_bytes(conv.convert())
    export_tf.record(name, kind, out, OWN[1], OWN[0], export_tf.keras_source(model, OWN[1], text))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
