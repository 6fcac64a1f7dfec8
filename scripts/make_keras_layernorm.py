"""Writes tests/data/keras_layernorm/: Keras 3's LayerNormalization (axis -1) in a tiny Dense -> LayerNormalization
-> Dense model, exported the two ways users bring it: a float32 .tflite (TFLiteConverter, no quantization: MEAN,
SQUARED_DIFFERENCE, RSQRT, MUL, ADD, NEG) and tf2onnx (opset 17: ReduceMean or, over the last axis of a 3-D value,
GlobalAveragePool; Sub, Mul, Sqrt, Reciprocal, Neg, Mul, Add). One model per configuration: with and without
center / scale, two epsilons, a 3-D (tokens) and a 2-D (vector) input. tests/test_decomposed.py checks each
LayerNormalization becomes one `layer_norm` op (edgec/frontend/decomposed.py). Random seeded weights (gamma and beta
perturbed off 1 and 0); Apache-2.0, this repository.

Run with a Python that has TensorFlow and tf2onnx (not edgec's suite, which reads the committed files):
    /work/venv-tf/bin/python scripts/make_keras_layernorm.py
"""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "keras_layernorm"
CONFIGS = {   # name: (input shape without batch, LayerNormalization keywords)
    "default_tokens": ((4, 8), {}),
    "nocenter_tokens": ((4, 8), {"center": False}),
    "noscale_tokens_eps1e5": ((4, 8), {"scale": False, "epsilon": 1e-5}),
    "bare_vector": ((8,), {"center": False, "scale": False}),
}


def model(shape, kw, rng) -> tf.keras.Model:
    L = tf.keras.layers
    inp = L.Input(shape)
    x = L.Dense(6, activation="relu")(inp)
    norm = L.LayerNormalization(**kw)
    x = norm(x)
    norm.set_weights([(w + rng.normal(0, 0.3, w.shape)).astype(np.float32) for w in norm.get_weights()])
    return tf.keras.Model(inp, L.Dense(3)(x))


def main() -> None:
    import tf2onnx

    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    tf.keras.utils.set_random_seed(0)
    for name, (shape, kw) in CONFIGS.items():
        m = model(shape, kw, rng)
        (OUT / f"{name}.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(m).convert())
        spec = [tf.TensorSpec((1, *shape), tf.float32, name="input")]
        fn = tf.function(lambda x, m=m: m(x, training=False))
        tf2onnx.convert.from_function(fn, input_signature=spec, opset=17, output_path=str(OUT / f"{name}.onnx"))
        print(name, "written")


if __name__ == "__main__":
    main()
