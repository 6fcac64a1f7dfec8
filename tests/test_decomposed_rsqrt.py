"""edgec/frontend/decomposed_rsqrt.py: x * min(rsqrt(sum(x * x)), cap) read as one LpNormalization (TFLite's int8
L2_NORMALIZATION); without it Keras' UnitNormalization failed quantization ("multiplier ... too large")."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from conftest import check_generated_c, make_model, require
from edgec import api
from edgec.frontend import canonicalize, tflite_float

DATA = Path(__file__).parent / "data" / "float_tflite"


def _translated(path, x) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(tflite_float.to_onnx(path).SerializeToString())
    name = sess.get_inputs()[0].name
    return np.stack([sess.run(None, {name: xi})[0].reshape(-1) for xi in x])


def test_keras_unit_normalization_builds_as_l2_norm(tmp_path):
    """tests/data/float_tflite/keras_unitnorm_float32.tflite (scripts/corpus/export_tf_float.py: Keras'
    UnitNormalization after a Relu Conv2D and after a Dense): two `l2_norm` ops, within 30 dB of TF Lite's float
    outputs, the host C equal to the reference bit for bit."""
    path = DATA / "keras_unitnorm_float32.tflite"
    require(path.exists(), str(path), "/work/venv-tf/bin/python scripts/corpus/export_tf_float.py --only "
                                      "keras_unitnorm_float32")
    o = np.load(DATA / "keras_unitnorm_float32_oracle.npz")
    quant = api.calibrate(path, np.random.default_rng(11).standard_normal((32, 6, 6, 3)).astype(np.float32))
    assert [op.kind for op in quant.graph.ops].count("l2_norm") == 2
    # TF Lite's interpreter writes NaN where a pixel's Relu channels are all zero (0 * rsqrt(0) = 0 * inf: its
    # MINIMUM by the cap does not keep the inf out); the file's translation caps as the Keras layer means, and equals
    # TF Lite on every sample TF Lite computes
    tfl = o["y"].reshape(len(o["x"]), -1).astype(np.float64)
    want = _translated(path, o["x"][:, None]).astype(np.float64)
    finite = np.isfinite(tfl).all(axis=1)
    assert finite.any() and np.abs(want[finite] - tfl[finite]).max() < 1e-5
    ref = np.stack([np.asarray(api.reference(quant, xi[None]).y, np.float64).reshape(-1) for xi in o["x"]])
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - ref) ** 2))
    assert sqnr > 30, sqnr
    check_generated_c(quant.graph, o["x"][:, None], tmp_path)


def _model(cap=1e12, eps=None, reader=False, div=False):
    """x [1, 4, 8] -> x * Min(Reciprocal(Sqrt([Max(] ReduceSum(x * x, -1) [, eps)])), cap) (tf2onnx's form)."""
    inits = {"axes": np.array([-1], np.int64), "cap": np.array(cap), "eps": np.array(eps or 0.0),
             "one": np.array(1.0)}
    s = "sum"
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"]),
             helper.make_node("ReduceSum", ["sq", "axes"], ["sum"], keepdims=1)]
    if eps is not None:
        nodes.append(helper.make_node("Max", ["sum", "eps"], ["sum_eps"]))
        s = "sum_eps"
    nodes += [helper.make_node("Sqrt", [s], ["norm"]),
              helper.make_node("Div", ["one", "norm"], ["inv"]) if div else
              helper.make_node("Reciprocal", ["norm"], ["inv"]),
              helper.make_node("Min", ["inv", "cap"], ["capped"]),
              helper.make_node("Mul", ["x", "capped"], ["y" if not reader else "z"])]
    if reader:        # the inverse norm read elsewhere too: not a plain normalization
        nodes.append(helper.make_node("Add", ["z", "inv"], ["y"]))
    return make_model(nodes, ("x", [1, 4, 8]), ("y", [1, 4, 8]), inits)


@pytest.mark.parametrize("kwargs", [{}, {"eps": 1e-12}, {"div": True}])
def test_the_forms_are_one_l2_norm(kwargs):
    graph = canonicalize.canonicalize(_model(**kwargs), "m")
    assert [op.kind for op in graph.ops] == ["l2_norm"]


@pytest.mark.parametrize("kwargs", [{"cap": 100.0}, {"eps": 1e-3}, {"reader": True}])
def test_other_computations_are_left_as_they_are(kwargs):
    graph = canonicalize.canonicalize(_model(**kwargs), "m")
    assert "l2_norm" not in [op.kind for op in graph.ops]
