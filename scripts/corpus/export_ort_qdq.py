"""QDQ models as onnxruntime's quantize_static writes them (the quantized ONNX users bring), made from float models of
the corpus with their own calibration sets: tests/corpus/<name>/model.onnx and calib.npz, recorded in the manifest.
A name starting "ortqop_" is quantize_static's QOperator format instead (QLinearConv, com.microsoft QGemm, ...).

    python scripts/corpus/export_ort_qdq.py [--only NAME ...]
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnxruntime import quantization as q

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402

# name: (kind, float model of the corpus, per_channel, activation type[, quantize_static extra_options])
MODELS = {
    "ortqdq_torch_kws_transformer": ("transformer", "torch_kws_transformer", True, q.QuantType.QInt8),
    # the hidden-corpus round: uint8 activations and per-tensor weights (GroupNorm, PReLU, Hardsigmoid), and a
    # detector with two outputs (Hardswish, Clip; opset 11: per-tensor, as DequantizeLinear takes no axis before 13)
    "ortqdq_u8_torch_groupnorm_prelu_kws": ("kws", "torch_groupnorm_prelu_kws_op18", False, q.QuantType.QUInt8),
    "ortqdq_torch_hardswish_detector": ("detection", "torch_hardswish_detector_op11", False, q.QuantType.QInt8),
    # the fifth round: int16 activations (A16W8; ONNX Runtime writes com.microsoft Q/DQ nodes below opset 21)
    "ortqdq_a16w8_torch_grouped_gelu_har": ("har", "torch_grouped_gelu_har_op20", True, q.QuantType.QInt16),
    # round h44: int16 activations with ActivationSymmetric (zero points 0: the 16x8 kernels take the file's own
    # scales) on a residual image CNN (Conv, Relu, Add, GlobalAveragePool, Gemm)
    "ortqdq_a16w8_sym_torch_resnet8_cifar": ("classification", "torch_resnet8_cifar", True, q.QuantType.QInt16,
                                             {"ActivationSymmetric": True}),
    # round h45: ORT's default (asymmetric) A16W8 of a timm MobileNetV3 with squeeze-excitation blocks: the Mul of
    # two int16 activations (the features times their HardSigmoid gate) on TFLite's 16x8 MUL
    "ortqdq_a16w8_timm_mobilenetv3_small_050": ("classification", "timm_mobilenetv3_small_050", True,
                                                q.QuantType.QInt16),
    # round h46: ORT's default A16W8 of two small transformers: row-wise MatMuls with their bias Adds apart,
    # LayerNormalization, attention, a positional embedding and (the ViT) a class token Concat'ed on int16 rows
    "ortqdq_a16w8_timm_vit_tiny_32": ("transformer", "timm_vit_tiny_32", True, q.QuantType.QInt16),
    "ortqdq_a16w8_torch_kws_transformer": ("transformer", "torch_kws_transformer", True, q.QuantType.QInt16),
    # round h47: opset-14/15 transformers whose LayerNorm the exporter decomposed (ReduceMean, Sub, Pow, Sqrt, Div:
    # ORT quantizes each piece; the Div of two int16 activations), the second with uint16 activations (QUInt16)
    "ortqdq_a16w8_torch_gelu_transformer_op14": ("transformer", "torch_gelu_transformer_op14", True,
                                                 q.QuantType.QInt16),
    "ortqdq_a16w8_u16_torch_postnorm_transformer_op15": ("transformer", "torch_postnorm_transformer_op15", True,
                                                         q.QuantType.QUInt16),
    # round h49: the QOperator format (integer operators, as the ONNX model zoo's -int8 files): int8 and uint8
    # activations, convolutions with residual QLinearAdd, a transformer's QLinearMatMul / QLinearSoftmax / QLinearMul,
    # a detector's QLinearConcat with MaxPool and Resize on the integers in between, a QLinearSoftmax head
    "ortqop_torch_resnet8_cifar": ("classification", "torch_resnet8_cifar", True, q.QuantType.QInt8),
    "ortqop_tv_mobilenet_v2_035_96": ("classification", "tv_mobilenet_v2_035_96", True, q.QuantType.QInt8),
    "ortqop_torch_kws_transformer": ("transformer", "torch_kws_transformer", True, q.QuantType.QInt8),
    "ortqop_u8_torch_yolo_tiny": ("detection", "torch_yolo_tiny", True, q.QuantType.QUInt8),
    "ortqop_torch_audio_events_2d": ("audio-events", "torch_audio_events_2d", True, q.QuantType.QInt8),
    "ortqop_u8_tv_shufflenet_v2_x0_5_96": ("classification", "tv_shufflenet_v2_x0_5_96", True, q.QuantType.QUInt8),
}


def export(name: str) -> None:
    kind, source, per_channel, activations, *extra = MODELS[name]
    extra = extra[0] if extra else {}
    src = manifest.CORPUS / source
    calib = np.load(src / "calib.npz")["x"].astype(np.float32)
    model = onnx.load(str(src / "model.onnx"))
    init = {i.name for i in model.graph.initializer}
    inp = [i.name for i in model.graph.input if i.name not in init][0]

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {inp: x[None]}

    out = manifest.corpus_file(name)
    fmt = q.QuantFormat.QOperator if name.startswith("ortqop_") else q.QuantFormat.QDQ
    q.quantize_static(str(src / "model.onnx"), str(out), Reader(), quant_format=fmt,
                      per_channel=per_channel, activation_type=activations, weight_type=q.QuantType.QInt8,
                      extra_options=extra)
    shutil.copyfile(src / "calib.npz", out.parent / "calib.npz")
    manifest.record_export(name, kind, out, "scripts/corpus/export_ort_qdq.py", "python",
                           manifest.load()[source]["license"],
                           {"architecture": f"tests/corpus/{source} (float)",
                            "exporter": f"onnxruntime {onnxruntime.__version__} quantize_static ({fmt.name}, "
                            f"{'per-channel' if per_channel else 'per-tensor'} int8 weights, "
                            f"{activations.name} activations{''.join(f', {k}={v}' for k, v in extra.items())}, "
                            f"calibrated on {source}/calib.npz)"})


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
