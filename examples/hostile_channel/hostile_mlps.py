"""Two more quantization-hostile digits classifiers, trained here with NumPy on scikit-learn's 8x8 digits (the split
of train.py: the same test.npz and calib.npz samples):

- `residual_add.onnx`: a residual add with mismatched ranges. h = ReLU(fc1 x); out = fc3(h + K * ReLU(fc2 h)),
  K = 500 a constant Mul in the graph: on the calibration set the branch reaches 248, the skip 1.7 (~150x), so
  per-tensor int8 on the sum (a step of ~1) leaves the skip about two levels.
- `saturating.onnx`: a saturating activation. out = fc2(Tanh(G * fc1 x)) with the gain G = 50 folded into fc1's
  weights: the Tanh input spans -140..110 while Tanh saturates beyond +-3, so a min/max int8 range spends all but
  a few of its 256 levels where Tanh is flat.

Both are trained with the hostile structure in place (Adam, softmax cross-entropy), so their float accuracy is their
own. Deterministic. Run: python hostile_mlps.py  (numpy, onnx, onnxruntime, scikit-learn; writes next to this file)
"""
import os

import numpy as np
from onnx import helper

from train import HERE, accuracy, data, save_graph

K, GAIN, HIDDEN, EPOCHS = 500.0, 50.0, 32, 60


def adam(p, grads, state, lr=3e-3):
    state["t"] += 1
    t = state["t"]
    for k, g in enumerate(grads):
        state["m"][k] = 0.9 * state["m"][k] + 0.1 * g
        state["v"][k] = 0.999 * state["v"][k] + 0.001 * g * g
        p[k] -= lr * (state["m"][k] / (1 - 0.9 ** t)) / (np.sqrt(state["v"][k] / (1 - 0.999 ** t)) + 1e-8)


def softmax_grad(logits, y):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    d = e / e.sum(axis=1, keepdims=True)
    d[np.arange(len(y)), y] -= 1
    return d / len(y)


def init(rng, shapes):
    return [rng.standard_normal(s) * (np.sqrt(2.0 / s[0]) if len(s) == 2 else 0.0) for s in shapes]


def train_residual(x, y, rng):
    p = init(rng, [(64, HIDDEN), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (HIDDEN, 10), (10,)])
    p[2] /= K                                           # the branch starts at the skip's scale
    st = {"t": 0, "m": [np.zeros_like(a) for a in p], "v": [np.zeros_like(a) for a in p]}
    for _ in range(EPOCHS):
        order = rng.permutation(len(x))
        for i in range(0, len(x), 32):
            xb, yb = x[order[i:i + 32]], y[order[i:i + 32]]
            h = np.maximum(xb @ p[0] + p[1], 0)
            r = np.maximum(h @ p[2] + p[3], 0)
            s = h + K * r
            d = softmax_grad(s @ p[4] + p[5], yb)
            ds = d @ p[4].T
            dr = K * ds * (r > 0)
            dh = (ds + dr @ p[2].T) * (h > 0)
            adam(p, [xb.T @ dh, dh.sum(0), h.T @ dr, dr.sum(0), s.T @ d, d.sum(0)], st)
    return p


def train_saturating(x, y, rng):
    p = init(rng, [(64, HIDDEN), (HIDDEN,), (HIDDEN, 10), (10,)])
    st = {"t": 0, "m": [np.zeros_like(a) for a in p], "v": [np.zeros_like(a) for a in p]}
    for _ in range(EPOCHS):
        order = rng.permutation(len(x))
        for i in range(0, len(x), 32):
            xb, yb = x[order[i:i + 32]], y[order[i:i + 32]]
            h = np.tanh(GAIN * (xb @ p[0] + p[1]))
            d = softmax_grad(h @ p[2] + p[3], yb)
            da = GAIN * (d @ p[2].T) * (1 - h * h)
            adam(p, [xb.T @ da, da.sum(0), h.T @ d, d.sum(0)], st)
    return p


def save(name, nodes, inits):
    path = os.path.join(HERE, f"{name}.onnx")
    save_graph(path, name, [helper.make_node("Flatten", ["input"], ["flat"], name="flatten"), *nodes], inits)
    return path


def main():
    x_tr, x_te, y_tr, y_te = data()
    p = train_residual(x_tr, y_tr, np.random.default_rng(1))
    res = save("residual_add", [
        helper.make_node("Gemm", ["flat", "w1", "b1"], ["a1"], transB=1, name="fc1"),
        helper.make_node("Relu", ["a1"], ["h"], name="relu1"),
        helper.make_node("Gemm", ["h", "w2", "b2"], ["a2"], transB=1, name="fc2"),
        helper.make_node("Relu", ["a2"], ["r"], name="relu2"),
        helper.make_node("Mul", ["r", "k"], ["kr"], name="gain"),
        helper.make_node("Add", ["h", "kr"], ["s"], name="residual"),
        helper.make_node("Gemm", ["s", "w3", "b3"], ["output"], transB=1, name="fc3")],
        {"w1": p[0].T, "b1": p[1], "w2": p[2].T, "b2": p[3], "k": np.array(K), "w3": p[4].T, "b3": p[5]})
    p = train_saturating(x_tr, y_tr, np.random.default_rng(2))
    sat = save("saturating", [
        helper.make_node("Gemm", ["flat", "w1", "b1"], ["a1"], transB=1, name="fc1"),
        helper.make_node("Tanh", ["a1"], ["h"], name="tanh"),
        helper.make_node("Gemm", ["h", "w2", "b2"], ["output"], transB=1, name="fc2")],
        {"w1": GAIN * p[0].T, "b1": GAIN * p[1], "w2": p[2].T, "b2": p[3]})
    for path in (res, sat):
        print(f"{os.path.basename(path)}: float top-1 on the test set "
              f"{100 * accuracy(path, x_te.reshape(-1, 1, 8, 8), y_te):.1f} %")


if __name__ == "__main__":
    main()
