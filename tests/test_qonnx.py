"""edgec/frontend/qonnx.py: QONNX Quant nodes (Brevitas export_qonnx, FINN) built with the file's own integers,
scales, zero points and bit widths; edgec's INT8 reference against QONNX's semantics executed in NumPy
(scripts/corpus/qonnx_exec.py: onnx.reference with QONNX's Quant), the generated C bit-exact with the reference."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import check_generated_c
from edgec import api
from edgec.errors import EdgecError
from edgec.fixedpoint import scheme
from edgec.frontend import loader, qonnx
from edgec.ops import pool
from edgec.quant import artifact, reference

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "corpus"))
import qonnx_exec  # noqa: E402

QONNX = "qonnx.custom_op.general"
S_IN, S_A1, S_OUT, Z_OUT = 0.05, 0.1, 0.05, 5.0


def _quant(x, s, z, bits, out, signed=1, narrow=0, domain=QONNX, mode="ROUND"):
    return helper.make_node("Quant", [x, s, z, bits], [out], name=out, domain=domain, signed=signed, narrow=narrow,
                            rounding_mode=mode)


def weights():
    rng = np.random.default_rng(7)
    w1 = (rng.standard_normal((4, 2, 3, 3)) * 0.4).astype(np.float32)
    s_w1 = (np.abs(w1).reshape(4, -1).max(1) / 7).astype(np.float32).reshape(4, 1, 1, 1)
    w2 = (rng.standard_normal((3, 4, 1, 1)) * 1.2).astype(np.float32)
    return w1, s_w1, w2, (rng.standard_normal(4) * 0.2).astype(np.float32)


def small_model(domain=QONNX) -> onnx.ModelProto:
    """x -> Quant (int8) -> Conv (4-bit narrow per-channel weights, 32-bit bias) -> Relu -> Quant (unsigned 4-bit)
    -> Conv (8-bit narrow per-tensor weights) -> Quant (signed 5-bit, zero point 5): the graph's output."""
    w1, s_w1, w2, b1 = weights()
    inits = {"w1": w1, "s_w1": s_w1, "b1": b1, "s_b1": (S_IN * s_w1).reshape(4), "w2": w2,
             "s_w2": np.float32(0.01), "s_in": np.float32(S_IN), "s_a1": np.float32(S_A1),
             "s_out": np.float32(S_OUT), "z0": np.float32(0), "z_out": np.float32(Z_OUT), "b8": np.float32(8),
             "b4": np.float32(4), "b5": np.float32(5), "b32": np.float32(32)}
    nodes = [_quant("x", "s_in", "z0", "b8", "xq", domain=domain),
             _quant("w1", "s_w1", "z0", "b4", "w1q", narrow=1, domain=domain),
             _quant("b1", "s_b1", "z0", "b32", "b1q", domain=domain),
             helper.make_node("Conv", ["xq", "w1q", "b1q"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             _quant("r1", "s_a1", "z0", "b4", "a1", signed=0, domain=domain),
             _quant("w2", "s_w2", "z0", "b8", "w2q", narrow=1, domain=domain),
             helper.make_node("Conv", ["a1", "w2q"], ["c2"], name="conv2"),
             _quant("c2", "s_out", "z_out", "b5", "y", domain=domain)]
    graph = helper.make_graph(nodes, "qonnx_small", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                   [1, 2, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def run_qonnx(model, x) -> np.ndarray:
    sess = qonnx_exec.session(model)
    return np.concatenate([sess.run(None, {"x": xi[None]})[0] for xi in x])


def data(n, seed):
    return np.random.default_rng(seed).uniform(-3, 3, (n, 2, 8, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("qonnx") / "m.onnx"
    onnx.save(small_model(), str(path))
    return path, api.calibrate(path, data(16, 1)).graph


def levels(op) -> np.ndarray:
    """A layer's weight integers: int8, or its 4-bit ones unpacked (stored two per byte)."""
    if "weights4" in op.arrays:
        return scheme.unpack_int4(op.arrays["weights4"], op.attrs["weights"].size).reshape(op.attrs["weights"].shape)
    return op.arrays["weights"]


def test_weights_are_the_files_integers_and_scales(built):
    """conv1's 4-bit weights are stored packed two per byte (the file's integers), conv2's 8-bit ones as int8."""
    _, graph = built
    w1, s_w1, w2, _ = weights()
    convs = [op for op in graph.ops if op.kind == "conv2d"]
    assert len(convs) == 2 and "weights4" in convs[0].arrays and "weights" in convs[1].arrays
    want1 = np.clip(np.round(w1 / s_w1), -7, 7)                       # 4 bits, narrow
    np.testing.assert_array_equal(levels(convs[0]).transpose(0, 3, 1, 2), want1)
    np.testing.assert_array_equal(convs[1].arrays["weights"].transpose(0, 3, 1, 2),
                                  np.clip(np.round(w2 / np.float32(0.01)), -127, 127))


def test_activations_take_the_files_grids_and_narrower_ranges(built):
    """edgec's 4-bit ReLU levels and 5-bit output levels against QONNX's own run: on the file's grids, inside their
    narrower ranges (both ends reached), equal but where TFLite's requantization (double rounding) and QONNX's float
    rounding part near a tie: one level per op, the output's bound that one level of the ReLU times conv2's largest
    weight, plus its own."""
    path, graph = built
    out = graph.tensors[graph.output]
    assert (float(out.scale), int(out.zero_point)) == (pytest.approx(S_OUT), int(Z_OUT))
    assert next(op for op in graph.ops if op.kind == "conv2d").attrs["act"] == (0.0, pytest.approx(15 * S_A1))
    model = onnx.load(str(path))
    model.graph.output.append(helper.make_tensor_value_info("a1", TensorProto.FLOAT, [1, 4, 8, 8]))
    x = data(24, 2)
    sess = qonnx_exec.session(model)
    want_y, want_a1 = (np.round(np.concatenate(v)) for v in zip(*[
        (y / S_OUT + Z_OUT, a1 / S_A1) for y, a1 in (sess.run(None, {"x": xi[None]}) for xi in x)]))
    runs = [reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], xi[None]), keep_all=True)
            for xi in x]
    a1 = graph.tensors["a1"]
    got_a1 = np.stack([r["a1"].reshape(8, 8, 4).transpose(2, 0, 1) for r in runs]).astype(np.int64) - a1.zero_point
    got_y = np.stack([r["y"].reshape(8, 8, 3).transpose(2, 0, 1) for r in runs]).astype(np.int64)   # NHWC
    assert got_a1.min() == want_a1.min() == 0 and got_a1.max() == want_a1.max() == 15           # the 4-bit range
    assert got_y.min() == want_y.min() == -16 and got_y.max() == want_y.max() == 15            # the 5-bit range
    assert np.abs(got_a1 - want_a1).max() <= 1
    w2 = weights()[2]
    bound = 1 + np.abs(np.clip(np.round(w2 / np.float32(0.01)), -127, 127)).sum(1).max() * 0.01 * S_A1 / S_OUT
    assert np.abs(got_y - want_y).max() <= bound
    exact_a1, exact_y = float(np.mean(got_a1 == want_a1)), float(np.mean(got_y == want_y))
    wide = small_model()          # the same file with an 8-bit ReLU: its run is not what edgec computed
    next(i for i in wide.graph.initializer if i.name == "b4").CopyFrom(numpy_helper.from_array(np.float32(8), "b4"))
    unclamped = float(np.mean(got_y == np.round(run_qonnx(wide, x) / S_OUT + Z_OUT)))
    print(f"QONNX small model: levels equal to QONNX's run: ReLU {exact_a1:.4f}, output {exact_y:.4f} "
          f"({unclamped:.4f} against the run without the 4-bit clamp)")
    assert exact_a1 >= 0.95 and exact_y >= 0.95 and unclamped < exact_y - 0.1


def test_finn_default_domain_is_the_same_model(built, tmp_path):
    _, graph = built
    path = tmp_path / "finn.onnx"
    onnx.save(small_model(domain=""), str(path))
    finn = api.calibrate(path, data(16, 1)).graph
    x = data(4, 3)
    for xi in x:
        assert np.array_equal(api.reference(finn, xi[None]).q, api.reference(graph, xi[None]).q)


def test_generated_c_is_bit_exact_with_the_reference(built, tmp_path):
    check_generated_c(built[1], data(8, 4), tmp_path)


def test_quant_formula_is_qonnxs():
    """edgec's constant rounding (ties to even after the zero point is added, clip before rounding) is QONNX's."""
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 9.0, -9.0], np.float32)
    q, y = qonnx.quant(x, np.float32(1), np.float32(1), 4, True, True)
    np.testing.assert_array_equal(q, [-2, 0, 0, 2, 2, 4, 7, -7])
    np.testing.assert_array_equal(y, qonnx_exec._quant(x, np.float32(1), np.float32(1), 4, 1, 1, "ROUND"))


def test_what_cannot_be_represented_is_refused_in_one_line():
    inits = {"s": np.float32(0.1), "z": np.float32(0), "b16": np.float32(16), "b8": np.float32(8)}
    nodes = [_quant("x", "s", "z", "b16", "wide"),
             helper.make_node("Abs", ["s"], ["s_run"], name="abs"),
             _quant("wide", "s_run", "z", "b8", "computed"),
             _quant("computed", "s", "z", "b8", "floor", mode="FLOOR"),
             helper.make_node("BipolarQuant", ["floor", "s4"], ["sign"], name="bipolar", domain=QONNX),
             helper.make_node("Trunc", ["sign", "s", "z", "b8", "s", "b8"], ["y"], name="trunc", domain=QONNX)]
    inits["s4"] = np.full(4, 0.1, np.float32)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(QONNX, 1)])
    with pytest.raises(EdgecError) as err:
        loader.prepare(model, "m.onnx")
    line = str(err.value)
    assert "\n" not in line and line.startswith("m.onnx: node 'wide' (Quant): activation 'x' is quantized to 16 bits")
    for part in ("node 'computed' (Quant): its scale, zero point and bit width must be constants ('s_run'",
                 "node 'floor' (Quant): rounding_mode FLOOR is not supported",
                 "node 'bipolar' (BipolarQuant): activation 'floor' has a scale per channel",
                 "node 'trunc' (Trunc): truncates 'sign', which is not the output of an average pool"):
        assert part in line, line


def test_brevitas_export_qonnx_weights_and_4_bit_relus():
    """tests/corpus/brevitas_qonnx_kws_w4a4 (Brevitas export_qonnx, scripts/corpus/export_qdq_tools.py): 4-bit
    per-channel weights as the file's integers, every 4-bit ReLU clamped at its 15th step."""
    folder = ROOT / "tests" / "corpus" / "brevitas_qonnx_kws_w4a4"
    model = onnx.load(str(folder / "model.onnx"))
    bits = {i.name: float(numpy_helper.to_array(i)) for i in model.graph.initializer if i.name.endswith("_2_output_0")}
    graph = api.calibrate(folder / "model.onnx", np.load(folder / "calib.npz")["x"]).graph
    layers = [op for op in graph.ops if "weights4" in op.arrays]          # stored packed two per byte
    relus = [n for n in model.graph.node if n.op_type == "Quant" and n.input[0].endswith("Relu_output_0")]
    assert len(layers) == 6 and len(relus) == 5
    for op in layers:
        assert levels(op).min() >= -7 and levels(op).max() <= 7
    for op, q in zip(layers, relus):
        assert bits[q.input[3]] == 4.0
        assert op.attrs["act"][1] == pytest.approx(15 * float(graph.tensors[op.output].scale))


def test_inspect_says_the_quantization_comes_from_quant_nodes(built):
    assert api.inspect_model(built[0])["qdq"]["qonnx"] == {"activations": 3, "constants": 3}


def test_per_channel_activation_scales_and_unsigned_narrow_ranges_become_qdq_nodes():
    """A scale of x's rank varying along the channels: one per-axis QuantizeLinear (qdq.py then takes one grid);
    an unsigned narrow 8-bit Quant: the uint8 grid clamped to [0, 254]; asymmetric weights: the QDQ rule's refusal."""
    inits = {"s": np.array([0.1, 0.2, 0.4], np.float32).reshape(1, 3, 1, 1), "z": np.float32(0),
             "s1": np.float32(0.1), "b8": np.float32(8)}
    nodes = [_quant("x", "s", "z", "b8", "pc"), _quant("pc", "s1", "z", "b8", "y", signed=0, narrow=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(QONNX, 1)])
    model = qonnx.to_qdq(onnx.ModelProto.FromString(original.SerializeToString()))
    ops = [(n.op_type, {a.name: helper.get_attribute_value(a) for a in n.attribute}) for n in model.graph.node]
    assert ops[:2] == [("QuantizeLinear", {"axis": 1}), ("DequantizeLinear", {"axis": 1})]
    assert [o for o, _ in ops[2:]] == ["QuantizeLinear", "DequantizeLinear", "Clip", "QuantizeLinear",
                                      "DequantizeLinear"]
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    clip = model.graph.node[4]
    assert (float(inits[clip.input[1]]), float(inits[clip.input[2]])) == (0.0, pytest.approx(25.4))
    assert inits[model.graph.node[2].input[2]].dtype == np.uint8
    x = np.random.default_rng(5).uniform(-10, 40, (2, 3, 4, 4)).astype(np.float32)     # ONNX Runtime on the
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])   # rewrite: QONNX's
    got = np.concatenate([sess.run(None, {"x": xi[None]})[0] for xi in x])
    np.testing.assert_array_equal(got, run_qonnx(original, x))
    assert got.max() == pytest.approx(25.4) and got.min() == 0


def test_asymmetric_weights_are_refused_as_in_a_qdq_file():
    w = np.random.default_rng(6).standard_normal((2, 3)).astype(np.float32)
    inits = {"w": w, "s": np.float32(0.05), "z": np.float32(3), "b4": np.float32(4)}
    nodes = [_quant("w", "s", "z", "b4", "wq"), helper.make_node("MatMul", ["x", "wq"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    with pytest.raises(EdgecError, match="the weights of 'mm' .MatMul. are asymmetric int8 weights"):
        loader.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                               helper.make_opsetid(QONNX, 1)]), "m.onnx")


def binary_weights_model() -> onnx.ModelProto:
    """FINN's CNV w1a2 form: x -> Quant (int8) -> Conv (BipolarQuant weights, one scale per output channel) -> Relu
    -> Quant (unsigned 4-bit): the graph's output."""
    rng = np.random.default_rng(9)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0] = 0.0                                  # 0 is +1 (QONNX's binary_quant: x >= 0)
    inits = {"w": w, "s_w": np.array([0.02, 0.05, 0.03, 0.04], np.float32).reshape(4, 1, 1, 1),
             "s_in": np.float32(S_IN), "s_a": np.float32(S_A1), "z0": np.float32(0), "b8": np.float32(8),
             "b4": np.float32(4)}
    nodes = [_quant("x", "s_in", "z0", "b8", "xq"),
             helper.make_node("BipolarQuant", ["w", "s_w"], ["wq"], name="binary_w", domain=QONNX),
             helper.make_node("Conv", ["xq", "wq"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             _quant("r", "s_a", "z0", "b4", "y", signed=0)]
    graph = helper.make_graph(nodes, "qonnx_binary", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                    [1, 2, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(QONNX, 1)])
    model.ir_version = 8
    return model, w


def test_bipolar_quant_weights_are_signs_times_the_files_scales(tmp_path):
    """The weights are -1 / +1 (0 -> +1) with the file's per-channel scales; edgec's 4-bit output equals QONNX's
    own run (qonnx_exec) but where TFLite's requantization and QONNX's float rounding part near a tie (one level);
    the generated C is bit-exact with the reference."""
    model, w = binary_weights_model()
    path = tmp_path / "binary.onnx"
    onnx.save(model, str(path))
    graph = api.calibrate(path, data(16, 1)).graph
    conv = next(op for op in graph.ops if op.kind == "conv2d")
    assert "weights4" in conv.arrays               # -1 / +1 fit 4 bits: stored packed two per byte
    np.testing.assert_array_equal(levels(conv).transpose(0, 3, 1, 2), np.where(w >= 0, 1, -1))
    x = data(8, 5)
    want = run_qonnx(model, x)
    got = np.concatenate([np.asarray(api.reference(graph, xi[None]).y, np.float32).reshape(want[:1].shape)
                          for xi in x])
    assert np.abs(got - want).max() <= S_A1 * 1.001, np.abs(got - want).max()
    assert np.mean(got == want) > 0.95 and len(np.unique(want)) > 4
    check_generated_c(graph, x, tmp_path / "c")


# ---- Trunc after average pools, BipolarQuant on activations (tests/data/make_brevitas_qonnx_ops.py: Brevitas 0.13's
# export_qonnx of TruncAvgPool2d, TruncAdaptiveAvgPool2d and SignedBinaryActPerTensorConst)
OPS_DATA = ROOT / "tests" / "data" / "brevitas_qonnx_ops_data.npz"


def brevitas_file(name: str):
    path = ROOT / "tests" / "data" / f"{name}.onnx"
    d = np.load(OPS_DATA)
    return path, d[f"{name}_calib"], d[f"{name}_test"]


def levels_of(graph, path, x) -> tuple[np.ndarray, np.ndarray]:
    """(edgec's output levels, QONNX's) on the samples x: the reference's int8 output and QONNX's float output on
    the same grid."""
    out = graph.tensors[graph.output]
    want = run_qonnx_named(onnx.load(str(path)), x)
    got = np.concatenate([np.asarray(api.reference(graph, xi[None]).q, np.int64).reshape(1, -1) for xi in x])
    return got, np.round(want.reshape(len(x), -1) / out.scale + out.zero_point).astype(np.int64)


def run_qonnx_named(model, x) -> np.ndarray:
    sess = qonnx_exec.session(model)
    return np.concatenate([sess.run(None, {model.graph.input[0].name: xi[None]})[0] for xi in x])


def test_trunc_after_average_pools_is_qonnxs_rounding(tmp_path):
    """Brevitas TruncAvgPool2d (2x2 onto a 4-bit unsigned grid, rounding half to even) and TruncAdaptiveAvgPool2d
    (a signed 4x4 plane, FLOOR): each pool runs sum / 4 and sum / 16 with that rounding; the model's output equals
    QONNX's own run on every element, where TFLite's rounding (half away from zero) of the same pools does not;
    the generated C is bit-exact with the reference."""
    path, calib, test = brevitas_file("brevitas_trunc_pool")
    graph = api.calibrate(path, calib).graph
    pools = [op for op in graph.ops if op.kind == "avg_pool"]
    assert [op.attrs.get("rounding") for op in pools] == ["even", "floor"]
    saved = tmp_path / "saved"                           # the build folder's record keeps the rounding
    saved.mkdir()
    artifact.save_graph(graph, saved)
    assert [pool.trunc_rounding(op) for op in artifact.load_graph(saved).ops if op.kind == "avg_pool"] == \
        ["even", "floor"]
    got, want = levels_of(graph, path, test)
    assert len(np.unique(want)) > 20
    np.testing.assert_array_equal(got, want)
    tflite = graph.replace_ops([dataclasses.replace(op, attrs={k: v for k, v in op.attrs.items() if k != "rounding"},
                                                    params={k: v for k, v in op.params.items() if k != "_rounding"})
                                if op.kind == "avg_pool" else op for op in graph.ops])
    away = np.concatenate([np.asarray(api.reference(tflite, xi[None]).q, np.int64).reshape(1, -1) for xi in test])
    assert np.mean(away != want) > 0.05
    check_generated_c(graph, test, tmp_path)


def test_trunc_outside_edgecs_form_is_refused_in_one_line():
    """A Trunc whose step is not the pool's window (a 3x3 pool truncated by 16), with a CEIL and a lowercase mode."""
    inits = {"s_in": np.float32(0.1), "s_sum": np.float32(0.1 / 9), "s_out": np.float32(0.1 * 16 / 9),
             "z": np.float32(0), "b8": np.float32(8), "b4": np.float32(4), "b12": np.float32(12)}
    nodes = [_quant("x", "s_in", "z", "b8", "xq"),
             helper.make_node("AveragePool", ["xq"], ["p"], name="pool", kernel_shape=[3, 3]),
             helper.make_node("Trunc", ["p", "s_sum", "z", "b12", "s_out", "b4"], ["y"], name="trunc", domain=QONNX,
                              rounding_mode="ceil")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(QONNX, 2)])
    with pytest.raises(EdgecError) as err:
        loader.prepare(model, "m.onnx")
    line = str(err.value)
    assert "\n" not in line and line.startswith("m.onnx: node 'trunc' (Trunc): divides the pool's sum by 16 where "
                                                 "its window holds 9 taps"), line


def test_bipolar_quant_of_activations_is_a_sign_on_the_scales_grid(tmp_path):
    """Brevitas's binary activations (SignedBinaryActPerTensorConst, between binary-weight convolutions): int8 -1 /
    +1 with the file's scale, 0 counting as +1 (x's zero point compares as >= 0); the signs are QONNX's but where
    the int8 BatchNorm (its input and its own rounding) moves a value across 0 (within one step of its grid), and so
    are the outputs of the rest of the network fed edgec's signs (one level: TFLite's requantization and QONNX's
    float rounding of a tie); the generated C is bit-exact with the reference."""
    path, calib, test = brevitas_file("brevitas_binary_act")
    graph = api.calibrate(path, calib).graph
    sign = next(t for t in graph.tensors.values() if t.name.endswith("BipolarQuant__sign"))
    assert sign.dtype == "int8" and (float(sign.scale), int(sign.zero_point)) == (1.0, 0)
    model = onnx.load(str(path))
    bn = next(n for n in model.graph.node if n.op_type == "BatchNormalization").output[0]
    act = next(n for n in model.graph.node if n.op_type == "BipolarQuant" and n.input[0] == bn).output[0]
    tail = qonnx_exec.session(onnx.utils.Extractor(model).extract_model([act], [model.graph.output[0].name]))
    model.graph.output.extend([helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in (act, bn)])
    sess = qonnx_exec.session(model)
    bn_t, out = graph.tensors[bn], graph.tensors[graph.output]
    differ, equal = 0, []
    for xi in test:
        _, s_want, bn_want = sess.run(None, {model.graph.input[0].name: xi[None]})
        run = reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], xi[None]), keep_all=True)
        s_got = np.asarray(run[sign.name]).reshape(8, 8, 8).transpose(2, 0, 1)
        bn_got = np.asarray(run[bn], np.int64).reshape(8, 8, 8).transpose(2, 0, 1)
        assert set(np.unique(s_got)) == {-1, 1}
        np.testing.assert_array_equal(s_got, np.where(bn_got >= bn_t.zero_point, 1, -1))      # exact on edgec's grid
        wrong = s_got != s_want[0]
        assert np.all(np.abs(bn_want[0][wrong]) <= bn_t.scale * 1.001)     # the int8 BatchNorm near 0
        differ += int(wrong.sum())
        y = tail.run(None, {act: s_got[None].astype(np.float32) * np.float32(sign.scale)})[0][0]
        got = np.asarray(run[graph.output], np.int64).reshape(4, 8, 8)          # the output port: NCHW
        want = np.round(y / out.scale + out.zero_point)
        assert np.abs(got - want).max() <= 1
        equal.append(float(np.mean(got == want)))
    print(f"binary activations: signs as QONNX's {1 - differ / (len(test) * 512):.4f}, outputs fed edgec's signs "
          f"equal {np.mean(equal):.4f}")
    assert differ < 0.02 * len(test) * 512 and np.mean(equal) > 0.95
    check_generated_c(graph, test, tmp_path)


@pytest.mark.sweep        # ~1 min each: a firmware built and run on qemu-cortex-m4
@pytest.mark.parametrize("name", ["brevitas_trunc_pool", "brevitas_binary_act"])
def test_trunc_pools_and_binary_activations_on_cortex_m4_equal_their_reference(tmp_path, name):
    """`edgec build --calib --board qemu-cortex-m4` and `edgec bench`: the device equals the reference on every
    sample (edgec_avg_pool_trunc_s8, the sign's compare and select)."""
    from conftest import bench_report

    path, calib, test = brevitas_file(name)
    r = bench_report(path, calib, test, tmp_path)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == len(test)
