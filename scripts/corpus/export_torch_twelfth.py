"""The twelfth hidden-corpus round's PyTorch models: architectures the corpus did not have yet -- an MLP-Mixer
keyword spotter (Tolstikhin et al. 2021: patches of the MFCC map embedded by a strided Conv2d, then blocks of a
token-mixing MLP over the transposed patches and a channel-mixing MLP, each after a LayerNorm, GELU, residual),
through the dynamo exporter at opset 21; and a 1-D convolutional autoencoder for vibration anomaly detection with
linear upsampling (nn.Upsample(mode="linear"): a Resize of a 3-D tensor) and a Tanh output, TorchScript at opset 20;
a CTC-style speech recognizer (Conv1d over 40 log-mel bands, frames stacked two by two by a Reshape, a bidirectional
GRU, a per-frame LogSoftmax over 29 characters), dynamo at opset 18; and a FOMO-style detector (Edge Impulse's
"Faster Objects, More Objects": torchvision's MobileNet v2 x0.35 cut at stride 8, a 1x1 conv head, a Softmax over the
class channels of each 12x12 cell), TorchScript at opset 19.
Random (seeded) weights, BatchNorm statistics from the calibration inputs, as export_torch.py.

    /work/torch-venv/bin/python scripts/corpus/export_torch_twelfth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import torchvision
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_twelfth.py")


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim, hidden_t=32, hidden_c=64):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.token = nn.Sequential(nn.Linear(tokens, hidden_t), nn.GELU(), nn.Linear(hidden_t, tokens))
        self.channel = nn.Sequential(nn.Linear(dim, hidden_c), nn.GELU(), nn.Linear(hidden_c, dim))

    def forward(self, x):                                   # x: (N, tokens, dim)
        x = x + self.token(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel(self.norm2(x))


class MixerKws(nn.Module):
    """(N, 1, 49, 10) MFCC -> 7x2 patches of 7x5 embedded to 32 -> 3 Mixer blocks -> LayerNorm, mean over tokens,
    Linear to 12 keywords."""

    def __init__(self, dim=32, classes=12):
        super().__init__()
        self.embed = nn.Conv2d(1, dim, (7, 5), stride=(7, 5))
        self.blocks = nn.Sequential(*[MixerBlock(14, dim) for _ in range(3)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)        # (N, 14, dim)
        return self.head(self.norm(self.blocks(x)).mean(1))


class UpsampleAe1d(nn.Module):
    """(N, 3, 256) vibration window -> strided Conv1d + BatchNorm + ReLU down to 64 steps -> 2x linear Upsample +
    Conv1d back up -> Tanh reconstruction."""

    def __init__(self, c=3):
        super().__init__()
        def down(i, o):
            return nn.Sequential(nn.Conv1d(i, o, 5, 2, 2), nn.BatchNorm1d(o), nn.ReLU())
        def up(i, o):
            return nn.Sequential(nn.Upsample(scale_factor=2, mode="linear", align_corners=False),
                                 nn.Conv1d(i, o, 5, 1, 2), nn.BatchNorm1d(o), nn.ReLU())
        self.net = nn.Sequential(down(c, 16), down(16, 24), up(24, 16), up(16, 16), nn.Conv1d(16, c, 3, 1, 1),
                                 nn.Tanh())

    def forward(self, x):
        return self.net(x)


class CtcGru(nn.Module):
    """(N, 40, 100) log-mel frames -> Conv1d + BatchNorm + ReLU to 64 -> two frames stacked (50 steps of 128) ->
    bidirectional GRU(48) -> Linear to 29 characters -> LogSoftmax per step (the input of a CTC decoder)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.BatchNorm1d(64), nn.ReLU())
        self.gru = nn.GRU(128, 48, batch_first=True, bidirectional=True)
        self.out = nn.Linear(96, 29)

    def forward(self, x):
        h = self.conv(x).transpose(1, 2)
        h, _ = self.gru(h.reshape(h.shape[0], 50, 128))
        return torch.log_softmax(self.out(h), -1)


class Fomo(nn.Module):
    """(N, 3, 96, 96) -> torchvision MobileNet v2 x0.35 features[:7] (stride 8, 16 channels) -> 1x1 conv 32 + ReLU
    -> 1x1 conv to 3 classes (background + 2) -> Softmax over the classes of each of the 12x12 cells."""

    def __init__(self):
        super().__init__()
        self.body = torchvision.models.mobilenet_v2(width_mult=0.35).features[:7]
        self.head = nn.Sequential(nn.Conv2d(16, 32, 1), nn.ReLU(), nn.Conv2d(32, 3, 1))

    def forward(self, x):
        return torch.softmax(self.head(self.body(x)), dim=1)


# name: (kind, constructor, input shape without batch, opset, dynamo?, (license, origin))
MODELS = {
    "torch_mixer_kws_dynamo_op21": ("transformer", MixerKws, (1, 49, 10), 21, True, OWN),
    "torch_upsample_ae1d_op20": ("anomaly", UpsampleAe1d, (3, 256), 20, False, OWN),
    "torch_ctc_bigru_dynamo_op18": ("sequence", CtcGru, (40, 100), 18, True, OWN),
    "torch_fomo_mnv2_op19": ("detection", Fomo, (3, 96, 96), 19, False,
                             ("Apache-2.0 (this repository; torchvision's MobileNet v2, BSD-3-Clause)", OWN[1])),
}


def main(argv=None) -> int:
    return export_torch.seeded_main(__doc__, "export_torch_twelfth.py", MODELS, argv)


if __name__ == "__main__":
    sys.exit(main())
