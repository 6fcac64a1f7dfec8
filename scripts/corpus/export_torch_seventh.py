"""The seventh hidden-corpus round's PyTorch models: exporter settings and layers the corpus did not have yet -- a
weight-normalized TCN exported with do_constant_folding=False (the weight-norm arithmetic and BatchNormalization
nodes left in the file), a transformer forecaster whose scaled_dot_product_attention dynamo writes at opset 23 as
ONNX's own Attention operator (its causal variant, SdpaForecaster(causal=True), is refused: a -inf mask), a
CenterNet-style detector whose peaks are kept by a 3x3 max-pool equality (Equal, Cast, Mul), an LSTM autoencoder
that repeats its code over the frames (Expand) for anomaly scores, and an audio-event CNN with SELU, CELU, Softsign,
adaptive max pooling and a LogSoftmax output through dynamo at opset 21, and a HAR CNN with circular (wrap-around)
Conv1d padding through TorchScript at opset 19 (Slice / Concat) and dynamo at opset 22 (Pad, mode wrap). Random
(seeded) weights, BatchNorm statistics from the calibration inputs, as export_torch.py (whose helpers make the
inputs).

    /work/torch-venv/bin/python scripts/corpus/export_torch_seventh.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.parametrizations import weight_norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch import manifest  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_seventh.py")


class WeightNormTcnKws(nn.Module):
    """A TCN keyword spotter over 40x98 log-mel frames as in Bai et al.'s TCN code: weight-normalized causal dilated
    Conv1d pairs with residual 1x1 downsampling, BatchNorm after the first block, global average pool."""

    def __init__(self, c=32, classes=12, dilations=(1, 2, 4)):
        super().__init__()
        self.blocks = nn.ModuleList()
        cin = 40
        for d in dilations:
            self.blocks.append(nn.ModuleDict({
                "c1": weight_norm(nn.Conv1d(cin, c, 3, dilation=d)),
                "c2": weight_norm(nn.Conv1d(c, c, 3, dilation=d)),
                "down": nn.Conv1d(cin, c, 1) if cin != c else nn.Identity()}))
            cin = c
        self.dilations = dilations
        self.bn = nn.BatchNorm1d(c)
        self.head = weight_norm(nn.Linear(c, classes))

    def forward(self, x):                                   # x: (N, 40, 98)
        for d, b in zip(self.dilations, self.blocks):
            h = F.relu(b["c1"](F.pad(x, (2 * d, 0))))
            h = F.relu(b["c2"](F.pad(h, (2 * d, 0))))
            x = F.relu(h + b["down"](x))
            if d == 1:
                x = self.bn(x)
        return self.head(x.mean(-1))


class SdpaForecaster(nn.Module):
    """A transformer over 32 steps of 6 sensor channels: a learned position table, two pre-norm blocks of
    self-attention (F.scaled_dot_product_attention; `causal`: is_causal=True, a decoder's mask) and a GELU MLP, the
    next step's 6 values predicted at every step."""

    def __init__(self, d=32, heads=4, steps=32, feats=6, layers=2, causal=False):
        super().__init__()
        self.causal = causal
        self.embed = nn.Linear(feats, d)
        self.pos = nn.Parameter(torch.randn(1, steps, d) * 0.1)
        self.heads = heads
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "n1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d),
                "n2": nn.LayerNorm(d), "mlp": nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))}))
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, feats)

    def forward(self, x):                                   # x: (N, 32, 6)
        n, t, _ = x.shape
        h = self.embed(x) + self.pos
        for b in self.blocks:
            q, k, v = b["qkv"](b["n1"](h)).chunk(3, -1)
            q, k, v = (z.reshape(n, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
            h = h + b["proj"](a.transpose(1, 2).reshape(n, t, -1))
            h = h + b["mlp"](b["n2"](h))
        return self.out(self.norm(h))


class CenterNetPeaks(nn.Module):
    """A CenterNet-style detector on 64x64 grayscale: a strided conv body, a sigmoid heat map of 3 classes whose
    local maxima are kept by the usual 3x3 max-pool equality (heat * (maxpool(heat) == heat)), and a size/offset
    map of 4 channels; two outputs."""

    def __init__(self, c=24, classes=3):
        super().__init__()
        self.body = nn.Sequential(export_torch._cbr(1, c, 3, 2), export_torch._cbr(c, 2 * c, 3, 2),
                                  export_torch._cbr(2 * c, 2 * c, 3, 1))
        self.heat = nn.Conv2d(2 * c, classes, 1)
        self.box = nn.Conv2d(2 * c, 4, 1)

    def forward(self, x):                                   # x: (N, 1, 64, 64)
        f = self.body(x)
        heat = torch.sigmoid(self.heat(f))
        keep = (F.max_pool2d(heat, 3, 1, 1) == heat).float()
        return heat * keep, self.box(f)


class LstmAutoencoderAd(nn.Module):
    """An LSTM autoencoder over 32 frames of 8 sensor features (the LSTM-AE of predictive-maintenance tutorials):
    an encoder LSTM's last state repeated over the frames (RepeatVector: unsqueeze + expand), a decoder LSTM, a
    Linear back to the features at every frame; the reconstruction out."""

    def __init__(self, feats=8, hidden=24, code=12, steps=32):
        super().__init__()
        self.enc = nn.LSTM(feats, hidden, batch_first=True)
        self.code = nn.Linear(hidden, code)
        self.dec = nn.LSTM(code, hidden, batch_first=True)
        self.out = nn.Linear(hidden, feats)
        self.steps = steps

    def forward(self, x):                                   # x: (N, 32, 8)
        _, (h, _) = self.enc(x)
        z = torch.tanh(self.code(h[-1]))
        y, _ = self.dec(z.unsqueeze(1).expand(-1, self.steps, -1))
        return self.out(y)


class SeluAudioEvents(nn.Module):
    """An audio-event CNN over 1x64x48 log-mel patches with the self-normalizing activations: SELU, CELU, a
    Softsign gate, AdaptiveMaxPool2d to 1x1 and LogSoftmax over 10 event classes."""

    def __init__(self, c=24, classes=10):
        super().__init__()
        self.c1 = nn.Conv2d(1, c, 3, 2, 1)
        self.c2 = nn.Conv2d(c, 2 * c, 3, 2, 1)
        self.c3 = nn.Conv2d(2 * c, 2 * c, 3, 1, 1)
        self.gate = nn.Conv2d(2 * c, 2 * c, 1)
        self.head = nn.Linear(2 * c, classes)

    def forward(self, x):                                   # x: (N, 1, 64, 48)
        h = F.selu(self.c1(x))
        h = F.celu(self.c2(h), alpha=0.5)
        h = self.c3(h) * (1 + F.softsign(self.gate(h)))
        h = F.adaptive_max_pool2d(h, 1).flatten(1)
        return F.log_softmax(self.head(h), -1)


class CircularPadHar(nn.Module):
    """A HAR CNN over 9 sensor channels x 128 samples of a periodic gait cycle: Conv1d with padding_mode="circular"
    (the window wraps around), a dilated circular Conv1d, Hardtanh, global max pool."""

    def __init__(self, c=32, classes=6):
        super().__init__()
        self.c1 = nn.Conv1d(9, c, 5, padding=2, padding_mode="circular")
        self.c2 = nn.Conv1d(c, c, 3, padding=2, dilation=2, padding_mode="circular")
        self.bn = nn.BatchNorm1d(c)
        self.head = nn.Linear(c, classes)

    def forward(self, x):                                   # x: (N, 9, 128)
        h = F.hardtanh(self.c1(x), -2.0, 2.0)
        h = F.relu(self.bn(self.c2(h)))
        return self.head(h.amax(-1))


# name: (kind, constructor, input shape without batch, opset, dynamo?, export keywords)
MODELS = {
    "torch_weightnorm_tcn_kws_nofold": ("kws", WeightNormTcnKws, (40, 98), 13, False,
                                        {"do_constant_folding": False}),
    "torch_sdpa_forecaster_dynamo_op23": ("transformer", SdpaForecaster, (32, 6), 23, True, {}),
    "torch_centernet_peaks_op17": ("detection", CenterNetPeaks, (1, 64, 64), 17, False, {}),
    "torch_lstm_autoencoder_ad_op15": ("anomaly", LstmAutoencoderAd, (32, 8), 15, False, {}),
    "torch_circular_pad_har_op19": ("har", CircularPadHar, (9, 128), 19, False, {}),
    "torch_circular_pad_har_dynamo_op22": ("har", CircularPadHar, (9, 128), 22, True, {}),
    "torch_selu_audio_events_dynamo_op21": ("audio-events", SeluAudioEvents, (1, 64, 48), 21, True, {}),
}


def export(name: str) -> None:
    kind, make, shape, opset, dynamo, kw = MODELS[name]
    export_torch.export_seeded(name, "export_torch_seventh.py", kind, make, shape, opset, OWN, dynamo=dynamo,
                               input_names=["x"], export_kw=kw)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
