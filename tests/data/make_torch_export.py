"""Writes tests/data/torch_mixed_ops.onnx: a small PyTorch network exported with torch.onnx.export, using the
operators PyTorch users reach for beyond plain conv nets (SiLU, Hardswish, a sigmoid gate multiplying a
tensor, Concat, Pad, Slice, nearest Upsample/Resize, max pooling, a global mean, LayerNorm, Linear), plus a calibration
set. The tests never run torch; run this again only to refresh the file:

    python3 -m venv /tmp/train && /tmp/train/bin/pip install torch==2.13.0 onnx onnxscript
    /tmp/train/bin/python tests/data/make_torch_export.py
"""
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent


class MixedOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.gate = nn.Conv2d(8, 8, 1)
        self.mix = nn.Conv2d(16, 12, 3)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.norm = nn.LayerNorm(12)
        self.head = nn.Linear(12, 10)

    def forward(self, x):
        y = F.silu(self.bn(self.stem(x)))            # [1, 8, 8, 8]; BatchNorm folds, SiLU = x * sigmoid(x)
        z = F.hardswish(self.dw(y))
        z = z * torch.sigmoid(self.gate(z))         # Mul by a computed tensor
        c = torch.cat([y, z], dim=1)                # [1, 16, 8, 8]
        p = F.pad(c, (1, 1, 1, 1), mode="reflect")  # Pad -> [1, 16, 10, 10]
        m = self.mix(p)                             # [1, 12, 8, 8]
        s = m[:, :, 2:6, 2:6]                       # Slice -> [1, 12, 4, 4]
        u = self.up(s)                              # Resize nearest -> [1, 12, 8, 8]
        q = F.max_pool2d(u, 2)                      # [1, 12, 4, 4]
        v = q.view(q.size(0), q.size(1), -1)        # Reshape to a shape computed from the tensor's
        return self.head(self.norm(v.mean(dim=-1)))  # ReduceMean, LayerNorm, Gemm -> [1, 10]


def main():
    torch.manual_seed(0)
    net = MixedOps()
    with torch.no_grad():                           # non-trivial BatchNorm statistics
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
        net.norm.weight.uniform_(0.5, 1.5)
        net.norm.bias.uniform_(-0.2, 0.2)
    net.eval()
    x = torch.rand(1, 3, 16, 16)
    for name, dynamo, opset in (("torch_mixed_ops", True, 18), ("torch_mixed_ops_legacy", False, 13)):
        path = HERE / f"{name}.onnx"       # torch's exporter (dynamo) and the TorchScript one
        torch.onnx.export(net, (x,), str(path), input_names=["image"], output_names=["logits"],
                          opset_version=opset, dynamo=dynamo, **({"external_data": False} if dynamo else {}))
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    rng = np.random.default_rng(0)
    np.savez(HERE / "torch_mixed_ops_calib.npz", x=rng.uniform(0, 1, size=(16, 3, 16, 16)).astype(np.float32))
    with torch.no_grad():
        xs = torch.from_numpy(rng.uniform(0, 1, size=(8, 3, 16, 16)).astype(np.float32))
        np.savez(HERE / "torch_mixed_ops_test.npz", x=xs.numpy(), y_torch=net(xs).numpy())


if __name__ == "__main__":
    main()
