"""The fifth hidden-corpus round's PyTorch models: layers and exporter settings the corpus did not have yet --
timm's own small test architectures (EvoNorm, a ByobNet, a ViT), RMSNorm and a SwiGLU MLP with
scaled_dot_product_attention, PixelShuffle (DepthToSpace) with Mish and Softplus, an L2-normalised keyword
embedding with a global max pool, grouped Conv1d with tanh-GELU, a GRUCell stepped in Python, and torch.onnx
opsets 16, 19 and 20. Random (seeded) weights, BatchNorm statistics from the calibration inputs, as
export_torch.py (whose helpers make the inputs).

    /work/torch-venv/bin/python scripts/corpus/export_torch_fifth.py [--only NAME ...]
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

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_fifth.py")


class RmsNormTransformerKws(nn.Module):
    """A keyword transformer over 49x10 MFCC frames in the style of current small language models: RMSNorm
    (pre-norm), attention through F.scaled_dot_product_attention, a SwiGLU MLP, a learned position table, the
    mean over frames to the classes."""

    def __init__(self, d=48, heads=4, layers=2, classes=12):
        super().__init__()
        self.embed = nn.Linear(10, d)
        self.pos = nn.Parameter(torch.randn(1, 49, d) * 0.1)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "n1": nn.RMSNorm(d), "qkv": nn.Linear(d, 3 * d, bias=False), "o": nn.Linear(d, d, bias=False),
                "n2": nn.RMSNorm(d), "gate": nn.Linear(d, 2 * d, bias=False), "up": nn.Linear(d, 2 * d, bias=False),
                "down": nn.Linear(2 * d, d, bias=False)}))
        self.norm = nn.RMSNorm(d)
        self.head = nn.Linear(d, classes)
        self.heads = heads

    def forward(self, x):                                   # x: (N, 49, 10)
        t = self.embed(x) + self.pos
        n, s, d = t.shape
        for b in self.blocks:
            q, k, v = b["qkv"](b["n1"](t)).reshape(n, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, s, d)
            t = t + b["o"](a)
            h = b["n2"](t)
            t = t + b["down"](F.silu(b["gate"](h)) * b["up"](h))
        return self.head(self.norm(t).mean(1))


class PixelShuffleAd(nn.Module):
    """An image anomaly autoencoder (3x48x48): strided convs with Mish, a Softplus bottleneck, PixelShuffle
    (sub-pixel convolution, ONNX DepthToSpace) to come back up; the reconstruction is the output."""

    def __init__(self, c=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.BatchNorm2d(c), nn.Mish(),
                                 nn.Conv2d(c, 2 * c, 3, 2, 1), nn.BatchNorm2d(2 * c), nn.Mish())
        self.mid = nn.Sequential(nn.Conv2d(2 * c, 8, 1), nn.Softplus())
        self.dec = nn.Sequential(nn.Conv2d(8, 4 * c, 3, 1, 1), nn.PixelShuffle(2), nn.Mish(),
                                 nn.Conv2d(c, 3 * 4, 3, 1, 1), nn.PixelShuffle(2))

    def forward(self, x):
        return self.dec(self.mid(self.enc(x)))


class L2EmbeddingKws(nn.Module):
    """A few-shot keyword embedding (as in query-by-example KWS): a DS-CNN body over 49x10 MFCC, a global max
    pool, a projection L2-normalised with F.normalize (ReduceL2, Clip, Expand, Div)."""

    def __init__(self, c=32, dim=24):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, c, (5, 3), 2, (2, 1)), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.Conv2d(c, c, 3, 1, 1, groups=c), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.Conv2d(c, c, 1), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.AdaptiveMaxPool2d(1), nn.Flatten())
        self.proj = nn.Linear(c, dim)

    def forward(self, x):
        return F.normalize(self.proj(self.body(x)), dim=-1)


class GroupedConvGeluHar(nn.Module):
    """Activity recognition over a 9-axis, 128-sample IMU window: grouped Conv1d (groups 3, then 4) with
    tanh-approximate GELU, a channel shuffle, average pool over time."""

    def __init__(self, classes=6):
        super().__init__()
        self.c1 = nn.Conv1d(9, 24, 5, 2, 2, groups=3)
        self.b1 = nn.BatchNorm1d(24)
        self.c2 = nn.Conv1d(24, 48, 3, 2, 1, groups=4)
        self.b2 = nn.BatchNorm1d(48)
        self.c3 = nn.Conv1d(48, 48, 3, 1, 1, groups=48)
        self.head = nn.Linear(48, classes)

    def forward(self, x):                                   # x: (N, 9, 128)
        h = F.gelu(self.b1(self.c1(x)), approximate="tanh")
        h = h.reshape(h.shape[0], 3, 8, -1).transpose(1, 2).reshape(h.shape[0], 24, -1)
        h = F.gelu(self.b2(self.c2(h)), approximate="tanh")
        h = F.gelu(self.c3(h) + h, approximate="tanh")
        return self.head(h.mean(-1))


class GruCellForecaster(nn.Module):
    """A sensor forecaster as people write one by hand: an nn.GRUCell stepped over 24 time steps in Python (the
    exporter unrolls it), the last state to the next 4 readings."""

    def __init__(self, features=4, h=32, horizon=4):
        super().__init__()
        self.cell = nn.GRUCell(features, h)
        self.out = nn.Linear(h, horizon * features)

    def forward(self, x):                                   # x: (N, 24, features)
        h = torch.zeros(x.shape[0], self.cell.hidden_size)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return self.out(h)


# name: (kind, constructor, input shape without batch, opset, dynamo?, (license, origin))
MODELS = {
    "timm_test_efficientnet_evos_64": ("classification", lambda: _timm("test_efficientnet_evos", num_classes=10),
                                       (3, 64, 64), 16, False, TIMM),
    "timm_test_byobnet_64": ("classification", lambda: _timm("test_byobnet", num_classes=10), (3, 64, 64), 19, False, TIMM),
    "timm_test_vit_64_dynamo_op20": ("transformer", lambda: _timm("test_vit", num_classes=10, img_size=64),
                                     (3, 64, 64), 20, True, TIMM),
    "torch_rmsnorm_swiglu_kws_dynamo": ("transformer", RmsNormTransformerKws, (49, 10), 18, True, OWN),
    "torch_pixelshuffle_mish_ad_op16": ("anomaly", PixelShuffleAd, (3, 48, 48), 16, False, OWN),
    "torch_l2_embedding_kws_op19": ("kws", L2EmbeddingKws, (1, 49, 10), 19, False, OWN),
    "torch_grouped_gelu_har_op20": ("har", GroupedConvGeluHar, (9, 128), 20, False, OWN),
    "torch_grucell_forecaster_op16": ("sequence", GruCellForecaster, (24, 4), 16, False, OWN),
}


def main(argv=None) -> int:
    return export_torch.seeded_main(__doc__, "export_torch_fifth.py", MODELS, argv)


if __name__ == "__main__":
    sys.exit(main())
