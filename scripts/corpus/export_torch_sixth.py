"""The sixth hidden-corpus round's PyTorch models: architectures the corpus did not have yet -- a Conformer block
over MFCC frames (half-step feed-forward modules, nn.MultiheadAttention, the convolution module's GLU and
depthwise Conv1d), a 1-D U-Net denoising autoencoder (MaxPool1d, ConvTranspose1d, skip Concat), a
depthwise-separable TCN (dilated causal depthwise Conv1d, PReLU, residuals), and timm's EdgeNeXt-XXS (split
depthwise convolutions, cross-covariance attention) and TF-ported MobileNetV3-Small-minimal (TF "same"
padding). Random (seeded) weights, BatchNorm statistics from the calibration inputs, as export_torch.py
(whose helpers make the inputs).

    /work/torch-venv/bin/python scripts/corpus/export_torch_sixth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch import TIMM, _timm  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_sixth.py")


class ConformerKws(nn.Module):
    """A keyword spotter over 49x10 MFCC frames with one Conformer block (Gulati et al. 2020): a half-step
    feed-forward module (LayerNorm, SiLU), multi-head self-attention, the convolution module (pointwise conv to
    2d, GLU, depthwise Conv1d, BatchNorm1d, SiLU, pointwise), a second half-step feed-forward, a final LayerNorm;
    mean over frames to the classes."""

    def __init__(self, d=40, heads=4, k=7, classes=12):
        super().__init__()
        self.embed = nn.Linear(10, d)
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.n_att = nn.LayerNorm(d)
        self.att = nn.MultiheadAttention(d, heads, batch_first=True)
        self.n_conv = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):                                   # x: (N, 49, 10)
        t = self.embed(x)
        t = t + 0.5 * self.ff1(t)
        h = self.n_att(t)
        t = t + self.att(h, h, h, need_weights=False)[0]
        h = self.n_conv(t).transpose(1, 2)
        h = self.pw2(F.silu(self.bn(self.dw(F.glu(self.pw1(h), dim=1)))))
        t = t + h.transpose(1, 2)
        t = self.norm(t + 0.5 * self.ff2(t))
        return self.head(t.mean(1))


class Unet1dDenoiser(nn.Module):
    """A 1-D U-Net over a 2-channel, 256-sample vibration window: two Conv1d/BatchNorm/ReLU levels down with
    MaxPool1d, a bottleneck, ConvTranspose1d back up, the skips concatenated; the cleaned signal out."""

    def __init__(self, c=16):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv1d(i, o, 5, padding=2), nn.BatchNorm1d(o), nn.ReLU(),
                                 nn.Conv1d(o, o, 5, padding=2), nn.BatchNorm1d(o), nn.ReLU())
        self.d1, self.d2, self.mid = block(2, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.u2 = nn.ConvTranspose1d(4 * c, 2 * c, 2, 2)
        self.c2 = block(4 * c, 2 * c)
        self.u1 = nn.ConvTranspose1d(2 * c, c, 2, 2)
        self.c1 = block(2 * c, c)
        self.out = nn.Conv1d(c, 2, 1)

    def forward(self, x):                                   # x: (N, 2, 256)
        a = self.d1(x)
        b = self.d2(F.max_pool1d(a, 2))
        m = self.mid(F.max_pool1d(b, 2))
        b = self.c2(torch.cat([self.u2(m), b], 1))
        a = self.c1(torch.cat([self.u1(b), a], 1))
        return self.out(a)


class DsTcnKws(nn.Module):
    """A depthwise-separable temporal convolutional network over 98x40 log-mel frames (as in Choi et al.'s
    TC-ResNet family): causal dilated depthwise Conv1d (F.pad on the left), pointwise Conv1d, BatchNorm, PReLU,
    residual adds; global average pool."""

    def __init__(self, c=48, classes=12, dilations=(1, 2, 4, 8)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(40, c, 3, padding=1), nn.BatchNorm1d(c), nn.PReLU(c))
        self.blocks = nn.ModuleList()
        for d in dilations:
            self.blocks.append(nn.ModuleDict({
                "dw": nn.Conv1d(c, c, 3, dilation=d, groups=c), "pw": nn.Conv1d(c, c, 1),
                "bn": nn.BatchNorm1d(c), "act": nn.PReLU()}))
        self.dilations = dilations
        self.head = nn.Linear(c, classes)

    def forward(self, x):                                   # x: (N, 40, 98)
        h = self.stem(x)
        for d, b in zip(self.dilations, self.blocks):
            h = h + b["act"](b["bn"](b["pw"](b["dw"](F.pad(h, (2 * d, 0))))))
        return self.head(h.mean(-1))


class ReflectLinearAd(nn.Module):
    """A machine-sound autoencoder over 64 log-mel frames x 32 bins as audio people write it: ReflectionPad1d
    before each Conv1d (ONNX Pad, mode reflect), strided convs down, linear 1-D Upsample back up (ONNX Resize,
    mode linear, on a 3-D tensor), Tanh at the end."""

    def __init__(self, c=32):
        super().__init__()
        self.enc = nn.Sequential(nn.ReflectionPad1d(2), nn.Conv1d(32, c, 5, 2), nn.BatchNorm1d(c), nn.ReLU(),
                                 nn.ReflectionPad1d(1), nn.Conv1d(c, c, 3, 2), nn.BatchNorm1d(c), nn.ReLU())
        self.dec = nn.Sequential(nn.Upsample(scale_factor=2, mode="linear", align_corners=False),
                                 nn.ReflectionPad1d(1), nn.Conv1d(c, c, 3), nn.BatchNorm1d(c), nn.ReLU(),
                                 nn.Upsample(scale_factor=2, mode="linear", align_corners=False),
                                 nn.ReflectionPad1d(2), nn.Conv1d(c, 32, 5), nn.Tanh())

    def forward(self, x):                                   # x: (N, 32, 64)
        return self.dec(self.enc(x))


# name: (kind, constructor, input shape without batch, opset, dynamo?, (license, origin))
MODELS = {
    "torch_conformer_kws_op17": ("transformer", ConformerKws, (49, 10), 17, False, OWN),
    "torch_conformer_kws_dynamo": ("transformer", ConformerKws, (49, 10), 18, True, OWN),
    "torch_reflect_linear_ad_op17": ("anomaly", ReflectLinearAd, (32, 64), 17, False, OWN),
    "timm_efficientvit_b0_64": ("transformer", lambda: _timm("efficientvit_b0", num_classes=10), (3, 64, 64), 17,
                                False, TIMM),
    "torch_unet1d_denoise_ad_dynamo": ("anomaly", Unet1dDenoiser, (2, 256), 18, True, OWN),
    "torch_dstcn_kws_op18": ("kws", DsTcnKws, (40, 98), 18, False, OWN),
    "timm_edgenext_xx_small_64": ("transformer", lambda: _timm("edgenext_xx_small", num_classes=10),
                                  (3, 64, 64), 17, False, TIMM),
    "timm_tf_mobilenetv3_small_minimal_96": ("classification",
                                             lambda: _timm("tf_mobilenetv3_small_minimal_100", num_classes=10),
                                             (3, 96, 96), 17, False, TIMM),
}


def main(argv=None) -> int:
    return export_torch.seeded_main(__doc__, "export_torch_sixth.py", MODELS, argv)


if __name__ == "__main__":
    sys.exit(main())
