"""Writes tests/data/tflite_16x8_cnn.tflite: a small CNN converted by TensorFlow's TFLiteConverter in its 16x8 mode
(int16 activations, int8 weights: OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8), what a user
of that mode brings to edgec. Random weights (seed 0), calibrated on 32 random images; float input and output, as
the converter writes them by default (a QUANTIZE to int16 first, a DEQUANTIZE last). Its operators: CONV_2D,
DEPTHWISE_CONV_2D, MAX_POOL_2D, ADD (a residual), AVERAGE_POOL_2D, RESHAPE, MEAN (Keras's global average
pooling), FULLY_CONNECTED.

Run with a Python that has TensorFlow (not edgec's suite, which reads the committed file):
    /work/venv-tf/bin/python scripts/make_tflite_16x8.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "tflite_16x8_cnn.tflite"


def model() -> tf.keras.Model:
    tf.keras.utils.set_random_seed(0)
    L = tf.keras.layers
    x = inp = L.Input((12, 12, 2), batch_size=1)
    x = L.Conv2D(8, 3, padding="same", activation="relu")(x)
    y = L.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
    x = L.Add()([x, y])
    x = L.MaxPooling2D(2)(x)
    x = L.Conv2D(12, 3, strides=1, padding="valid")(x)
    x = L.AveragePooling2D(2)(x)
    x = L.Reshape((4, 12))(x)
    x = L.GlobalAveragePooling1D()(x)
    x = L.Dense(5)(x)
    return tf.keras.Model(inp, x)


def main() -> None:
    m = model()
    rng = np.random.default_rng(0)
    calib = rng.normal(0, 1, (32, 1, 12, 12, 2)).astype(np.float32)
    conv = tf.lite.TFLiteConverter.from_keras_model(m)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([c] for c in calib)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(conv.convert())
    print(f"{OUT} ({OUT.stat().st_size} bytes), TensorFlow {tf.__version__}")


if __name__ == "__main__":
    main()
