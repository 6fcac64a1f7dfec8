"""Writes tests/data/torch_hardshrink.onnx, torch_softshrink.onnx, torch_logic.onnx and torch_maskmul.onnx: a small
conv network with F.hardshrink (Greater, Less, Cast to bool, Or, Where), F.softshrink (two Greater/Less + Where with
Sub/Add), a mask built from comparisons with every boolean operator ((a > 0.5) | (a < -0.2)) ^ (b > 0) & ~(b < -0.8)
(Or, Xor, And, Not), and a mask cast to float and multiplied in (Or, Cast to FLOAT, Mul), exported with
torch.onnx.export's TorchScript exporter (opset 13), and torch_logic_data.npz (32 calibration inputs, 8 test inputs
and PyTorch's outputs on them per model). The tests never run torch; run this again only to refresh the files
(tests/kernels/test_logic_onnx.py):

    /work/torch-venv/bin/python tests/data/make_torch_logic.py
"""
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent


class Shrunk(nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(3, 8, 3, padding=1)
        self.c = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        a = self.a(x)
        if self.kind == "hardshrink":
            y = F.hardshrink(a, 0.3)
        elif self.kind == "softshrink":
            y = F.softshrink(a, 0.3)
        elif self.kind == "maskmul":            # a mask cast to float, multiplied in: Or, Cast to FLOAT, Mul
            y = a * ((a > 0.3) | (a < -0.3)).float()
        else:
            b = self.b(x)
            m = (((a > 0.5) | (a < -0.2)) ^ (b > 0)) & ~(b < -0.8)
            y = torch.where(m, a, torch.zeros_like(a))
        return self.head(torch.relu(self.c(y)).mean(dim=(2, 3)))


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    calib = rng.uniform(-1, 1, size=(32, 3, 8, 8)).astype(np.float32)
    test = rng.uniform(-1, 1, size=(8, 3, 8, 8)).astype(np.float32)
    data = {"calib": calib, "x": test}
    for kind in ("hardshrink", "softshrink", "logic", "maskmul"):
        net = Shrunk(kind).eval()
        path = HERE / f"torch_{kind}.onnx"
        torch.onnx.export(net, (torch.from_numpy(test[:1]),), str(path), input_names=["x"], output_names=["y"],
                          opset_version=13, dynamo=False)
        print(f"wrote {path} ({path.stat().st_size} bytes)")
        with torch.no_grad():
            data[f"y_{kind}"] = net(torch.from_numpy(test)).numpy()
    np.savez(HERE / "torch_logic_data.npz", **data)


if __name__ == "__main__":
    main()
