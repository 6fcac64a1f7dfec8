"""Writes tests/data/torch_where.onnx and torch_where_dynamo.onnx: a small PyTorch network with torch.where on a
comparison of activations (Greater -> Where, Less against a constant, a constant value), exported with
torch.onnx.export's TorchScript exporter (opset 13) and its dynamo one (opset 18), and torch_where_data.npz (32
calibration inputs, 8 test inputs and PyTorch's outputs on them). The tests never run torch; run this again only to
refresh the files (tests/kernels/test_where_onnx.py):

    /work/torch-venv/bin/python tests/data/make_torch_where.py
"""
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        a, b = self.a(x), self.b(x)
        y = torch.where(a > b, a, 0.5 * torch.tanh(b))         # Greater of two activations, two value grids
        y = torch.where(y < -0.2, torch.zeros_like(y), y)      # Less against a constant, a constant value
        return self.head(y.mean(dim=(2, 3)))


def main():
    torch.manual_seed(0)
    net = Masked().eval()
    x = torch.rand(1, 3, 8, 8) * 2 - 1
    for name, dynamo, opset in (("torch_where", False, 13), ("torch_where_dynamo", True, 18)):
        path = HERE / f"{name}.onnx"
        torch.onnx.export(net, (x,), str(path), input_names=["x"], output_names=["y"], opset_version=opset,
                          dynamo=dynamo, **({"external_data": False} if dynamo else {}))
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    rng = np.random.default_rng(0)
    calib = rng.uniform(-1, 1, size=(32, 3, 8, 8)).astype(np.float32)
    test = rng.uniform(-1, 1, size=(8, 3, 8, 8)).astype(np.float32)
    with torch.no_grad():
        y = net(torch.from_numpy(test)).numpy()
    np.savez(HERE / "torch_where_data.npz", calib=calib, x=test, y_torch=y)


if __name__ == "__main__":
    main()
