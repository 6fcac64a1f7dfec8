"""A QDQ file's 4-bit weights (edgec/frontend/qdq.py `weight_bits`, canonicalize, fixedpoint/scheme.py `weighted`):
ONNX's own INT4 initializers (packed two per byte by ONNX, DequantizeLinear at opset 21), Brevitas's int8 constant
-> Clip to [-7, 7], a QONNX Quant of 4 bits: the file's integers and scales, stored packed two per byte in flash
and run by the `_s4` kernels (`--optimize size`; `--optimize speed` runs them as int8 weights on the int8 speed
kernels, edgec/lower/lowering.py, unless those do not fit the flash), the same numbers as the same file with int8
weights, the generated C bit-exact with the NumPy reference (portable and fast kernels, ASan/UBSan)."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ckernels import declared_bytes
from conftest import REPO, SANITIZE, check_generated_c
from edgec import api, pipeline
from edgec.codegen import cmodel
from edgec.fixedpoint import scheme
from edgec.ops import select
from edgec.quant import ptq, reference

SHAPE = [1, 3, 7, 7]
CORPUS = REPO / "tests" / "corpus"


def _weights():
    """Per-channel 4-bit integers with odd counts (a conv's 5x3x3x3 = 135, a depthwise 5x1x3x3 = 45, a Gemm's
    7x245 = 1715) and their per-channel scales; -8 included (int4's full range, not only Brevitas's narrow one)."""
    rng = np.random.default_rng(29)
    w = {"conv": rng.integers(-8, 8, (5, 3, 3, 3)), "dw": rng.integers(-7, 8, (5, 1, 3, 3)),
         "fc": rng.integers(-8, 8, (7, 5 * 7 * 7))}
    s = {k: rng.uniform(0.005, 0.05, v.shape[0]).astype(np.float32) for k, v in w.items()}
    w["conv"][0, 0, 0, 0], w["fc"][6, -1] = -8, 7
    return w, s


def _model(int4: bool) -> onnx.ModelProto:
    """x -> Q/DQ -> Conv (4-bit weights) -> Relu -> Q/DQ -> depthwise Conv -> Q/DQ -> Flatten -> Gemm (transB) -> Q/DQ.
    int4: the weights as ONNX INT4 initializers, else the same integers as int8 ones."""
    w, s = _weights()
    inits = [numpy_helper.from_array(np.float32(v), k) for k, v in
             (("s_x", 0.02), ("s_a", 0.03), ("s_b", 0.04), ("s_y", 0.1))]
    inits.append(numpy_helper.from_array(np.int8(0), "z"))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_x", "z"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "s_x", "z"], ["xd"], name="dqx")]
    for k, v in w.items():
        if int4:
            inits.append(helper.make_tensor(f"w_{k}", TensorProto.INT4, v.shape, v.reshape(-1).tolist()))
            inits.append(helper.make_tensor(f"zw_{k}", TensorProto.INT4, [v.shape[0]], [0] * v.shape[0]))
        else:
            inits.append(numpy_helper.from_array(v.astype(np.int8), f"w_{k}"))
            inits.append(numpy_helper.from_array(np.zeros(v.shape[0], np.int8), f"zw_{k}"))
        inits.append(numpy_helper.from_array(s[k], f"sw_{k}"))
        nodes.append(helper.make_node("DequantizeLinear", [f"w_{k}", f"sw_{k}", f"zw_{k}"], [f"wd_{k}"],
                                      name=f"dqw_{k}", axis=0))
    inits.append(numpy_helper.from_array(np.linspace(-0.2, 0.2, 5).astype(np.float32), "b_conv"))
    nodes += [helper.make_node("Conv", ["xd", "wd_conv", "b_conv"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
              helper.make_node("QuantizeLinear", ["r1", "s_a", "z"], ["aq"], name="qa"),
              helper.make_node("DequantizeLinear", ["aq", "s_a", "z"], ["ad"], name="dqa"),
              helper.make_node("Conv", ["ad", "wd_dw"], ["c2"], name="dw", group=5, pads=[1, 1, 1, 1]),
              helper.make_node("QuantizeLinear", ["c2", "s_b", "z"], ["bq"], name="qb"),
              helper.make_node("DequantizeLinear", ["bq", "s_b", "z"], ["bd"], name="dqb"),
              helper.make_node("Flatten", ["bd"], ["f"], name="flatten"),
              helper.make_node("Gemm", ["f", "wd_fc"], ["g"], name="fc", transB=1),
              helper.make_node("QuantizeLinear", ["g", "s_y", "z"], ["yq"], name="qy"),
              helper.make_node("DequantizeLinear", ["yq", "s_y", "z"], ["y"], name="dqy")]
    graph = helper.make_graph(nodes, "qdq_int4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def _x(n, seed):
    return np.random.default_rng(seed).uniform(-2, 2, (n, *SHAPE[1:])).astype(np.float32)


def _int8_levels(g):
    """The graph with every packed int4 layer's integers unpacked into int8 weights (the int8 kernels then run)."""
    import copy
    g = copy.deepcopy(g)
    for op in g.ops:
        if "weights4" in op.arrays:
            n = op.attrs["weights"].size
            op.arrays["weights"] = scheme.unpack_int4(op.arrays.pop("weights4"), n).reshape(op.attrs["weights"].shape)
    return g


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{kind: (path, quantized graph)}: "int4" the INT4 file, "int8" the same integers as int8 constants, "wide"
    that with one fully connected weight 9 (outside int4's range)."""
    out = {}
    for kind in ("int4", "int8", "wide"):
        model = _model(kind == "int4")
        if kind == "wide":
            w = next(i for i in model.graph.initializer if i.name == "w_fc")
            a = numpy_helper.to_array(w).copy()
            a[0, 0] = 9
            w.CopyFrom(numpy_helper.from_array(a, "w_fc"))
        path = tmp_path_factory.mktemp("qdq_int4") / f"{kind}.onnx"
        onnx.save(model, str(path))
        out[kind] = path, api.calibrate(path, _x(8, 1), ptq.QuantOptions(sensitivity_samples=0)).graph
    return out


def test_onnx_int4_initializers_are_the_files_integers_packed_two_per_byte(built):
    w, s = _weights()
    g4 = built["int4"][1]
    four = {op.name: op for op in g4.ops if select.int4_weights(op)}
    assert sorted(four) == ["conv", "dw", "fc"] and not any("weights" in op.arrays for op in g4.ops)
    assert "3 of 3 weighted layers take the model's own scales and zero points (3 of them its 4-bit weights: " \
           "packed two per byte with --optimize size, int8 on the speed kernels with --optimize speed)" \
           in ptq.qdq_summary(g4)                # the build log says so
    for name, op in four.items():
        n = op.attrs["weights"].size
        assert op.arrays["weights4"].nbytes == (n + 1) // 2 and n % 2 == 1       # odd counts: a last half byte
        levels = scheme.unpack_int4(op.arrays["weights4"], n).reshape(op.attrs["weights"].shape)
        want = w[name].transpose(0, 2, 3, 1) if name == "conv" else w[name]      # edgec's OHWI conv layout
        if name == "dw":
            want = w[name].reshape(5, 3, 3).transpose(1, 2, 0)                  # (kh, kw, channels)
        if name == "fc":        # its columns follow edgec's NHWC flattening: each row's integers, in any order
            levels, want = np.sort(levels, axis=1), np.sort(want, axis=1)
        np.testing.assert_array_equal(levels.reshape(-1), want.reshape(-1))
        np.testing.assert_array_equal(op.attrs["weight_scale"], s[name].astype(np.float64))
    x = scheme.quantize_input(g4.tensors[g4.input], _x(16, 2))
    g8 = _int8_levels(g4)                                # the same numbers through the int8 kernels
    assert not any(select.int4_weights(op) for op in g8.ops)
    for xi in x:
        np.testing.assert_array_equal(reference.run(g4, xi), reference.run(g8, xi))


def test_int8_constants_are_packed_where_every_integer_fits_4_bits(built):
    """The same integers as int8 constants (a 4-bit export written in int8, as Brevitas's Clip): the same packed
    layers, byte for byte; one integer outside [-8, 7] keeps that layer (only it) in int8."""
    g4, g8, wide = (built[k][1] for k in ("int4", "int8", "wide"))
    for a, b in zip(g4.ops, g8.ops):
        assert sorted(a.arrays) == sorted(b.arrays)
        for k in a.arrays:
            np.testing.assert_array_equal(a.arrays[k], b.arrays[k])
    assert sorted(op.name for op in wide.ops if select.int4_weights(op)) == ["conv", "dw"]
    fc = next(op for op in wide.ops if op.name == "fc")
    assert "weights" in fc.arrays and fc.arrays["weights"].max() == 9


def test_onnx_int4_file_runs_as_onnx_runtime_runs_it(built):
    path, g = built["int4"]
    x = _x(16, 3)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.concatenate([sess.run(None, {"x": xi[None]})[0] for xi in x])
    from edgec import ports
    got = ports.dequantize_outputs(g, np.stack([reference.run(g, xi) for xi in
                                                ports.quantize_inputs(g, x)])).reshape(want.shape)
    step = 0.1                                           # the output's grid: at most a level or two off (rounding)
    assert np.abs(got - want).max() <= 2 * step + 1e-6 and np.mean(got == want) > 0.8


@pytest.mark.parametrize("optimize", [None, "size", "speed"])
def test_onnx_int4_generated_c_is_bit_exact_under_sanitizers(built, tmp_path, optimize):
    """Portable kernels (None), the packed fast `_s4` kernels (`--optimize size`) and the int8 speed variants the
    file's 4-bit integers run on with `--optimize speed` (edgec/lower/lowering.py speed_weights)."""
    g = built["int4"][1]
    if optimize:
        g = pipeline.lower(g, optimize, dsp=True)
        kernels = {op.name: op.lowering.kernel.name for op in g.ops if op.lowering and "bias" in op.arrays}
        if optimize == "size":
            assert kernels["conv"] == "edgec_conv2d_im2col_s4" and kernels["fc"] == "edgec_fully_connected_packed_s4"
            assert kernels["dw"].endswith("_s4")
        else:
            assert kernels["conv"].endswith("_s8") and kernels["fc"].endswith("_s8"), kernels
            assert kernels["dw"] == "edgec_depthwise_conv2d_s4"    # no int8 fast kernel takes it: kept packed
            assert [op.name for op in g.ops if select.int4_weights(op)] == ["dw"]
    # the suite's sanitizer flags (conftest.SANITIZE): the runtime objects of the other sanitized tests serve it
    check_generated_c(g, _x(12, 4), tmp_path, flags=(*SANITIZE, "-DEDGEC_EMULATE_DSP") if optimize else SANITIZE)


def _corpus_graph(name):
    folder = CORPUS / name
    return pipeline.calibrate_model(folder / "model.onnx", folder / "calib.npz",
                                    ptq.QuantOptions(sensitivity_samples=0))[1].graph


@pytest.fixture(scope="module")
def brevitas_kws():
    return _corpus_graph("brevitas_kws_int4_weights")


def _weight_arrays(g, plan, tmp_path) -> dict:
    """The weight arrays of the generated model.c (static const int8_t ..._weights4[N] for the portable kernels,
    ..._fw[N] for the fast ones), in bytes, by name."""
    cmodel.generate(g, plan, tmp_path, "m")
    declared = declared_bytes((tmp_path / "m.c").read_text())
    return {n: v for n, v in declared.items() if re.search(r"_(fw|weights4?)$", n)}


@pytest.mark.parametrize("name", ["brevitas_kws_int4_weights", "brevitas_qonnx_kws_w4a4"])
def test_brevitas_4_bit_weights_are_packed_for_size_and_int8_on_the_speed_kernels(name, brevitas_kws, tmp_path):
    """The corpus's Brevitas 4-bit files (the DS-CNN's 4,288 weights): `--optimize size` keeps them packed, n / 2
    bytes for n weights on the `_s4` kernels (2,144 B; 4,288 B as int8); `--optimize speed` runs the same integers
    on the int8 speed variants (15,812 B of their int16-widened layouts, 871,000 instructions on qemu-cortex-m4
    against 1,395,780 packed: docs/quantization.md), with the same numbers as the packed layers."""
    q = brevitas_kws if name == "brevitas_kws_int4_weights" else _corpus_graph(name)
    counts = [op.attrs["weights"].size for op in q.ops if select.int4_weights(op)]
    assert len(counts) == 6 and sum(counts) == 4288
    x = scheme.quantize_input(q.tensors[q.input], np.load(CORPUS / name / "calib.npz")["x"][:2])
    for optimize in ("size", "speed"):
        g, plan = pipeline.schedule_and_plan(q, optimize=optimize, dsp=True)
        layers = [op for op in g.ops if "bias" in op.arrays]
        kernels = [op.lowering.kernel.name for op in layers]
        arrays = _weight_arrays(g, plan, tmp_path)
        assert len(layers) == 6 and len(arrays) == 6, (kernels, arrays)
        if optimize == "size":
            assert all(k.endswith("_s4") for k in kernels) and all(select.int4_weights(op) for op in layers), kernels
            assert sum(arrays.values()) == sum((n + 1) // 2 for n in counts) == 2144, arrays
        else:
            assert all(k.endswith("_s8") for k in kernels) and not any(select.int4_weights(op) for op in layers)
            assert all(op.lowering.variant not in (None, "generic") for op in layers), kernels  # speed variants
            assert sum(arrays.values()) == 15812, arrays
        for xi in x:
            np.testing.assert_array_equal(reference.run(g, xi), reference.run(q, xi))


def test_a_speed_build_of_4_bit_weights_that_does_not_fit_the_flash_falls_back_to_packed(brevitas_kws):
    """plan_to_fit on a board whose flash takes the packed build but not the speed one: the build falls back to
    `--optimize size` (the `_s4` kernels, packed weights) and says so; on qemu-cortex-m4 itself the speed build."""
    from edgec.targets import boards, fit
    board = boards.load_board("qemu-cortex-m4")
    lowered, _, _, mode = pipeline.plan_to_fit(brevitas_kws, board)
    assert mode == "speed" and not any(select.int4_weights(op) for op in lowered.ops)
    need = {m: fit.estimate(*pipeline.schedule_and_plan(brevitas_kws, optimize=m, dsp=True), board)["flash"]["total"]
            for m in ("speed", "size")}
    assert need["size"] + 8000 < need["speed"], need
    small = dataclasses.replace(board, flash_bytes=(need["speed"] + need["size"]) // 2)
    said = []
    lowered, _, budget, mode = pipeline.plan_to_fit(brevitas_kws, small, log=said.append)
    assert mode == "size" and budget["flash"]["total"] == need["size"], (need, budget["flash"])
    assert sum(select.int4_weights(op) for op in lowered.ops) == 6
    assert any("do not fit board" in m and "(--optimize size)" in m for m in said), said


def _one_conv(tmp_path, act_zp, weight_q: bool) -> str:
    """x -> Q/DQ (zero point act_zp) -> Conv (weights: a float constant -> QuantizeLinear (INT4) -> DequantizeLinear
    if weight_q, else an INT4 constant -> DequantizeLinear) -> y, at opset 21."""
    wf = np.linspace(-0.5, 0.5, 2 * 3 * 3 * 3).astype(np.float32).reshape(2, 3, 3, 3)
    inits = [numpy_helper.from_array(np.float32(0.02), "s"), act_zp, numpy_helper.from_array(np.float32(0.05), "sw"),
             helper.make_tensor("zw", TensorProto.INT4, [], [0])]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dqx")]
    if weight_q:        # 0.5 / 0.05 = 10 levels: QuantizeLinear to INT4 saturates at 7
        inits.append(numpy_helper.from_array(wf, "wf"))
        nodes.append(helper.make_node("QuantizeLinear", ["wf", "sw", "zw"], ["w"], name="qw"))
    else:
        inits.append(helper.make_tensor("w", TensorProto.INT4, wf.shape, np.clip(np.round(wf / 0.05), -8, 7)
                                        .astype(int).reshape(-1).tolist()))
    nodes += [helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wd"], name="dqw"),
              helper.make_node("Conv", ["xd", "wd"], ["y"], name="conv")]
    graph = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    path = str(tmp_path / f"one{int(weight_q)}.onnx")
    onnx.save(model, path)
    return path


def test_a_float_weight_quantized_to_int4_saturates_at_int4s_range(tmp_path):
    path = _one_conv(tmp_path, numpy_helper.from_array(np.int8(0), "z"), True)
    g = api.calibrate(path, np.random.default_rng(5).uniform(-1, 1, (8, 3, 5, 5)).astype(np.float32),
                      ptq.QuantOptions(sensitivity_samples=0)).graph
    op = next(op for op in g.ops if op.kind == "conv2d")
    levels = scheme.unpack_int4(op.arrays["weights4"], op.attrs["weights"].size)
    assert levels.min() == -8 and levels.max() == 7          # -10 .. 10 levels, saturated as ONNX's INT4 does


def test_int4_activations_are_refused_in_one_line(tmp_path):
    from edgec.errors import EdgecError
    path = _one_conv(tmp_path, helper.make_tensor("z", TensorProto.INT4, [], [0]), False)
    with pytest.raises(EdgecError, match=r"node 'qx' \(QuantizeLinear\): quantizes an activation to int4; "
                                         r"edgec runs a QDQ file's activations in int8"):
        api.calibrate(path, np.zeros((2, 3, 5, 5), np.float32), ptq.QuantOptions(sensitivity_samples=0))


def test_a_16x8_layer_of_a_4_bit_file_takes_int8_weights(built, tmp_path):
    """`--int16 conv` on the INT4 file: that layer runs TFLite's 16x8 kernel, which reads int8 weights (it found none
    before: KeyError 'weights'); the others stay packed, and the generated C is the reference's."""
    path = built["int4"][0]
    g = api.calibrate(path, _x(8, 1), ptq.QuantOptions(sensitivity_samples=0, int16=("conv",))).graph
    precision = {op.name: select.precision(op, g.tensors[op.output].dtype) for op in g.ops if "bias" in op.arrays}
    assert precision == {"conv": "int16", "dw": "int4", "fc": "int4"}
    check_generated_c(g, _x(6, 4), tmp_path)
