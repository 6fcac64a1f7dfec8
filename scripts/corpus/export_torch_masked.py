"""Masked attention through the real exporters (branch h46-mask): a constant causal mask before each Softmax, which
edgec folds into a masked softmax (edgec/ops/softmax/masked.py). The seventh round's forecaster with
`F.scaled_dot_product_attention(is_causal=True)` through dynamo at opset 23 (ONNX's `Attention` with is_causal=1)
and through TorchScript at opset 17 (Where(Trilu ...) folded to a -inf constant, then Add); an
`nn.TransformerEncoderLayer` over sensor frames with nn.Transformer's square subsequent mask (TorchScript opset 17:
the float mask's Where / Add); an `nn.MultiheadAttention` with a boolean causal attn_mask through dynamo at opset 18
(a (1, 1, T, T) -inf constant added to the scores). Random (seeded) weights, as export_torch.py (whose helpers make
the inputs).

    /work/torch-venv/bin/python scripts/corpus/export_torch_masked.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch_seventh import SdpaForecaster  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_masked.py")


def causal_forecaster():
    return SdpaForecaster(causal=True)


class CausalEncoderHar(nn.Module):
    """A causal transformer encoder over 24 frames of 9 sensor channels (a streaming activity recognizer): a Linear
    embedding, one post-norm nn.TransformerEncoderLayer (4 heads, ReLU FFN) under
    nn.Transformer.generate_square_subsequent_mask, the last frame's features to 6 classes."""

    def __init__(self, d=32, steps=24, feats=9, classes=6):
        super().__init__()
        self.embed = nn.Linear(feats, d)
        self.layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(steps))
        self.head = nn.Linear(d, classes)

    def forward(self, x):                                   # x: (N, 24, 9)
        h = self.layer(self.embed(x), src_mask=self.mask, is_causal=True)
        return self.head(h[:, -1])


class CausalMhaKws(nn.Module):
    """A keyword spotter over 32 frames of 20 MFCCs: a Linear embedding, nn.MultiheadAttention (4 heads) with a
    boolean causal attn_mask and a residual, LayerNorm, the mean over frames to 12 classes."""

    def __init__(self, d=32, steps=32, feats=20, classes=12):
        super().__init__()
        self.embed = nn.Linear(feats, d)
        self.mha = nn.MultiheadAttention(d, 4, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.ones(steps, steps, dtype=torch.bool), 1))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):                                   # x: (N, 32, 20)
        h = self.embed(x)
        a, _ = self.mha(h, h, h, attn_mask=self.mask, need_weights=False)
        return self.head(self.norm(h + a).mean(1))


# name: (kind, constructor, input shape without batch, opset, dynamo?)
MODELS = {
    "torch_sdpa_causal_forecaster_dynamo_op23": ("transformer", causal_forecaster, (32, 6), 23, True),
    "torch_sdpa_causal_forecaster_op17": ("transformer", causal_forecaster, (32, 6), 17, False),
    "torch_causal_encoder_har_op17": ("transformer", CausalEncoderHar, (24, 9), 17, False),
    "torch_causal_mha_kws_dynamo_op18": ("transformer", CausalMhaKws, (32, 20), 18, True),
}


def main(argv=None) -> int:
    return export_torch.seeded_main(__doc__, "export_torch_masked.py", MODELS, argv, licence=OWN)


if __name__ == "__main__":
    sys.exit(main())
