"""Train a small CNN on scikit-learn's bundled 8x8 digits and export it to ONNX.

Writes next to this file: model.onnx, calib.npz, test.npz.
Run with a Python that has torch, scikit-learn, numpy, onnx, onnxruntime:
    python train.py
Deterministic: fixed seeds, single thread, deterministic algorithms.
"""
import os
import random

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0
N_CALIB = 256


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


class DigitsCNN(nn.Module):
    """Input [N,1,8,8] -> logits [N,10]."""

    def __init__(self):
        super().__init__()
        # Conv + BN + ReLU                           -> [16,8,8]
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        # Conv + BN + ReLU6 (exported as Clip 0..6)  -> [32,8,8]
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.relu6 = nn.ReLU6()
        # residual branch: depthwise Conv + BN + ReLU -> [32,8,8], added to its input
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.bn3 = nn.BatchNorm2d(32)
        self.relu3 = nn.ReLU()
        # MaxPool(2)                                  -> [32,4,4]
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.3)
        # Flatten a tensor with H,W > 1               -> [512]
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.relu6(self.bn2(self.conv2(x)))
        x = x + self.relu3(self.bn3(self.dw(x)))
        x = self.pool(x)
        x = self.drop(x)
        x = self.flatten(x)
        return self.fc(x)


def load_data():
    d = load_digits()
    x = (d.data.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)  # pixels 0..16 -> [0,1]
    y = d.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.30, stratify=y, random_state=SEED)


def main():
    seed_everything(SEED)
    x_tr, x_te, y_tr, y_te = load_data()
    print(f"train {x_tr.shape}  test {x_te.shape}")

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    epochs = 40
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    g = torch.Generator().manual_seed(SEED)
    for ep in range(epochs):
        model.train()
        perm = torch.randperm(len(xt), generator=g)
        total = 0.0
        for i in range(0, len(xt), 64):
            idx = perm[i:i + 64]
            xb = xt[idx]
            # light augmentation: random 1-pixel shifts
            if ep < epochs - 5:
                dx, dy = [int(v) for v in torch.randint(-1, 2, (2,), generator=g)]
                xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
            opt.zero_grad()
            loss = loss_fn(model(xb), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        if ep % 10 == 9 or ep == epochs - 1:
            model.eval()
            with torch.no_grad():
                acc = (model(torch.from_numpy(x_te)).argmax(1).numpy() == y_te).mean()
            print(f"epoch {ep + 1:3d} loss {total / len(xt):.4f} test acc {acc:.4f}")

    model.eval()
    with torch.no_grad():
        torch_out = model(torch.from_numpy(x_te)).numpy()

    # ---- export (TorchScript exporter, as users typically do) ----
    onnx_path = os.path.join(HERE, "model.onnx")
    dummy = torch.zeros(1, 1, 8, 8)
    torch.onnx.export(
        model.eval(), (dummy,), onnx_path,
        input_names=["input"], output_names=["output"], opset_version=13,
        dynamo=False,
        # PRESERVE keeps the eval-mode graph but skips the exporter's Conv+BN
        # fusion, so BatchNormalization nodes stay in the graph.
        training=torch.onnx.TrainingMode.PRESERVE,
    )
    m = onnx.load(onnx_path)
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, onnx_path)
    ops = sorted({n.op_type for n in m.graph.node})
    print("op types:", ops)
    print("node sequence:", [n.op_type for n in m.graph.node])
    for need in ("BatchNormalization", "Clip", "Relu", "Conv", "Add", "MaxPool"):
        assert need in ops, f"{need} missing from exported graph"
    assert "Flatten" in ops or "Reshape" in ops

    # ---- verify with onnxruntime, batch 1 (static) ----
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    print("onnx input:", inp.name, inp.shape, " output:", sess.get_outputs()[0].shape)
    ort_out = np.concatenate([sess.run(None, {"input": x_te[i:i + 1]})[0] for i in range(len(x_te))])
    diff = np.abs(ort_out - torch_out).max()
    acc = (ort_out.argmax(1) == y_te).mean()
    print(f"max |onnx - torch| = {diff:.3e}")
    print(f"onnxruntime float test accuracy: {acc * 100:.2f}% ({(ort_out.argmax(1) == y_te).sum()}/{len(y_te)})")
    assert diff < 1e-4, diff
    assert acc >= 0.95, acc

    # ---- data files ----
    rng = np.random.default_rng(SEED)
    ci = np.sort(rng.choice(len(x_tr), N_CALIB, replace=False))
    np.savez_compressed(os.path.join(HERE, "calib.npz"),
                        x=np.ascontiguousarray(x_tr[ci], dtype=np.float32), y=y_tr[ci].astype(np.int64))
    np.savez_compressed(os.path.join(HERE, "test.npz"),
                        x=np.ascontiguousarray(x_te, dtype=np.float32), y=y_te.astype(np.int64))
    print(f"wrote calib.npz ({N_CALIB}) and test.npz ({len(x_te)})")


if __name__ == "__main__":
    main()
