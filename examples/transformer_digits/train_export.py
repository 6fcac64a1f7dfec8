"""Train two one-block transformer classifiers in PyTorch on the 8x8 digits (each image row a token) and export
each with BOTH of PyTorch's ONNX exporters:

- `encoder`: token embedding (nn.Linear 8->16) + learned positions, `nn.TransformerEncoderLayer(d_model=16,
  nhead=2, dim_feedforward=32, activation="gelu")` (post-norm), mean over tokens, nn.Linear 16->10;
- `mha`: the same embedding, `nn.MultiheadAttention(16, 2)` (fused in_proj), residual + nn.LayerNorm, mean,
  nn.Linear 16->10.

Each is exported with batch_first=True (`_bf`, fixed batch 1) and batch_first=False (`_sf`: the same trained
weights in a module that runs the block sequence-first, exported with a dynamic batch axis), by the
TorchScript exporter (`dynamo=False`, opset 17) and the torch.export-based one (`dynamo=True`). The encoder with
batch_first=True is also exported by TorchScript at opset 14 (`encoder_bf_torchscript_opset14.onnx`): opset 14 has no
LayerNormalization, so the exporter writes each nn.LayerNorm as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add.

Needs torch (not a dependency of edgec; it runs in a separate venv, see README.md):
    /work/torchenv/bin/python examples/transformer_digits/train_export.py [--only FILE.onnx ...]

`--only` writes just the files named (training only the models they need) and updates their entries in
float_accuracy.json; training is deterministic, so the weights are those of the full run.

Data: scikit-learn's digits, pixels / 16, split 70/30 stratified with random_state=0 as train.py does (the
committed test.npz is that test split, and is checked to be). Writes pytorch/*.onnx and
pytorch/float_accuracy.json (onnxruntime's top-1 on test.npz for each file). Deterministic on one thread.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "pytorch")
T, F, D, H, FF, C = 8, 8, 16, 2, 32, 10          # tokens, features per token, model width, heads, FFN, classes


class DigitsTransformer(nn.Module):
    """Embedding + positions, one attention block (`kind`), mean over tokens, classifier. The model's input is
    always [N, tokens, features]; with batch_first=False the block runs on [tokens, N, D]."""

    def __init__(self, kind: str, batch_first: bool):
        super().__init__()
        self.kind, self.batch_first = kind, batch_first
        self.emb = nn.Linear(F, D)
        self.pos = nn.Parameter(torch.randn(T, D) * 0.1)
        if kind == "encoder":
            self.block = nn.TransformerEncoderLayer(D, H, FF, dropout=0.1, activation="gelu",
                                                    batch_first=batch_first)
        else:
            self.attn = nn.MultiheadAttention(D, H, dropout=0.1, batch_first=batch_first)
            self.norm = nn.LayerNorm(D)
        self.fc = nn.Linear(D, C)

    def forward(self, x):
        h = self.emb(x) + self.pos
        if not self.batch_first:
            h = h.transpose(0, 1)
        if self.kind == "encoder":
            h = self.block(h)
        else:
            a, _ = self.attn(h, h, h, need_weights=False)
            h = self.norm(h + a)
        return self.fc(h.mean(1 if self.batch_first else 0))


def train(kind, x, y, epochs=150, batch=32, lr=3e-3):
    torch.manual_seed(0)
    model = DigitsTransformer(kind, batch_first=True)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    g = torch.Generator().manual_seed(1)
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(xt), generator=g).split(batch):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xt[idx]), yt[idx]).backward()
            opt.step()
        sched.step()
    return model.eval()


def export(model, path, dynamo: bool, dynamic_batch: bool, opset: int = 17):
    x = torch.zeros(1, T, F)
    kw = {}
    if dynamic_batch and dynamo:
        kw["dynamic_shapes"] = ({0: torch.export.Dim("batch")},)
        x = torch.zeros(2, T, F)                     # an example batch above 1, so the batch stays symbolic
    elif dynamic_batch:
        kw["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
    torch.onnx.export(model, (x,), path, dynamo=dynamo, input_names=["input"], output_names=["output"],
                      **({} if dynamo else {"opset_version": opset}), **kw)
    onnx.checker.check_model(onnx.load(path))


def float_accuracy(path, x, y):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = np.concatenate([sess.run(None, {"input": x[i:i + 1]})[0] for i in range(len(x))])
    return float(np.mean(out.argmax(1) == y)), out


def variants(kind: str):
    """(file name, batch_first, exporter, opset) of every file written for a model kind."""
    for batch_first in (True, False):
        for exporter in ("torchscript", "dynamo"):
            yield f"{kind}_{'bf' if batch_first else 'sf'}_{exporter}.onnx", batch_first, exporter, 17
    if kind == "encoder":       # LayerNorm decomposed (no LayerNormalization before opset 17)
        yield "encoder_bf_torchscript_opset14.onnx", True, "torchscript", 14


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="FILE", help="write only these files (e.g. "
                        "encoder_bf_torchscript_opset14.onnx)")
    only = parser.parse_args().only
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)                      # [N, 8 rows = tokens, 8 pixels]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    test = np.load(os.path.join(HERE, "test.npz"))
    assert np.array_equal(test["x"], x_te) and np.array_equal(test["y"], y_te), "test.npz is not the split"
    acc_path = os.path.join(OUT, "float_accuracy.json")
    acc = {}
    if only and os.path.exists(acc_path):
        with open(acc_path) as f:
            acc = json.load(f)["float_top1"]
    for kind in ("encoder", "mha"):
        files = [v for v in variants(kind) if not only or v[0] in only]
        if not files:
            continue
        trained = train(kind, x_tr, y_tr)
        with torch.no_grad():
            want = trained(torch.from_numpy(x_te)).numpy()
        for name, batch_first, exporter, opset in files:
            model = DigitsTransformer(kind, batch_first)
            model.load_state_dict(trained.state_dict())
            model.eval()
            path = os.path.join(OUT, name)
            export(model, path, exporter == "dynamo", dynamic_batch=not batch_first, opset=opset)
            acc[name], out = float_accuracy(path, x_te, y_te)
            assert np.abs(out - want).max() < 1e-4, f"{name}: onnxruntime disagrees with torch"
            print(f"{name}: onnxruntime float top-1 {acc[name] * 100:.2f} % on {len(y_te)} test digits")
    meta = {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__,
            "float_top1": acc}
    with open(acc_path, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
