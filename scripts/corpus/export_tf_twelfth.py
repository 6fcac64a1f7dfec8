"""The twelfth hidden-corpus round's Keras models. ST's trained hand-posture CNN (STM32 model zoo,
`hand_posture/.../CNN2D_ST_HandPosture_8classes.h5`: 8x8 zones of a VL53L8CX time-of-flight sensor, distance and
signal, 8 postures; SLA0081, not committed) as the .h5 ships, through TFLiteConverter full-INT8 and through tf2onnx
(opset 18), the two ways its user gets a file edgec takes. And a keyword spotter whose preprocessing is in the model, as Keras
tutorials write it -- a `Normalization` layer adapted on the calibration features (per-coefficient mean and
variance: a constant SUB and MUL in the .tflite), `Lambda` layers (tf.expand_dims to an image, a halved ReLU6),
Conv2D, DepthwiseConv2D, GlobalMaxPooling2D (REDUCE_MAX), Dense, Softmax. Through TFLiteConverter full-INT8 PTQ.
Random (seeded) weights, as export_tf.py (whose helpers it reuses). (tf2onnx's `from_function` of the same model
makes the Normalization layer's mean and variance two more graph inputs without initializers, a file no runtime
can run unfed: not added.)

    /work/venv-tf/bin/python scripts/corpus/export_tf_twelfth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
import repos  # noqa: E402
from export_tf import OWN, L, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_twelfth.py")
SHAPE = (49, 10)


def norm_lambda_kws(calib, classes=12):
    """Normalization (adapted on `calib`), Lambda expand_dims, Conv2D + ReLU, DepthwiseConv2D, Lambda 0.5 relu6,
    GlobalMaxPooling2D, Dense, Softmax."""
    norm = L.Normalization(axis=-1)
    norm.adapt(calib)
    x = inp = keras.Input(SHAPE, batch_size=1)
    x = L.Lambda(lambda t: tf.expand_dims(t, -1))(norm(x))
    x = L.Conv2D(16, (3, 3), padding="same", activation="relu")(x)
    x = L.DepthwiseConv2D(3, padding="same")(x)
    x = L.Lambda(lambda t: tf.nn.relu6(t) * 0.5)(x)
    x = L.Dense(classes)(L.GlobalMaxPooling2D()(x))
    return keras.Model(inp, L.Softmax()(x))


# name: kind
MODELS = {"keras_norm_lambda_kws": "kws", "keras_st_hand_posture": "classification",
          "tf2onnx_st_hand_posture_op18": "classification"}
HAND = ("MohamedElhadidy0019/stm32ai-modelzoo", "81bdd9a912b070be1176c05ae346873de66a3b62",
        "hand_posture/pretrained_models/CNN2D_ST_HandPosture/ST_pretrainedmodel_custom_dataset/"
        "ST_VL53L8CX_handposture_dataset/CNN2D_ST_HandPosture_8classes/CNN2D_ST_HandPosture_8classes.h5")
HAND_LICENSE = "SLA0081 (STMicroelectronics, hand_posture/pretrained_models/LICENSE.md); not committed"
MIRROR = Path("/work/.mirror")


def hand_posture(name: str) -> None:
    repo, commit, path = HAND
    data = repos.read(repo, commit, path, MIRROR if MIRROR.is_dir() else None)
    with tempfile.TemporaryDirectory() as tmp:
        h5 = Path(tmp) / "model.h5"
        h5.write_bytes(data)
        model = keras.models.load_model(h5, compile=False)
    calib = export_tf.calibration(name, tuple(model.inputs[0].shape[1:]), 32)
    if name.startswith("keras_"):
        conv, text = export_tf.typed_converter(model, calib, "int8")
        out = export_tf.corpus_file(name, "model.tflite")
        out.write_bytes(conv.convert())
        text += f", TensorFlow {tf.__version__}"
    else:
        out = export_tf.corpus_file(name, "model.onnx")
        text = f"tf2onnx {export_tf.to_onnx(model, calib, out, 1, 18)} (float, opset 18), TensorFlow {tf.__version__}"
    source = {"repository": f"https://github.com/{repo}", "commit": commit, "path": path,
              "architecture": "ST's CNN2D_ST_HandPosture (8 classes, its trained .h5)", "exporter": text,
              "weights": "trained by ST (VL53L8CX hand-posture dataset)"}
    export_tf.record(name, MODELS[name], out, OWN[1], HAND_LICENSE, source, committed=False)


def export(name: str) -> None:
    if "hand_posture" in name:
        return hand_posture(name)
    kind = MODELS[name]
    keras.utils.set_random_seed(sum(map(ord, name)))
    # MFCC-like features: per-coefficient offsets and spreads the Normalization layer takes out
    calib = export_tf.calibration(name, SHAPE, 32) * (1.0 + tf.range(10, dtype=tf.float32).numpy() / 3) + 2.0
    calib = calib.astype("float32")
    model = norm_lambda_kws(calib)
    arch = f"{OWN[1]} norm_lambda_kws"
    conv, text = export_tf.typed_converter(model, calib, "int8")
    out = export_tf.corpus_file(name, "model.tflite")
    out.write_bytes(conv.convert())
    text += f", TensorFlow {tf.__version__}"
    export_tf.record(name, kind, out, OWN[1], OWN[0], export_tf.keras_source(model, arch, text))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
