"""Train a small 1-D CNN on scikit-learn's bundled breast-cancer data and export it to ONNX.

The 30 standardised features are treated as a 1-channel signal of length 30.
Writes next to this file: model.onnx (output = softmax probabilities), calib.npz,
test.npz (x already standardised) and norm.npz (training-split mean/std).
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
from sklearn.datasets import load_breast_cancer
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


class CancerConv1d(nn.Module):
    """Input [N,1,30] -> class probabilities [N,2]."""

    def __init__(self):
        super().__init__()
        # Conv1d + BN + ReLU                  -> [16,30]
        self.conv1 = nn.Conv1d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm1d(16)
        self.relu1 = nn.ReLU()
        # Conv1d stride 2 + ReLU              -> [32,15]
        self.conv2 = nn.Conv1d(16, 32, 3, stride=2, padding=1)
        self.relu2 = nn.ReLU()
        # AvgPool1d(2) (floor)                -> [32,7]
        self.pool = nn.AvgPool1d(2)
        self.drop = nn.Dropout(0.2)
        # Flatten (keeps feature position)    -> [224]
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32 * 7, 2)
        self.softmax = nn.Softmax(dim=1)

    def logits(self, x):
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.relu2(self.conv2(x))
        x = self.pool(x)
        x = self.drop(x)
        x = self.flatten(x)
        return self.fc(x)

    def forward(self, x):
        return self.softmax(self.logits(x))


def load_data():
    d = load_breast_cancer()
    x = d.data.astype(np.float64)
    y = d.target.astype(np.int64)  # 0 = malignant, 1 = benign
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.40, stratify=y, random_state=SEED)
    mean = x_tr.mean(axis=0)
    std = x_tr.std(axis=0)
    f = lambda a: ((a - mean) / std).astype(np.float32).reshape(-1, 1, 30)
    return f(x_tr), f(x_te), y_tr, y_te, mean.astype(np.float32), std.astype(np.float32), d.feature_names


def main():
    seed_everything(SEED)
    x_tr, x_te, y_tr, y_te, mean, std, names = load_data()
    print(f"train {x_tr.shape}  test {x_te.shape}")

    model = CancerConv1d()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, weight_decay=1e-4)
    epochs = 150
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    g = torch.Generator().manual_seed(SEED)
    for ep in range(epochs):
        model.train()
        perm = torch.randperm(len(xt), generator=g)
        total = 0.0
        for i in range(0, len(xt), 32):
            idx = perm[i:i + 32]
            if len(idx) < 2:  # BatchNorm needs > 1 sample
                continue
            xb = xt[idx]
            xb = xb + 0.05 * torch.randn(xb.shape, generator=g)  # small input noise -> robust margins
            opt.zero_grad()
            loss = loss_fn(model.logits(xb), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        if ep % 25 == 24 or ep == epochs - 1:
            model.eval()
            with torch.no_grad():
                acc = (model(torch.from_numpy(x_te)).argmax(1).numpy() == y_te).mean()
            print(f"epoch {ep + 1:3d} loss {total / len(xt):.4f} test acc {acc:.4f}")

    model.eval()
    with torch.no_grad():
        torch_out = model(torch.from_numpy(x_te)).numpy()

    # ---- export (TorchScript exporter, as users typically do) ----
    onnx_path = os.path.join(HERE, "model.onnx")
    dummy = torch.zeros(1, 1, 30)
    torch.onnx.export(
        model.eval(), (dummy,), onnx_path,
        input_names=["input"], output_names=["output"], opset_version=13,
        dynamo=False,
        # PRESERVE keeps the eval-mode graph but skips the exporter's Conv+BN
        # fusion, so the BatchNormalization node stays in the graph.
        training=torch.onnx.TrainingMode.PRESERVE,
    )
    m = onnx.load(onnx_path)
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, onnx_path)
    ops = sorted({n.op_type for n in m.graph.node})
    print("op types:", ops)
    print("node sequence:", [n.op_type for n in m.graph.node])
    for need in ("BatchNormalization", "Relu", "Conv", "Softmax", "AveragePool"):
        assert need in ops, f"{need} missing from exported graph"
    assert "Flatten" in ops or "Reshape" in ops

    # ---- verify with onnxruntime, batch 1 (static) ----
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    print("onnx input:", inp.name, inp.shape, " output:", sess.get_outputs()[0].shape)
    ort_out = np.concatenate([sess.run(None, {"input": x_te[i:i + 1]})[0] for i in range(len(x_te))])
    diff = np.abs(ort_out - torch_out).max()
    pred = ort_out.argmax(1)
    acc = (pred == y_te).mean()
    pmax = ort_out.max(1)
    print(f"max |onnx - torch| = {diff:.3e}")
    print(f"onnxruntime float test accuracy: {acc * 100:.2f}% ({(pred == y_te).sum()}/{len(y_te)})")
    print(f"confidence: median max-prob {np.median(pmax):.4f}; "
          f"samples with max-prob < 0.6: {(pmax < 0.6).sum()}, < 0.9: {(pmax < 0.9).sum()}")
    assert diff < 1e-4, diff
    assert acc >= 0.95, acc

    # ---- data files ----
    rng = np.random.default_rng(SEED)
    ci = np.sort(rng.choice(len(x_tr), N_CALIB, replace=False))
    np.savez_compressed(os.path.join(HERE, "calib.npz"),
                        x=np.ascontiguousarray(x_tr[ci], dtype=np.float32), y=y_tr[ci].astype(np.int64))
    np.savez_compressed(os.path.join(HERE, "test.npz"),
                        x=np.ascontiguousarray(x_te, dtype=np.float32), y=y_te.astype(np.int64))
    np.savez_compressed(os.path.join(HERE, "norm.npz"), mean=mean, std=std,
                        feature_names=np.asarray(names, dtype=str))
    print(f"wrote calib.npz ({N_CALIB}), test.npz ({len(x_te)}), norm.npz")
    np.set_printoptions(precision=6, suppress=True, linewidth=100)
    print("mean:", repr(mean))
    print("std:", repr(std))


if __name__ == "__main__":
    main()
