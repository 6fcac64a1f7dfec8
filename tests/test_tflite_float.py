"""edgec/frontend/tflite_float.py and tflite_float_ops.py: a float .tflite (float32, float16 weights through
DEQUANTIZE, dynamic-range int8 weights) translated into a float ONNX model that computes what TFLite Micro's float
interpreter computes on the same file, then built from a calibration set as any float ONNX model."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import tflite_oracle as oracle
from tflite_oracle import Case, Node, T
from edgec import api
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.frontend import tflite_float

F32, F16, I32, I8 = 0, 1, 2, 9


def _conv_opts(stride, act, padding=0, mult=None):
    o = {"Padding": padding, "StrideW": stride, "StrideH": stride, "FusedActivationFunction": act,
         "DilationWFactor": 1, "DilationHFactor": 1}
    return ("DepthwiseConv2DOptions", dict(o, DepthMultiplier=mult)) if mult else ("Conv2DOptions", o)


def _pool(kind, k, stride, padding, act=0):
    return Node(kind, *k, ("Pool2DOptions", {"Padding": padding, "StrideW": stride[0], "StrideH": stride[1],
                                             "FilterWidth": stride[2], "FilterHeight": stride[3],
                                             "FusedActivationFunction": act}))


def cnn_case(rng, weights: str = "float32") -> Case:
    """A 7x7x3 CNN through every layout change: conv (SAME, odd size), depthwise x2 stride 2, a per-channel ADD
    constant, SAME max and average pools (TFLite's padding and divisor), CONCATENATION on channels, PAD, MUL of
    two branches, RELU6 / LOGISTIC / TANH, MEAN over space, RESHAPE, FULLY_CONNECTED, SOFTMAX. weights
    "float16": each weight a float16 constant read through DEQUANTIZE; "int8": dynamic-range int8 weights
    (per-channel scales; read straight by the layers, as TFLite's hybrid kernels), "int8-dequantize": the same
    through DEQUANTIZE."""
    def f(*s):
        return (rng.standard_normal(s) * 0.5).astype(np.float32)

    ts, nodes = [T((1, 7, 7, 3), [], [], F32)], []

    def add(t):
        ts.append(t)
        return len(ts) - 1

    def weight(w, axis=0):
        if weights == "float16":
            k = add(T(w.shape, [], [], F16, data=w.astype(np.float16)))
            y = add(T(w.shape, [], [], F32))
            nodes.append(Node("DEQUANTIZE", [k], y))
            return y
        if weights in ("int8", "int8-dequantize"):
            scale = np.abs(w).max(axis=tuple(a for a in range(w.ndim) if a != axis)) / 127
            q = np.clip(np.round(np.moveaxis(np.moveaxis(w, axis, -1) / scale, -1, axis)), -127, 127).astype(np.int8)
            k = add(T(w.shape, list(scale.astype(np.float32)), [0] * scale.size, I8, data=q, axis=axis))
            if weights == "int8":            # read straight by the layer (TFLite's hybrid kernels)
                return k
            y = add(T(w.shape, [], [], F32))
            nodes.append(Node("DEQUANTIZE", [k], y))
            return y
        return add(T(w.shape, [], [], F32, data=w))

    def act(shape):
        return add(T(shape, [], [], F32))

    c1 = act((1, 7, 7, 4))
    nodes.append(Node("CONV_2D", [0, weight(f(4, 3, 3, 3)), add(T((4,), [], [], F32, data=f(4)))], c1,
                      _conv_opts(1, 1)))
    d1 = act((1, 4, 4, 8))
    nodes.append(Node("DEPTHWISE_CONV_2D", [c1, weight(f(1, 3, 3, 8), 3), add(T((8,), [], [], F32, data=f(8)))], d1,
                      _conv_opts(2, 3, mult=2)))
    a1 = act((1, 4, 4, 8))
    nodes.append(Node("ADD", [d1, add(T((8,), [], [], F32, data=f(8)))], a1, ("AddOptions", {"FusedActivationFunction": 0})))
    m1, p1 = act((1, 2, 2, 8)), act((1, 2, 2, 8))
    nodes.append(_pool("MAX_POOL_2D", ([a1], m1), (2, 2, 3, 3), 0))
    nodes.append(_pool("AVERAGE_POOL_2D", ([a1], p1), (2, 2, 3, 3), 0, act=1))
    cat = act((1, 2, 2, 16))
    nodes.append(Node("CONCATENATION", [m1, p1], cat, ("ConcatenationOptions", {"Axis": -1, "FusedActivationFunction": 0})))
    padded = act((1, 4, 3, 16))
    nodes.append(Node("PAD", [cat, add(T((4, 2), [], [], I32, data=np.array([[0, 0], [1, 1], [0, 1], [0, 0]], np.int32)))],
                      padded))
    sig, th, prod = act((1, 4, 3, 16)), act((1, 4, 3, 16)), act((1, 4, 3, 16))
    nodes += [Node("LOGISTIC", [padded], sig), Node("TANH", [padded], th),
              Node("MUL", [sig, th], prod, ("MulOptions", {"FusedActivationFunction": 0}))]
    flat, mean = act((1, 192)), act((1, 16))
    nodes.append(Node("RESHAPE", [prod, add(T((2,), [], [], I32, data=np.array([1, 192], np.int32)))], flat))
    nodes.append(Node("MEAN", [prod, add(T((2,), [], [], I32, data=np.array([1, 2], np.int32)))], mean,
                      ("ReducerOptions", {"KeepDims": False})))
    fc1, fc2, both = act((1, 6)), act((1, 6)), act((1, 6))
    nodes.append(Node("FULLY_CONNECTED", [flat, weight(f(6, 192) * 0.1), add(T((6,), [], [], F32, data=f(6)))], fc1,
                      ("FullyConnectedOptions", {"FusedActivationFunction": 0})))
    nodes.append(Node("FULLY_CONNECTED", [mean, weight(f(6, 16)), -1], fc2,
                      ("FullyConnectedOptions", {"FusedActivationFunction": 3})))
    nodes.append(Node("SUB", [fc1, fc2], both, ("SubOptions", {"FusedActivationFunction": 0})))
    y = act((1, 6))
    nodes.append(Node("SOFTMAX", [both], y, ("SoftmaxOptions", {"Beta": 1.0})))
    return Case(f"cnn_{weights}", ts, nodes, 0, y)


def _as_float32(case: Case) -> Case:
    """The same model with every weight stored as the float32 value it means (float16, or int8 x scale) and no
    DEQUANTIZE: TFLite Micro's float kernels run it (they take neither float16 nor hybrid int8 weights)."""
    ts, nodes, fold = list(case.tensors), [], {}
    for n in case.nodes:
        if n.op == "DEQUANTIZE":
            fold[n.output] = n.inputs[0]
            continue
        nodes.append(Node(n.op, [fold.get(k, k) for k in n.inputs], n.output, n.options))
    for i, t in enumerate(ts):
        if t.data is not None and t.dtype in (F16, I8):
            w = t.data.astype(np.float32)
            if t.dtype == I8:
                shape = [1] * w.ndim
                shape[t.axis] = len(t.scale)
                w = w * np.asarray(t.scale, np.float32).reshape(shape)
            ts[i] = T(t.shape, [], [], F32, data=w.astype(np.float32))
    return Case(case.name + "_f32", ts, nodes, case.input, case.output)


def _onnx_outputs(path, x) -> np.ndarray:
    sess = ort.InferenceSession(tflite_float.to_onnx(path).SerializeToString())
    name = sess.get_inputs()[0].name
    return np.stack([sess.run(None, {name: xi})[0].reshape(-1) for xi in x])


@pytest.mark.parametrize("weights", ["float32", "float16", "int8", "int8-dequantize"])
def test_the_translation_computes_what_tflite_micro_computes(tmp_path, weights):
    rng = np.random.default_rng(3)
    case = cnn_case(rng, weights)
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(case))
    assert tflite_float.is_float(path) and tflite_float.float_tflite(path)
    assert not tflite_float.quantized_tflite(path)
    x = rng.standard_normal((6, 1, 7, 7, 3)).astype(np.float32)
    want = oracle.tflm(oracle.write(_as_float32(case)), x)
    got = _onnx_outputs(path, x)
    assert got.shape == want.shape == (6, 6)
    assert np.abs(got - want).max() < 1e-5, np.abs(got - want).max()
    assert np.abs(want - want.mean(0)).max() > 1e-3        # the outputs depend on the input


def test_a_quantized_tflite_is_not_taken_for_a_float_one(tmp_path):
    case, _ = oracle.conv_case(np.random.default_rng(0), "conv")
    path = tmp_path / "q.tflite"
    path.write_bytes(oracle.write(case))
    assert tflite_float.quantized_tflite(path) and not tflite_float.float_tflite(path)
    onnx_path = tmp_path / "m.onnx"
    onnx_path.write_bytes(b"\x08\x07")
    assert not tflite_float.quantized_tflite(onnx_path) and not tflite_float.float_tflite(onnx_path)


def test_operators_not_translated_are_named_at_once(tmp_path):
    ts = [T((1, 4, 4, 4), [], [], F32), T((1, 2, 2, 16), [], [], F32), T((1, 2, 2, 16), [], [], F32),
          T((1, 2, 2, 16), [], [], F32)]
    nodes = [Node("SPACE_TO_BATCH_ND", [0], 1),
             Node("LOCAL_RESPONSE_NORMALIZATION", [1], 2),
             Node("RELU", [2], 3)]
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(Case("two", ts, nodes, 0, 3)))
    with pytest.raises(EdgecError) as e:
        tflite_float.to_onnx(path)
    line = str(e.value)
    assert "\n" not in line and "2 operator(s)" in line, line
    assert "SPACE_TO_BATCH_ND (operator #0)" in line and "LOCAL_RESPONSE_NORMALIZATION (operator #1)" in line, line


def test_a_float_tflite_without_calibration_data_says_it_needs_one(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(cnn_case(np.random.default_rng(0))))
    with pytest.raises(EdgecError) as e:
        api.build(path, None, "host", tmp_path / "out", firmware=False)
    line = str(e.value)
    assert "\n" not in line and "a float .tflite" in line and "needs a calibration set" in line and "--calib" in line


def test_the_cli_says_it_in_one_line_and_exits_non_zero(tmp_path, capsys):
    from edgec import cli

    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(cnn_case(np.random.default_rng(0), "float16")))
    code = cli.main(["build", str(path), "--board", "host", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "\n" not in err and "needs a calibration set" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_the_quantized_importer_still_says_what_a_float_file_needs(tmp_path):
    """edgec/frontend/tflite.py (inspect's view of a quantized file) reading a float one: one line, --calib."""
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(cnn_case(np.random.default_rng(0), "int8")))
    with pytest.raises(EdgecError, match=r"a float or dynamic-range \.tflite .*--calib FILE\.npz") as e:
        importer.load(path, "m")
    assert "\n" not in str(e.value)


def _sqnr(ref, y) -> float:
    return float(10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - y) ** 2), 1e-30)))


@pytest.mark.parametrize("weights", ["float16"])
def test_a_float_tflite_builds_from_a_calibration_set(tmp_path, weights):
    """Quantized from the calibration set as a float ONNX model (per-channel int8 weights, int8 activations):
    edgec's integer reference is within 25 dB of TFLite Micro's float outputs; the build folder's model.onnx is
    the float translation the bench compares against."""
    rng = np.random.default_rng(5)
    case = cnn_case(rng, weights)
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(case))
    calib = rng.standard_normal((48, 7, 7, 3)).astype(np.float32)
    x = rng.standard_normal((8, 1, 7, 7, 3)).astype(np.float32)
    report = api.build(path, {"x": calib}, "host", tmp_path / "out", firmware=False)
    assert report["quantization"]["per_channel"] is True
    assert (tmp_path / "out" / "model.onnx").is_file() and not (tmp_path / "out" / "model.tflite").exists()
    want = oracle.tflm(oracle.write(_as_float32(case)), x)
    got = np.stack([np.asarray(api.reference(tmp_path / "out", xi).y).reshape(-1) for xi in x])
    assert _sqnr(want, got) > 25, _sqnr(want, got)


# ---- files written by TensorFlow's TFLiteConverter (scripts/make_float_tflite.py) -----------------------------
DATA = Path(__file__).parent / "data" / "float_tflite"
CONVERTED = [f"{m}_{how}" for m in ("cnn", "audio", "tokens") for how in ("float32", "float16", "dynamic")]


@pytest.mark.parametrize("stem", CONVERTED)
def test_converter_files_translate_to_what_tf_lite_computes(stem):
    """Keras models through TFLiteConverter (float32; float16 weights through DEQUANTIZE; dynamic-range int8
    weights, a Keras Flatten's SHAPE -> STRIDED_SLICE -> PACK, Conv1D as EXPAND_DIMS / CONV_2D / RESHAPE, a
    BatchNorm left as MUL + ADD): the translation's outputs are TF Lite's float outputs on the same file. TF Lite's
    hybrid kernels quantize a dynamic-range file's activations on the fly, the translation computes them in float
    with the file's int8 weights: those agree to within 55 dB."""
    model, how = stem.split("_")
    oracle_npz = np.load(DATA / f"{model}_oracle.npz")
    x, want = oracle_npz["x"], oracle_npz[f"y_{stem}"]
    got = _onnx_outputs(DATA / f"{stem}.tflite", x[:, None])
    if how == "dynamic":
        assert _sqnr(want, got) > 55, _sqnr(want, got)
    else:
        assert np.abs(got - want).max() <= 1e-6 * max(1.0, np.abs(want).max()) * 10, np.abs(got - want).max()
    if how == "float32" and model != "tokens":   # and TFLite Micro's float kernels (it has no REDUCE_PROD)
        assert np.abs(oracle.tflm((DATA / f"{stem}.tflite").read_bytes(), x[:, None]) - got).max() < 1e-5


@pytest.mark.parametrize("stem", [s if s == "audio_dynamic" else pytest.param(s, marks=pytest.mark.sweep)
                                  for s in CONVERTED])
def test_converter_files_build_as_close_to_float_as_tflite_s_own_int8(tmp_path, stem):
    """Quantized by edgec from the calibration set the float model came with: edgec's INT8 reference at least as
    close to TF Lite's float outputs (SQNR) as TFLiteConverter's own full-INT8 PTQ of the same Keras model on the
    same calibration set. tokens_*: the converter's placeholder shapes resolved (a Dense over 4 tokens) and the
    LayerNormalization's MEAN / SQUARED_DIFFERENCE / RSQRT / MUL / NEG / ADD read as one layer_norm
    (edgec/frontend/decomposed.py; run link by link it was 21.6 dB against TFLiteConverter's 24.3, now 34.0)."""
    model, how = stem.split("_")
    o = np.load(DATA / f"{model}_oracle.npz")
    api.build(DATA / f"{stem}.tflite", DATA / f"{model}_calib.npz", "host", tmp_path / "out", firmware=False)
    got = np.stack([np.asarray(api.reference(tmp_path / "out", xi).y).reshape(-1) for xi in o["x"]])
    ours, tflites = _sqnr(o[f"y_{model}_float32"], got), _sqnr(o[f"y_{model}_float32"], o[f"y_{model}_int8"])
    assert ours >= tflites, (ours, tflites)


def test_tflm_hello_world_float_sine_model(tmp_path):
    """TFLite Micro's own float sine model (the corpus's tflm_hello_world_float): the translation computes what
    TFLite Micro's float interpreter computes, and edgec's INT8 of it, calibrated on 64 points of [0, 2 pi], is at
    least as close to the float model as the INT8 model TFLite Micro's example ships (the corpus's
    tflm_hello_world_int8, TFLiteConverter's PTQ of the same network) on 50 other points."""
    from edgec.quant import reference

    path = Path(__file__).parent / "corpus" / "tflm_hello_world_float" / "model.tflite"
    x = np.linspace(0.05, 2 * np.pi - 0.05, 50, dtype=np.float32).reshape(50, 1, 1)
    want = oracle.tflm(path.read_bytes(), x)
    assert np.abs(_onnx_outputs(path, x) - want).max() < 1e-5
    assert np.abs(want.reshape(-1) - np.sin(x.reshape(-1))).max() < 0.1       # it is the sine model
    calib = np.linspace(0, 2 * np.pi, 64, dtype=np.float32).reshape(64, 1)
    api.build(path, {"x": calib}, "host", tmp_path / "out", firmware=False)
    ours = np.stack([np.asarray(api.reference(tmp_path / "out", xi).y).reshape(-1) for xi in x])
    shipped = Path(__file__).parent / "corpus" / "tflm_hello_world_int8" / "model.tflite"
    graph = importer.load(shipped, "hello_int8")
    t_in, t_out = graph.tensors[graph.input], graph.tensors[graph.output]
    xq = np.clip(np.round(x.reshape(-1) / t_in.scale) + t_in.zero_point, -128, 127).astype(np.int8)
    theirs = np.array([(int(np.asarray(reference.run(graph, np.array([q]))).reshape(-1)[0]) - t_out.zero_point)
                       * t_out.scale for q in xq], np.float32)
    assert _sqnr(want.reshape(-1), ours.reshape(-1)) >= _sqnr(want.reshape(-1), theirs), \
        (_sqnr(want.reshape(-1), ours.reshape(-1)), _sqnr(want.reshape(-1), theirs))


SINGLE = [("RELU6", None), ("LEAKY_RELU", ("LeakyReluOptions", {"Alpha": 0.2})), ("HARD_SWISH", None),
          ("ELU", None), ("ABS", None), ("EXP", None), ("NEG", None), ("SQRT", None), ("RSQRT", None), ("LOG", None),
          ("DIV", ("DivOptions", {"FusedActivationFunction": 0})), ("MAXIMUM", None), ("MINIMUM", None),
          ("SQUARED_DIFFERENCE", None), ("SUM", ("ReducerOptions", {"KeepDims": True})),
          ("REDUCE_MAX", ("ReducerOptions", {"KeepDims": False})), ("TRANSPOSE", None), ("PADV2", None)]


@pytest.mark.parametrize("kind,options", SINGLE, ids=[k for k, _ in SINGLE])
def test_each_operator_against_tflite_micro(tmp_path, kind, options):
    """The operators cnn_case leaves out, each alone on a 1x3x4x5 float input (positive where the function needs
    it; a second operand a per-channel constant), against TFLite Micro's float kernel."""
    rng = np.random.default_rng(7)
    shape, ts = (1, 3, 4, 5), [T((1, 3, 4, 5), [], [], F32)]
    positive = kind in ("SQRT", "RSQRT", "LOG", "DIV")
    ins = [0]
    if kind in ("DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"):
        ts.append(T((5,), [], [], F32, data=(rng.uniform(0.5, 2, 5) * (1 if positive else rng.choice([-1, 1], 5)))
                    .astype(np.float32)))
        ins.append(1)
    out = shape
    if kind in ("SUM", "REDUCE_MAX"):
        ts.append(T((2,), [], [], I32, data=np.array([1, 2], np.int32)))
        ins.append(len(ts) - 1)
        out = (1, 1, 1, 5) if kind == "SUM" else (1, 5)
    if kind == "TRANSPOSE":
        ts.append(T((4,), [], [], I32, data=np.array([0, 2, 1, 3], np.int32)))
        ins.append(len(ts) - 1)
        out = (1, 4, 3, 5)
    if kind == "PADV2":
        ts += [T((4, 2), [], [], I32, data=np.array([[0, 0], [1, 0], [0, 2], [1, 1]], np.int32)),
               T((), [], [], F32, data=np.array(0.75, np.float32))]
        ins += [len(ts) - 2, len(ts) - 1]
        out = (1, 4, 6, 7)
    ts.append(T(out, [], [], F32))
    model = oracle.write(Case(kind, ts, [Node(kind, ins, len(ts) - 1, options)], 0, len(ts) - 1))
    x = rng.standard_normal((4, *shape)).astype(np.float32) * 2
    x = np.abs(x) + 0.1 if positive else x
    want = oracle.tflm(model, x)
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    got = _onnx_outputs(path, x)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()


def test_several_inputs_and_outputs(tmp_path):
    """Two float inputs, two outputs (a 4-D one and a 2-D one): the ONNX ports by the file's tensor names, in its
    order, each in the file's layout; built from a calibration set with one array per input."""
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((4, 3, 3, 2)) * 0.5).astype(np.float32)
    ts = [T((1, 5, 5, 2), [], [], F32), T((1, 5, 5, 2), [], [], F32), T((1, 5, 5, 2), [], [], F32),
          T(w.shape, [], [], F32, data=w), T((1, 5, 5, 4), [], [], F32), T((2,), [], [], I32, data=np.array([1, 2], np.int32)),
          T((1, 4), [], [], F32)]
    nodes = [Node("ADD", [0, 1], 2, ("AddOptions", {"FusedActivationFunction": 0})),
             Node("CONV_2D", [2, 3, -1], 4, _conv_opts(1, 1)),
             Node("MEAN", [4, 5], 6, ("ReducerOptions", {"KeepDims": False}))]
    model = oracle.write(Case("two", ts, nodes, [0, 1], [4, 6]))
    path = tmp_path / "two.tflite"
    path.write_bytes(model)
    a, b = (rng.standard_normal((3, 1, 5, 5, 2)).astype(np.float32) for _ in range(2))
    want = oracle.tflm(model, [a, b])
    m = tflite_float.to_onnx(path)
    assert [i.name for i in m.graph.input] == ["t0", "t1"] and [o.name for o in m.graph.output] == ["t4", "t6"]
    sess = ort.InferenceSession(m.SerializeToString())
    got = np.stack([np.concatenate([y.reshape(-1) for y in sess.run(None, {"t0": ai, "t1": bi})]) for ai, bi in zip(a, b)])
    assert np.abs(got - want).max() < 1e-5
    calib = {"x_t0": rng.standard_normal((16, 5, 5, 2)).astype(np.float32),
             "x_t1": rng.standard_normal((16, 5, 5, 2)).astype(np.float32)}
    report = api.build(path, calib, "host", tmp_path / "out", firmware=False)
    assert [p["name"] for p in report["ports"]["inputs"]] == ["t0", "t1"], report["ports"]


def test_a_reason_shared_by_every_operator_of_a_kind_is_said_once():
    assert tflite_float._listed(["#1: control flow", "#2: control flow"]) == "#1, #2: control flow"
    assert tflite_float._listed([f"#{i}: x" for i in range(5)]) == "#0, #1, #2 and 2 more: x"
    assert tflite_float._listed(["#1: a", "#2: b"]) == "#1: a, #2: b"
    assert tflite_float._listed(["#1", "#2"]) == "#1, #2"
