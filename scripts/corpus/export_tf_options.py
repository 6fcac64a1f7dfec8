"""Keras networks through TFLiteConverter with the options the other Keras exporters do not use, as users set them:
16x8 quantization (int16 activations, int8 weights: EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8),
the converter's default float input and output (a QUANTIZE at the start, a DEQUANTIZE at the end), int8 with float
fallback allowed (TFLITE_BUILTINS beside the int8 set), and per-tensor weights (the converter's
`_experimental_disable_per_channel`). Random (seeded) weights, BatchNorm statistics from the calibration inputs,
as export_tf.py (whose networks and calibration draws these reuse).

    /work/venv-tf/bin/python scripts/corpus/export_tf_options.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
from export_tf import INT16, KERAS, OWN, keras, tf  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf.py (network), scripts/corpus/export_tf_options.py (converter options)")
MNV2 = export_tf._app(keras.applications.MobileNetV2, (96, 96, 3), alpha=0.35)

# name: (kind, constructor, options, origin); options: ops (the supported op sets), io (input/output type, None:
# the converter's default float32), per_tensor
MODELS = {
    "keras16x8_ds_cnn_kws": ("kws", export_tf.ds_cnn, dict(ops=[INT16], io=tf.int16), OWN),
    "keras_float_io_ad_autoencoder": ("anomaly", export_tf.ad_autoencoder,
                                      dict(ops=[tf.lite.OpsSet.TFLITE_BUILTINS_INT8], io=None), OWN),
    "keras_fallback_mobilenet_v2_035_96": ("classification", MNV2, dict(
        ops=[tf.lite.OpsSet.TFLITE_BUILTINS_INT8, tf.lite.OpsSet.TFLITE_BUILTINS], io=tf.int8), KERAS),
    "keras_per_tensor_resnet8": ("classification", export_tf.resnet8,
                                 dict(ops=[tf.lite.OpsSet.TFLITE_BUILTINS_INT8], io=tf.int8, per_tensor=True), OWN),
}


def export(name: str) -> None:
    kind, make, opts, (lic, origin) = MODELS[name]
    model, calib = export_tf.seeded(name, make)
    export_tf.set_batchnorm_from(model, calib)
    conv = export_tf.ptq_converter(model, calib, opts["ops"])
    if opts["io"] is not None:
        conv.inference_input_type = conv.inference_output_type = opts["io"]
    if opts.get("per_tensor"):
        conv._experimental_disable_per_channel = True
    out = export_tf.corpus_file(name, "model.tflite")
    out.write_bytes(conv.convert())
    ops = "+".join(str(o).split(".")[-1] for o in opts["ops"])
    io = opts["io"].name if opts["io"] is not None else "float32 (default)"
    how = (f"TFLiteConverter PTQ, supported_ops {ops}, {io} input and output"
           f"{', per-tensor weights' if opts.get('per_tensor') else ''}, TensorFlow {tf.__version__}")
    export_tf.record(name, kind, out, "scripts/corpus/export_tf_options.py", lic,
                     {"architecture": origin, "exporter": how, "weights": export_tf.WEIGHTS})


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
