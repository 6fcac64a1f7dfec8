"""The ninth hidden-corpus round's PyTorch models: architectures the corpus did not have yet -- FastGRNN (Kusupati et
al., NeurIPS 2018: the gated recurrent cell of Microsoft's EdgeML for microcontrollers, one shared W and U for the
gate and the candidate, the residual weights zeta and nu as learned sigmoid scalars) stepped in Python over an IMU
window, and a tiny Conv-TasNet (Luo and Mesgarani 2019: a learned 1-D conv encoder, a TCN separator of dilated
depthwise convolutions with global layer norm (GroupNorm(1)) and PReLU, a sigmoid mask, a ConvTranspose1d decoder)
for audio denoising. Random (seeded) weights, as export_torch.py.

    /work/torch-venv/bin/python scripts/corpus/export_torch_ninth.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch import manifest  # noqa: E402

OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch_ninth.py")


class FastGrnnHar(nn.Module):
    """FastGRNN over 48 steps of a 6-axis IMU window, hidden 32, a Linear on the last state (6 activities):
    z = sigmoid(Wx + Uh + b_z), c = tanh(Wx + Uh + b_h), h = (sigmoid(zeta) (1 - z) + sigmoid(nu)) c + z h."""

    def __init__(self, feats=6, hidden=32, classes=6):
        super().__init__()
        self.w = nn.Linear(feats, hidden, bias=False)
        self.u = nn.Linear(hidden, hidden, bias=False)
        self.b_z = nn.Parameter(torch.randn(hidden) * 0.1)
        self.b_h = nn.Parameter(torch.randn(hidden) * 0.1)
        self.zeta = nn.Parameter(torch.tensor(1.0))
        self.nu = nn.Parameter(torch.tensor(-4.0))
        self.hidden = hidden
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):                                   # x: (N, 48, 6)
        h = x.new_zeros(x.shape[0], self.hidden)
        for t in range(x.shape[1]):
            pre = self.w(x[:, t]) + self.u(h)
            z = torch.sigmoid(pre + self.b_z)
            c = torch.tanh(pre + self.b_h)
            h = (torch.sigmoid(self.zeta) * (1 - z) + torch.sigmoid(self.nu)) * c + z * h
        return self.out(h)


class TcnBlock(nn.Module):
    def __init__(self, c, hidden, dilation):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(c, hidden, 1), nn.PReLU(), nn.GroupNorm(1, hidden),
                                 nn.Conv1d(hidden, hidden, 3, padding=dilation, dilation=dilation, groups=hidden),
                                 nn.PReLU(), nn.GroupNorm(1, hidden), nn.Conv1d(hidden, c, 1))

    def forward(self, x):
        return x + self.net(x)


class TinyConvTasNet(nn.Module):
    """A 1-D conv encoder (16-sample kernels, stride 8) to 32 filters, a bottleneck, 4 TCN blocks (dilations
    1, 2, 4, 8), a sigmoid mask on the encoded mixture, a ConvTranspose1d decoder back to the 1,024 samples."""

    def __init__(self, n=32, b=16, hidden=32):
        super().__init__()
        self.enc = nn.Conv1d(1, n, 16, stride=8, padding=4, bias=False)
        self.norm = nn.GroupNorm(1, n)
        self.bottleneck = nn.Conv1d(n, b, 1)
        self.tcn = nn.Sequential(*[TcnBlock(b, hidden, d) for d in (1, 2, 4, 8)])
        self.mask = nn.Conv1d(b, n, 1)
        self.dec = nn.ConvTranspose1d(n, 1, 16, stride=8, padding=4, bias=False)

    def forward(self, x):                                   # x: (N, 1, 1024)
        w = torch.relu(self.enc(x))
        m = torch.sigmoid(self.mask(self.tcn(self.bottleneck(self.norm(w)))))
        return self.dec(w * m)


# name: (kind, constructor, input shape without batch, opset, dynamo?, (license, origin))
MODELS = {
    "torch_fastgrnn_har_op17": ("har", FastGrnnHar, (48, 6), 17, False, OWN),
    "torch_conv_tasnet_tiny_op17": ("sequence", TinyConvTasNet, (1, 1024), 17, False, OWN),
}


def export(name: str) -> None:
    kind, make, shape, opset, dynamo, lic = MODELS[name]
    export_torch.export_seeded(name, "export_torch_ninth.py", kind, make, shape, opset, lic, dynamo=dynamo,
                               input_names=["x"])


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
