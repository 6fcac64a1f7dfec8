"""Train a two-input, two-head MLP on scikit-learn's bundled diabetes data (NumPy only) and export it to ONNX.

Inputs: `clinical` (age, sex, bmi, blood pressure) and `serum` (the six blood serum measurements), both as
scikit-learn standardises them. Outputs: `risk` (softmax over {progression below the training median, above})
and `progress` (the one-year disease progression, standardised with the training split's mean and std).
Writes next to this file: model.onnx, calib.npz, test.npz (arrays x_clinical, x_serum, y_risk, y_progress),
norm.npz (the target's mean and std, to turn `progress` back into the dataset's units).
Deterministic (fixed seed); about 5 s on one core:
    python train.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

HERE = os.path.dirname(os.path.abspath(__file__))
SEED, HIDDEN, STEPS, LR = 0, 8, 150, 0.01


def data():
    d = load_diabetes()
    x, t = d.data.astype(np.float32), d.target.astype(np.float32)
    x = x / x[:, :].std(axis=0)        # scikit-learn scales each column to unit norm; bring them to unit std
    xtr, xte, ttr, tte = train_test_split(x, t, test_size=0.4, random_state=SEED)
    median, mean, std = np.median(ttr), ttr.mean(), ttr.std()
    return xtr, xte, ttr, tte, dict(median=np.float32(median), mean=np.float32(mean), std=np.float32(std))


def init(rng):
    def dense(n_in, n_out):
        return rng.normal(0, np.sqrt(2.0 / n_in), (n_in, n_out)).astype(np.float32), np.zeros(n_out, np.float32)
    p = {}
    p["Wc"], _ = dense(4, HIDDEN)
    p["Ws"], p["b1"] = dense(6, HIDDEN)
    p["W2"], p["b2"] = dense(HIDDEN, HIDDEN)
    p["Wr"], p["br"] = dense(HIDDEN, 2)
    p["Wp"], p["bp"] = dense(HIDDEN, 1)
    return p


def forward(p, xc, xs):
    z1 = xc @ p["Wc"] + xs @ p["Ws"] + p["b1"]
    h1 = np.maximum(z1, 0)
    z2 = h1 @ p["W2"] + p["b2"]
    h2 = np.maximum(z2, 0)
    logits = h2 @ p["Wr"] + p["br"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    prog = h2 @ p["Wp"] + p["bp"]
    return probs, prog, (z1, h1, z2, h2)


def train(xc, xs, risk, prog):
    rng = np.random.default_rng(SEED)
    p = init(rng)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(v) for k, v in p.items()}
    n = len(xc)
    onehot = np.eye(2, dtype=np.float32)[risk]
    for step in range(1, STEPS + 1):
        probs, out, (z1, h1, z2, h2) = forward(p, xc, xs)
        d_logits = (probs - onehot) / n                    # cross-entropy
        d_prog = 2 * (out - prog[:, None]) / n             # mean squared error
        g = {"Wr": h2.T @ d_logits, "br": d_logits.sum(0), "Wp": h2.T @ d_prog, "bp": d_prog.sum(0)}
        d_h2 = (d_logits @ p["Wr"].T + d_prog @ p["Wp"].T) * (z2 > 0)
        g["W2"], g["b2"] = h1.T @ d_h2, d_h2.sum(0)
        d_h1 = (d_h2 @ p["W2"].T) * (z1 > 0)
        g["Wc"], g["Ws"], g["b1"] = xc.T @ d_h1, xs.T @ d_h1, d_h1.sum(0)
        for k in p:                                        # Adam, with a little weight decay
            g[k] = g[k] + 1e-4 * p[k]
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            v[k] = 0.999 * v[k] + 0.001 * g[k] ** 2
            p[k] -= LR * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)
    return p


def export(p, path):
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(p[k].astype(np.float32), k) for k in p]
    nodes = [helper.make_node("MatMul", ["clinical", "Wc"], ["zc"], name="clinical_fc"),
             helper.make_node("Gemm", ["serum", "Ws", "b1"], ["zs"], name="serum_fc"),
             helper.make_node("Add", ["zc", "zs"], ["z1"], name="merge"),
             helper.make_node("Relu", ["z1"], ["h1"], name="relu1"),
             helper.make_node("Gemm", ["h1", "W2", "b2"], ["z2"], name="shared_fc"),
             helper.make_node("Relu", ["z2"], ["h2"], name="relu2"),
             helper.make_node("Gemm", ["h2", "Wr", "br"], ["logits"], name="risk_head"),
             helper.make_node("Softmax", ["logits"], ["risk"], name="risk_softmax", axis=1),
             helper.make_node("Gemm", ["h2", "Wp", "bp"], ["progress"], name="progress_head")]
    graph = helper.make_graph(nodes, "diabetes_multitask",
                              [helper.make_tensor_value_info("clinical", f, [1, 4]),
                               helper.make_tensor_value_info("serum", f, [1, 6])],
                              [helper.make_tensor_value_info("risk", f, [1, 2]),
                               helper.make_tensor_value_info("progress", f, [1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="edgec example")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return model


def main():
    xtr, xte, ttr, tte, norm = data()
    split = lambda x: (np.ascontiguousarray(x[:, :4]), np.ascontiguousarray(x[:, 4:]))   # noqa: E731
    risk_tr, risk_te = (ttr > norm["median"]).astype(np.int64), (tte > norm["median"]).astype(np.int64)
    prog_tr, prog_te = (ttr - norm["mean"]) / norm["std"], (tte - norm["mean"]) / norm["std"]
    p = train(*split(xtr), risk_tr, prog_tr)
    export(p, os.path.join(HERE, "model.onnx"))
    sess = ort.InferenceSession(os.path.join(HERE, "model.onnx"), providers=["CPUExecutionProvider"])
    xc, xs = split(xte)
    outs = [sess.run(None, {"clinical": xc[i:i + 1], "serum": xs[i:i + 1]}) for i in range(len(xc))]
    probs, prog = np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs])
    ref_probs, ref_prog, _ = forward(p, xc, xs)
    assert np.allclose(probs, ref_probs, atol=1e-5) and np.allclose(prog, ref_prog, atol=1e-4)
    acc = float(np.mean(probs.argmax(1) == risk_te))
    mse = float(np.mean((prog[:, 0] - prog_te) ** 2))
    print(f"test: risk accuracy {100 * acc:.2f} %, progress MSE {mse:.3f} (standardised; 1.0 = predicting the mean), "
          f"R^2 {1 - mse / float(np.var(prog_te)):.3f}")
    rng = np.random.default_rng(SEED)
    calib = rng.permutation(len(xtr))[:200]
    xc_tr, xs_tr = split(xtr)
    np.savez(os.path.join(HERE, "calib.npz"), x_clinical=xc_tr[calib], x_serum=xs_tr[calib],
             y_risk=risk_tr[calib], y_progress=prog_tr[calib, None].astype(np.float32))
    np.savez(os.path.join(HERE, "test.npz"), x_clinical=xc, x_serum=xs, y_risk=risk_te,
             y_progress=prog_te[:, None].astype(np.float32))
    np.savez(os.path.join(HERE, "norm.npz"), **norm)


if __name__ == "__main__":
    main()
