"""Writes tests/data/float_tflite/: a small Keras CNN, a Keras Conv1D audio model and a Dense + LayerNormalization
over 4 tokens converted by TensorFlow's
TFLiteConverter the three ways that leave a float .tflite (what users bring when they skip the representative
dataset): float32 (`convert()` as is), float16 weights (Optimize.DEFAULT + supported_types float16: each weight a
float16 constant read through DEQUANTIZE) and dynamic-range (Optimize.DEFAULT alone: int8 weights, TFLite's
hybrid kernels). Beside them `<model>_oracle.npz`: 8 inputs and TF Lite's interpreter's outputs on each file
(`y_<file stem>`) and on TFLiteConverter's own full-INT8 conversion calibrated on the same inputs (`y_<model>_int8`,
float input and output: the yardstick edgec's quantization is compared with; that file is not kept), and
`<model>_calib.npz` (48 inputs). Random weights (seed 0), BatchNorm statistics set by one epoch of
fitting on the calibration inputs (so outputs are not constant); the batch dimension left to None, as Keras
exports it (a Flatten's RESHAPE then takes its shape from SHAPE -> STRIDED_SLICE -> PACK).

Run with a Python that has TensorFlow (not edgec's suite, which reads the committed files):
    /work/venv-tf/bin/python scripts/make_float_tflite.py
"""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "float_tflite"


def cnn() -> tf.keras.Model:
    L = tf.keras.layers
    x = inp = L.Input((16, 16, 3))
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(x)))
    x = L.DepthwiseConv2D(3, strides=2, padding="same", activation="relu6")(x)
    y = L.Conv2D(16, 3, padding="same")(x)
    x = L.Add()([x, y])
    x = L.MaxPooling2D(2)(x)
    a = L.GlobalAveragePooling2D()(x)
    b = L.Dense(32, activation="tanh")(L.Flatten()(L.AveragePooling2D(2)(x)))
    x = L.Concatenate()([a, b])
    return tf.keras.Model(inp, L.Softmax()(L.Dense(5)(x)))


def audio() -> tf.keras.Model:
    L = tf.keras.layers
    x = inp = L.Input((32, 10))
    x = L.Conv1D(32, 5, padding="same", activation="relu")(x)
    x = L.BatchNormalization()(x)
    x = L.MaxPooling1D(2)(x)
    x = L.Conv1D(32, 3, activation="sigmoid")(x)
    x = L.GlobalAveragePooling1D()(x)
    return tf.keras.Model(inp, L.Dense(4)(L.Dropout(0.1)(x)))


def tokens() -> tf.keras.Model:
    """A Dense on a 3-D input and a LayerNormalization, batch None: the converter leaves placeholder shapes ([1, 6]
    for 4 x 6 values) behind SHAPE -> GATHER -> REDUCE_PROD -> PACK -> RESHAPE."""
    L = tf.keras.layers
    x = inp = L.Input((4, 8))
    x = L.LayerNormalization()(L.Dense(6, activation="relu")(x))
    return tf.keras.Model(inp, L.Dense(3)(L.Flatten()(x)))


def convert(model, how: str, calib: np.ndarray) -> bytes:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if how != "float32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if how == "float16":
        conv.target_spec.supported_types = [tf.float16]
    if how == "int8":        # the yardstick: TFLiteConverter's own full-INT8 PTQ on the same calibration set
        conv.representative_dataset = lambda: ([c[None]] for c in calib)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return conv.convert()


def outputs(model: bytes, x: np.ndarray) -> np.ndarray:
    it = tf.lite.Interpreter(model_content=model)
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    ys = []
    for xi in x:
        it.set_tensor(i, xi[None])
        it.invoke()
        ys.append(it.get_tensor(o)[0].copy())
    return np.stack(ys)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make, shape in (("cnn", cnn, (16, 16, 3)), ("audio", audio, (32, 10)), ("tokens", tokens, (4, 8))):
        tf.keras.utils.set_random_seed(0)
        m = make()
        rng = np.random.default_rng(0)
        calib = rng.standard_normal((48, *shape)).astype(np.float32)
        m.compile("sgd", "mse")
        m.fit(calib, rng.standard_normal((48, *m.output_shape[1:])).astype(np.float32), epochs=1, verbose=0)
        x = rng.standard_normal((8, *shape)).astype(np.float32)
        arrays = {"x": x, "y_keras": m.predict(x, verbose=0)}
        for how in ("float32", "float16", "dynamic", "int8"):
            data = convert(m, how, calib)
            if how != "int8":
                (OUT / f"{name}_{how}.tflite").write_bytes(data)
            arrays[f"y_{name}_{how}"] = outputs(data, x)
        np.savez(OUT / f"{name}_oracle.npz", **arrays)
        np.savez(OUT / f"{name}_calib.npz", x=calib)
        print(name, {k: v.shape for k, v in arrays.items()}, f"TensorFlow {tf.__version__}")


if __name__ == "__main__":
    main()
