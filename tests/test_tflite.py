""".tflite import (edgec/frontend/tflite.py): the four official MLPerf Tiny INT8 models reproduce TensorFlow Lite
Micro's outputs (`y_int8_tflm` of data/golden_*.npz) byte for byte: on the NumPy reference, in generated C on the
host through every kernel path, and on the emulated Cortex-M4 (its DSP kernels) through `edgec build/bench`;
every operator or quantization the importer cannot honour is named in one error; build/export/inspect take a
.tflite without --calib. The randomized single-operator oracle: tests/test_tflite_oracle.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import MLPERF, MLPERF_MODELS, assert_clean_error, edgec, require_mlperf
from edgec import api, pipeline
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.frontend import tflite_interpreter
from edgec.quant import reference

import tflite_oracle as oracle

MODELS = {"kws": "kws_dscnn_int8", "ad": "ad_fc_autoencoder_int8", "ic": "ic_resnet8_int8",
          "vww": "vww_mobilenetv1_025_int8"}


def golden(key: str):
    path, data = MLPERF / f"{MODELS[key]}.tflite", MLPERF / "data" / f"golden_{key}.npz"
    require_mlperf(path)
    require_mlperf(data)
    g = np.load(data)
    return path, g["x_int8"].reshape(len(g["x_int8"]), -1), g["y_int8_tflm"].reshape(len(g["x_int8"]), -1), g


@pytest.mark.parametrize("key", list(MODELS))
def test_reference_reproduces_tflm(key):
    path, x, want, _ = golden(key)
    graph = importer.load(path, key)
    got = np.stack([np.asarray(reference.run(graph, xi)).reshape(-1) for xi in x])
    assert np.array_equal(got, want), f"{key}: samples {np.flatnonzero(np.any(got != want, axis=1))} differ"


@pytest.mark.parametrize("path", [p if p != "reference" else pytest.param(p, marks=pytest.mark.sweep)
                                  for p in oracle.PATHS])     # the reference kernels: their own tests, every model
def test_generated_c_reproduces_tflm(path, tmp_path):
    """The four models' C in one host program per kernel path: reference kernels, the fast kernels'
    portable C and their Arm DSP path (intrinsics emulated in C)."""
    data = [golden(k) for k in MODELS]
    graphs = [importer.load(p, k) for k, (p, *_) in zip(MODELS, data)]
    outs = oracle.run_c(graphs, [x for _, x, _, _ in data], tmp_path, path)
    if path != "reference":     # the fast kernels ran every conv and fully connected layer (VWW's dead channels too)
        assert all(op.lowering.kernel.role != "reference" for g in graphs for op in pipeline.lower(g).ops
                   if op.kind in ("conv2d", "fully_connected"))
    for key, got, (_, _, want, _) in zip(MODELS, outs, data):
        assert np.array_equal(got, want), f"{key} ({path}): samples {np.flatnonzero(np.any(got != want, axis=1))}"


def test_quantization_is_the_files():
    """No calibration: the graph's input/output quantization and the first conv's integers are the file's."""
    path, _, _, g = golden("kws")
    graph = importer.load(path, "kws")
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    assert (np.float32(tin.scale), tin.zero_point) == (np.float32(g["input_scale"]), int(g["input_zero_point"]))
    assert (np.float32(tout.scale), tout.zero_point) == (np.float32(g["output_scale"]), int(g["output_zero_point"]))
    conv = graph.ops[0]
    assert conv.kind == "conv2d" and conv.arrays["weights"].shape == (64, 10, 4, 1)
    assert conv.params["pad_top"] == 4 and conv.params["pad_left"] == 1     # SAME: the odd pixel at the bottom
    assert conv.params["act_min"] == graph.tensors[conv.output].zero_point               # fused RELU: q(0.0)
    assert graph.ops[-1].kind == "softmax" and "diff_min" in graph.ops[-1].params     # TFLite's softmax


def _unsupported_model(tmp_path):
    """Four operators on the input: CONV_2D with uint8 weights, SQUARE, EXP (operators edgec does not
    import) and a SOFTMAX whose output is not quantized as TFLite's softmax requires."""
    T, uint8 = oracle.T, 3
    tensors = [T((1, 4, 4, 2), [0.1], [0]), T((3, 1, 1, 2), [0.01], [128], uint8, np.zeros((3, 1, 1, 2), np.uint8)),
               T((1, 4, 4, 3), [0.1], [0]), T((1, 4, 4, 2), [1 / 128], [0]), T((1, 4, 4, 2), [0.1], [0]),
               T((1, 4, 4, 2), [0.1], [0])]
    conv = oracle.Node("CONV_2D", [0, 1, -1], 2, ("Conv2DOptions", dict(Padding=0, StrideW=1, StrideH=1)))
    nodes = [conv, oracle.Node("SQUARE", [0], 3), oracle.Node("EXP", [0], 4),
             oracle.Node("SOFTMAX", [0], 5, ("SoftmaxOptions", dict(Beta=1.0)))]
    path = tmp_path / "bad.tflite"
    path.write_bytes(oracle.write(oracle.Case("bad", tensors, nodes, 0, 5)))
    return path


def test_every_problem_in_one_error(tmp_path):
    path = _unsupported_model(tmp_path)
    with pytest.raises(EdgecError) as e:
        importer.load(path, "bad")
    msg = str(e.value)
    assert "cannot honour 4 operator(s)" in msg, msg
    assert "CONV_2D (operator #0: weights must be symmetric int8" in msg
    assert "SQUARE (operator #1: input 0 is not a float32 tensor computed by the model" in msg   # float tail only
    assert "EXP (operator #2: input 0 is not a float32 tensor computed by the model" in msg
    assert "SOFTMAX (operator #3: int8 softmax output quantized (0.1" in msg
    proc = edgec("build", path, "--board", "host", "-o", tmp_path / "out")
    assert_clean_error(proc, "CONV_2D", "SQUARE", "EXP", "SOFTMAX")
    assert not (tmp_path / "out").exists()
    info = json.loads(edgec("inspect", path, "--json").stdout)
    assert [n["supported"] for n in info["nodes"]] == [False, False, False, False]
    assert info["unsupported"] == []             # SQUARE and EXP run on a float tail: here beyond its limits
    assert len(info["limits"]) == 4


def test_not_a_tflite_and_onnx_needs_calib(tmp_path):
    bad = tmp_path / "junk.tflite"
    bad.write_bytes(b"\0" * 64)
    assert_clean_error(edgec("inspect", bad), "not a TFLite flatbuffer")
    onnx_model = MLPERF / f"{MLPERF_MODELS['ad']}.onnx"
    require_mlperf(onnx_model)
    assert_clean_error(edgec("build", onnx_model, "--board", "host", "-o", tmp_path / "o"), "--calib")
    path, *_ = golden("ad")
    assert_clean_error(edgec("calibrate", path, "--calib", tmp_path / "x.npz"), "nothing to calibrate")


def test_inspect_and_export_without_calib(tmp_path):
    path, *_ = golden("kws")
    info = api.inspect_model(path)
    assert info["format"] == "tflite" and not info["problems"] and len(info["nodes"]) == 13
    onnx_info = api.inspect_model(MLPERF / f"{MLPERF_MODELS['kws']}.onnx")
    assert info["macs"] == onnx_info["macs"]
    m = api.export(path, None, "host", "c", tmp_path / "lib")
    assert m["model"] == "kws_dscnn_int8" and (tmp_path / "lib" / "kws_dscnn_int8.c").is_file()


def test_kws_on_cortex_m4_is_tflm_bit_exact(tmp_path):
    """`edgec build x.tflite` (no --calib) and `edgec bench` on the emulated Cortex-M4 (the DSP kernels):
    every device output equals the reference, and the reference equals TFLite Micro's interpreter."""
    path, _, want, g = golden("kws")
    test = tmp_path / "kws.npz"
    np.savez(test, x=g["x_fp32"])
    out = tmp_path / "build"
    proc = edgec("build", path, "--board", "qemu-cortex-m4", "-o", out)
    assert proc.returncode == 0, proc.stderr
    proc = edgec("bench", out, "--data", test, "--json", "-", "--no-report")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["tflite"] == {"interpreter": "tflite-micro", "reference_vs_interpreter": 1.0}
    assert "TFLite Micro: int8 reference identical to its interpreter on 100.00% of samples" in proc.stderr
    assert r["samples"] == len(want)


@pytest.mark.slow       # AD in the default run (KWS on the M4: the test above), the others with the sweeps (-m sweep)
@pytest.mark.parametrize("key", [k if k == "ad" else pytest.param(k, marks=pytest.mark.sweep) for k in MODELS])
def test_cortex_m4_bit_exact_and_as_fast_as_onnx(key, tmp_path, mlperf_build):
    """All four on the emulated Cortex-M4: bit-exact with TFLM, and within 0.1 % of the instructions of edgec's
    build of the float ONNX model (the same build mlperf_build shares with test_mlperf_models)."""
    path, _, want, g = golden(key)
    test = tmp_path / "golden.npz"
    np.savez(test, x=g["x_fp32"])
    api.build(path, None, "qemu-cortex-m4", tmp_path / "build")
    r = api.bench(tmp_path / "build", test)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["tflite"]["reference_vs_interpreter"] == 1.0
    _, onnx_out, _ = mlperf_build(key, "qemu-cortex-m4")
    r_onnx = api.bench(onnx_out, test)
    print(f"{key}: .tflite {r['latency']['median']:,.0f} instructions, .onnx {r_onnx['latency']['median']:,.0f}")
    # the speed kernels' requantization paths depend on each model's own quantization (a clamped store where
    # TFLite's ranges clamp): a few dozen instructions either way; a layer off the fast kernels costs > 1 %
    assert r["latency"]["median"] <= 1.001 * r_onnx["latency"]["median"]


def test_float_edges(tmp_path):
    """QUANTIZE after a float input and DEQUANTIZE before a float output are the host's work: the graph runs
    from the QUANTIZE's int8 tensor to the DEQUANTIZE's, and TFLM's float outputs are edgec's dequantized."""
    rng = np.random.default_rng(0)
    case, _ = oracle.fc_case(rng, "fc")
    T, f32 = oracle.T, 0
    x_t, y_t = case.tensors[0], case.tensors[3]
    case.tensors += [T(x_t.shape, [], [], f32), T(y_t.shape, [], [], f32)]
    case.nodes = [oracle.Node("QUANTIZE", [4], 0), case.nodes[0], oracle.Node("DEQUANTIZE", [3], 5)]
    case.input, case.output = 4, 5
    path = tmp_path / "edges.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "edges")
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    assert (np.float32(tin.scale), tin.zero_point) == (np.float32(x_t.scale[0]), x_t.zp[0])
    q = rng.integers(-128, 128, (4,) + x_t.shape).astype(np.int8)
    x = ((q.astype(np.float32) - x_t.zp[0]) * np.float32(x_t.scale[0])).astype(np.float32)   # on the grid
    want = oracle.tflm(path.read_bytes(), x)
    got = np.stack([np.asarray(reference.run(graph, qi.reshape(-1))).reshape(-1) for qi in q])
    assert np.array_equal((got.astype(np.float32) - tout.zero_point) * np.float32(tout.scale), want)
    assert np.array_equal(tflite_interpreter.interpreter_outputs(path, q.reshape(len(q), -1)), got)   # (the bench's check)


def test_a_float_tflite_says_what_to_do(tmp_path):
    """A float .tflite (float input, no QUANTIZE after it: a float or dynamic-range model, as users' repositories
    hold) is refused in one line that says how to get a model edgec builds."""
    case, _ = oracle.fc_case(np.random.default_rng(0), "fc")
    case.tensors[0] = oracle.T(case.tensors[0].shape, [], [], 0)
    path = tmp_path / "float.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError, match=r"graph input .* is float32; .*TFLiteConverter .*ONNX with --calib") as e:
        importer.load(path, "float")
    assert "\n" not in str(e.value)


def test_damaged_files_are_one_line(tmp_path):
    """Truncated or byte-flipped copies of a real file: imported, or refused with an EdgecError, never a crash."""
    path, *_ = golden("kws")
    buf = path.read_bytes()
    rng = np.random.default_rng(1)
    refused = 0
    for i in range(60):
        b = bytearray(buf[:int(rng.integers(8, len(buf)))] if i % 3 == 0 else buf)
        for _ in range(0 if i % 3 == 0 else int(rng.integers(1, 20))):
            b[int(rng.integers(8, len(b)))] = int(rng.integers(0, 256))
        f = tmp_path / f"m{i}.tflite"
        f.write_bytes(bytes(b))
        try:
            importer.load(f, "m")
        except EdgecError:
            refused += 1
    assert refused > 20


def _two_in_two_out(rng):
    """Two int8 inputs [1,h,w,c], each with its own quantization; outputs ADD(x0, x1) and MAX_POOL(x1) (three
    scales): TFLite's several inputs and outputs, in the file's order."""
    h, w, c = (int(v) for v in rng.integers(2, 7, 3))
    T, Node = oracle.T, oracle.Node
    (s0, z0), (s1, z1), (s2, z2) = (oracle._act(rng, False) for _ in range(3))
    tensors = [T((1, h, w, c), [s0], [z0]), T((1, h, w, c), [s1], [z1]), T((1, h, w, c), [s2], [z2]),
               T((1, h - 1, w - 1, c), [s1], [z1])]
    pool = ("Pool2DOptions", dict(Padding=1, StrideW=1, StrideH=1, FilterWidth=2, FilterHeight=2))
    nodes = [Node("ADD", [0, 1], 2, ("AddOptions", dict(FusedActivationFunction=0))), Node("MAX_POOL_2D", [1], 3, pool)]
    x = [rng.integers(-128, 128, (5, 1, h, w, c)).astype(np.int8) for _ in range(2)]
    return oracle.Case("two_io", tensors, nodes, [1, 0], [3, 2]), x


def test_several_inputs_and_outputs(tmp_path):
    """A .tflite with two inputs and two outputs (listed in another order than their tensors) builds as an ONNX
    model with several does: each port by its name, with its own quantization, in the file's order; the
    reference and the generated C (the per-name API) reproduce TFLite Micro's outputs."""
    rng = np.random.default_rng(3)
    case, (x0, x1) = _two_in_two_out(rng)
    path = tmp_path / "two_io.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "two_io")
    assert [graph.port_names[t] for t in graph.inputs] == ["t1", "t0"]
    assert [graph.port_names[t] for t in graph.outputs] == ["t3", "t2"]
    assert [(np.float32(graph.tensors[t].scale), graph.tensors[t].zero_point) for t in graph.inputs] == \
        [(np.float32(case.tensors[i].scale[0]), case.tensors[i].zp[0]) for i in (1, 0)]
    want = oracle.tflm(path.read_bytes(), [x1, x0])
    packed = np.concatenate([x1.reshape(5, -1), x0.reshape(5, -1)], axis=1)
    got = np.stack([np.asarray(reference.run(graph, xi)).reshape(-1) for xi in packed])
    assert np.array_equal(got, want)
    assert np.array_equal(tflite_interpreter.interpreter_outputs(path, packed), want)
    c = oracle.run_c([graph], [packed], tmp_path / "c", "reference")[0]
    assert np.array_equal(c, want)
    info = api.inspect_model(path)
    assert [p["name"] for p in info["inputs"]] == ["t1", "t0"] and [p["name"] for p in info["outputs"]] == ["t3", "t2"]


def test_every_unsupported_operator_on_a_path_is_named(tmp_path):
    """Issue 29, defect 2: SKIP_GRAM then LSH_PROJECTION on the same path, then a RELU: both unsupported operators
    are named (the build error and inspect), not only the first with the second marked supported."""
    T, Node = oracle.T, oracle.Node
    tensors = [T((1, 8), [0.1], [0]) for _ in range(4)]
    case = oracle.Case("chain", tensors, [Node("SKIP_GRAM", [0], 1), Node("LSH_PROJECTION", [1], 2),
                                          Node("RELU", [2], 3)], 0, 3)
    path = tmp_path / "chain.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError, match="cannot honour 2 operator") as e:
        importer.load(path, "chain")
    assert "SKIP_GRAM (operator #0" in str(e.value) and "LSH_PROJECTION (operator #1" in str(e.value)
    info = api.inspect_model(path)
    assert [n["supported"] for n in info["nodes"]] == [False, False, True]
    assert info["unsupported"] == ["SKIP_GRAM (SKIP_GRAM#0)", "LSH_PROJECTION (LSH_PROJECTION#1)"]
    assert_clean_error(edgec("build", path, "--board", "host", "-o", tmp_path / "out"), "SKIP_GRAM", "LSH_PROJECTION")


def test_many_refused_operators_name_every_kind(tmp_path):
    """Twelve SKIP_GRAMs then an LSH_PROJECTION: operators of one kind with one reason share an entry, so the one-line
    error (600 characters at most) names the last kind too instead of being cut off in the list."""
    T, Node = oracle.T, oracle.Node
    nodes = [Node("SKIP_GRAM", [k], k + 1) for k in range(12)] + [Node("LSH_PROJECTION", [12], 13)]
    path = tmp_path / "many.tflite"
    path.write_bytes(oracle.write(oracle.Case("many", [T((1, 8), [0.1], [0]) for _ in range(14)], nodes, 0, 13)))
    with pytest.raises(EdgecError) as e:
        importer.load(path, "many")
    msg = str(e.value)
    assert "cannot honour 13 operator(s): SKIP_GRAM (operators #0, #1, #2 and 9 more: operator not supported); " \
           "LSH_PROJECTION (operator #12: operator not supported)" in msg and not msg.endswith("..."), msg


def test_an_operator_reading_a_variable_tensor_is_named(tmp_path):
    """Issue 29, defect 3: an LSTM reads its state from a variable tensor (no data, computed by no operator): the
    refusal names the operator, not "the graph output is not computed by any operator"."""
    T, Node = oracle.T, oracle.Node
    tensors = [T((1, 4, 8), [0.1], [0]), T((1, 4, 3), [0.1], [0]), T((1, 3), [0.1], [0])]
    case = oracle.Case("lstm", tensors, [Node("UNIDIRECTIONAL_SEQUENCE_LSTM", [0, 2], 1)], 0, 1)
    path = tmp_path / "lstm.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError, match=r"UNIDIRECTIONAL_SEQUENCE_LSTM \(operator #0") as e:
        importer.load(path, "lstm")
    assert "not computed by any operator" not in str(e.value)
    assert api.inspect_model(path)["nodes"][0]["supported"] is False


def _uint8_model(rng, out_uint8: bool):
    """ST's model zoo's layout: a uint8 input, QUANTIZE to int8 (x - 128: same scale), an int8 layer (a 2x2
    average pool), a QUANTIZE to another int8 scale, then (out_uint8) a QUANTIZE to a uint8 output."""
    T, Node = oracle.T, oracle.Node
    h, w, c = (int(v) for v in rng.integers(2, 9, 3))
    s = float(np.float32(10 ** rng.uniform(-3, 0)))
    (s2, z2), (s3, z3) = oracle._act(rng, True), oracle._act(rng, False)
    pool = ("Pool2DOptions", dict(Padding=0, StrideW=1, StrideH=1, FilterWidth=2, FilterHeight=2))
    tensors = [T((1, h, w, c), [s], [128], UINT8), T((1, h, w, c), [s], [0]), T((1, h, w, c), [s], [0]),
               T((1, h, w, c), [s2], [z2])]
    nodes = [Node("QUANTIZE", [0], 1), Node("AVERAGE_POOL_2D", [1], 2, pool), Node("QUANTIZE", [2], 3)]
    if out_uint8:
        tensors.append(T((1, h, w, c), [s3], [int(rng.integers(0, 256))], UINT8))
        nodes.append(Node("QUANTIZE", [3], 4))
    return oracle.Case("u8", tensors, nodes, 0, len(tensors) - 1), rng.integers(0, 256, (6, 1, h, w, c)).astype(np.uint8)


UINT8 = 3       # tflite.TensorType


@pytest.mark.parametrize("out_uint8", [False, True])
def test_uint8_input_and_output(out_uint8, tmp_path):
    """A uint8 graph input (the sensor's bytes) and QUANTIZE between uint8 and int8 and between int8 scales:
    bit-identical with TFLite Micro on the reference and in generated C; the input port is uint8 with the file's
    zero point."""
    rng = np.random.default_rng(11 + out_uint8)
    graphs, xs, wants = [], [], []
    for k in range(6):
        case, x = _uint8_model(rng, out_uint8)
        path = tmp_path / f"u8_{k}.tflite"
        path.write_bytes(oracle.write(case))
        graph = importer.load(path, f"u8_{k}")
        tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
        assert (tin.dtype, tin.zero_point) == ("uint8", 128)
        assert tout.dtype == ("uint8" if out_uint8 else "int8")
        want = oracle.tflm(path.read_bytes(), x)
        got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
        assert got.dtype == want.dtype and np.array_equal(got, want)
        graphs.append(graph), xs.append(x.reshape(len(x), -1)), wants.append(want)
    for c, want in zip(oracle.run_c(graphs, xs, tmp_path / "c", "reference"), wants):
        assert np.array_equal(c.view(want.dtype), want)
    assert len({int(v) for o in wants for v in o.reshape(-1)}) > 50      # the outputs cover the range


def test_uint8_input_two_outputs_on_cortex_m4(tmp_path):
    """End to end on the emulated Cortex-M4: a uint8 input (QUANTIZE to int8), two outputs (a MEAN of a 2x2
    average pool, a 3x3 max pool): `edgec build` without --calib and `edgec bench` over the link: the device
    equals the reference on every sample, and the reference equals TFLite Micro's interpreter."""
    T, Node = oracle.T, oracle.Node
    s = float(np.float32(1 / 255))
    pool = lambda k: ("Pool2DOptions", dict(Padding=1, StrideW=1, StrideH=1, FilterWidth=k, FilterHeight=k))
    tensors = [T((1, 12, 12, 3), [s], [128], UINT8), T((1, 12, 12, 3), [s], [0]), T((1, 11, 11, 3), [s], [0]),
               T((1, 10, 10, 3), [s], [0]), T((1, 3), [float(np.float32(0.004))], [-5]),
               T((2,), [1.0], [0], oracle.INT32, np.array([1, 2], np.int32))]
    nodes = [Node("QUANTIZE", [0], 1), Node("AVERAGE_POOL_2D", [1], 2, pool(2)), Node("MAX_POOL_2D", [1], 3, pool(3)),
             Node("MEAN", [2, 5], 4, ("ReducerOptions", dict(KeepDims=False)))]
    path = tmp_path / "u8_two.tflite"
    path.write_bytes(oracle.write(oracle.Case("u8_two", tensors, nodes, 0, [4, 3])))
    data = tmp_path / "x.npz"
    q = np.random.default_rng(4).integers(0, 256, (20, 12, 12, 3))
    np.savez(data, x=((q - 128) * s).astype(np.float32))
    proc = edgec("build", path, "--board", "qemu-cortex-m4", "-o", tmp_path / "build")
    assert proc.returncode == 0, proc.stderr
    assert "#define U8_TWO_INPUT_UINT8 1" in (tmp_path / "build" / "model" / "u8_two.h").read_text()
    proc = edgec("bench", tmp_path / "build", "--data", data, "--json", "-", "--no-report")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == 20
    assert r["tflite"] == {"interpreter": "tflite-micro", "reference_vs_interpreter": 1.0}


def test_shape_computations_fold(tmp_path):
    """Keras's Reshape of a model with batch None: SHAPE -> STRIDED_SLICE (the batch) -> PACK -> RESHAPE, integer
    tensors computed at run time; edgec folds them at import (no op on the device) and reproduces TFLite Micro."""
    T, Node, i32 = oracle.T, oracle.Node, oracle.INT32
    rng = np.random.default_rng(8)
    (s, z), (s2, z2) = oracle._act(rng, False), oracle._act(rng, False)
    tensors = [T((1, 4, 6), [s], [z]), T((3,), [], [], i32), T((1,), [], [], i32, np.array([0], np.int32)),
               T((1,), [], [], i32, np.array([1], np.int32)), T((), [], [], i32), T((), [], [], i32, np.array(24, np.int32)),
               T((2,), [], [], i32), T((1, 24), [s], [z]), T((1, 24), [s2], [z2])]
    nodes = [Node("SHAPE", [0], 1), Node("STRIDED_SLICE", [1, 2, 3, 3], 4, ("StridedSliceOptions", dict(ShrinkAxisMask=1))),
             Node("PACK", [4, 5], 6, ("PackOptions", dict(ValuesCount=2, Axis=0))), Node("RESHAPE", [0, 6], 7),
             Node("FULLY_CONNECTED", [7, 9, 10], 8, ("FullyConnectedOptions", dict(FusedActivationFunction=0)))]
    wq, ws = oracle._weights(rng, (24, 24), 0, False)
    tensors += [T((24, 24), ws[:1], [0], data=wq), T((24,), [s * ws[0]], [0], i32, oracle._bias(rng, 24, False))]
    path = tmp_path / "shape.tflite"
    path.write_bytes(oracle.write(oracle.Case("shape", tensors, nodes, 0, 8)))
    graph = importer.load(path, "shape")
    assert [op.kind for op in graph.ops] == ["reshape", "fully_connected"]
    x = rng.integers(-128, 128, (5, 1, 4, 6)).astype(np.int8)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
    assert np.array_equal(got, oracle.tflm(path.read_bytes(), x))
    assert all(n["supported"] for n in api.inspect_model(path)["nodes"])


def test_shape_of_an_unsupported_operators_output_is_not_named(tmp_path):
    """A SHAPE after an unsupported operator still folds (it reads the file's shape, not the values): only the
    operator in the way is named."""
    T, Node, i32 = oracle.T, oracle.Node, oracle.INT32
    tensors = [T((1, 8), [0.1], [0]), T((1, 8), [0.1], [0]), T((2,), [], [], i32), T((1, 8), [0.1], [0])]
    nodes = [Node("SKIP_GRAM", [0], 1), Node("SHAPE", [1], 2), Node("RESHAPE", [1, 2], 3)]
    path = tmp_path / "shape_after.tflite"
    path.write_bytes(oracle.write(oracle.Case("shape_after", tensors, nodes, 0, 3)))
    with pytest.raises(EdgecError, match=r"cannot honour 1 operator\(s\): SKIP_GRAM \(operator #0"):
        importer.load(path, "shape_after")


def test_int16_input_and_output(tmp_path):
    """An int16 graph input and output (zero point 0, as TFLite's int16 tensors): QUANTIZE int16 -> int8, an int8
    layer, QUANTIZE int8 -> int16; bit-identical with TFLite Micro on the reference and in generated C."""
    T, Node = oracle.T, oracle.Node
    rng = np.random.default_rng(16)
    graphs, xs, wants = [], [], []
    for k in range(4):
        h, w, c = (int(v) for v in rng.integers(2, 7, 3))
        s16, (s8, z8), s_out = float(np.float32(10 ** rng.uniform(-5, -3))), oracle._act(rng, k % 2 == 1), \
            float(np.float32(10 ** rng.uniform(-5, -2)))
        pool = ("Pool2DOptions", dict(Padding=0, StrideW=1, StrideH=1, FilterWidth=2, FilterHeight=2))
        tensors = [T((1, h, w, c), [s16], [0], INT16), T((1, h, w, c), [s8], [z8]), T((1, h, w, c), [s8], [z8]),
                   T((1, h, w, c), [s_out], [0], INT16)]
        nodes = [Node("QUANTIZE", [0], 1), Node("AVERAGE_POOL_2D", [1], 2, pool), Node("QUANTIZE", [2], 3)]
        path = tmp_path / f"i16_{k}.tflite"
        path.write_bytes(oracle.write(oracle.Case(f"i16_{k}", tensors, nodes, 0, 3)))
        graph = importer.load(path, f"i16_{k}")
        assert graph.tensors[graph.input].dtype == graph.tensors[graph.output].dtype == "int16"
        x = rng.integers(-32768, 32768, (6, 1, h, w, c)).astype(np.int16)
        want = oracle.tflm(path.read_bytes(), x)
        got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
        assert got.dtype == want.dtype == np.int16 and np.array_equal(got, want)
        graphs.append(graph), xs.append(x.reshape(len(x), -1).view(np.int8)), wants.append(want)
    for c, want in zip(oracle.run_c(graphs, xs, tmp_path / "c", "reference"), wants):
        assert np.array_equal(c.view(np.int16), want)


INT16 = 7       # tflite.TensorType


def test_operator_table_is_the_importers():
    """docs/tflite-operators.md lists each builtin once (names TFLite's schema knows), and says "yes" for
    exactly the operators the importer has (TILE, which TFLite Micro does not register, in its own sentence)."""
    import re

    from tflite.BuiltinOperator import BuiltinOperator

    from edgec.ops.registry import TFLITE_IMPORTERS

    text = (Path(__file__).parent.parent / "docs" / "tflite-operators.md").read_text()
    rows = re.findall(r"^\| ([A-Z0-9_, ]+) \| (yes|no|partly) \|", text, re.M)
    names = [(n.strip(), status) for ops, status in rows for n in ops.split(",")]
    listed = [n for n, _ in names]
    assert len(listed) == len(set(listed)) >= 100, sorted(n for n in listed if listed.count(n) > 1)
    assert all(hasattr(BuiltinOperator, n) for n in listed), [n for n in listed if not hasattr(BuiltinOperator, n)]
    yes = {n for n, status in names if status == "yes"}
    own = {n for n in TFLITE_IMPORTERS if not n.startswith("CUSTOM ")} - {"TILE"}
    assert yes == own, (sorted(yes - own), sorted(own - yes))
    assert "TILE" in TFLITE_IMPORTERS and "TILE" not in listed and "TILE is not registered" in text


def test_operators_beyond_their_limits_are_named(tmp_path):
    """A PRELU whose alpha varies over more values than edgec makes tables for, and a MAXIMUM whose inputs are
    quantized unlike its output (TFLite Micro compares raw values), are refused in one error naming both."""
    rng = np.random.default_rng(0)
    T, Node = oracle.T, oracle.Node
    alpha = rng.integers(-128, 128, (8, 8, 8)).astype(np.int8)
    tensors = [T((1, 8, 8, 8), [0.1], [0]), T((8, 8, 8), [0.01], [0], data=alpha), T((1, 8, 8, 8), [0.1], [0]),
               T((1, 8, 8, 8), [0.2], [3]), T((1, 8, 8, 8), [0.2], [3])]
    case = oracle.Case("limits", tensors, [Node("PRELU", [0, 1], 2), Node("MAXIMUM", [0, 0], 3)], 0, [2, 3])
    f = tmp_path / "limits.tflite"
    f.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError) as err:
        importer.load(f, "limits")
    msg = str(err.value)
    assert "2 operator(s)" in msg and "PRELU (operator #0: alpha varies over 512 values" in msg, msg
    assert "MAXIMUM (operator #1: MAXIMUM with different input and output quantization" in msg, msg


def test_scales_no_multiplier_can_express_are_named_not_called_damage(tmp_path):
    """A sound file whose QUANTIZE needs a requantization multiplier of about 2^40 (input at scale 1, output at
    1e-12): refused as what it is, with what to do, not as a damaged flatbuffer (it was, before)."""
    T = oracle.T
    tensors = [T((1, 4), [1.0], [0]), T((1, 4), [1e-12], [0])]
    nodes = [oracle.Node("QUANTIZE", [0], 1)]
    path = tmp_path / "scales.tflite"
    path.write_bytes(oracle.write(oracle.Case("scales", tensors, nodes, 0, 1)))
    with pytest.raises(EdgecError) as e:
        importer.load(path, "scales")
    msg = str(e.value)
    assert "quantization scales need a requantization multiplier" in msg and "too large" in msg, msg
    assert "damaged" not in msg and "quantize the float model again" in msg
