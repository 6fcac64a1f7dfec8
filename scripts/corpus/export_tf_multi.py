"""The corpus's Keras models with several inputs: a two-stream activity model (a functional Keras model whose
accelerometer and gyroscope windows, (64, 3) each, go through a Conv1D branch of their own, are concatenated
and classified by two Dense layers), through TFLiteConverter full-INT8 PTQ (int8 inputs and output; its
representative dataset yields both inputs) and through tf2onnx (float, opset 17). Random (seeded) weights; no
BatchNorm.

Calibration set: 8 samples per input, drawn by `evaluation.several_normal` (each input its own seeded generator),
stored beside the .onnx as `x_<input name>` (edgec's data files for several inputs); the evaluation set continues
those draws. The converter is given the first 32 draws (the .tflite's oracle draws its own integer inputs).

    /work/venv-tf/bin/python scripts/corpus/export_tf_multi.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
from export_tf import L, keras, manifest, tf  # noqa: E402
from evaluation import several_normal  # noqa: E402

SCRIPT = "scripts/corpus/export_tf_multi.py"
LICENSE = "Apache-2.0 (this repository)"
SHAPES = {"acc": (64, 3), "gyro": (64, 3)}


def two_stream_har(classes=6):
    def branch(x, name):
        x = L.Conv1D(16, 5, strides=2, padding="same", activation="relu", name=f"{name}_conv1")(x)
        x = L.Conv1D(24, 3, strides=2, padding="same", activation="relu", name=f"{name}_conv2")(x)
        return L.GlobalAveragePooling1D(name=f"{name}_gap")(x)
    acc, gyro = (keras.Input(shape, batch_size=1, name=n) for n, shape in SHAPES.items())
    x = L.Concatenate()([branch(acc, "acc"), branch(gyro, "gyro")])
    x = L.Dense(32, activation="relu")(x)
    return keras.Model([acc, gyro], L.Dense(classes, activation="softmax")(x))


MODELS = {"keras_two_stream_har_int8": "tflite", "tf2onnx_two_stream_har": "onnx"}


def export(name: str) -> None:
    keras.utils.set_random_seed(sum(map(ord, name)))
    model = two_stream_har()
    calib = [several_normal(name, k, shape, 32) for k, shape in enumerate(SHAPES.values())]
    architecture = f"{SCRIPT} two_stream_har (functional Keras, inputs {', '.join(SHAPES)})"
    if MODELS[name] == "tflite":
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([c[i:i + 1] for c in calib] for i in range(len(calib[0])))
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
        out = manifest.corpus_file(name, "model.tflite")
        out.write_bytes(conv.convert())
        how = f"TFLiteConverter full-INT8 PTQ (int8 inputs and output), TensorFlow {tf.__version__}"
    else:
        import tf2onnx
        out = manifest.corpus_file(name, "model.onnx")
        spec = [tf.TensorSpec((1, *shape), tf.float32, name=n) for n, shape in SHAPES.items()]
        tf2onnx.convert.from_function(tf.function(lambda a, g: model([a, g], training=False)),
                                      input_signature=spec, opset=17, output_path=str(out))
        how = f"tf2onnx {tf2onnx.__version__} (float, opset 17), TensorFlow {tf.__version__}"
        np.savez_compressed(out.parent / "calib.npz", **{f"x_{n}": c[:8] for n, c in zip(SHAPES, calib)})
    source = {"architecture": architecture, "exporter": how, "keras_batch": 1, "weights": "random (seeded); no BatchNorm"}
    export_tf.record(name, "har", out, SCRIPT, LICENSE, source, committed=True)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
