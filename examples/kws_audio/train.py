"""Train the KWS example's classifier on the micro_speech preprocessor's features and export it to ONNX.

    /work/torch-venv/bin/python examples/kws_audio/train.py     # data/features.npz -> model.onnx

Input [1, 1, 49, 40]: the 49 windows' 40 int8 features as floats (the preprocessor's output scale is 1: the
feature values themselves); output: 11 class scores (make_dataset.CLASSES). A small CNN: 5x5 conv stride 2,
depthwise-separable 3x3 convs, global average pool, fully connected (about 6 k parameters). The input scaling
(x / 64) is folded into the first convolution before the export, so the ONNX model takes the features as they
are. Seeded; on CPU in about a minute.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SCALE = 64.0


class KWS(nn.Module):
    def __init__(self, classes: int = 11):
        super().__init__()
        def sep(c_in, c_out, stride):
            return [nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in), nn.BatchNorm2d(c_in), nn.ReLU(),
                    nn.Conv2d(c_in, c_out, 1), nn.BatchNorm2d(c_out), nn.ReLU()]
        self.net = nn.Sequential(nn.Conv2d(1, 24, 5, 2, 2), nn.BatchNorm2d(24), nn.ReLU(),
                                 *sep(24, 32, 1), *sep(32, 48, 2), *sep(48, 48, 1),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(48, classes))
        self.scale = 1.0 / SCALE

    def forward(self, x):
        return self.net(x * self.scale)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)       # a small model: one thread is faster than two contending ones
    f = np.load(HERE / "data" / "features.npz")
    xtr = torch.tensor(f["x_train"], dtype=torch.float32)[:, None]
    ytr = torch.tensor(f["y_train"])
    xte = torch.tensor(f["x_test"], dtype=torch.float32)[:, None]
    yte = torch.tensor(f["y_test"])
    model = KWS()
    epochs = 20
    opt = torch.optim.AdamW(model.parameters(), 3e-3, weight_decay=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 3e-3, total_steps=epochs * ((len(xtr) + 63) // 64))
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), 64):
            idx = perm[i:i + 64]
            xb = xtr[idx]
            shift = int(torch.randint(-3, 4, ()))              # time shift by a few windows
            xb = torch.roll(xb, shift, dims=2)
            loss = nn.functional.cross_entropy(model(xb), ytr[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        if epoch % 2 == 1 or epoch == epochs - 1:
            model.eval()
            with torch.no_grad():
                acc = (model(xte).argmax(1) == yte).float().mean().item()
            print(f"epoch {epoch + 1}: loss {loss.item():.3f}, test accuracy {100 * acc:.2f} %", flush=True)
    model.eval()
    with torch.no_grad():      # fold x / 64 into the first convolution
        model.net[0].weight /= SCALE
        model.scale = 1.0
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    print(f"float test accuracy (unseen voices): {100 * acc:.2f} %")
    torch.onnx.export(model, torch.zeros(1, 1, 49, 40), str(HERE / "model.onnx"), input_names=["features"],
                      output_names=["scores"], opset_version=13, dynamo=False)


if __name__ == "__main__":
    main()
