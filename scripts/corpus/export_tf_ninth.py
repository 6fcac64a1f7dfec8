"""The ninth hidden-corpus round's conversions of trained models: Arm's keyword-spotting networks from "Hello Edge"
(ARM-software/ML-KWS-for-MCU, `Pretrained_models/*.pb`: TensorFlow 1 frozen graphs, trained on Speech Commands,
Apache-2.0) put through the exporters a user of them has today. The graphs start from a WAV file (DecodeWav,
AudioSpectrogram, Mfcc); each conversion cuts them at the MFCC features (the `Reshape` node after `Mfcc`, [1, 490]
or [1, 250]) and ends at `labels_softmax`:

- DS-CNN (M) and CNN (S) through TFLiteConverter (`tf.compat.v1.lite.TFLiteConverter.from_frozen_graph`, full-INT8
  PTQ, int8 input and output);
- the recurrent ones (GRU, LSTM with projection, BasicLSTM, CRNN: a `dynamic_rnn` while loop over a TensorArray)
  through tf2onnx 1.17 (`from_graph_def`, opset 17), which writes the loop as an ONNX `Scan`. TFLiteConverter 2.21
  cannot convert these TF1 loops (its MLIR import fails on the TensorArray).

Calibration inputs: export_tf.calibration (seeded normal draws), as the corpus's other tf2onnx files.

    /work/venv-tf/bin/python scripts/corpus/export_tf_ninth.py [--only NAME ...]   # (git mirrors in /work/.mirror if there)
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import manifest  # noqa: E402
import repos  # noqa: E402
from export_tf import tf  # noqa: E402

ML_KWS = ("ARM-software/ML-KWS-for-MCU", "8151349b110f4d1c194c085fcc5b3535bdf7ce4a", "Apache-2.0")
MIRROR = Path("/work/.mirror")
SCRIPT = "scripts/corpus/export_tf_ninth.py"

# name: (kind, frozen graph in the repository, exporter)
MODELS = {
    "mlkws_ds_cnn_m_int8": ("kws", "Pretrained_models/DS_CNN/DS_CNN_M.pb", "tflite"),
    "mlkws_cnn_s_int8": ("kws", "Pretrained_models/CNN/CNN_S.pb", "tflite"),
    "tf2onnx_mlkws_gru_s_scan": ("kws", "Pretrained_models/GRU/GRU_S.pb", "tf2onnx"),
    "tf2onnx_mlkws_lstm_s_scan": ("sequence", "Pretrained_models/LSTM/LSTM_S.pb", "tf2onnx"),
    "tf2onnx_mlkws_basic_lstm_s_scan": ("sequence", "Pretrained_models/Basic_LSTM/Basic_LSTM_S.pb", "tf2onnx"),
    "tf2onnx_mlkws_crnn_s_scan": ("kws", "Pretrained_models/CRNN/CRNN_S.pb", "tf2onnx"),
}
INPUT, OUTPUT = "Reshape", "labels_softmax"


def export(name: str) -> None:
    kind, path, how = MODELS[name]
    repo, commit, lic = ML_KWS
    data = repos.read(repo, commit, path, MIRROR if MIRROR.is_dir() else None)
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(data)
    with tf.Graph().as_default() as g:
        tf.compat.v1.import_graph_def(graph, name="")
        shape = [1, *g.get_tensor_by_name(f"{INPUT}:0").shape.as_list()[1:]]
    calib = export_tf.calibration(name, tuple(shape[1:]), 32)
    if how == "tflite":
        with tempfile.TemporaryDirectory() as tmp:
            pb = Path(tmp) / "frozen.pb"
            pb.write_bytes(data)
            conv = tf.compat.v1.lite.TFLiteConverter.from_frozen_graph(str(pb), [INPUT], [OUTPUT], {INPUT: shape})
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([calib[i:i + 1]] for i in range(len(calib)))
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
        out = export_tf.corpus_file(name, "model.tflite")
        out.write_bytes(conv.convert())
        text = (f"tf.compat.v1.lite.TFLiteConverter.from_frozen_graph full-INT8 PTQ (int8 input and output), "
                f"TensorFlow {tf.__version__}")
    else:
        import tf2onnx
        out = export_tf.corpus_file(name, "model.onnx")
        sub = tf.compat.v1.graph_util.extract_sub_graph(graph, [OUTPUT])
        tf2onnx.convert.from_graph_def(sub, input_names=[f"{INPUT}:0"], output_names=[f"{OUTPUT}:0"], opset=17,
                                       output_path=str(out))
        manifest.save_calibration(out.parent, calib)
        text = (f"tf2onnx {tf2onnx.__version__} from_graph_def (float, opset 17; the while loop as a Scan), "
                f"TensorFlow {tf.__version__}")
    source = {"repository": f"https://github.com/{repo}", "commit": commit, "path": path,
              "architecture": f"{path} cut from '{INPUT}' (the MFCC features, {shape}) to '{OUTPUT}'",
              "exporter": text, "weights": "trained by Arm (Speech Commands, 12 labels)"}
    export_tf.record(name, kind, out, SCRIPT, lic, source)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
