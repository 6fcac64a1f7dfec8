"""The corpus's PyTorch models with several inputs, through torch.onnx as a user exports them: a keyword model that
takes its MFCC features and a context vector (a two-branch network: a conv stack on the features, a Linear on the
context, concatenated before the classifier), once with TorchScript and once with dynamo, and a siamese anomaly
scorer (one shared 1-D conv encoder applied to a window and to a reference window, the absolute difference of the
two embeddings scored by a Linear). Random (seeded) weights, as export_torch.py; no BatchNorm.

Calibration set: 8 samples per input, drawn by `evaluation.several_normal` (each input its own seeded generator),
stored as `x_<input name>` (edgec's data files for several inputs); the evaluation set continues those draws.

    /work/torch-venv/bin/python scripts/corpus/export_torch_multi.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_torch  # noqa: E402
from export_torch import manifest  # noqa: E402
from evaluation import several_normal  # noqa: E402

SCRIPT = "scripts/corpus/export_torch_multi.py"
OWN = ("Apache-2.0 (this repository)", SCRIPT)


class KwsWithContext(nn.Module):
    """MFCC (1, 49, 10) through three conv layers and a global average pool, a context vector (16) through a
    Linear, concatenated, two Linear layers to 12 keywords."""

    def __init__(self, classes=12):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 16, (5, 3), padding=(2, 1)), nn.ReLU(),
                                      nn.Conv2d(16, 24, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(24, 32, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.context = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(48, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, mfcc, context):
        return self.head(torch.cat([self.features(mfcc), self.context(context)], dim=1))


class SiameseAnomaly(nn.Module):
    """A shared encoder (Conv1d 6 -> 16 -> 32, stride 2, ReLU, global average pool) on a (6, 64) sensor window
    and on a (6, 64) reference window; the anomaly score a Linear on |e(window) - e(reference)|."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(6, 16, 5, stride=2, padding=2), nn.ReLU(),
                                     nn.Conv1d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                                     nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.score = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, window, reference):
        return self.score(torch.abs(self.encoder(window) - self.encoder(reference)))


# name: (kind, constructor, {input name: shape without batch}, opset, dynamo?)
MODELS = {
    "torch_kws_context_two_inputs_op17": ("kws", KwsWithContext, {"mfcc": (1, 49, 10), "context": (16,)}, 17, False),
    "torch_kws_context_two_inputs_dynamo": ("kws", KwsWithContext, {"mfcc": (1, 49, 10), "context": (16,)}, None,
                                            True),
    "torch_siamese_anomaly_op17": ("anomaly", SiameseAnomaly, {"window": (6, 64), "reference": (6, 64)}, 17, False),
}


def export(name: str) -> None:
    kind, make, shapes, opset, dynamo = MODELS[name]
    torch.manual_seed(sum(map(ord, name)))
    model = make().eval()
    calib = {n: several_normal(name, k, shape, 8) for k, (n, shape) in enumerate(shapes.items())}
    out = manifest.corpus_file(name)
    example = tuple(torch.from_numpy(c[:1]) for c in calib.values())
    args = {"external_data": False} if dynamo else {"opset_version": opset}
    torch.onnx.export(model, example, str(out), dynamo=dynamo, input_names=list(shapes), **args)
    np.savez_compressed(out.parent / "calib.npz", **{f"x_{n}": c for n, c in calib.items()})
    how = f"torch.onnx ({'dynamo' if dynamo else 'torchscript'}{f', opset {opset}' if opset else ''}), " \
          f"torch {torch.__version__}; two inputs ({', '.join(shapes)})"
    manifest.record_export(name, kind, out, SCRIPT, export_torch.TORCH_PYTHON, OWN[0],
                           {"architecture": OWN[1], "exporter": how, "weights": "random (seeded); no BatchNorm"})


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
