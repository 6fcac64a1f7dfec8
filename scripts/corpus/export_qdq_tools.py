"""Quantized ONNX as the quantization tools people use write it: NNCF's post-training quantization (nncf.quantize on
an ONNX model, and on a PyTorch model then torch.onnx) and Brevitas quantization-aware layers exported with
brevitas.export.export_onnx_qcdq (per-channel weights, int8 and uint8 activations, int4 weights as int8 values
clipped to [-7, 7]). Writes tests/corpus/<name>/model.onnx and calib.npz and records each in the manifest; the
oracle (ONNX Runtime running the QDQ file) is made by scripts/corpus/oracles.py.

    /work/torch-venv/bin/pip install nncf brevitas onnxoptimizer      # beside torch, torchvision, onnx
    python scripts/corpus/export_qdq_tools.py [--only NAME ...]
    python scripts/corpus/oracles.py --only NAME ...
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402
from export_torch import WEIGHTS, inputs, seeded, to_onnx  # noqa: E402

OWN = "Apache-2.0 (this repository)"


def _version(name: str) -> str:
    from importlib.metadata import version
    return version(name)


# ---- NNCF ----------------------------------------------------------------------------------------------------
def nncf_on_onnx(name: str, source: str) -> tuple[Path, dict, str]:
    """nncf.quantize (defaults: mixed preset, min/max, fast bias correction) on a float ONNX model of the corpus,
    calibrated on its calib.npz."""
    import nncf

    src = manifest.CORPUS / source
    model = onnx.load(str(src / "model.onnx"))
    calib = np.load(src / "calib.npz")["x"].astype(np.float32)
    inp = model.graph.input[0].name
    q = nncf.quantize(model, nncf.Dataset([{inp: x[None]} for x in calib]), subset_size=len(calib))
    out = manifest.corpus_file(name)
    onnx.save(q, str(out))
    manifest.save_calibration(out.parent, calib)
    lic = manifest.load()[source]["license"]
    return out, {"architecture": f"tests/corpus/{source} (float)",
                                   "exporter": f"nncf {_version('nncf')} nncf.quantize on the ONNX model (defaults), "
                                   f"onnx {onnx.__version__}, calibrated on {source}/calib.npz"}, lic


def nncf_on_torch(name: str, make, shape, lic: str) -> tuple[Path, dict, str]:
    """nncf.quantize on a PyTorch model (random seeded weights, BatchNorm statistics from the calibration inputs),
    then torch.onnx (TorchScript exporter), its quantizers in NNCF's QuantizeLinear/DequantizeLinear export mode
    (by default they export as OpenVINO's FakeQuantize, a custom-domain op ONNX Runtime cannot run)."""
    import nncf

    model, calib = seeded(name, make, shape)
    from nncf.torch.quantization.layers import QuantizerExportMode

    q = nncf.quantize(model, nncf.Dataset([torch.from_numpy(x[None]) for x in calib[:16]]), subset_size=16)
    for m in q.modules():          # NNCF's own QDQ export of its quantizers (default: OpenVINO's FakeQuantize)
        if hasattr(m, "set_export_mode"):
            m.set_export_mode(QuantizerExportMode.ONNX_QUANTIZE_DEQUANTIZE_PAIRS)
    out = manifest.corpus_file(name)
    to_onnx(q, calib[:1], out, 13)
    manifest.save_calibration(out.parent, calib)
    return out, {"architecture": "torchvision mobilenet_v2 (width 0.35, 10 classes, 96x96)",
                 "weights": WEIGHTS,
                 "exporter": f"nncf {_version('nncf')} nncf.quantize on the torch model (defaults), quantizers in "
                 f"QuantizerExportMode.ONNX_QUANTIZE_DEQUANTIZE_PAIRS, torch.onnx (TorchScript, opset 13), "
                 f"torch {torch.__version__}"}, lic


# ---- Brevitas ------------------------------------------------------------------------------------------------
class BrevitasKws(nn.Module):
    """A DS-CNN keyword spotter (MLPerf Tiny's shape, narrower) of Brevitas quantized layers: per-channel weights
    of `bits` bits, per-tensor activations, int8 symmetric (`asym` False, int32 biases) or uint8 asymmetric."""

    def __init__(self, bits: int, asym: bool, classes: int = 12, c: int = 32, act_bits: int = 8):
        super().__init__()
        import brevitas.nn as qnn
        from brevitas.quant import (Int8ActPerTensorFloat, Int8WeightPerChannelFloat, Int32Bias,
                                    ShiftedUint8ActPerTensorFloat, Uint8ActPerTensorFloat)

        act = ShiftedUint8ActPerTensorFloat if asym else Int8ActPerTensorFloat
        relu = Uint8ActPerTensorFloat if asym else Int8ActPerTensorFloat
        bias = None if asym else Int32Bias     # (an int32 bias needs a zero-point-free input in Brevitas)
        w = dict(weight_quant=Int8WeightPerChannelFloat, weight_bit_width=bits, bias_quant=bias,
                 return_quant_tensor=not asym)
        self.inp = qnn.QuantIdentity(act_quant=act, return_quant_tensor=True)
        r = dict(act_quant=relu, return_quant_tensor=True, bit_width=act_bits)    # the ReLUs' width
        layers = [qnn.QuantConv2d(1, c, (10, 4), stride=2, padding=(5, 1), **w), qnn.QuantReLU(**r)]
        for _ in range(2):
            layers += [qnn.QuantConv2d(c, c, 3, padding=1, groups=c, **w), qnn.QuantReLU(**r),
                       qnn.QuantConv2d(c, c, 1, **w), qnn.QuantReLU(**r)]
        self.body = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.pooled = qnn.QuantIdentity(act_quant=act, return_quant_tensor=True)
        self.fc = qnn.QuantLinear(c, classes, **{**w, "return_quant_tensor": False})

    def forward(self, x):
        return self.fc(self.pooled(self.pool(self.body(self.inp(x)))).flatten(1))


def brevitas_qcdq(name: str, bits: int, asym: bool, qonnx: bool = False, act_bits: int = 8
                  ) -> tuple[Path, dict, str]:
    """Brevitas layers, activation scales calibrated (brevitas.graph.calibrate.calibration_mode), then 60 steps
    of quantization-aware training on a seeded synthetic task, exported with export_onnx_qcdq (TorchScript: the
    dynamo path takes no int32 biases), or with export_qonnx (`qonnx`: QONNX Quant nodes, as FINN reads them)."""
    from brevitas.export import export_onnx_qcdq, export_qonnx
    from brevitas.graph.calibrate import calibration_mode

    torch.manual_seed(sum(map(ord, name)))
    model = BrevitasKws(bits, asym, act_bits=act_bits)
    x = torch.from_numpy(inputs(name, (1, 49, 10), 256))
    labels = (x.flatten(1) @ torch.randn(490, 12)).argmax(1)       # a task whose classes depend on the input
    model.eval()
    with torch.no_grad(), calibration_mode(model):
        model(x[:64])
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    model.train()
    for step in range(60):
        batch = slice(32 * (step % 8), 32 * (step % 8) + 32)
        loss = nn.functional.cross_entropy(model(x[batch]), labels[batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    out = manifest.corpus_file(name)
    if qonnx:
        export_qonnx(model, args=x[:1], export_path=str(out), opset_version=13, dynamo=False)
    else:
        export_onnx_qcdq(model, args=x[:1], export_path=str(out), opset_version=13, dynamo=False)
    manifest.save_calibration(out.parent, x.numpy())
    kind = f"{bits}-bit per-channel weights, " + ("uint8 asymmetric activations, float biases" if asym
                                                   else "int8 symmetric activations, int32 biases")
    if act_bits != 8:
        kind += f", {act_bits}-bit ReLU outputs"
    return out, {"architecture": "scripts/corpus/export_qdq_tools.py (BrevitasKws: DS-CNN of Brevitas layers)",
                 "weights": "random (seeded), calibrated, 60 QAT steps on a seeded synthetic task",
                 "exporter": f"brevitas {_version('brevitas')} {'export_qonnx' if qonnx else 'export_onnx_qcdq'} "
                 f"(TorchScript, opset 13; {kind}), "
                 f"torch {torch.__version__}"}, OWN


def _mobilenet_v2():
    import torchvision
    return torchvision.models.mobilenet_v2(width_mult=0.35, num_classes=10)


# name: (kind, maker)
MODELS = {
    "nncf_onnx_torch_ds_cnn_kws": ("kws", lambda n: nncf_on_onnx(n, "torch_ds_cnn_kws")),
    "nncf_onnx_tv_mobilenet_v2_035_96": ("classification", lambda n: nncf_on_onnx(n, "tv_mobilenet_v2_035_96")),
    "nncf_torch_tv_mobilenet_v2_035_96": ("classification", lambda n: nncf_on_torch(
        n, _mobilenet_v2, (3, 96, 96), "BSD-3-Clause (torchvision)")),
    "brevitas_kws_int8_sym": ("kws", lambda n: brevitas_qcdq(n, 8, False)),
    "brevitas_kws_uint8_asym": ("kws", lambda n: brevitas_qcdq(n, 8, True)),
    "brevitas_kws_int4_weights": ("kws", lambda n: brevitas_qcdq(n, 4, False)),
    "brevitas_qonnx_kws_int8": ("kws", lambda n: brevitas_qcdq(n, 8, False, qonnx=True)),
    "brevitas_qonnx_kws_w4a4": ("kws", lambda n: brevitas_qcdq(n, 4, True, qonnx=True, act_bits=4)),
}


def export(name: str) -> None:
    kind, make = MODELS[name]
    out, source, lic = make(name)
    manifest.record_export(name, kind, out, "scripts/corpus/export_qdq_tools.py", "python", lic, source)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
