"""Train a one-block transformer classifier on scikit-learn's 8x8 digits (each image row a token) in NumPy and
write it as ONNX in the node pattern PyTorch's TorchScript exporter emits for `nn.TransformerEncoderLayer`
(batch_first=True, post-norm, GELU): fused in_proj MatMul + Add, Split into q/k/v, Reshape/Transpose to heads,
scaled Q x K^T, Softmax, P x V, Transpose/Reshape back, out_proj, residual Adds, LayerNormalization, FFN with
Gelu; then mean over tokens and a Gemm head. torch is not needed (manual backprop, Adam).

Writes next to this file: model.onnx, calib.npz, test.npz. Deterministic (fixed seed). Run:
    python train.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from scipy.special import erf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HERE = os.path.dirname(os.path.abspath(__file__))
T, F, D, H, FF, C = 8, 8, 16, 2, 32, 10          # tokens, features per token, model width, heads, FFN, classes
DH = D // H
EPS = 1e-5
SEED = 0
N_CALIB = 256


def init(rng):
    def lin(i, o):
        return rng.normal(0, 1 / np.sqrt(i), (i, o))
    return {"We": lin(F, D), "pos": rng.normal(0, 0.1, (T, D)), "Win": lin(D, 3 * D), "bin": np.zeros(3 * D),
            "Wo": lin(D, D), "bo": np.zeros(D), "g1": np.ones(D), "b1": np.zeros(D),
            "W1": lin(D, FF), "c1": np.zeros(FF), "W2": lin(FF, D), "c2": np.zeros(D),
            "g2": np.ones(D), "b2": np.zeros(D), "Wc": lin(D, C), "bc": np.zeros(C)}


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    inv = 1 / np.sqrt(x.var(-1, keepdims=True) + EPS)
    xh = (x - mu) * inv
    return xh * g + b, (xh, inv)


def layer_norm_back(dy, cache, g):
    xh, inv = cache
    dxh = dy * g
    n = xh.shape[-1]
    dx = inv / n * (n * dxh - dxh.sum(-1, keepdims=True) - xh * (dxh * xh).sum(-1, keepdims=True))
    return dx, (dy * xh).reshape(-1, n).sum(0), dy.reshape(-1, n).sum(0)


def gelu(x):
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def gelu_grad(x):
    return 0.5 * (1 + erf(x / np.sqrt(2))) + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


def heads(x):                                            # [B,T,D] -> [B,H,T,DH]
    return x.reshape(x.shape[0], T, H, DH).transpose(0, 2, 1, 3)


def forward(p, x):
    c = {}
    h0 = x @ p["We"] + p["pos"]
    qkv = h0 @ p["Win"] + p["bin"]
    q, k, v = (heads(t) for t in np.split(qkv, 3, axis=-1))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(DH)
    s = np.exp(s - s.max(-1, keepdims=True))
    pr = s / s.sum(-1, keepdims=True)
    ctx = (pr @ v).transpose(0, 2, 1, 3).reshape(x.shape[0], T, D)
    r1 = h0 + ctx @ p["Wo"] + p["bo"]
    n1, c["ln1"] = layer_norm(r1, p["g1"], p["b1"])
    u = n1 @ p["W1"] + p["c1"]
    r2 = n1 + gelu(u) @ p["W2"] + p["c2"]
    n2, c["ln2"] = layer_norm(r2, p["g2"], p["b2"])
    pooled = n2.mean(1)
    c.update(x=x, h0=h0, q=q, k=k, v=v, pr=pr, ctx=ctx, n1=n1, u=u, pooled=pooled)
    return pooled @ p["Wc"] + p["bc"], c


def backward(p, c, dlog):
    g = {}
    B = dlog.shape[0]
    g["Wc"], g["bc"] = c["pooled"].T @ dlog, dlog.sum(0)
    dn2 = np.repeat((dlog @ p["Wc"].T)[:, None, :] / T, T, axis=1)
    dr2, g["g2"], g["b2"] = layer_norm_back(dn2, c["ln2"], p["g2"])
    gu = gelu(c["u"])
    g["W2"], g["c2"] = gu.reshape(-1, FF).T @ dr2.reshape(-1, D), dr2.reshape(-1, D).sum(0)
    du = (dr2 @ p["W2"].T) * gelu_grad(c["u"])
    g["W1"], g["c1"] = c["n1"].reshape(-1, D).T @ du.reshape(-1, FF), du.reshape(-1, FF).sum(0)
    dn1 = dr2 + du @ p["W1"].T
    dr1, g["g1"], g["b1"] = layer_norm_back(dn1, c["ln1"], p["g1"])
    g["Wo"], g["bo"] = c["ctx"].reshape(-1, D).T @ dr1.reshape(-1, D), dr1.reshape(-1, D).sum(0)
    dctx = heads(dr1 @ p["Wo"].T)
    dpr = dctx @ c["v"].transpose(0, 1, 3, 2)
    dv = c["pr"].transpose(0, 1, 3, 2) @ dctx
    ds = c["pr"] * (dpr - (dpr * c["pr"]).sum(-1, keepdims=True)) / np.sqrt(DH)
    dq, dk = ds @ c["k"], ds.transpose(0, 1, 3, 2) @ c["q"]
    dqkv = np.concatenate([t.transpose(0, 2, 1, 3).reshape(B, T, D) for t in (dq, dk, dv)], axis=-1)
    g["Win"], g["bin"] = c["h0"].reshape(-1, D).T @ dqkv.reshape(-1, 3 * D), dqkv.reshape(-1, 3 * D).sum(0)
    dh0 = dr1 + dqkv @ p["Win"].T
    g["We"], g["pos"] = c["x"].reshape(-1, F).T @ dh0.reshape(-1, D), dh0.sum(0)
    return g


def train(x_tr, y_tr, x_te, y_te, epochs=150, lr=3e-3):
    rng = np.random.default_rng(SEED)
    p = init(rng)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    s = {k: np.zeros_like(v) for k, v in p.items()}
    step = 0
    for ep in range(epochs):
        order = rng.permutation(len(x_tr))
        a = lr * 0.5 * (1 + np.cos(np.pi * ep / epochs))
        for i in range(0, len(order), 32):
            idx = order[i:i + 32]
            logits, cache = forward(p, x_tr[idx])
            e = np.exp(logits - logits.max(1, keepdims=True))
            prob = e / e.sum(1, keepdims=True)
            prob[np.arange(len(idx)), y_tr[idx]] -= 1
            grads = backward(p, cache, prob / len(idx))
            step += 1
            for k in p:
                gk = grads[k] + (1e-4 * p[k] if k.startswith("W") else 0)
                m[k] = 0.9 * m[k] + 0.1 * gk
                s[k] = 0.999 * s[k] + 0.001 * gk * gk
                p[k] -= a * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(s[k] / (1 - 0.999 ** step)) + 1e-8)
        if ep % 25 == 24 or ep == epochs - 1:
            acc = (forward(p, x_te)[0].argmax(1) == y_te).mean()
            print(f"epoch {ep + 1:3d} test acc {acc:.4f}")
    return p


def to_onnx(p, path):
    f32 = {k: numpy_helper.from_array(v.astype(np.float32), k) for k, v in p.items()}
    ints = {name: numpy_helper.from_array(np.array(v, np.int64), name) for name, v in {
        "split3": [D, D, D], "heads_shape": [1, T, H, DH], "model_shape": [1, T, D]}.items()}
    scale = numpy_helper.from_array(np.array(1 / np.sqrt(DH), np.float32), "scale")
    n = helper.make_node
    nodes = [
        n("MatMul", ["input", "We"], ["emb"]), n("Add", ["emb", "pos"], ["h0"]),
        n("MatMul", ["h0", "Win"], ["qkv_mm"]), n("Add", ["qkv_mm", "bin"], ["qkv"]),
        n("Split", ["qkv", "split3"], ["q", "k", "v"], axis=-1),
    ]
    for t in "qkv":
        nodes += [n("Reshape", [t, "heads_shape"], [t + "_r"]),
                  n("Transpose", [t + "_r"], [t + "_h"], perm=[0, 2, 1, 3])]
    nodes += [
        n("Mul", ["q_h", "scale"], ["q_s"]),
        n("Transpose", ["k_h"], ["k_t"], perm=[0, 1, 3, 2]),
        n("MatMul", ["q_s", "k_t"], ["scores"]), n("Softmax", ["scores"], ["attn"], axis=-1),
        n("MatMul", ["attn", "v_h"], ["ctx_h"]), n("Transpose", ["ctx_h"], ["ctx_t"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx_t", "model_shape"], ["ctx"]),
        n("MatMul", ["ctx", "Wo"], ["ao_mm"]), n("Add", ["ao_mm", "bo"], ["ao"]),
        n("Add", ["h0", "ao"], ["r1"]),
        n("LayerNormalization", ["r1", "g1", "b1"], ["n1"], axis=-1, epsilon=EPS),
        n("MatMul", ["n1", "W1"], ["u_mm"]), n("Add", ["u_mm", "c1"], ["u"]), n("Gelu", ["u"], ["gu"]),
        n("MatMul", ["gu", "W2"], ["f_mm"]), n("Add", ["f_mm", "c2"], ["f"]),
        n("Add", ["n1", "f"], ["r2"]),
        n("LayerNormalization", ["r2", "g2", "b2"], ["n2"], axis=-1, epsilon=EPS),
        n("ReduceMean", ["n2", "axis1"], ["pooled"], keepdims=0),
        n("Gemm", ["pooled", "Wc", "bc"], ["output"]),
    ]
    for node in nodes:
        node.name = node.output[0]                     # layers show in edgec's reports by their output's name
    axis1 = numpy_helper.from_array(np.array([1], np.int64), "axis1")
    inits = [f32[k] for k in p] + list(ints.values()) + [scale, axis1]
    graph = helper.make_graph(nodes, "transformer_digits",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, T, F])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, C])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="edgec-example")
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def main():
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)                      # [N, 8 rows = tokens, 8 pixels]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    p = train(x_tr.astype(np.float64), y_tr, x_te.astype(np.float64), y_te)
    path = os.path.join(HERE, "model.onnx")
    to_onnx(p, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = np.concatenate([sess.run(None, {"input": x_te[i:i + 1]})[0] for i in range(len(x_te))])
    diff = np.abs(out - forward(p, x_te.astype(np.float64))[0]).max()
    acc = (out.argmax(1) == y_te).mean()
    print(f"max |onnx - numpy| = {diff:.2e}; onnxruntime float test accuracy {acc * 100:.2f}%")
    assert diff < 1e-3 and acc >= 0.93, (diff, acc)
    rng = np.random.default_rng(SEED)
    ci = np.sort(rng.choice(len(x_tr), N_CALIB, replace=False))
    np.savez_compressed(os.path.join(HERE, "calib.npz"), x=x_tr[ci], y=y_tr[ci])
    np.savez_compressed(os.path.join(HERE, "test.npz"), x=x_te, y=y_te)
    print(f"wrote model.onnx, calib.npz ({N_CALIB}), test.npz ({len(x_te)})")


if __name__ == "__main__":
    main()
