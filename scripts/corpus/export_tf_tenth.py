"""The tenth hidden-corpus round's conversions: trained int8 `.tflite` files of the corpus put through tf2onnx's
TFLite converter (`tf2onnx.convert.from_tflite`, opset 17), the way a user who has a TFLite Micro model and wants
ONNX gets one. tf2onnx writes each quantized tensor as QuantizeLinear/DequantizeLinear around float operators, with
the file's own scales and zero points, and keeps the int8 graph input and output: the ONNX input is int8, read by
a DequantizeLinear (through a Reshape or a Transpose), and the output an int8 QuantizeLinear.

Calibration set: 8 samples on the input's grid ((q - zero point) x scale, q uniform over int8: the values the
input's DequantizeLinear gives, as TFLite Micro's oracles draw integers over the input type's whole range).

    /work/venv-tf/bin/python scripts/corpus/export_tf_tenth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
import oracles  # noqa: E402
import repos  # noqa: E402

SCRIPT = "scripts/corpus/export_tf_tenth.py"
MIRROR = Path("/work/.mirror")

# name: (kind, the corpus model whose .tflite is converted)
MODELS = {
    "tf2onnx_tflite_tiny_kws_ds_cnn": ("kws", "tiny_kws_ds_cnn"),
    "tf2onnx_tflite_tiny_vww_mobilenet": ("classification", "tiny_vww_mobilenet"),
    "tf2onnx_tflite_tiny_ad_autoencoder": ("anomaly", "tiny_ad_autoencoder"),
    "tf2onnx_tflite_tflm_micro_speech": ("kws", "tflm_micro_speech"),
    "tf2onnx_tflite_tiny_ic_resnet8": ("classification", "tiny_ic_resnet8"),
    "tf2onnx_tflite_ambiq_har_cnn": ("har", "ambiq_har_cnn"),
}


def export(name: str) -> None:
    import onnx
    import tf2onnx
    kind, origin = MODELS[name]
    entry = manifest.load()[origin]
    src = entry["source"]
    repo, commit = src["repository"].removeprefix("https://github.com/"), src["commit"]
    local = manifest.CORPUS / entry["file"]      # the corpus's copy (the fetched bytes), else fetched again
    data = local.read_bytes() if local.is_file() and manifest.sha256(local) == entry["sha256"] else \
        repos.read(repo, commit, src["path"], MIRROR if MIRROR.is_dir() else None)
    out = export_tf.corpus_file(name, "model.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.tflite"
        path.write_bytes(data)
        tf2onnx.convert.from_tflite(str(path), opset=17, output_path=str(out))
    model = onnx.load(str(out))
    scale, zero, _ = oracles.input_grid(out, model.graph.input[0].name)
    shape = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
    q = np.random.default_rng(sum(map(ord, name))).integers(-128, 128, (8, *shape[1:]))
    manifest.save_calibration(out.parent, ((q - zero) * scale).astype(np.float32))
    source = {"repository": src["repository"], "commit": commit, "path": src["path"],
              "architecture": f"the corpus's {origin} (its trained int8 .tflite, {entry['license']})",
              "exporter": f"tf2onnx {tf2onnx.__version__} from_tflite (opset 17: QDQ with the file's scales, "
                          "int8 input and output)",
              "weights": "trained (the .tflite's own)"}
    export_tf.record(name, kind, out, SCRIPT, entry["license"], source)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
