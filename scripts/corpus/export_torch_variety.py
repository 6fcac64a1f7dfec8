"""PyTorch models a user brings that the rest of the corpus does not exercise: GroupNorm, InstanceNorm, PReLU,
Hardsigmoid and Hardswish gates, einsum attention, a chunk written as Split, ConvTranspose with output_padding,
bilinear Resize, a bidirectional LSTM with two outputs, a dynamic batch axis, non-square inputs, and opsets
from 11 to 18 through both exporters. Random (seeded) weights, BatchNorm statistics from the calibration inputs,
as export_torch.py (whose helpers make the inputs).

    /work/torch-venv/bin/python scripts/corpus/export_torch_variety.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch import manifest  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_variety.py")


class GroupNormKws(nn.Module):
    """A keyword spotter over 49x10 MFCC with GroupNorm and PReLU (no BatchNorm), a Hardsigmoid
    squeeze-excitation gate and a global average pool."""

    def __init__(self, classes=12, c=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, (5, 3), (2, 1), (2, 1)), nn.GroupNorm(4, c), nn.PReLU(c))
        self.dw = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c), nn.GroupNorm(4, c), nn.PReLU())
        self.pw = nn.Sequential(nn.Conv2d(c, c, 1), nn.GroupNorm(8, c), nn.PReLU(c))
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c // 4, 1), nn.ReLU(),
                                nn.Conv2d(c // 4, c, 1), nn.Hardsigmoid())
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        f = self.pw(self.dw(self.stem(x)))
        f = f * self.se(f)
        return self.head(f.mean((2, 3)))


class InstanceNormUnetAd(nn.Module):
    """An image anomaly autoencoder (32x48, non-square): strided convs with InstanceNorm, a ConvTranspose with
    output_padding, a bilinear upsample, a skip connection; the reconstruction is the output."""

    def __init__(self, c=16):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.InstanceNorm2d(c, affine=True), nn.LeakyReLU(0.1))
        self.e2 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.InstanceNorm2d(2 * c, affine=True),
                                nn.LeakyReLU(0.1))
        self.d2 = nn.Sequential(nn.ConvTranspose2d(2 * c, c, 3, 2, 1, output_padding=1), nn.ReLU())
        self.d1 = nn.Conv2d(2 * c, 3, 3, 1, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.d2(self.e2(a))
        y = self.d1(torch.cat([a, b], 1))
        return nn.functional.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)


class EinsumAttentionHar(nn.Module):
    """An activity recogniser over a 128-sample, 6-axis IMU window (channels last): a strided Conv1d embedding,
    one attention block written with einsum and a chunked qkv projection, Hardswish MLP, mean over time."""

    def __init__(self, axes=6, d=32, classes=6):
        super().__init__()
        self.embed = nn.Conv1d(axes, d, 5, 2, 2)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.Hardswish(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, classes)
        self.scale = d ** -0.5

    def forward(self, x):                                   # x: (N, 128, axes)
        t = self.embed(x.transpose(1, 2)).transpose(1, 2)   # (N, 64, d)
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        a = torch.softmax(torch.einsum("ntd,nsd->nts", q, k) * self.scale, -1)
        t = self.norm(t + self.proj(torch.einsum("nts,nsd->ntd", a, v)))
        t = t + self.mlp(t)
        return self.head(t.mean(1))


class BiLstmAudioEvents(nn.Module):
    """An audio-event tagger over 40 log-mel frames of 32 bands: a bidirectional LSTM; two outputs, the clip's
    class scores (sigmoid) and its embedding."""

    def __init__(self, mels=32, h=24, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(mels, h, batch_first=True, bidirectional=True)
        self.emb = nn.Linear(2 * h, 16)
        self.head = nn.Linear(16, classes)

    def forward(self, x):                                   # x: (N, frames, mels)
        y, _ = self.lstm(x)
        e = torch.tanh(self.emb(y.mean(1)))
        return torch.sigmoid(self.head(e)), e


class HardswishDetector(nn.Module):
    """A FOMO/CenterNet-style detector on a non-square 3x80x112 frame: ReLU6 (Clip) and Hardswish blocks with
    stride-2 convs on even and odd sizes, a depthwise stage, a heat map (Hardsigmoid) and a box-size map."""

    def __init__(self, classes=2):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU6(),
            nn.Conv2d(16, 16, 3, 1, 1, groups=16), nn.BatchNorm2d(16), nn.Hardswish(),
            nn.Conv2d(16, 32, 1), nn.BatchNorm2d(32), nn.ReLU6(),
            nn.Conv2d(32, 32, 3, 2, 1, groups=32), nn.BatchNorm2d(32), nn.Hardswish(),
            nn.Conv2d(32, 48, 1), nn.BatchNorm2d(48), nn.ReLU6(),
            nn.Conv2d(48, 48, 3, 2, 0), nn.BatchNorm2d(48), nn.Hardswish())
        self.heat = nn.Sequential(nn.Conv2d(48, classes, 1), nn.Hardsigmoid())
        self.size = nn.Conv2d(48, 2, 1)

    def forward(self, x):
        f = self.body(x)
        return self.heat(f), torch.clamp(self.size(f), min=0.0, max=4.0)


class DilatedTcnAd(nn.Module):
    """A vibration anomaly scorer: dilated causal Conv1d blocks (left-padded with F.pad) over a 1-D signal of
    256 samples, the reconstruction error of a bottleneck as the score; batch axis dynamic in the file."""

    def __init__(self, c=16):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1 if i == 0 else c, c, 3, dilation=d) for i, d in enumerate((1, 2, 4))])
        self.act = nn.ELU()
        self.bottleneck = nn.Sequential(nn.Linear(c, 4), nn.Tanh(), nn.Linear(4, c))

    def forward(self, x):                                   # x: (N, 1, 256)
        h = x
        for conv in self.convs:
            h = self.act(conv(nn.functional.pad(h, (2 * conv.dilation[0], 0))))
        f = h.mean(-1)
        return ((self.bottleneck(f) - f) ** 2).mean(-1, keepdim=True)


# name: (kind, constructor, input shape without batch, opset, dynamo?, dynamic batch?)
MODELS = {
    "torch_groupnorm_prelu_kws_op18": ("kws", GroupNormKws, (1, 49, 10), 18, False, False),
    "torch_instnorm_unet_ad_op13": ("anomaly", InstanceNormUnetAd, (3, 32, 48), 13, False, False),
    "torch_einsum_attention_har_dynamo": ("har", EinsumAttentionHar, (128, 6), 18, True, False),
    "torch_bilstm_audio_events_op14": ("audio-events", BiLstmAudioEvents, (40, 32), 14, False, False),
    "torch_hardswish_detector_op11": ("detection", HardswishDetector, (3, 80, 112), 11, False, False),
    "torch_tcn_ad_batch_none_op12": ("anomaly", DilatedTcnAd, (1, 256), 12, False, True),
}


def export(name: str) -> None:
    kind, make, shape, opset, dynamo, dynamic_batch = MODELS[name]
    export_torch.export_seeded(name, "export_torch_variety.py", kind, make, shape, opset, OWN, dynamo, ["x"],
                               note="batch axis dynamic" if dynamic_batch else "",
                               **({"dynamic_axes": {"x": {0: "batch"}}} if dynamic_batch else {}))


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
