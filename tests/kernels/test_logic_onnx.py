"""ONNX boolean logic And / Or / Xor / Not of comparisons' bool masks (edgec/ops/binary/compare.py: the binary
kind's LOGICAL_AND / LOGICAL_OR, Xor as NOT_EQUAL, Not as NOT_EQUAL to a stored true) and Cast of a mask or a value to bool,
as torch.onnx's TorchScript exporter writes F.hardshrink and masks of several comparisons; against onnxruntime's
float execution and bit-exact in generated C."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from conftest import check_generated_c, make_model, require
from edgec.frontend import canonicalize
from edgec.ir import NO_ACT, Op, Tensor
from edgec.ops.binary import binary_s8, quantize_binary
from onnx_int8 import float_then_int8

DATA = Path(__file__).parents[1] / "data"
HOW = "/work/torch-venv/bin/python tests/data/make_torch_logic.py"


@pytest.mark.parametrize("kind,fn", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                     ("not_equal", np.logical_xor)])
@pytest.mark.parametrize("const", [None, False, True])
def test_logic_of_masks_and_bool_constants(kind, fn, const):
    """Two masks, or a mask and a bool constant (stored as its 0 / 1 byte, not quantized onto a grid: a quantized
    false would be the zero point's nonzero byte, read as true)."""
    m = Tensor(name="m", shape=(2, 5), source="m", scale=1.0, zero_point=0, dtype="bool")
    out = Tensor(name="y", shape=(2, 5), source="y", scale=1.0, zero_point=0, dtype="bool")
    attrs = dict(op=kind, a_shape=(2, 5), b_shape=(2, 5) if const is None else (1, 1), const_first=False,
                 act=NO_ACT, common_scale=True, bool_const=True,
                 const=None if const is None else np.full((1, 1), float(const), np.float32))
    op = Op(kind="binary", name="logic", inputs=("m",) if const is not None else ("m", "n"), output="y",
            attrs=attrs)
    quantize_binary(op, [m] if const is not None else [m, m], out)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, (2, 5)).astype(np.int8)
    b = rng.integers(0, 2, (2, 5)).astype(np.int8) if const is None else op.arrays["const"]
    if const is not None:
        assert op.arrays["const"].reshape(-1).tolist() == [int(const)]
    got = binary_s8(op.params, a, b)
    assert (got.reshape(2, 5) == fn(a != 0, np.broadcast_to(b, (2, 5)) != 0)).all()


def _logic_model(shape):
    """x -> Conv 1x1 (the masks channels-last) -> a; m = Not(Or(a > 0.4, a < -0.3) Xor (x > 0)) And const_mask;
    y = Where(Cast(m, bool), a, 0)."""
    c = shape[1]
    rng = np.random.default_rng(0)
    inits = {"w": rng.normal(size=(c, c, 1, 1)) * 0.7, "bias": np.zeros(c), "hi": np.array(0.4),
             "lo": np.array(-0.3), "zero": np.array(0.0),
             "keep": (rng.uniform(size=(1, c, 1, 1)) > 0.3)}
    nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["a"], name="conv"),
             helper.make_node("Greater", ["a", "hi"], ["g"], name="gt"),
             helper.make_node("Less", ["a", "lo"], ["l"], name="lt"),
             helper.make_node("Or", ["g", "l"], ["o"], name="or"),
             helper.make_node("Greater", ["x", "zero"], ["p"], name="pos"),
             helper.make_node("Xor", ["o", "p"], ["e"], name="xor"),
             helper.make_node("Not", ["e"], ["n"], name="not"),
             helper.make_node("And", ["n", "keep"], ["m"], name="and"),
             helper.make_node("Cast", ["m"], ["mc"], name="cast", to=onnx.TensorProto.BOOL),
             helper.make_node("Where", ["mc", "a", "zero"], ["y"], name="where")]
    return make_model(nodes, ("x", list(shape)), ("y", list(shape)), inits)


def test_every_logic_operator_end_to_end(tmp_path):
    """And (with a constant mask), Or, Xor, Not and Cast to bool in one graph: the float interpreter equals
    onnxruntime, the INT8 reference is within 3 steps of it but where a comparison flips at its threshold, the C is
    bit-exact with the reference."""
    import onnxruntime as ort

    shape = (1, 4, 5, 3)
    model = _logic_model(shape)
    x = np.random.default_rng(1).uniform(-1, 1, (16,) + shape[1:]).astype(np.float32)
    kinds = [op.attrs.get("op") for op in canonicalize.canonicalize(model, "logic_model").ops if op.kind == "binary"]
    assert sorted(kinds) == sorted(["greater", "less", "logical_or", "greater", "not_equal", "not_equal",
                                    "logical_and"]), kinds
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph, want, got = float_then_int8(model, x, "logic_model", want=sess.run(None, {"x": x[:1]})[0])
    wrong = np.abs(got - want) > 3 * graph.tensors[graph.output].scale
    assert wrong.mean() < 0.05, f"{wrong.mean():.3f} of the outputs off"
    assert all((t.scale, t.zero_point) == (1.0, 0) for t in graph.tensors.values() if t.dtype == "bool")
    check_generated_c(graph, x, tmp_path)


def test_a_value_cast_to_bool_is_x_not_equal_zero_on_its_own_grid(tmp_path):
    """Cast(value, BOOL) (ONNX: x != 0; it was refused) is NOT_EQUAL to a constant 0 held on the value's own grid
    (the stored constant is the value's zero point), so the mask is true exactly when the integer is not the zero
    point: Relu -> Cast -> Not -> Where equals onnxruntime on every element where the input sits on its grid, and
    the C is bit-exact with the reference."""
    import onnxruntime as ort

    from edgec.fixedpoint import scheme
    from edgec.quant import calibrate, quantize, reference

    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Cast", ["r"], ["b"], name="tobool", to=onnx.TensorProto.BOOL),
             helper.make_node("Not", ["b"], ["n"], name="not"),
             helper.make_node("Where", ["n", "x", "zero"], ["y"], name="where")]
    model = make_model(nodes, ("x", [1, 64]), ("y", [1, 64]), {"zero": np.array(0.0)})
    graph = canonicalize.canonicalize(model, "m")
    (cast,) = [op for op in graph.ops if op.name == "tobool"]
    assert cast.kind == "binary" and cast.attrs["op"] == "not_equal" and graph.tensors[cast.output].dtype == "bool"
    x = (np.random.default_rng(2).integers(-2, 3, (8, 64)) / 2).astype(np.float32)    # on a grid: 0 is exact
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()])
    graph = quantize.quantize(graph, ranges)
    (cast,) = [op for op in graph.ops if op.name == "tobool"]
    src = graph.tensors[cast.inputs[0]]
    assert cast.arrays["const"].reshape(-1).tolist() == [src.zero_point]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tout = graph.tensors[graph.output]
    for xi in x:
        want = sess.run(None, {"x": xi[None]})[0]
        got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], xi)))
        assert np.all(np.abs(got.reshape(want.shape) - want) <= tout.scale), (got, want)
    check_generated_c(graph, x, tmp_path)


def _sqnr(want, got) -> float:
    want, got = np.asarray(want, np.float64).reshape(len(want), -1), np.asarray(got, np.float64).reshape(len(want), -1)
    return float(10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2)))


@pytest.mark.parametrize("kind", ["hardshrink", "softshrink", "logic", "maskmul"])
def test_torch_exports_build_close_to_float_and_bit_exact(kind, tmp_path):
    """tests/data/make_torch_logic.py (torch.onnx TorchScript): F.hardshrink (Cast to bool, Or), F.softshrink, a
    mask of Or / Xor / And / Not, and a mask cast to float (read as 0 / 1) times a value, inside a conv network; onnxruntime's float equals PyTorch's, the INT8 reference is
    within 30 dB of it, the host C equals the reference bit for bit."""
    import onnxruntime as ort

    from edgec import api

    path = DATA / f"torch_{kind}.onnx"
    require(path.exists(), str(path), HOW)
    d = np.load(DATA / "torch_logic_data.npz")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    y_ort = np.concatenate([sess.run(None, {"x": xi[None]})[0] for xi in d["x"]])
    np.testing.assert_allclose(y_ort, d[f"y_{kind}"], atol=1e-4)
    quant = api.calibrate(path, d["calib"])
    assert [op.kind for op in quant.graph.ops].count("where") == {"softshrink": 2, "maskmul": 0}.get(kind, 1)
    ref = np.stack([np.asarray(api.reference(quant, xi[None]).y).reshape(-1) for xi in d["x"]])
    assert _sqnr(y_ort, ref) > 30, _sqnr(y_ort, ref)
    check_generated_c(quant.graph, d["x"][:, None], tmp_path)


@pytest.mark.sweep        # ~15 s (a qemu-cortex-m4 firmware; the host C is checked in the default run, above)
def test_torch_logic_on_cortex_m4_equals_its_reference(tmp_path):
    from conftest import bench_report

    path = DATA / "torch_logic.onnx"
    require(path.exists(), str(path), HOW)
    d = np.load(DATA / "torch_logic_data.npz")
    r = bench_report(path, d["calib"], d["x"], tmp_path)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == len(d["x"])
