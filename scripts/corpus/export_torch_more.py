"""PyTorch models through torch.onnx at the oldest opsets the TorchScript exporter still writes (9, 10, 15: Upsample
instead of Resize, BatchNormalization and Slice of their old forms, a GRU and an LSTM with their old attributes, a
post-norm TransformerEncoder with LayerNorm written out), and a timm
vision transformer with convolutional attention (EfficientViT-M) at a microcontroller resolution. Random (seeded)
weights, BatchNorm statistics from the calibration inputs, as export_torch.py (whose helpers make the inputs).

    /work/torch-venv/bin/python scripts/corpus/export_torch_more.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch import TIMM, _cbr, _timm, manifest  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_more.py")


class CrnnKws(nn.Module):
    """A convolutional-recurrent keyword spotter: two conv blocks over the MFCC image, a GRU over the frames."""

    def __init__(self, mfcc=10, classes=12, h=48):
        super().__init__()
        self.conv = nn.Sequential(_cbr(1, 16, 3, 1), _cbr(16, 16, 3, (1, 2)))
        self.gru = nn.GRU(16 * ((mfcc + 1) // 2), h, batch_first=True)
        self.head = nn.Linear(h, classes)

    def forward(self, x):                         # x: (N, 1, frames, mfcc)
        f = self.conv(x)                          # (N, 16, frames, mfcc/2)
        f = f.permute(0, 2, 1, 3).flatten(2)      # (N, frames, 16 * mfcc/2)
        y, _ = self.gru(f)
        return torch.softmax(self.head(y[:, -1]), -1)


class YoloFpnTiny(nn.Module):
    """A two-scale YOLO-style head: a strided backbone, the deep map upsampled (nearest) and concatenated with
    the shallower one, a raw prediction map per scale."""

    def __init__(self, classes=3, anchors=2):
        super().__init__()
        out = anchors * (5 + classes)
        self.c3 = nn.Sequential(_cbr(3, 16, 3, 2), _cbr(16, 32, 3, 2), _cbr(32, 32, 3, 2))
        self.c4 = nn.Sequential(nn.MaxPool2d(2), _cbr(32, 64, 3), nn.MaxPool2d(2), _cbr(64, 64, 3))
        self.up = nn.Sequential(_cbr(64, 32, 1), nn.Upsample(scale_factor=2, mode="nearest"))
        self.mid = _cbr(32 + 32, 32, 3)
        self.head_s = nn.Conv2d(32, out, 1)
        self.head_l = nn.Conv2d(64, out, 1)

    def forward(self, x):
        a = self.c3(x)
        b = self.c4(a)
        m = self.mid(torch.cat([self.up(b), nn.functional.max_pool2d(a, 2)], 1))
        return self.head_l(b), self.head_s(m)


class ConvTransposeAutoencoder(nn.Module):
    """A machine-sound anomaly autoencoder over log-mel frames: Conv1d down, ConvTranspose1d back up."""

    def __init__(self, mels=32, c=32):
        super().__init__()
        self.enc = nn.Sequential(_cbr(mels, c, 3, 2, dims=1), _cbr(c, 16, 3, 2, dims=1))
        self.dec = nn.Sequential(nn.ConvTranspose1d(16, c, 4, 2, 1), nn.BatchNorm1d(c), nn.ReLU(),
                                 nn.ConvTranspose1d(c, mels, 4, 2, 1))

    def forward(self, x):
        return self.dec(self.enc(x))


class LstmForecaster(nn.Module):
    """A sensor-sequence model: a two-layer LSTM over the window, the last step's state to a forecast."""

    def __init__(self, feats=8, h=32, out=4):
        super().__init__()
        self.lstm = nn.LSTM(feats, h, num_layers=2, batch_first=True)
        self.head = nn.Linear(h, out)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1])


class PostNormTransformer(nn.Module):
    """A small post-norm ReLU TransformerEncoder (PyTorch's defaults) over audio frames, a class token's output."""

    def __init__(self, feats=32, frames=32, classes=8, d=32):
        super().__init__()
        self.embed = nn.Linear(feats, d)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, frames + 1, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), self.embed(x)], 1) + self.pos
        return self.head(self.enc(t)[:, 0])


# name: (kind, constructor, input shape without batch, license/origin, opset)
MODELS = {
    "torch_crnn_kws_op10": ("kws", CrnnKws, (1, 49, 10), OWN, 10),
    "torch_yolo_fpn_op9": ("detection", YoloFpnTiny, (3, 96, 96), OWN, 9),
    "torch_convtranspose_ae_op10": ("anomaly", ConvTransposeAutoencoder, (32, 64), OWN, 10),
    "torch_lstm_forecaster_op9": ("sequence", LstmForecaster, (64, 8), OWN, 9),
    "torch_postnorm_transformer_op15": ("transformer", PostNormTransformer, (32, 32), OWN, 15),
    "timm_efficientvit_m0_64": ("transformer", lambda: _timm("efficientvit_m0", num_classes=10, img_size=64),
                                (3, 64, 64), TIMM, 17),
}


def export(name: str) -> None:
    kind, make, shape, licence, opset = MODELS[name]
    export_torch.export_seeded(name, "export_torch_more.py", kind, make, shape, opset, licence)

def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
