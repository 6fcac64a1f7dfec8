"""Decomposed GELU and LayerNorm read as one node at canonicalization (edgec/frontend/decomposed.py): the exporters'
node patterns and their variants become one `lut` gelu table / one `layer_norm` op computing what the nodes compute
(onnxruntime on the same model), and near misses (a wrong constant, an intermediate read elsewhere, another axis)
stay as they are. The real files: the digits encoder exported by TorchScript at opset 17 (GELU decomposed) and 14
(LayerNorm decomposed too) builds into the same quantized model as its dynamo export's one-node form."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from conftest import EXAMPLES, make_model
from edgec import api
from edgec.data import load_dataset
from edgec.frontend import canonicalize, loader
from edgec.quant import floatref, reference
from edgec.quant.ptq import QuantOptions
from edgec.fixedpoint import scheme

R2, K = math.sqrt(2.0), math.sqrt(2.0 / math.pi)
D = 12
DATA = Path(__file__).parent / "data"


def _node(op, ins, out, **kw):
    return helper.make_node(op, ins, [out], name=out, **kw)


def _model(body, y, consts, opset=13, extra_out=None):
    """x [1, 3, D] -> MatMul w -> h -> body(h) -> y -> MatMul w2 -> out."""
    rng = np.random.default_rng(0)
    consts = {"w": rng.normal(size=(D, D)), "w2": rng.normal(size=(D, D)), **consts}
    nodes = [_node("MatMul", ["x", "w"], "h")] + body + [_node("MatMul", [y, "w2"], "out")]
    if extra_out:
        nodes.append(_node("Relu", [extra_out], "out2"))
        nodes.append(_node("Add", ["out", "out2"], "out3"))
    return make_model(nodes, ("x", [1, 3, D]), ("out3" if extra_out else "out", [1, 3, D]),
                      {k: np.asarray(v, np.int64 if k == "axes" else np.float32) for k, v in consts.items()}, opset=opset)


def _kinds(model):
    graph = canonicalize.canonicalize(model, "m")
    return graph, [op.kind + (f"/{op.attrs['fn']}" if op.kind == "lut" else "") for op in graph.ops]


def _same_as_onnxruntime(model, graph, positive=False):
    x = np.random.default_rng(1).normal(size=(1, 3, D)).astype(np.float32) * 2
    x = np.abs(x) if positive else x
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(floatref.output(graph, x).reshape(want.shape), want, rtol=1e-4, atol=1e-4)


ERF = [_node("Div", ["h", "r2"], "d"), _node("Erf", ["d"], "e"), _node("Add", ["e", "one"], "a"),
       _node("Mul", ["h", "a"], "m"), _node("Mul", ["m", "half"], "y")]
GELUS = {   # name: (nodes, constants, approximate)
    "torchscript": (ERF, {"r2": R2, "one": 1.0, "half": 0.5}, "none"),
    "mul_inverse_half_first": ([_node("Mul", ["inv", "h"], "d"), _node("Erf", ["d"], "e"),
                                _node("Add", ["one", "e"], "a"), _node("Mul", ["h", "half"], "hh"),
                                _node("Mul", ["a", "hh"], "y")], {"inv": 1 / R2, "one": 1.0, "half": 0.5}, "none"),
    "half_of_the_sum": ([_node("Div", ["h", "r2"], "d"), _node("Erf", ["d"], "e"), _node("Add", ["e", "one"], "a"),
                         _node("Div", ["a", "two"], "ah"), _node("Mul", ["ah", "h"], "y")],
                        {"r2": R2, "one": 1.0, "two": 2.0}, "none"),
    "tanh_pow": ([_node("Pow", ["h", "three"], "c"), _node("Mul", ["c", "k1"], "c1"), _node("Add", ["h", "c1"], "s"),
                  _node("Mul", ["s", "k"], "u"), _node("Tanh", ["u"], "t"), _node("Add", ["t", "one"], "a"),
                  _node("Mul", ["h", "a"], "m"), _node("Mul", ["half", "m"], "y")],
                 {"three": 3.0, "k1": 0.044715, "k": K, "one": 1.0, "half": 0.5}, "tanh"),
    "tanh_cube_by_muls": ([_node("Mul", ["h", "h"], "sq"), _node("Mul", ["sq", "h"], "c"),
                           _node("Mul", ["k1", "c"], "c1"), _node("Add", ["c1", "h"], "s"), _node("Mul", ["k", "s"], "u"),
                           _node("Tanh", ["u"], "t"), _node("Add", ["one", "t"], "a"), _node("Mul", ["a", "half"], "ah"),
                           _node("Mul", ["h", "ah"], "y")],
                          {"k1": 0.044715, "k": K, "one": 1.0, "half": 0.5}, "tanh"),
}


@pytest.mark.parametrize("name", GELUS)
def test_decomposed_gelu_is_one_table(name):
    nodes, consts, approximate = GELUS[name]
    model = _model(nodes, "y", consts)
    graph, kinds = _kinds(model)
    assert kinds == ["fully_connected_rows", "lut/gelu", "fully_connected_rows"]
    gelu = graph.ops[1]
    assert gelu.attrs["fparams"] == {"approximate": approximate}
    _same_as_onnxruntime(model, graph)


def test_near_misses_stay_as_they_are():
    """A halving by 0.6, a value inside the pattern read elsewhere, the tanh form with another coefficient."""
    wrong = _model(ERF, "y", {"r2": R2, "one": 1.0, "half": 0.6})
    assert "lut/gelu" not in _kinds(wrong)[1]
    _same_as_onnxruntime(wrong, _kinds(wrong)[0])
    shared = _model(ERF, "y", {"r2": R2, "one": 1.0, "half": 0.5}, extra_out="a")
    graph, kinds = _kinds(shared)     # the erf table (composed with the division before it: one table)
    functions = [f for op in graph.ops for f in ([s[0] for s in op.attrs["fparams"]["steps"]]
                                                 if op.attrs.get("fn") == "chain" else [op.attrs.get("fn")])]
    assert "lut/gelu" not in kinds and "erf" in functions and "gelu" not in functions
    _same_as_onnxruntime(shared, graph)
    nodes, consts, _ = GELUS["tanh_pow"]
    assert "lut/gelu" not in _kinds(_model(nodes, "y", {**consts, "k1": 0.05}))[1]


def _layer_norm(square="pow", divide="div", gamma=True, beta=True, axes_input=False):
    consts = {"eps": 1e-5, "two": 2.0}
    if axes_input:
        consts["axes"] = np.array([-1], np.int64)
    ax = {} if axes_input else {"axes": [-1]}
    mean_in = ["axes"] if axes_input else []
    nodes = [_node("ReduceMean", ["h"] + mean_in, "mu", **ax), _node("Sub", ["h", "mu"], "dx"),
             _node("Pow", ["dx", "two"], "sq") if square == "pow" else _node("Mul", ["dx", "dx"], "sq"),
             _node("ReduceMean", ["sq"] + mean_in, "var", **ax), _node("Add", ["var", "eps"], "ve"),
             _node("Sqrt", ["ve"], "sd")]
    nodes += [_node("Div", ["dx", "sd"], "n")] if divide == "div" else \
        [_node("Reciprocal", ["sd"], "inv"), _node("Mul", ["inv", "dx"], "n")]
    y = "n"
    rng = np.random.default_rng(2)
    if gamma:
        consts["g"] = rng.uniform(0.5, 1.5, D)
        nodes.append(_node("Mul", [y, "g"], "ng"))
        y = "ng"
    if beta:
        consts["b"] = rng.normal(size=(1, 1, D))
        nodes.append(_node("Add", ["b", y], "nb"))
        y = "nb"
    return nodes, y, consts


@pytest.mark.parametrize("variant", [dict(), dict(square="mul", divide="reciprocal"), dict(gamma=False),
                                     dict(beta=False, axes_input=True)])
def test_decomposed_layer_norm_is_one_op(variant):
    nodes, y, consts = _layer_norm(**variant)
    model = _model(nodes, y, consts, opset=18 if variant.get("axes_input") else 13)
    graph, kinds = _kinds(model)
    assert kinds == ["fully_connected_rows", "layer_norm", "fully_connected_rows"]
    assert graph.ops[1].attrs["epsilon"] == pytest.approx(1e-5)
    _same_as_onnxruntime(model, graph)


def test_layer_norm_over_another_axis_stays():
    nodes, y, consts = _layer_norm()
    nodes[0] = _node("ReduceMean", ["h"], "mu", axes=[1])
    model = _model(nodes, y, consts)
    graph = _kinds(model)[0]       # (x - that mean) / its root mean square over the last axis: an RMSNorm of it
    assert not any(op.kind == "layer_norm" and not op.attrs.get("rms") for op in graph.ops)
    _same_as_onnxruntime(model, graph)


def _keras_layer_norm(mean="reduce", gamma=True, beta="add", extra_out=None):
    """Keras 3's LayerNormalization as tf2onnx and edgec's float .tflite translation write it: mean, Sub, Mul by
    itself, mean, Add eps, Sqrt, Reciprocal; inv = 1/std [* gamma]; y = h * inv + (-mean * inv [+ beta]) (beta
    "add"), or + (beta - mean * inv) (beta "sub": tf.nn.batch_normalization's order); the means ReduceMean or a
    GlobalAveragePool of the 3-D value (tf2onnx's)."""
    rng = np.random.default_rng(3)
    consts = {"eps": 1e-3}

    def avg(x, y):
        return _node("GlobalAveragePool", [x], y) if mean == "gap" else _node("ReduceMean", [x], y, axes=[2])
    nodes = [avg("h", "mu"), _node("Sub", ["h", "mu"], "dx"), _node("Mul", ["dx", "dx"], "sq"), avg("sq", "var"),
             _node("Add", ["var", "eps"], "ve"), _node("Sqrt", ["ve"], "sd"), _node("Reciprocal", ["sd"], "r")]
    inv = "r"
    if gamma is not False:
        consts["g"] = rng.uniform(0.5, 1.5, (1, 1, D)) if gamma is True else gamma
        nodes.append(_node("Mul", ["r", "g"], "inv"))
        inv = "inv"
    nodes.append(_node("Mul", ["h", inv], "p"))
    if beta == "sub":
        consts["b"] = rng.normal(size=D)
        nodes += [_node("Mul", ["mu", inv], "mi"), _node("Sub", ["b", "mi"], "q")]
    else:
        nodes += [_node("Neg", ["mu"], "nm"), _node("Mul", ["nm", inv], "q" if beta is None else "mi")]
        if beta == "add":
            consts["b"] = rng.normal(size=(1, 1, D))
            nodes.append(_node("Add", ["mi", "b"], "q"))
    nodes.append(_node("Add", ["p", "q"], "y"))
    return _model(nodes, "y", consts, extra_out=extra_out)


@pytest.mark.parametrize("variant", [dict(), dict(mean="gap"), dict(gamma=False), dict(beta=None),
                                     dict(gamma=False, beta=None, mean="gap"), dict(beta="sub")])
def test_keras_layer_norm_is_one_op(variant):
    model = _keras_layer_norm(**variant)
    graph, kinds = _kinds(model)
    assert kinds == ["fully_connected_rows", "layer_norm", "fully_connected_rows"]
    assert graph.ops[1].attrs["epsilon"] == pytest.approx(1e-3)
    _same_as_onnxruntime(model, graph)


@pytest.mark.parametrize("miss", ["gamma_along_rows", "mean_not_negated", "inv_read_elsewhere", "gap_of_4d"])
def test_keras_layer_norm_near_misses_stay(miss):
    """A gamma along the rows, +mean * inv (not LayerNorm), 1/std read outside the pattern, and a
    GlobalAveragePool of a 4-D value (a mean over two axes): all run as the nodes they are."""
    if miss == "gap_of_4d":
        nodes = [_node("Reshape", ["x", "s4"], "x4"), _node("GlobalAveragePool", ["x4"], "mu"),
                 _node("Sub", ["x4", "mu"], "dx"), _node("Mul", ["dx", "dx"], "sq"), _node("GlobalAveragePool", ["sq"], "var"),
                 _node("Add", ["var", "eps"], "ve"), _node("Sqrt", ["ve"], "sd"), _node("Reciprocal", ["sd"], "r"),
                 _node("Mul", ["x4", "r"], "p"), _node("Neg", ["mu"], "nm"), _node("Mul", ["nm", "r"], "q"),
                 _node("Add", ["p", "q"], "y4"), _node("Reshape", ["y4", "s3"], "out")]
        model = make_model(nodes, ("x", [1, 3, D]), ("out", [1, 3, D]),
                           {"s4": np.array([1, 3, 3, 4], np.int64), "s3": np.array([1, 3, D], np.int64),
                            "eps": np.float32(1e-3)})
    elif miss == "mean_not_negated":
        model = _keras_layer_norm()
        model.graph.node[[n.name for n in model.graph.node].index("nm")].op_type = "Identity"
    else:
        model = _keras_layer_norm(**({"gamma": np.array([[[0.5], [1.0], [2.0]]])} if miss == "gamma_along_rows" else
                                     {"extra_out": "inv"}))
    graph, kinds = _kinds(model)
    assert "layer_norm" not in kinds
    x = np.random.default_rng(1).normal(size=(1, 3, D)).astype(np.float32) * 2
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(floatref.output(graph, x).reshape(want.shape), want, rtol=1e-4, atol=1e-4)


KERAS_FILES = sorted((DATA / "keras_layernorm").glob("*.onnx")) + sorted((DATA / "keras_layernorm").glob("*.tflite"))


@pytest.mark.parametrize("path", KERAS_FILES, ids=lambda p: p.name)
def test_keras_exports_read_as_one_layer_norm(path):
    """Keras 3's LayerNormalization through tf2onnx and through a float .tflite (scripts/make_keras_layernorm.py):
    one layer_norm op with Keras' epsilon, computing what the exported graph computes (onnxruntime)."""
    model = loader.load_model(path)
    graph = canonicalize.canonicalize(model, "m")
    norms = [op for op in graph.ops if op.kind == "layer_norm"]
    assert len(norms) == 1 and not {"binary", "add", "reduce", "avg_pool"} & {op.kind for op in graph.ops}
    assert norms[0].attrs["epsilon"] == pytest.approx(1e-5 if "eps1e5" in path.name else 1e-3)
    inp = model.graph.input[0]
    x = np.random.default_rng(1).normal(size=[d.dim_value for d in inp.type.tensor_type.shape.dim]).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {inp.name: x})[0]
    np.testing.assert_allclose(floatref.output(graph, x).reshape(want.shape), want, rtol=1e-4, atol=1e-5)


def test_torchscript_exports_build_the_one_node_model():
    """The encoder by TorchScript at opset 17 (GELU decomposed) and 14 (LayerNorms too) and by dynamo (Gelu and
    LayerNormalization nodes): the same layers, and the two TorchScript files the same quantized model."""
    folder = EXAMPLES / "transformer_digits"
    runs = {}
    for name in ("encoder_bf_torchscript", "encoder_bf_torchscript_opset14", "encoder_bf_dynamo"):
        _, graph, _ = api.compile_model(folder / "pytorch" / f"{name}.onnx", folder / "calib.npz",
                                        options=QuantOptions(attention_int16=False))     # (the int8 model's layers)
        kinds = [op.kind + (f"/{op.attrs['fn']}" if op.kind == "lut" else "") for op in graph.ops]
        assert kinds.count("lut/gelu") == 1 and kinds.count("layer_norm") == 2 and len(kinds) == 20, kinds
        x = scheme.quantize_input(graph.tensors[graph.input], load_dataset(folder / "test.npz", graph.input_onnx_shape).x[:8])
        runs[name] = np.stack([reference.run(graph, q) for q in x])
    assert np.array_equal(runs["encoder_bf_torchscript"], runs["encoder_bf_torchscript_opset14"])


def _normalize(form="reducel2", axis=-1, low=1e-12, high=None, opset=19):
    """x [1, 3, D] -> MatMul w -> h -> x / max(||h||, low) over `axis` as exporters write F.normalize -> MatMul w2."""
    consts = {"axes": np.array([axis], np.int64), "low": low}
    if form == "reducel2":              # torch.onnx TorchScript: ReduceL2 (axes an input from opset 18), Clip, Expand
        nodes = [_node("ReduceL2", ["h", "axes"] if opset >= 18 else ["h"], "n", keepdims=1,
                       **({} if opset >= 18 else {"axes": [axis]})),
                 _node("Clip", ["n", "low"] + (["high"] if high is not None else []), "c"),
                 _node("Shape", ["h"], "s"), _node("Expand", ["c", "s"], "e"), _node("Div", ["h", "e"], "y")]
    else:                               # by hand: Pow 2 (or x * x), ReduceSum, Sqrt, Max with eps
        nodes = [_node("Pow", ["h", "two"], "sq") if form == "pow" else _node("Mul", ["h", "h"], "sq"),
                 _node("ReduceSum", ["sq", "axes"], "ss", keepdims=1), _node("Sqrt", ["ss"], "n"),
                 _node("Max", ["n", "low"], "c"), _node("Div", ["h", "c"], "y")]
        consts["two"] = 2.0
    if high is not None:
        consts["high"] = high
    return _model(nodes, "y", consts, opset=opset)


def _loaded(model, tmp_path):
    from conftest import save
    return loader.load_model(save(model, tmp_path))      # ReduceL2 as edgec reads it: its ONNX function body


@pytest.mark.parametrize("form,opset", [("reducel2", 19), ("reducel2", 13), ("pow", 13), ("mul", 13)])
def test_decomposed_l2_normalize_is_one_op(form, opset, tmp_path):
    """PyTorch's F.normalize as TorchScript writes it (ReduceL2, expanded to Mul / ReduceSum / Cast / Sqrt /
    CastLike when read, Clip, Shape, Expand, Div) and by hand: one l2_norm op computing what onnxruntime does."""
    model = _normalize(form, opset=opset)
    graph, kinds = _kinds(_loaded(model, tmp_path))
    assert kinds == ["fully_connected_rows", "l2_norm", "fully_connected_rows"], kinds
    _same_as_onnxruntime(model, graph)


@pytest.mark.parametrize("miss", [dict(axis=1), dict(low=0.1), dict(high=10.0)])
def test_l2_normalize_near_misses_stay(miss, tmp_path):
    """Over another axis, with an epsilon that changes small rows, or with a Clip max: left as the nodes are."""
    model = _normalize(**miss)
    graph, kinds = _kinds(_loaded(model, tmp_path))
    assert "l2_norm" not in kinds
    _same_as_onnxruntime(model, graph)


def test_a_division_by_the_root_of_a_constant_node_is_no_l2_norm():
    """GELU's ONNX function body divides by Sqrt(CastLike(Constant 2)): the walk back from the Div meets a node
    without inputs (it stopped with an IndexError on ONNX's test_gelu_default_1_expanded)."""
    nodes = [helper.make_node("Constant", [], ["two"], value=helper.make_tensor("t", 1, [], [2.0]), name="two"),
             _node("Sqrt", ["two"], "r"), _node("Div", ["h", "r"], "y")]
    model = _model(nodes, "y", {})
    graph, kinds = _kinds(model)
    assert "l2_norm" not in kinds
    _same_as_onnxruntime(model, graph)


def test_an_onnx_l2_norm_takes_its_calibrated_grid(tmp_path):
    """The ONNX l2_norm's output on its calibrated grid, not TFLite's 1/128 (a 24-value unit vector's components are
    far below 1): closer to float than the 1/128 grid, and the generated C bit-exact with the reference."""
    from conftest import check_generated_c, save

    path = save(_normalize(), tmp_path)
    rng = np.random.default_rng(4)
    calib, x = (rng.normal(size=(n, 3, D)).astype(np.float32) for n in (16, 8))
    quant = api.calibrate(path, calib)
    norm = next(op for op in quant.graph.ops if op.kind == "l2_norm")
    out = quant.graph.tensors[norm.output]
    assert out.scale < 1.0 / 128 and norm.params["out_mult"], (out.scale, norm.params)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x[:1]})[0]
    got = np.asarray(api.reference(quant, x[:1]).y, np.float64).reshape(want.shape)
    assert 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2)) > 30
    (tmp_path / "c").mkdir()
    check_generated_c(quant.graph, x, tmp_path / "c")


def _rms(divide="reciprocal", square="pow", axis=-1, gamma=True, beta=None, opset=18, power=2.0):
    """nn.RMSNorm as torch.onnx's dynamo exporter writes it: Pow 2, ReduceMean (axes an input), Add eps, Sqrt,
    Reciprocal, Mul x, Mul gamma (or a Div by the root)."""
    consts = {"axes": np.array([axis], np.int64), "eps": 1e-6, "two": power}
    nodes = [_node("Pow", ["h", "two"], "sq") if square == "pow" else _node("Mul", ["h", "h"], "sq"),
             _node("ReduceMean", ["sq", "axes"], "ms", keepdims=1), _node("Add", ["ms", "eps"], "ve"),
             _node("Sqrt", ["ve"], "rt")]
    nodes += [_node("Reciprocal", ["rt"], "inv"), _node("Mul", ["h", "inv"], "n")] if divide == "reciprocal" else \
        [_node("Div", ["h", "rt"], "n")]
    y = "n"
    if gamma:
        consts["g"] = np.random.default_rng(2).uniform(0.5, 1.5, D)
        nodes.append(_node("Mul", [y, "g"], "ng"))
        y = "ng"
    if beta is not None:
        consts["b"] = np.full(D, beta)
        nodes.append(_node("Add", [y, "b"], "nb"))
        y = "nb"
    return _model(nodes, y, consts, opset=opset)


@pytest.mark.parametrize("variant", [dict(), dict(divide="div", square="mul", gamma=False)])
def test_decomposed_rms_norm_is_one_op(variant):
    """PyTorch's nn.RMSNorm through dynamo (the fifth hidden-corpus round's torch_rmsnorm_swiglu_kws_dynamo: 60
    canonical ops -> 35, 31.3 -> 31.8 dB against ORT's INT8 31.3): one layer_norm op without the mean."""
    model = _rms(**variant)
    graph, kinds = _kinds(model)
    assert kinds == ["fully_connected_rows", "layer_norm", "fully_connected_rows"], kinds
    assert graph.ops[1].attrs["rms"] and graph.ops[1].attrs["epsilon"] == pytest.approx(1e-6)
    _same_as_onnxruntime(model, graph)


@pytest.mark.parametrize("miss", [dict(axis=1), dict(power=3.0)])
def test_rms_norm_near_misses_stay(miss):
    """Over another axis, or a cube for the square: left as the nodes are."""
    model = _rms(**miss)
    graph, kinds = _kinds(model)
    assert "layer_norm" not in kinds
    # positive inputs: the mean of cubes of signed ones can be negative, its Sqrt NaN, which the float reference
    # refuses (a NaN from inputs without one names its op) where onnxruntime returns it
    _same_as_onnxruntime(model, graph, positive=True)


def test_a_bias_after_an_rms_norm_stays_its_own_op():
    """RMSNormalization has no bias: a bias Add after the gamma Mul runs after the fused op."""
    model = _rms(beta=0.5)
    graph, kinds = _kinds(model)
    assert kinds[:2] == ["fully_connected_rows", "layer_norm"] and graph.ops[1].attrs["rms"] and len(kinds) == 4
    _same_as_onnxruntime(model, graph)


def test_an_rms_norm_builds_bit_exact_in_c(tmp_path):
    """The kernel with its row sum taken as 0: close to float, and the generated C bit-exact with the reference."""
    from conftest import check_generated_c, save

    path = save(_rms(), tmp_path)
    rng = np.random.default_rng(4)
    calib, x = (rng.normal(size=(n, 3, D)).astype(np.float32) for n in (16, 8))
    quant = api.calibrate(path, calib)
    assert any(op.kind == "layer_norm" and op.params["rms"] for op in quant.graph.ops)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x[:1]})[0]
    got = np.asarray(api.reference(quant, x[:1]).y, np.float64).reshape(want.shape)
    assert 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2)) > 25
    (tmp_path / "c").mkdir()
    check_generated_c(quant.graph, x, tmp_path / "c")


def test_onnx_rms_normalization_is_the_same_op():
    """ONNX's own RMSNormalization (opset 23) over the last axis: the layer_norm op without its mean, as the
    decomposed form."""
    model = _model([_node("RMSNormalization", ["h", "g"], "y", axis=-1, epsilon=1e-6)], "y",
                   {"g": np.random.default_rng(2).uniform(0.5, 1.5, D)}, opset=23)
    graph, kinds = _kinds(model)
    assert kinds == ["fully_connected_rows", "layer_norm", "fully_connected_rows"] and graph.ops[1].attrs["rms"]
    _same_as_onnxruntime(model, graph)
