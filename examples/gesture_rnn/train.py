"""Train an LSTM and a GRU gesture classifier on 3-axis accelerometer windows, in NumPy, and export both to ONNX
as PyTorch's TorchScript exporter writes `nn.LSTM` / `nn.GRU` (batch_first=True, no initial state) followed by
`nn.Linear` on the last step and a Softmax.

torch is not used (its CPU wheels are not on PyPI): the models are trained here with hand-written
backpropagation through time and Adam, and the ONNX graphs are built with onnx.helper node for node as
torch.onnx.export (opset 14, dynamo=False) emits them: the input Transpose to time-major, the zero initial
states made by Shape -> Gather -> Unsqueeze -> Concat -> Expand, the LSTM/GRU node with all its outputs named
(the GRU with linear_before_reset=1), Squeeze of the direction axis, the Transpose back to batch first, Gather
of the last step, Gemm and Softmax.

Data: synthetic but physically motivated accelerometer gestures (see gestures()), 20 Hz, 32 samples (1.6 s),
in g. Writes next to this file: lstm.onnx, gru.onnx, calib.npz (x, y), test.npz (x, y). Deterministic.
    python train.py
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, RATE, CHANNELS, HIDDEN = 32, 20.0, 3, 24
CLASSES = ["idle", "shake", "circle", "tap", "swipe_right", "swipe_left"]


# ---- data ---------------------------------------------------------------------------------------------
def _rotation(r, max_deg):
    """A random small 3-D rotation (how the wrist holds the device)."""
    a = np.radians(r.uniform(-max_deg, max_deg, 3))
    cx, cy, cz, sx, sy, sz = *np.cos(a), *np.sin(a)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def gesture(r, label):
    """One window [STEPS, 3] in g: gravity along z through a random wrist orientation, the gesture's linear
    acceleration, a slow drift, sensor bias and white noise (about an MPU-6050's at 20 Hz)."""
    t = np.arange(STEPS) / RATE
    amp, tempo = r.uniform(0.6, 1.4), r.uniform(0.8, 1.25)
    t0 = r.uniform(0.3, 1.1)                          # when the gesture happens in the window
    a = np.zeros((STEPS, 3))
    if label == 1:      # shake: 3-5 Hz oscillation along x, decaying
        f = r.uniform(3.0, 5.0)
        a[:, 0] = amp * 1.2 * np.sin(2 * np.pi * f * t + r.uniform(0, 6.3)) * np.exp(-r.uniform(0, 0.8) * t)
    elif label == 2:    # circle: ~1 Hz rotation in the x-y plane, either way round
        f, sgn = tempo * r.uniform(0.8, 1.3), r.choice([-1, 1])
        ph = r.uniform(0, 6.3)
        a[:, 0] = amp * 0.6 * np.cos(2 * np.pi * f * t + ph)
        a[:, 1] = sgn * amp * 0.6 * np.sin(2 * np.pi * f * t + ph)
    elif label == 3:    # tap: one to three sharp impulses along z with ringing
        for k in range(r.integers(1, 4)):
            tk = t0 + 0.3 * k * tempo
            d = t - tk
            a[:, 2] += np.where(d >= 0, amp * 1.5 * np.exp(-d / 0.05) * np.cos(2 * np.pi * 6 * d), 0)
    elif label in (4, 5):   # swipe: accelerate then decelerate along +x (right) or -x (left)
        w = 0.12 * tempo
        d = (t - t0) / w
        sgn = 1 if label == 4 else -1
        a[:, 0] = sgn * amp * 0.9 * d * np.exp(-0.5 * d * d) * 1.6
        a[:, 2] += 0.15 * amp * np.exp(-0.5 * d * d)           # the hand lifts a little
    a[:, :] += np.cumsum(r.normal(0, 0.004, (STEPS, 3)), axis=0)  # slow drift (body movement)
    rot = _rotation(r, 25)
    g = rot @ np.array([0.0, 0.0, 1.0])
    x = a @ rot.T + g + r.normal(0, 0.03, 3) + r.normal(0, 0.04, (STEPS, 3))
    return x.astype(np.float32)


def gestures(n, seed):
    r = np.random.default_rng(seed)
    y = r.integers(0, len(CLASSES), n)
    return np.stack([gesture(r, int(k)) for k in y]), y.astype(np.int64)


# ---- models: forward, backward (ONNX gate order) ------------------------------------------------------
def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def init_params(r, kind):
    g = 4 if kind == "lstm" else 3
    s = 1.0 / np.sqrt(HIDDEN)
    p = {"W": r.uniform(-s, s, (g * HIDDEN, CHANNELS)), "R": r.uniform(-s, s, (g * HIDDEN, HIDDEN)),
         "Wb": np.zeros(g * HIDDEN), "Rb": np.zeros(g * HIDDEN),
         "fc_w": r.uniform(-s, s, (len(CLASSES), HIDDEN)), "fc_b": np.zeros(len(CLASSES))}
    if kind == "lstm":
        p["Wb"][2 * HIDDEN:3 * HIDDEN] = 1.0          # forget gate bias 1 (the usual initialization)
    return p


def forward(p, kind, x):
    """x [N, T, C] -> logits [N, classes], and what backward needs."""
    n, hid = x.shape[0], HIDDEN
    h, c = np.zeros((n, hid)), np.zeros((n, hid))
    cache = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        if kind == "lstm":
            a = xt @ p["W"].T + h @ p["R"].T + p["Wb"] + p["Rb"]
            i, o, f, g = _sig(a[:, :hid]), _sig(a[:, hid:2 * hid]), _sig(a[:, 2 * hid:3 * hid]), np.tanh(a[:, 3 * hid:])
            c_new = f * c + i * g
            h_new = o * np.tanh(c_new)
            cache.append((xt, h, c, i, o, f, g, c_new))
            h, c = h_new, c_new
        else:
            a = xt @ p["W"].T + p["Wb"]
            zr = _sig(a[:, :2 * hid] + h @ p["R"][:2 * hid].T + p["Rb"][:2 * hid])
            z, rr = zr[:, :hid], zr[:, hid:]
            hn = h @ p["R"][2 * hid:].T + p["Rb"][2 * hid:]
            nn_ = np.tanh(a[:, 2 * hid:] + rr * hn)
            h_new = (1 - z) * nn_ + z * h
            cache.append((xt, h, z, rr, hn, nn_))
            h = h_new
    return h @ p["fc_w"].T + p["fc_b"], (cache, h)


def backward(p, kind, logits, y, state):
    cache, h_last = state
    n, hid = logits.shape[0], HIDDEN
    prob = np.exp(logits - logits.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    dlog = prob.copy()
    dlog[np.arange(n), y] -= 1
    dlog /= n
    gr = {k: np.zeros_like(v) for k, v in p.items()}
    gr["fc_w"], gr["fc_b"] = dlog.T @ h_last, dlog.sum(0)
    dh = dlog @ p["fc_w"]
    dc = np.zeros((n, hid))
    for entry in reversed(cache):
        if kind == "lstm":
            xt, h, c, i, o, f, g, c_new = entry
            tc = np.tanh(c_new)
            dc = dc + dh * o * (1 - tc * tc)
            da = np.concatenate([dc * g * i * (1 - i), dh * tc * o * (1 - o), dc * c * f * (1 - f),
                                 dc * i * (1 - g * g)], axis=1)
            gr["W"] += da.T @ xt
            gr["R"] += da.T @ h
            gr["Wb"] += da.sum(0)
            gr["Rb"] += da.sum(0)
            dh, dc = da @ p["R"], dc * f
        else:
            xt, h, z, rr, hn, nn_ = entry
            dn = dh * (1 - z) * (1 - nn_ * nn_)
            dz = dh * (h - nn_) * z * (1 - z)
            dhn = dn * rr
            dr = dn * hn * rr * (1 - rr)
            dzr = np.concatenate([dz, dr], axis=1)
            gr["W"] += np.concatenate([dzr, dn], axis=1).T @ xt
            gr["Wb"] += np.concatenate([dzr, dn], axis=1).sum(0)
            gr["R"][:2 * hid] += dzr.T @ h
            gr["R"][2 * hid:] += dhn.T @ h
            gr["Rb"][:2 * hid] += dzr.sum(0)
            gr["Rb"][2 * hid:] += dhn.sum(0)
            dh = dh * z + dzr @ p["R"][:2 * hid] + dhn @ p["R"][2 * hid:]
    return gr


def train(kind, x, y, seed, epochs=40, batch=32, lr=0.01):
    r = np.random.default_rng(seed)
    p = init_params(r, kind)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v2 = {k: np.zeros_like(v) for k, v in p.items()}
    step = 0
    for epoch in range(epochs):
        order = r.permutation(len(x))
        for b in range(0, len(x), batch):
            idx = order[b:b + batch]
            logits, state = forward(p, kind, x[idx])
            gr = backward(p, kind, logits, y[idx], state)
            step += 1
            for k in p:
                gk = np.clip(gr[k], -1, 1)
                m[k] = 0.9 * m[k] + 0.1 * gk
                v2[k] = 0.999 * v2[k] + 0.001 * gk * gk
                rate = lr * (0.5 if epoch >= epochs * 0.6 else 1.0) * (0.2 if epoch >= epochs * 0.85 else 1.0)
                p[k] -= rate * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v2[k] / (1 - 0.999 ** step)) + 1e-8)
    return p


# ---- ONNX, as torch.onnx.export writes it ---------------------------------------------------------------
def export(p, kind, path):
    g = 4 if kind == "lstm" else 3
    f32 = lambda a: np.asarray(a, np.float32)   # noqa: E731
    inits = [numpy_helper.from_array(f32(p["W"])[None], "onnx::LSTM_W" if kind == "lstm" else "onnx::GRU_W"),
             numpy_helper.from_array(f32(p["R"])[None], "onnx::R"),
             numpy_helper.from_array(f32(np.concatenate([p["Wb"], p["Rb"]]))[None], "onnx::B"),
             numpy_helper.from_array(f32(p["fc_w"]), "fc.weight"), numpy_helper.from_array(f32(p["fc_b"]), "fc.bias")]
    W = inits[0].name
    const = lambda name, v: helper.make_node("Constant", [], [name], name=name,   # noqa: E731
                                             value=numpy_helper.from_array(np.asarray(v), name + "_value"))
    state_chain = [
        helper.make_node("Shape", ["input"], ["/rnn/Shape_output_0"], name="/rnn/Shape"),
        const("/rnn/Constant_output_0", np.array(0, np.int64)),
        helper.make_node("Gather", ["/rnn/Shape_output_0", "/rnn/Constant_output_0"], ["/rnn/Gather_output_0"],
                         name="/rnn/Gather", axis=0),
        const("/rnn/Constant_1_output_0", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["/rnn/Gather_output_0", "/rnn/Constant_1_output_0"],
                         ["/rnn/Unsqueeze_output_0"], name="/rnn/Unsqueeze"),
        const("/rnn/Constant_2_output_0", np.array([1], np.int64)),
        const("/rnn/Constant_3_output_0", np.array([HIDDEN], np.int64)),
        helper.make_node("Concat", ["/rnn/Constant_2_output_0", "/rnn/Unsqueeze_output_0",
                                    "/rnn/Constant_3_output_0"], ["/rnn/Concat_output_0"], name="/rnn/Concat", axis=0),
        const("/rnn/Constant_4_output_0", np.array(0.0, np.float32)),
        helper.make_node("Expand", ["/rnn/Constant_4_output_0", "/rnn/Concat_output_0"], ["/rnn/Expand_output_0"],
                         name="/rnn/Expand"),
    ]
    states = ["/rnn/Expand_output_0", "/rnn/Expand_output_0"] if kind == "lstm" else ["/rnn/Expand_output_0"]
    outs = ["/rnn/LSTM_output_0", "/rnn/LSTM_output_1", "/rnn/LSTM_output_2"] if kind == "lstm" else \
        ["/rnn/GRU_output_0", "/rnn/GRU_output_1"]
    extra = {} if kind == "lstm" else {"linear_before_reset": 1}
    nodes = [helper.make_node("Transpose", ["input"], ["/rnn/Transpose_output_0"], name="/rnn/Transpose",
                              perm=[1, 0, 2])] + state_chain + [
        helper.make_node(kind.upper(), ["/rnn/Transpose_output_0", W, "onnx::R", "onnx::B", ""] + states, outs,
                         name=f"/rnn/{kind.upper()}", hidden_size=HIDDEN, **extra),
        const("/rnn/Constant_5_output_0", np.array([1], np.int64)),
        helper.make_node("Squeeze", [outs[0], "/rnn/Constant_5_output_0"], ["/rnn/Squeeze_output_0"],
                         name="/rnn/Squeeze"),
        helper.make_node("Transpose", ["/rnn/Squeeze_output_0"], ["/rnn/Transpose_1_output_0"],
                         name="/rnn/Transpose_1", perm=[1, 0, 2]),
        const("/Constant_output_0", np.array(-1, np.int64)),
        helper.make_node("Gather", ["/rnn/Transpose_1_output_0", "/Constant_output_0"], ["/Gather_output_0"],
                         name="/Gather", axis=1),
        helper.make_node("Gemm", ["/Gather_output_0", "fc.weight", "fc.bias"], ["/fc/Gemm_output_0"], name="/fc/Gemm",
                         alpha=1.0, beta=1.0, transB=1),
        helper.make_node("Softmax", ["/fc/Gemm_output_0"], ["output"], name="/softmax/Softmax", axis=1),
    ]
    graph = helper.make_graph(nodes, "main_graph",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, STEPS, CHANNELS])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, len(CLASSES)])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="pytorch",
                              producer_version="2.1.0")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    assert g in (3, 4)


def main():
    import onnxruntime as ort
    x_train, y_train = gestures(3000, seed=1)
    x_test, y_test = gestures(1000, seed=2)
    np.savez(os.path.join(HERE, "calib.npz"), x=x_train[:256], y=y_train[:256])
    np.savez(os.path.join(HERE, "test.npz"), x=x_test, y=y_test)
    for kind, lr in (("lstm", 0.02), ("gru", 0.01)):
        p = train(kind, x_train.astype(np.float64), y_train, seed=0, lr=lr)
        logits, _ = forward(p, kind, x_test.astype(np.float64))
        path = os.path.join(HERE, f"{kind}.onnx")
        export(p, kind, path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        prob = np.concatenate([sess.run(None, {"input": x_test[i:i + 1]})[0] for i in range(len(x_test))])
        assert np.abs(prob.argmax(1) - logits.argmax(1)).max() == 0, "the ONNX graph disagrees with training"
        print(f"{kind}: float test accuracy {np.mean(prob.argmax(1) == y_test) * 100:.2f} % ({len(x_test)} windows)")


if __name__ == "__main__":
    main()
