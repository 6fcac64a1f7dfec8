"""Writes tests/data/torch_script_loop.onnx and torch_script_loop_data.npz: a recurrence written as a Python loop
in a torch.jit.script module (h = tanh(A x_t + B h) over the frames, then a linear head), whose initial state h0 is
a second model input, exported by torch.onnx's TorchScript exporter (opset 13) as an ONNX Loop: its body reads the
Constants before it (outer scope), its carried state starts as the graph input h0. The npz holds 32 calibration
inputs, 8 test inputs (x_x, x_h0 and test_x, test_h0) and PyTorch's outputs on the test inputs. The tests never run
torch; run this again only to refresh the files (tests/test_fold.py):

    /work/torch-venv/bin/python tests/data/make_torch_script_loop.py
"""
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent


class Recurrence(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(5, 8)
        self.b = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x, h):
        for t in range(x.shape[1]):
            h = torch.tanh(self.a(x[:, t]) + self.b(h))
        return self.head(h)


def main():
    torch.manual_seed(0)
    model = torch.jit.script(Recurrence().eval())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 6, 5)).astype(np.float32)
    h = rng.uniform(-1, 1, (40, 8)).astype(np.float32)
    torch.onnx.export(model, (torch.from_numpy(x[:1]), torch.from_numpy(h[:1])), str(HERE / "torch_script_loop.onnx"),
                      input_names=["x", "h0"], output_names=["y"], opset_version=13, dynamo=False)
    with torch.no_grad():
        y = np.concatenate([model(torch.from_numpy(x[i:i + 1]), torch.from_numpy(h[i:i + 1])).numpy()
                            for i in range(32, 40)])
    np.savez_compressed(HERE / "torch_script_loop_data.npz", x_x=x[:32], x_h0=h[:32], test_x=x[32:], test_h0=h[32:],
                        test_y=y)


if __name__ == "__main__":
    main()
