"""More PyTorch models through torch.onnx, at the opsets older exports still carry (TorchScript opset 11 and 13:
LayerNormalization written out as ReduceMean/Sub/Pow/Sqrt/Div, Resize with a roi input, Squeeze/Unsqueeze/
Split with attributes or inputs) and recent timm architectures (MobileNetV4, RepGhostNet, TinyNet, RegNetX,
SemNASNet) at microcontroller resolutions. Random (seeded) weights, BatchNorm statistics from the calibration
inputs, as in export_torch.py (whose helpers make and record each file).

    /work/torch-venv/bin/python scripts/corpus/export_torch_opsets.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch import TIMM, _cbr, _timm, manifest  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_opsets.py")


class GeluTransformer(nn.Module):
    """A small keyword/sequence transformer: a linear embedding, pre-norm encoder layers with GELU, mean pooling."""

    def __init__(self, feats=40, frames=49, classes=12, d=48):
        super().__init__()
        self.embed = nn.Linear(feats, d)
        self.pos = nn.Parameter(torch.randn(1, frames, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, 2, 2 * d, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.norm(self.enc(self.embed(x) + self.pos)).mean(1))


class UpsampleAutoencoder(nn.Module):
    """A vibration/audio-frame anomaly autoencoder: strided Conv1d down, nearest Upsample + Conv1d back up."""

    def __init__(self, ch=4, c=24):
        super().__init__()
        self.enc = nn.Sequential(_cbr(ch, c, 5, 2, dims=1), _cbr(c, c, 5, 2, dims=1), _cbr(c, 8, 1, dims=1))
        self.dec = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), _cbr(8, c, 5, dims=1),
                                 nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv1d(c, ch, 5, padding=2))

    def forward(self, x):
        return self.dec(self.enc(x))


class CenterNetTiny(nn.Module):
    """A CenterNet-style detector: a strided backbone, a transposed conv and a bilinear upsampling to stride 4, a
    class heatmap (sigmoid), box size and offset heads."""

    def __init__(self, classes=2):
        super().__init__()
        self.backbone = nn.Sequential(_cbr(3, 16, 3, 2), _cbr(16, 16, 3, 1, groups=16), _cbr(16, 32, 1),
                                      _cbr(32, 32, 3, 2, groups=32), _cbr(32, 48, 1),
                                      _cbr(48, 48, 3, 2, groups=48), _cbr(48, 64, 1),
                                      _cbr(64, 64, 3, 2, groups=64), _cbr(64, 64, 1))
        self.up = nn.Sequential(nn.ConvTranspose2d(64, 32, 4, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                                nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                                _cbr(32, 32, 3))
        self.heat = nn.Conv2d(32, classes, 1)
        self.size = nn.Conv2d(32, 2, 1)
        self.offset = nn.Conv2d(32, 2, 1)

    def forward(self, x):
        f = self.up(self.backbone(x))
        return torch.sigmoid(self.heat(f)), self.size(f), self.offset(f)


class BiGruHar(nn.Module):
    """Activity recognition with a bidirectional GRU over the accelerometer/gyro window."""

    def __init__(self, classes=6, h=24):
        super().__init__()
        self.gru = nn.GRU(6, h, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * h, classes)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.head(y[:, -1])


# name: (kind, constructor, input shape without batch, exporter, license/origin, opset)
MODELS = {
    "torch_gelu_transformer_op14": ("transformer", GeluTransformer, (49, 40), "torchscript", OWN, 14),
    "torch_upsample_autoencoder_op11": ("anomaly", UpsampleAutoencoder, (4, 256), "torchscript", OWN, 11),
    "torch_centernet_tiny_op11": ("detection", CenterNetTiny, (3, 96, 96), "torchscript", OWN, 11),
    "torch_bigru_har": ("har", BiGruHar, (50, 6), "torchscript", OWN, 17),
    "timm_mobilenetv4_small_035_96": ("classification", lambda: _timm("mobilenetv4_conv_small_035", num_classes=10), (3, 96, 96), "torchscript", TIMM, 13),
    "timm_repghostnet_050_96": ("classification", lambda: _timm("repghostnet_050", num_classes=10), (3, 96, 96), "torchscript", TIMM, 17),
    "timm_tinynet_e_96": ("classification", lambda: _timm("tinynet_e", num_classes=10), (3, 96, 96), "dynamo", TIMM, 18),
    "timm_semnasnet_050_96": ("classification", lambda: _timm("semnasnet_050", num_classes=10), (3, 96, 96), "torchscript", TIMM, 11),
}


def export(name: str) -> None:
    kind, make, shape, exporter, licence, opset = MODELS[name]
    export_torch.export_seeded(name, "export_torch_opsets.py", kind, make, shape, opset, licence,
                               dynamo=exporter == "dynamo", python="python")

def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
