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


@pytest.mark.parametrize("path", list(oracle.PATHS))
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
    """Four operators on the input: CONV_2D with uint8 weights, L2_NORMALIZATION, EXP (operators edgec does not
    import) and a SOFTMAX whose output is not quantized as TFLite's softmax requires."""
    T, uint8 = oracle.T, 3
    tensors = [T((1, 4, 4, 2), [0.1], [0]), T((3, 1, 1, 2), [0.01], [128], uint8, np.zeros((3, 1, 1, 2), np.uint8)),
               T((1, 4, 4, 3), [0.1], [0]), T((1, 4, 4, 2), [1 / 128], [0]), T((1, 4, 4, 2), [0.1], [0]),
               T((1, 4, 4, 2), [0.1], [0])]
    conv = oracle.Node("CONV_2D", [0, 1, -1], 2, ("Conv2DOptions", dict(Padding=0, StrideW=1, StrideH=1)))
    nodes = [conv, oracle.Node("L2_NORMALIZATION", [0], 3), oracle.Node("EXP", [0], 4),
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
    assert "L2_NORMALIZATION (operator #1: operator not supported)" in msg
    assert "EXP (operator #2: operator not supported)" in msg
    assert "SOFTMAX (operator #3: int8 softmax output quantized (0.1" in msg
    proc = edgec("build", path, "--board", "host", "-o", tmp_path / "out")
    assert_clean_error(proc, "CONV_2D", "L2_NORMALIZATION", "EXP", "SOFTMAX")
    assert not (tmp_path / "out").exists()
    info = json.loads(edgec("inspect", path, "--json").stdout)
    assert [n["supported"] for n in info["nodes"]] == [False, False, False, False]
    assert info["unsupported"] == ["L2_NORMALIZATION (L2_NORMALIZATION#1)", "EXP (EXP#2)"]
    assert len(info["limits"]) == 2


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


@pytest.mark.slow       # KWS and AD in the default run, VWW and IC with the sweeps (scripts/test.sh -m sweep)
@pytest.mark.parametrize("key", [k if k in ("kws", "ad") else pytest.param(k, marks=pytest.mark.sweep) for k in MODELS])
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
    own = set(TFLITE_IMPORTERS) - {"TILE"}
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
    case = oracle.Case("limits", tensors, [Node("PRELU", [0, 1], 2), Node("MAXIMUM", [2, 0], 3)], 0, 3)
    f = tmp_path / "limits.tflite"
    f.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError) as err:
        importer.load(f, "limits")
    msg = str(err.value)
    assert "2 operator(s)" in msg and "PRELU (operator #0: alpha varies over 512 values" in msg, msg
    assert "MAXIMUM (operator #1: MAXIMUM with different input and output quantization" in msg, msg
