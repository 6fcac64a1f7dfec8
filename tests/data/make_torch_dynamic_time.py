"""Writes tests/data/torch_dynamic_time.onnx: a small 1-D convolutional audio classifier (Conv1d, ReLU, a strided
Conv1d, the mean over time, Linear) exported with torch.onnx.export's TorchScript exporter (opset 13) with a dynamic
batch AND a dynamic time axis, `dynamic_axes={"x": {0: "batch", 2: "T"}}`, as audio and 1-D models usually are; and
torch_dynamic_time_data.npz (32 calibration inputs of 50 frames, 8 test inputs and PyTorch's outputs on them). edgec
pins T from the calibration set (edgec/frontend/input_shapes.py). The tests never run torch; run this again only to
refresh the files (tests/test_input_shapes.py):

    /work/torch-venv/bin/python tests/data/make_torch_dynamic_time.py
"""
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
FRAMES = 50


class Audio1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv1d(4, 8, 3, padding=1)
        self.b = nn.Conv1d(8, 8, 3, stride=2)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        y = torch.relu(self.b(torch.relu(self.a(x))))
        return self.head(y.mean(dim=2))


def main():
    torch.manual_seed(0)
    net = Audio1d().eval()
    path = HERE / "torch_dynamic_time.onnx"
    torch.onnx.export(net, (torch.rand(1, 4, FRAMES),), str(path), input_names=["x"], output_names=["y"],
                      opset_version=13, dynamo=False, dynamic_axes={"x": {0: "batch", 2: "T"}, "y": {0: "batch"}})
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    rng = np.random.default_rng(0)
    calib = rng.uniform(-1, 1, size=(32, 4, FRAMES)).astype(np.float32)
    test = rng.uniform(-1, 1, size=(8, 4, FRAMES)).astype(np.float32)
    with torch.no_grad():
        y = net(torch.from_numpy(test)).numpy()
    np.savez(HERE / "torch_dynamic_time_data.npz", calib=calib, x=test, y_torch=y)


if __name__ == "__main__":
    main()
