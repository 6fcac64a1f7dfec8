"""edgec/frontend/tflite_float_ops.py's BATCH_MATMUL, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR and GELU, each in a
.tflite written with the flatbuffers builder, translated to ONNX and run by ONNX Runtime against TFLite Micro's
float interpreter on the same file; GELU's translation is the one node edgec's canonicalizer takes
(edgec/frontend/decomposed.py); and one built from a calibration set as edgec quantizes it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import numpy_helper
import onnxruntime as ort
import pytest

import tflite_oracle as oracle
from tflite_oracle import Case, Node, T
from edgec import api
from edgec.frontend import tflite_float

F32, I32 = 0, 2


def _translated(path, x) -> np.ndarray:
    sess = ort.InferenceSession(tflite_float.to_onnx(path).SerializeToString())
    name = sess.get_inputs()[0].name
    return np.stack([np.concatenate([y.reshape(-1) for y in sess.run(None, {name: xi})]) for xi in x])


def _check(tmp_path, shape, tensors, nodes, output, atol=1e-5, scale=1.0):
    model = oracle.write(Case("one", [T(shape, [], [], F32), *tensors], nodes, 0, output))
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    x = (np.random.default_rng(3).standard_normal((3, *shape)) * scale).astype(np.float32)
    want, got = oracle.tflm(model, x), _translated(path, x)
    assert got.shape == want.shape and np.abs(got - want).max() <= atol, np.abs(got - want).max()
    assert np.abs(want - want.mean(0)).max() > 1e-3        # the outputs depend on the input
    return path


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True)])
def test_batch_matmul_of_two_activations(tmp_path, adj_x, adj_y):
    """Attention's Q K^T: x [1, 2, 4, 4] against RELU(x) (square: each adjoint changes the values, not the shape)."""
    ts = [T((1, 2, 4, 4), [], [], F32), T((1, 2, 4, 4), [], [], F32)]
    nodes = [Node("RELU", [0], 1), Node("BATCH_MATMUL", [0, 1], 2,
                                        ("BatchMatMulOptions", {"AdjX": adj_x, "AdjY": adj_y}))]
    _check(tmp_path, (1, 2, 4, 4), ts, nodes, 2)


def test_batch_matmul_by_a_constant_broadcast_over_the_batch(tmp_path):
    w = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    ts = [T((4, 5), [], [], F32, data=w), T((1, 2, 3, 4), [], [], F32)]
    _check(tmp_path, (1, 2, 3, 5), ts, [Node("BATCH_MATMUL", [0, 1], 2, ("BatchMatMulOptions", {"AdjY": True}))], 2)


@pytest.mark.parametrize("bias", [False, True])
def test_fully_connected_with_weights_computed_at_run_time(tmp_path, bias):
    """TF 2.4's converter writes attention's Q K^T as a FULLY_CONNECTED whose weights are an activation (Arm's
    KWT-1): x [6, 4] by the weights RELU(x) [6, 4] is [6, 6], plus a constant bias (refused before as "weights
    computed at run time")."""
    b = [T((6,), [], [], F32, data=np.linspace(-1, 1, 6).astype(np.float32))] if bias else []
    ts = [T((6, 4), [], [], F32), *b, T((6, 6), [], [], F32)]
    out = len(ts)
    nodes = [Node("RELU", [0], 1),
             Node("FULLY_CONNECTED", [0, 1, 2 if bias else -1], out, ("FullyConnectedOptions", {}))]
    _check(tmp_path, (6, 4), ts, nodes, out)


def test_a_grouped_conv2d(tmp_path):
    """A float CONV_2D whose filters read 2 of the input's 6 channels (Keras Conv2D(groups=3)) is an ONNX Conv of
    group 3 (it was written with group 1: an invalid model)."""
    w = np.random.default_rng(2).standard_normal((9, 3, 3, 2)).astype(np.float32)
    ts = [T((9, 3, 3, 2), [], [], F32, data=w), T((1, 5, 5, 9), [], [], F32)]
    nodes = [Node("CONV_2D", [0, 1, -1], 2, ("Conv2DOptions", {"Padding": 0, "StrideH": 1, "StrideW": 1,
                                                                  "DilationHFactor": 1, "DilationWFactor": 1}))]
    _check(tmp_path, (1, 5, 5, 6), ts, nodes, 2)


RESIZES = [(kind, align, half) for kind in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
           for align, half in ((False, False), (True, False), (False, True))]


@pytest.mark.parametrize("kind,align,half", RESIZES)
def test_resize(tmp_path, kind, align, half):
    """3 x 4 -> 7 x 9 (not a whole factor) and 3 x 4 -> 6 x 8, each coordinate mode TF Lite has."""
    opts = ("ResizeBilinearOptions" if kind == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions",
            {"AlignCorners": align, "HalfPixelCenters": half})
    ts = [T((2,), [], [], I32, data=np.array([7, 9], np.int32)), T((1, 7, 9, 2), [], [], F32),
          T((2,), [], [], I32, data=np.array([6, 8], np.int32)), T((1, 6, 8, 2), [], [], F32)]
    nodes = [Node(kind, [0, 1], 2, opts), Node(kind, [0, 3], 4, opts)]
    _check(tmp_path, (1, 3, 4, 2), ts, nodes, [2, 4])


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_is_one_gelu_for_edgec(tmp_path, approximate):
    """GELU, exact and tanh (TFLite Micro's interpreter registers no GELU: the formulas TF Lite's float kernel
    computes, in float64, are the oracle); edgec's canonicalizer finds one Gelu in the translation."""
    import math

    from edgec.frontend import canonicalize

    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(Case("gelu", [T((1, 4, 6), [], [], F32), T((1, 4, 6), [], [], F32)],
                                       [Node("GELU", [0], 1, ("GeluOptions", {"Approximate": approximate}))], 0, 1)))
    x = (np.random.default_rng(3).standard_normal((3, 1, 4, 6)) * 3).astype(np.float32)
    v = x.astype(np.float64).reshape(3, -1)
    if approximate:
        want = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    else:
        want = 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))
    assert np.abs(_translated(path, x) - want).max() < 1e-5
    graph = canonicalize.canonicalize(tflite_float.to_onnx(path), "m")
    kinds = [op.kind + (f"/{op.attrs['fn']}" if op.kind == "lut" else "") for op in graph.ops]
    assert kinds == ["lut/gelu"], kinds


@pytest.mark.sweep        # ~2 s (the corpus's keras_float_* models build these operators too)
def test_a_resize_and_matmul_model_builds_from_a_calibration_set(tmp_path):
    """RESIZE_BILINEAR (half pixel) then BATCH_MATMUL of the result with itself (its Gram matrix, int8 x int8):
    edgec's INT8 reference at least 25 dB from TFLite Micro's float outputs (27.7 dB measured)."""
    ts = [T((2,), [], [], I32, data=np.array([6, 8], np.int32)), T((1, 6, 8, 4), [], [], F32),
          T((1, 6, 4, 4), [], [], F32)]
    nodes = [Node("RESIZE_BILINEAR", [0, 1], 2, ("ResizeBilinearOptions", {"HalfPixelCenters": True})),
             Node("BATCH_MATMUL", [2, 2], 3, ("BatchMatMulOptions", {"AdjX": True}))]
    model = oracle.write(Case("rm", [T((1, 3, 4, 4), [], [], F32), *ts], nodes, 0, 3))
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    rng = np.random.default_rng(8)
    calib, x = rng.standard_normal((32, 3, 4, 4)).astype(np.float32), rng.standard_normal((6, 1, 3, 4, 4)).astype(np.float32)
    api.build(path, {"x": calib}, "host", tmp_path / "out", firmware=False)
    want = oracle.tflm(model, x)
    got = np.stack([np.asarray(api.reference(tmp_path / "out", xi).y).reshape(-1) for xi in x])
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2))
    assert sqnr > 25, sqnr


def _lstm_case(rng, time_major=False, peephole=False, cell_clip=0.0) -> Case:
    """x [1, 5, 3] (time-major: [5, 1, 3]) through a 4-cell UNIDIRECTIONAL_SEQUENCE_LSTM, float weights, its
    output and cell states variable tensors (zero after a reset)."""
    n_in, cell = 3, 4
    shape = (5, 1, n_in) if time_major else (1, 5, n_in)
    ts = [T(shape, [], [], F32)]

    def const(*s):
        ts.append(T(s, [], [], F32, data=(rng.standard_normal(s) * 0.6).astype(np.float32)))
        return len(ts) - 1

    ins = [0] + [const(cell, n_in) for _ in range(4)] + [const(cell, cell) for _ in range(4)]
    ins += [const(cell) for _ in range(3)] if peephole else [-1, -1, -1]
    ins += [const(cell) for _ in range(4)] + [-1, -1]
    ts += [T((1, cell), [], [], F32, variable=True), T((1, cell), [], [], F32, variable=True)]
    ins += [len(ts) - 2, len(ts) - 1, -1, -1, -1, -1]
    ts.append(T(shape[:2] + (cell,), [], [], F32))
    opts = {"FusedActivationFunction": 4, "CellClip": cell_clip, "ProjClip": 0.0, "TimeMajor": time_major}
    return Case("lstm", ts, [Node("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, len(ts) - 1,
                                  ("UnidirectionalSequenceLSTMOptions", opts))], 0, len(ts) - 1)


@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_lstm(tmp_path, time_major):
    case = _lstm_case(np.random.default_rng(12), time_major)
    model = oracle.write(case)
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    x = np.random.default_rng(13).standard_normal((3, *case.tensors[0].shape)).astype(np.float32)
    want, got = oracle.tflm(model, x), _translated(path, x)
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-5, np.abs(got - want).max()
    assert np.abs(want - want.mean(0)).max() > 1e-3


@pytest.mark.parametrize("time_major", [False, True])
def test_an_lstm_with_a_cell_clip_is_its_cell_written_out(tmp_path, time_major):
    """TFLiteConverter writes a cell clip of 10 into every Keras LSTM (TFLite Micro's mnist_lstm example's float
    file): once refused as "cell or projection clipping", now its steps in ONNX operators with the clip on c. A clip
    of 0.3 binds here (the translation without it differs from TFLite Micro)."""
    case = _lstm_case(np.random.default_rng(12), time_major, cell_clip=0.3)
    model = oracle.write(case)
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    x = (np.random.default_rng(13).standard_normal((3, *case.tensors[0].shape)) * 3).astype(np.float32)
    want, got = oracle.tflm(model, x), _translated(path, x)
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-5, np.abs(got - want).max()
    unclipped = tmp_path / "u.tflite"
    unclipped.write_bytes(oracle.write(_lstm_case(np.random.default_rng(12), time_major)))
    assert np.abs(_translated(unclipped, x) - want).max() > 1e-2         # the clip mattered


def test_an_lstm_with_peepholes_is_named_with_the_reason(tmp_path):
    from edgec.errors import EdgecError

    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(_lstm_case(np.random.default_rng(12), peephole=True)))
    with pytest.raises(EdgecError, match=r"UNIDIRECTIONAL_SEQUENCE_LSTM \(operator #0: peepholes\)"):
        tflite_float.to_onnx(path)


@pytest.mark.parametrize("padding,stride,k", [(0, 2, 3), (1, 2, 3), (1, 3, 2), (0, 1, 3)],
                         ids=["same-s2-k3", "valid-s2-k3", "valid-s3-k2", "same-s1-k3"])
def test_transpose_conv(tmp_path, padding, stride, k):
    """TRANSPOSE_CONV 5 x 4 x 3 -> 6 channels (bias, RELU fused): SAME and VALID, a kernel smaller than the stride
    (ONNX's output_padding)."""
    rng = np.random.default_rng(9)
    h, w = 5, 4
    oh, ow = ((h * stride, w * stride) if padding == 0 else
              ((h - 1) * stride + max(k, stride), (w - 1) * stride + max(k, stride)))
    wt = (rng.standard_normal((6, k, k, 3)) * 0.4).astype(np.float32)
    ts = [T((4,), [], [], I32, data=np.array([1, oh, ow, 6], np.int32)), T(wt.shape, [], [], F32, data=wt),
          T((6,), [], [], F32, data=rng.standard_normal(6).astype(np.float32)), T((1, oh, ow, 6), [], [], F32)]
    opts = ("TransposeConvOptions", {"Padding": padding, "StrideH": stride, "StrideW": stride,
                                     "FusedActivationFunction": 1})
    _check(tmp_path, (1, h, w, 3), ts, [Node("TRANSPOSE_CONV", [1, 2, 0, 3], 4, opts)], 4)


def test_prelu_per_channel(tmp_path):
    alpha = np.array([[[0.1, -0.5, 2.0]]], np.float32)
    ts = [T((1, 1, 3), [], [], F32, data=alpha), T((1, 4, 5, 3), [], [], F32)]
    _check(tmp_path, (1, 4, 5, 3), ts, [Node("PRELU", [0, 1], 2)], 2)


def _one(kind, shape, out, extra=(), options=None, inputs=None):
    """(tensors after the input, nodes, output) of one operator: its input 0, then `extra` constants."""
    ts = [T(np.shape(v), [], [], I32 if np.asarray(v).dtype.kind == "i" else F32, data=np.asarray(v))
          for v in extra]
    ts.append(T(out, [], [], F32))
    ins = inputs if inputs is not None else [0] + list(range(1, len(extra) + 1))
    return ts, [Node(kind, ins, len(ts), options)], len(ts)


ELEMENTWISE = {
    "FLOOR": {}, "CEIL": {}, "ROUND": {}, "SIN": {}, "COS": {}, "SQUARE": {},
    "LOG_SOFTMAX": {"options": ("LogSoftmaxOptions", {})},
    "ADD_N": {"inputs": [0, 0, 1], "extra": [np.linspace(-1, 1, 72, dtype=np.float32).reshape(1, 3, 4, 6)]},
    "CUMSUM": {"extra": [np.int32(2)], "options": ("CumsumOptions", {"Exclusive": True, "Reverse": True})},
}


@pytest.mark.parametrize("kind", list(ELEMENTWISE))
def test_elementwise_and_along_an_axis(tmp_path, kind):
    """Each on a 1 x 3 x 4 x 6 input (ROUND: halves included, TF Lite's half to even)."""
    spec = ELEMENTWISE[kind]
    ts, nodes, y = _one(kind, (1, 3, 4, 6), (1, 3, 4, 6), spec.get("extra", ()), spec.get("options"),
                        spec.get("inputs"))
    scale = 2.5 if kind != "ROUND" else 1.0
    model = oracle.write(Case(kind, [T((1, 3, 4, 6), [], [], F32), *ts], nodes, 0, y))
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    x = (np.random.default_rng(3).standard_normal((3, 1, 3, 4, 6)) * scale).astype(np.float32)
    if kind == "ROUND":
        x = np.round(x * 4) / 2           # many exact halves
    want, got = oracle.tflm(model, x), _translated(path, x)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()


@pytest.mark.parametrize("kind,shape,out,opts", [
    ("SPACE_TO_DEPTH", (1, 4, 6, 3), (1, 2, 3, 12), ("SpaceToDepthOptions", {"BlockSize": 2})),
    ("DEPTH_TO_SPACE", (1, 2, 3, 8), (1, 4, 6, 2), ("DepthToSpaceOptions", {"BlockSize": 2}))])
def test_space_and_depth(tmp_path, kind, shape, out, opts):
    ts, nodes, y = _one(kind, shape, out, options=opts)
    _check(tmp_path, shape, ts, nodes, y)


def test_mirror_pad_reflect_and_symmetric_named(tmp_path):
    from edgec.errors import EdgecError

    pads = np.array([[0, 0], [1, 2], [2, 1], [0, 0]], np.int32)
    ts, nodes, y = _one("MIRROR_PAD", (1, 4, 5, 2), (1, 7, 8, 2), [pads], ("MirrorPadOptions", {"Mode": 0}))
    _check(tmp_path, (1, 4, 5, 2), ts, nodes, y)
    nodes[0].options = ("MirrorPadOptions", {"Mode": 1})
    path = tmp_path / "s.tflite"
    path.write_bytes(oracle.write(Case("s", [T((1, 4, 5, 2), [], [], F32), *ts], nodes, 0, y)))
    with pytest.raises(EdgecError, match=r"MIRROR_PAD \(operator #0: SYMMETRIC mode\)"):
        tflite_float.to_onnx(path)


def test_pow_by_a_constant_against_numpy(tmp_path):
    """POW of a positive input by a per-channel constant exponent (TFLite Micro registers no POW: NumPy's float32
    power, TF Lite's std::pow, is the oracle)."""
    e = np.array([2.0, 0.5, -1.0, 3.0], np.float32)
    ts, nodes, y = _one("POW", (1, 2, 3, 4), (1, 2, 3, 4), [e])
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(Case("pow", [T((1, 2, 3, 4), [], [], F32), *ts], nodes, 0, y)))
    x = np.abs(np.random.default_rng(3).standard_normal((3, 1, 2, 3, 4))).astype(np.float32) + 0.1
    assert np.allclose(_translated(path, x), np.power(x, e).reshape(3, -1), rtol=1e-5)


def test_l2_normalization_against_tflite_micro(tmp_path):
    """L2_NORMALIZATION over the last axis: an ONNX LpNormalization p=2, against TFLite Micro's float kernel."""
    ts, nodes, y = _one("L2_NORMALIZATION", (1, 3, 4, 5), (1, 3, 4, 5), options=("L2NormOptions", {}))
    _check(tmp_path, (1, 3, 4, 5), ts, nodes, y)


def _keras_l2norm(tmp_path):
    """tests/data/float_tflite/keras_l2norm_float32.tflite (scripts/corpus/export_tf_float.py: tf.math.l2_normalize
    over a Conv2D's channels and over a Dense's outputs), its oracle, and its quantized graph from 32 inputs."""
    from conftest import require

    data = Path(__file__).parent / "data" / "float_tflite"
    path = data / "keras_l2norm_float32.tflite"
    require(path.exists(), str(path), "/work/venv-tf/bin/python scripts/corpus/export_tf_float.py --only "
                                      "keras_l2norm_float32")
    o = np.load(data / "keras_l2norm_float32_oracle.npz")
    calib = np.random.default_rng(11).standard_normal((32, 6, 6, 3)).astype(np.float32)
    return path, o, api.calibrate(path, calib)


def test_keras_l2_normalize_builds_bit_exact_with_its_reference(tmp_path):
    """The file's translation computes what TF Lite's interpreter computes; edgec quantizes it from a calibration
    set into two `l2_norm` ops (TFLite's int8 kernel), its INT8 reference within 30 dB of TF Lite's float outputs,
    and the generated C on the host equals the reference bit for bit."""
    from conftest import check_generated_c

    path, o, quant = _keras_l2norm(tmp_path)
    got = _translated(path, o["x"][:, None])
    assert np.abs(got - o["y"].reshape(len(got), -1)).max() < 1e-5
    assert [op.kind for op in quant.graph.ops].count("l2_norm") == 2
    want = o["y"].reshape(len(o["x"]), -1).astype(np.float64)
    ref = np.stack([np.asarray(api.reference(quant, xi[None]).y, np.float64).reshape(-1) for xi in o["x"]])
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - ref) ** 2))
    assert sqnr > 30, sqnr
    check_generated_c(quant.graph, o["x"][:, None], tmp_path)


@pytest.mark.sweep        # ~15 s (the host C is checked in the default run, above)
def test_keras_l2_normalize_on_cortex_m4_equals_its_reference(tmp_path):
    """`edgec build --calib --board qemu-cortex-m4` and `edgec bench`: the device equals the reference on every
    sample."""
    from conftest import bench_report

    path, o, _ = _keras_l2norm(tmp_path)
    calib = np.random.default_rng(11).standard_normal((32, 6, 6, 3)).astype(np.float32)
    r = bench_report(path, calib, o["x"], tmp_path)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == len(o["x"])


def _keras_fixture(stem, seed=11):
    """tests/data/float_tflite/<stem>.tflite (scripts/corpus/export_tf_float.py), its oracle, and its quantized
    graph from 32 inputs."""
    from conftest import require

    data = Path(__file__).parent / "data" / "float_tflite"
    path = data / f"{stem}.tflite"
    require(path.exists(), str(path), f"/work/venv-tf/bin/python scripts/corpus/export_tf_float.py --only {stem}")
    o = np.load(data / f"{stem}_oracle.npz")
    calib = np.random.default_rng(seed).standard_normal((32, *o["x"].shape[1:])).astype(np.float32)
    return path, o, calib, api.calibrate(path, calib)


def test_keras_where_and_selu_build_bit_exact_with_their_reference(tmp_path):
    """tf.where(conv > 0.3, conv, 0.2 tanh(conv)) and Keras' selu (GREATER -> SELECT_V2, twice): translated to
    Greater -> Where, computing what TF Lite's interpreter computes; quantized (the masks unquantized, Where's values
    on its output's grid) within 25 dB of TF Lite's float outputs; the host C equals the reference bit for bit."""
    from conftest import check_generated_c

    path, o, _, quant = _keras_fixture("keras_where_float32")
    got = _translated(path, o["x"][:, None])
    assert np.abs(got - o["y"].reshape(len(got), -1)).max() < 1e-5
    kinds = [op.kind for op in quant.graph.ops]
    assert kinds.count("where") == 2
    assert [t.dtype for t in quant.graph.tensors.values()].count("bool") == 2
    want = o["y"].reshape(len(o["x"]), -1).astype(np.float64)
    ref = np.stack([np.asarray(api.reference(quant, xi[None]).y, np.float64).reshape(-1) for xi in o["x"]])
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - ref) ** 2))
    assert sqnr > 25, sqnr
    check_generated_c(quant.graph, o["x"][:, None], tmp_path)


def test_tf1_select_row_mask_and_full_mask_build_bit_exact_with_their_reference(tmp_path):
    """TF1's Select (TFLite SELECT v1, tf.compat.v1.where through TFLiteConverter.from_session): its row mask [4]
    over a [4, 6] value picks whole rows (axis 0, where SELECT_V2 and ONNX broadcast from the last axis: there [4]
    against [4, 6] does not even broadcast), read as a [4, 1] mask; the translation equals TF Lite's interpreter;
    quantized within 25 dB of it; the host C equals the reference bit for bit."""
    from conftest import check_generated_c

    path, o, _, quant = _keras_fixture("tf1_select_float32")
    model = tflite_float.to_onnx(path)
    rows = next(n for n in model.graph.node if n.op_type == "Reshape" and n.output[0].endswith("_rows"))
    assert [int(v) for v in numpy_helper.to_array(
        next(i for i in model.graph.initializer if i.name == rows.input[1]))] == [4, 1]
    got = _translated(path, o["x"][:, None])
    assert np.abs(got - o["y"].reshape(len(got), -1)).max() < 1e-5
    assert [op.kind for op in quant.graph.ops].count("where") == 2
    want = o["y"].reshape(len(o["x"]), -1).astype(np.float64)
    ref = np.stack([np.asarray(api.reference(quant, xi[None]).y, np.float64).reshape(-1) for xi in o["x"]])
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - ref) ** 2))
    print(f"tf1_select_float32: INT8 reference {sqnr:.1f} dB from TF Lite's float outputs")
    assert sqnr > 25, sqnr
    check_generated_c(quant.graph, o["x"][:, None], tmp_path)


@pytest.mark.sweep        # ~15 s (the host C is checked in the default run, above)
@pytest.mark.parametrize("stem", ["keras_where_float32", "keras_unitnorm_float32", "tf1_select_float32"])
def test_keras_where_and_unit_norm_on_cortex_m4_equal_their_reference(tmp_path, stem):
    """`edgec build --calib --board qemu-cortex-m4` and `edgec bench`: the device equals the reference on every
    sample."""
    from conftest import bench_report

    path, o, calib, _ = _keras_fixture(stem)
    r = bench_report(path, calib, o["x"], tmp_path)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == len(o["x"])
