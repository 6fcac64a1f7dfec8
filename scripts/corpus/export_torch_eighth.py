"""The eighth hidden-corpus round's PyTorch models: architectures and exporter settings the corpus did not have yet --
BC-ResNet (broadcasted residual learning with SubSpectral normalization, a keyword spotter), a YOLOv8-style detector
(C2f blocks of Split / Concat, SiLU, SPPF's chained max pools, nearest Upsample, the DFL box head's Softmax over 16
bins), a 1-D variational autoencoder for anomaly scores (InstanceNorm1d, Softplus, nearest 1-D Upsample), PyTorch's
own nn.TransformerEncoder with a class token over sensor windows, a two-layer LSTM through the dynamo exporter, and
timm's ConvNeXt and NF-Net test networks at 64 px (LayerNorm2d, layer scale, weight-standardized convolutions).
Random (seeded) weights, BatchNorm statistics from the calibration inputs, as export_torch.py (whose helpers make the
inputs).

    /work/torch-venv/bin/python scripts/corpus/export_torch_eighth.py [--only NAME ...]
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

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_eighth.py")


class SubSpectralNorm(nn.Module):
    """BC-ResNet's SubSpectral Normalization: BatchNorm2d over (channels x sub-bands), the frequency axis cut into
    `bands` groups (a Reshape, BatchNormalization, Reshape back in ONNX)."""

    def __init__(self, c, bands=5):
        super().__init__()
        self.bands = bands
        self.bn = nn.BatchNorm2d(c * bands)

    def forward(self, x):
        n, c, f, t = x.shape
        x = self.bn(x.reshape(n, c * self.bands, f // self.bands, t))
        return x.reshape(n, c, f, t)


class BcBlock(nn.Module):
    """A BC-ResNet block: a frequency-wise depthwise conv with SubSpectral norm (f2), averaged over frequency, a
    temporal depthwise conv, SiLU, a pointwise conv (f1), broadcast back over frequency and added."""

    def __init__(self, cin, c, stride=1, dilation=1):
        super().__init__()
        self.pre = _cbr2(cin, c) if cin != c else nn.Identity()
        self.f2 = nn.Sequential(nn.Conv2d(c, c, (3, 1), (stride, 1), (1, 0), groups=c, bias=False),
                                SubSpectralNorm(c))
        self.f1 = nn.Sequential(nn.Conv2d(c, c, (1, 3), 1, (0, dilation), dilation=(1, dilation), groups=c,
                                          bias=False),
                                nn.BatchNorm2d(c), nn.SiLU(), nn.Conv2d(c, c, 1, bias=False), nn.Dropout(0.1))
        self.transition = cin != c or stride != 1

    def forward(self, x):
        x = self.pre(x)
        y = self.f2(x)
        z = self.f1(y.mean(2, keepdim=True))
        return F.relu(z + y if self.transition else x + y + z)


def _cbr2(cin, c):
    return nn.Sequential(nn.Conv2d(cin, c, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU())


class BcResNetKws(nn.Module):
    """BC-ResNet-1 (Kim et al., 2021) on 40 log-mel bins x 101 frames, 12 keywords."""

    def __init__(self, classes=12, w=8):
        super().__init__()
        self.stem = nn.Conv2d(1, 2 * w, 5, (2, 1), 2)
        plan = [(2 * w, w, 1, 1), (w, w, 1, 1), (w, int(1.5 * w), 2, 2), (int(1.5 * w), int(1.5 * w), 1, 2),
                (int(1.5 * w), 2 * w, 2, 4), (2 * w, 2 * w, 1, 4), (2 * w, int(2.5 * w), 1, 8)]
        self.blocks = nn.Sequential(*[BcBlock(a, b, s, d) for a, b, s, d in plan])
        self.dw = nn.Conv2d(int(2.5 * w), int(2.5 * w), 5, groups=int(2.5 * w))
        self.head = nn.Conv2d(int(2.5 * w), 4 * w, 1)
        self.cls = nn.Conv2d(4 * w, classes, 1)

    def forward(self, x):                                   # x: (N, 1, 40, 101)
        x = self.blocks(self.stem(x))
        x = self.head(self.dw(x)).mean((2, 3), keepdim=True)
        return self.cls(x).flatten(1)


def _conv_silu(cin, cout, k=3, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class C2f(nn.Module):
    """YOLOv8's C2f: a 1x1 conv split in two (chunk), n bottlenecks each fed the last part, all parts concatenated."""

    def __init__(self, cin, cout, n=1):
        super().__init__()
        self.c = cout // 2
        self.cv1 = _conv_silu(cin, 2 * self.c, 1)
        self.m = nn.ModuleList(nn.Sequential(_conv_silu(self.c, self.c), _conv_silu(self.c, self.c))
                               for _ in range(n))
        self.cv2 = _conv_silu((2 + n) * self.c, cout, 1)

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(y[-1] + m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class YoloV8Style(nn.Module):
    """A YOLOv8-n-shaped detector at 96x96 RGB, narrowed for a microcontroller: C2f backbone, SPPF (three chained
    5x5 max pools), an upsampled (nearest) and concatenated second scale, decoupled box / class heads; the box head's
    distribution focal loss decoding (Softmax over 16 bins, then a fixed 1x1 conv with weights 0..15) in the graph.
    Two outputs: box distances (N, 4, anchors) and class scores (N, classes, anchors) after a sigmoid."""

    def __init__(self, classes=3, w=8, bins=16):
        super().__init__()
        self.bins = bins
        self.b1 = nn.Sequential(_conv_silu(3, w, 3, 2), _conv_silu(w, 2 * w, 3, 2), C2f(2 * w, 2 * w),
                                _conv_silu(2 * w, 4 * w, 3, 2), C2f(4 * w, 4 * w))          # stride 8
        self.b2 = nn.Sequential(_conv_silu(4 * w, 8 * w, 3, 2), C2f(8 * w, 8 * w))          # stride 16
        self.sppf_in = _conv_silu(8 * w, 4 * w, 1)
        self.sppf_out = _conv_silu(16 * w, 8 * w, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.neck = C2f(12 * w, 4 * w)
        self.box = nn.ModuleList(nn.Sequential(_conv_silu(c, 4 * w), nn.Conv2d(4 * w, 4 * bins, 1))
                                 for c in (4 * w, 8 * w))
        self.cls = nn.ModuleList(nn.Sequential(_conv_silu(c, 4 * w), nn.Conv2d(4 * w, classes, 1))
                                 for c in (4 * w, 8 * w))
        self.dfl = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(bins, dtype=torch.float32).view(1, bins, 1, 1)

    def forward(self, x):                                   # x: (N, 3, 96, 96)
        p3 = self.b1(x)
        p4 = self.b2(p3)
        y = [self.sppf_in(p4)]
        for _ in range(3):
            y.append(F.max_pool2d(y[-1], 5, 1, 2))
        p4 = self.sppf_out(torch.cat(y, 1))
        p3 = self.neck(torch.cat([self.up(p4), p3], 1))
        boxes, scores = [], []
        for f, box, cls in zip((p3, p4), self.box, self.cls):
            n = f.shape[0]
            b = box(f).flatten(2)                                        # (N, 4*bins, A)
            b = b.view(n, 4, self.bins, -1).transpose(1, 2).softmax(1)   # (N, bins, 4, A)
            boxes.append(self.dfl(b).view(n, 4, -1))
            scores.append(cls(f).flatten(2).sigmoid())
        return torch.cat(boxes, 2), torch.cat(scores, 2)


class Vae1dAd(nn.Module):
    """A 1-D convolutional VAE over 128 samples of a 3-axis vibration signal (the anomaly score is the
    reconstruction): InstanceNorm1d after each strided conv, the encoder's mean and a Softplus-made standard deviation
    (the deterministic mean path at inference plus a 0-scaled sigma, as exported VAEs keep it), nearest 1-D Upsample
    back up; the reconstruction and the sigma both outputs."""

    def __init__(self, c=16, z=8):
        super().__init__()
        self.e1 = nn.Conv1d(3, c, 5, 2, 2)
        self.n1 = nn.InstanceNorm1d(c, affine=True)
        self.e2 = nn.Conv1d(c, 2 * c, 5, 2, 2)
        self.n2 = nn.InstanceNorm1d(2 * c, affine=True)
        self.mu = nn.Conv1d(2 * c, z, 1)
        self.sd = nn.Conv1d(2 * c, z, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.d1 = nn.Conv1d(z, 2 * c, 3, 1, 1)
        self.d2 = nn.Conv1d(2 * c, c, 3, 1, 1)
        self.out = nn.Conv1d(c, 3, 3, 1, 1)

    def forward(self, x):                                   # x: (N, 3, 128)
        h = F.leaky_relu(self.n1(self.e1(x)), 0.2)
        h = F.leaky_relu(self.n2(self.e2(h)), 0.2)
        mu, sigma = self.mu(h), F.softplus(self.sd(h))
        h = F.relu(self.d1(self.up(mu)))
        h = F.relu(self.d2(self.up(h)))
        return self.out(h), sigma


class TorchEncoderHar(nn.Module):
    """PyTorch's own nn.TransformerEncoder (post-norm, ReLU FFN, batch_first) over 32 patches of a 6-axis IMU window
    (a strided Conv1d patch embedding), a learned class token concatenated in front, a learned position table; the
    class token's output classifies 8 activities."""

    def __init__(self, d=32, heads=4, layers=2, classes=8):
        super().__init__()
        self.patch = nn.Conv1d(6, d, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, 33, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, x):                                   # x: (N, 6, 128)
        h = self.patch(x).transpose(1, 2)                   # (N, 32, d)
        h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], 1) + self.pos
        return self.head(self.enc(h)[:, 0])


class Lstm2Forecaster(nn.Module):
    """A two-layer LSTM over 24 steps of 4 sensor channels predicting the next step of each (stacked nn.LSTM,
    num_layers=2), then a Linear on the last step."""

    def __init__(self, feats=4, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(feats, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, feats)

    def forward(self, x):                                   # x: (N, 24, 4)
        y, _ = self.lstm(x)
        return self.out(y[:, -1])


# name: (kind, constructor, input shape without batch, opset, dynamo?, (license, origin))
MODELS = {
    "torch_bcresnet_kws_op17": ("kws", BcResNetKws, (1, 40, 101), 17, False, OWN),
    "torch_yolov8_style_dynamo_op18": ("detection", YoloV8Style, (3, 96, 96), 18, True, OWN),
    "torch_vae1d_instnorm_ad_op18": ("anomaly", Vae1dAd, (3, 128), 18, False, OWN),
    "torch_nn_encoder_cls_har_op17": ("transformer", TorchEncoderHar, (6, 128), 17, False, OWN),
    "torch_lstm2_forecaster_dynamo_op18": ("sequence", Lstm2Forecaster, (24, 4), 18, True, OWN),
    "timm_test_convnext_64": ("classification", lambda: _timm("test_convnext", num_classes=10), (3, 64, 64), 18,
                              False, TIMM),
    "timm_mixnet_s_64_dynamo": ("classification", lambda: _timm("mixnet_s", num_classes=10), (3, 64, 64), 18, True,
                                TIMM),
    "timm_efficientformerv2_s0_64": ("transformer", lambda: _timm("efficientformerv2_s0", num_classes=10,
                                                                  img_size=64), (3, 64, 64), 18, False, TIMM),
    "timm_test_nfnet_64_dynamo": ("classification", lambda: _timm("test_nfnet", num_classes=10), (3, 64, 64), 18,
                                  True, TIMM),
}


def main(argv=None) -> int:
    return export_torch.seeded_main(__doc__, "export_torch_eighth.py", MODELS, argv)


if __name__ == "__main__":
    sys.exit(main())
