"""Train `nn.LSTM` and `nn.GRU` gesture classifiers in PyTorch on this example's accelerometer windows and export
each with BOTH of PyTorch's ONNX exporters, as a user would: no initial state passed (PyTorch then starts from
zeros, and the exporters write the zero states as Shape/Gather/Concat/Expand chains or ConstantOfShape), once
with a fixed batch of 1 and once with a dynamic batch axis.

Needs torch (not a dependency of edgec; it runs in a separate venv, see README.md):
    /work/torchenv/bin/python examples/gesture_rnn/train_export.py

Data: the same synthetic accelerometer gestures as train.py (its gestures(): 3000 training windows, seed 1; the
committed test.npz is the 1000 test windows, seed 2, and is checked to be the same). Writes pytorch/*.onnx and
pytorch/float_accuracy.json (onnxruntime's top-1 on test.npz for each file). Deterministic on one thread.
"""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from train import CHANNELS, CLASSES, HIDDEN, STEPS, gestures

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "pytorch")


class GestureRNN(nn.Module):
    """nn.LSTM / nn.GRU (batch_first) over the window, nn.Linear on the last step's hidden state (logits)."""

    def __init__(self, kind: str):
        super().__init__()
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(CHANNELS, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, len(CLASSES))

    def forward(self, x):
        y, _ = self.rnn(x)            # no initial state: zeros, sized from x's batch at run time
        return self.fc(y[:, -1])


def train(kind, x, y, epochs=40, batch=32, lr=0.01):
    torch.manual_seed(0)
    model = GestureRNN(kind)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [int(epochs * 0.6), int(epochs * 0.85)], gamma=0.3)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    g = torch.Generator().manual_seed(1)
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(xt), generator=g).split(batch):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xt[idx]), yt[idx]).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        sched.step()
    return model.eval()


def export(model, path, dynamo: bool, dynamic_batch: bool):
    x = torch.zeros(1, STEPS, CHANNELS)
    kw = {}
    if dynamic_batch and dynamo:
        kw["dynamic_shapes"] = ({0: torch.export.Dim("batch")},)
        x = torch.zeros(2, STEPS, CHANNELS)          # an example batch above 1, so the batch stays symbolic
    elif dynamic_batch:
        kw["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
    torch.onnx.export(model, (x,), path, dynamo=dynamo, input_names=["input"], output_names=["output"],
                      **({} if dynamo else {"opset_version": 17}), **kw)
    onnx.checker.check_model(onnx.load(path))


def float_accuracy(path, x, y):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = np.concatenate([sess.run(None, {"input": x[i:i + 1]})[0] for i in range(len(x))])
    return float(np.mean(out.argmax(1) == y)), out


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    x_train, y_train = gestures(3000, seed=1)
    test = np.load(os.path.join(HERE, "test.npz"))
    x_test, y_test = test["x"], test["y"]
    assert np.array_equal(gestures(1000, seed=2)[0], x_test), "test.npz is not train.py's test set"
    acc = {}
    for kind in ("lstm", "gru"):
        model = train(kind, x_train, y_train)
        with torch.no_grad():
            want = model(torch.from_numpy(x_test)).numpy()
        for exporter in ("torchscript", "dynamo"):
            for batch in ("batch1", "dynbatch"):
                name = f"{kind}_{exporter}_{batch}.onnx"
                path = os.path.join(OUT, name)
                export(model, path, exporter == "dynamo", batch == "dynbatch")
                acc[name], out = float_accuracy(path, x_test, y_test)
                assert np.abs(out - want).max() < 1e-4, f"{name}: onnxruntime disagrees with torch"
                print(f"{name}: onnxruntime float top-1 {acc[name] * 100:.2f} % on {len(y_test)} test windows")
    meta = {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__,
            "float_top1": acc}
    with open(os.path.join(OUT, "float_accuracy.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
