"""A digits classifier with one quantization-hostile activation channel, trained here with NumPy.

The model: Gemm 64->32, ReLU, BatchNormalization(32), Gemm 32->32, ReLU, Gemm 32->10 (logits), trained with
Adam on scikit-learn's 8x8 digits (the split of examples/digits_cnn: 70/30 stratified, random_state 0). The
BatchNormalization after the ReLU cannot fold into the Gemm before it, so its input, the first layer's ReLU
output, is an activation tensor of its own.

The hostile channel: after training, the busiest hidden unit of the first layer (largest mean activation) is
scaled by f so that its largest activation on the training set is HOSTILE (50) times the largest of all the
other units (its weights and bias times f; its BatchNormalization mean times f and variance times f^2), which
leaves the float function as it was (ReLU commutes with a positive scale, the normalization undoes it): one
intermediate channel 50x larger than the rest, the outlier-channel pattern that breaks per-tensor int8
activations.

Writes next to this file: model.onnx, calib.npz (256 training samples, with labels), val.npz (300 samples of
the training split kept out of training, for `--val`), test.npz (the 540 test samples). Deterministic. Run: python train.py  (numpy, onnx, onnxruntime, scikit-learn)
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTILE = 50.0
HIDDEN = 32
EPOCHS = 60


def data():
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    return train_test_split(x, d.target.astype(np.int64), test_size=0.3, stratify=d.target, random_state=0)


def train(x, y, rng):
    """Adam on softmax cross-entropy: 64 -> 32 ReLU -> (standardize) -> 32 ReLU -> 10."""
    shapes = [(64, HIDDEN), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (HIDDEN, 10), (10,)]
    p = [rng.standard_normal(s).astype(np.float64) * (np.sqrt(2.0 / s[0]) if len(s) == 2 else 0.0) for s in shapes]
    m = [np.zeros_like(a) for a in p]
    v = [np.zeros_like(a) for a in p]
    step = 0
    for _ in range(EPOCHS):
        order = rng.permutation(len(x))
        for i in range(0, len(x), 32):
            xb, yb = x[order[i:i + 32]], y[order[i:i + 32]]
            h1 = np.maximum(xb @ p[0] + p[1], 0)
            mu, sd = h1.mean(axis=0), h1.std(axis=0) + 1e-3       # batch standardization (the BatchNorm)
            z = (h1 - mu) / sd
            h2 = np.maximum(z @ p[2] + p[3], 0)
            logits = h2 @ p[4] + p[5]
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            d3 = e / e.sum(axis=1, keepdims=True)
            d3[np.arange(len(yb)), yb] -= 1
            d3 /= len(yb)
            g4, g5 = h2.T @ d3, d3.sum(axis=0)
            d2 = (d3 @ p[4].T) * (h2 > 0)
            g2, g3 = z.T @ d2, d2.sum(axis=0)
            dz = d2 @ p[2].T
            dh1 = (dz - dz.mean(axis=0) - z * (dz * z).mean(axis=0)) / sd
            dh1 *= h1 > 0
            g0, g1 = xb.T @ dh1, dh1.sum(axis=0)
            step += 1
            for k, g in enumerate((g0, g1, g2, g3, g4, g5)):
                m[k] = 0.9 * m[k] + 0.1 * g
                v[k] = 0.999 * v[k] + 0.001 * g * g
                p[k] -= 3e-3 * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)
    h1 = np.maximum(x @ p[0] + p[1], 0)
    return p, h1


def export(p, h1, path):
    mean, var = h1.mean(axis=0), h1.var(axis=0)
    u = int(np.argmax(mean))                                       # the hostile unit
    f = HOSTILE * np.delete(h1.max(axis=0), u).max() / h1[:, u].max()
    w1, b1 = p[0].T.copy(), p[1].copy()
    w1[u] *= f
    b1[u] *= f
    eps = 1e-3
    mean[u] *= f
    var[u] = f ** 2 * var[u] + (f ** 2 - 1) * eps         # (f h - f mean) / sqrt(var' + eps): unchanged
    inits = {"w1": w1, "b1": b1, "gamma": np.ones(HIDDEN), "beta": np.zeros(HIDDEN), "mean": mean, "var": var,
             "w2": p[2].T, "b2": p[3], "w3": p[4].T, "b3": p[5]}
    nodes = [helper.make_node("Flatten", ["input"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "w1", "b1"], ["a1"], transB=1, name="fc1"),
             helper.make_node("Relu", ["a1"], ["h1"], name="relu1"),
             helper.make_node("BatchNormalization", ["h1", "gamma", "beta", "mean", "var"], ["z"], epsilon=eps,
                              name="bn"),
             helper.make_node("Gemm", ["z", "w2", "b2"], ["a2"], transB=1, name="fc2"),
             helper.make_node("Relu", ["a2"], ["h2"], name="relu2"),
             helper.make_node("Gemm", ["h2", "w3", "b3"], ["output"], transB=1, name="fc3")]
    save_graph(path, "hostile_channel", nodes, inits)


def save_graph(path, name, nodes, inits):
    """The model of `nodes` (input `input` [1, 1, 8, 8] -> output `output` [1, 10] logits, float32 initializers
    `inits`), checked and written to `path` (hostile_mlps.py writes its models with it too)."""
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("output", onnx.TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(np.asarray(a, np.float32), k) for k, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def accuracy(path, x, y):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = np.concatenate([sess.run(None, {"input": xi[None]})[0] for xi in x])
    return float(np.mean(out.argmax(axis=1) == y))


def main():
    rng = np.random.default_rng(0)
    x_tr, x_te, y_tr, y_te = data()
    x_tr, x_val, y_tr, y_val = train_test_split(x_tr, y_tr, test_size=300, stratify=y_tr, random_state=0)
    p, h1 = train(x_tr, y_tr, rng)
    path = os.path.join(HERE, "model.onnx")
    export(p, h1, path)
    pick = rng.choice(len(x_tr), 256, replace=False)
    np.savez_compressed(os.path.join(HERE, "calib.npz"), x=x_tr[pick].reshape(-1, 1, 8, 8), y=y_tr[pick])
    np.savez_compressed(os.path.join(HERE, "val.npz"), x=x_val.reshape(-1, 1, 8, 8), y=y_val)
    np.savez_compressed(os.path.join(HERE, "test.npz"), x=x_te.reshape(-1, 1, 8, 8), y=y_te)
    print(f"float top-1 on the test set: {100 * accuracy(path, x_te.reshape(-1, 1, 8, 8), y_te):.1f} %")


if __name__ == "__main__":
    main()
