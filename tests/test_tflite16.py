"""TFLite's 16x8 mode (edgec/ops/tflite16.py): int16 activations with int8 weights imported onto edgec's int16
kernels, bit-identical with TensorFlow Lite Micro's interpreter (tests/tflite_oracle.py), on random single-operator
files (tests/tflite_cases_16x8.py) and on a model TensorFlow's TFLiteConverter wrote in that mode
(tests/data/tflite_16x8_cnn.tflite, scripts/make_tflite_16x8.py); the operators edgec does not run in 16x8 are
refused in one line naming the operator and the type.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import tflite_cases_16x8 as cases16
import tflite_oracle as oracle
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.quant import reference
from tflite_oracle import Case, Node, T

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

MODEL = Path(__file__).parent / "data" / "tflite_16x8_cnn.tflite"


def test_16x8_operators_match_tflm(tmp_path):
    """A random case of each 16x8 operator: NumPy reference and reference C kernels against TFLite Micro."""
    cases = cases16.cases(seed=16, n=len(cases16.MAKERS))
    assert {c.name.split("_", 2)[-1] for c in cases} == set(cases16.MAKERS)
    bad = oracle.check(cases, tmp_path, paths=("reference",))
    assert not bad, bad


@pytest.mark.sweep
def test_16x8_sweep_matches_tflm(tmp_path):
    """300 random cases, every C path (portable, the DSP one emulated, ASan/UBSan)."""
    bad = oracle.check(cases16.cases(seed=1616, n=300), tmp_path,
                       paths=("reference", "portable", "dsp-emulated", "sanitized"))
    assert not bad, bad


def _every_int16(op: str, xs: float, ys: float = 2.0 ** -15) -> Case:
    """op over all 65536 int16 values (one [256, 256] input), output scale 2^-15 (or ys)."""
    case = Case(f"{op.lower()}_{np.log2(xs):.2f}".replace(".", "p").replace("-", "m"),
                [T((256, 256), [xs], [0], cases16.INT16), T((256, 256), [ys], [0], cases16.INT16)],
                [Node(op, [0], 1)], 0, 1)
    case.x = np.arange(-32768, 32768).astype(np.int16).reshape(1, 256, 256)
    return case


def test_16x8_logistic_tanh_abs_of_every_int16_value_match_tflm(tmp_path):
    """LOGISTIC at a power-of-two input scale (TFLite's POT path) and TANH at another, over every int16 value
    (TFLite's sigmoid table and its interpolation), and ABS rescaled (its multiplier from the scales' ratio in
    double: a float32 ratio misses 20 of the 65536 values here): NumPy and the reference C kernel against TFLite
    Micro."""
    bad = oracle.check([_every_int16("LOGISTIC", 2.0 ** -12), _every_int16("TANH", 3.1e-4),
                        _every_int16("ABS", float(np.float32(0.0002433606277918443)),
                                     float(np.float32(0.0006001025321893394)))], tmp_path, paths=("reference",))
    assert not bad, bad


@pytest.mark.sweep
def test_16x8_logistic_and_tanh_sweep_every_int16_value(tmp_path):
    cases = [_every_int16(op, xs) for op in ("LOGISTIC", "TANH") for xs in (2.0 ** -13, 2.0 ** -12, 2.0 ** -11,
                                                                          3.1e-4, 1.7e-3, 2e-5)]
    assert not oracle.check(cases, tmp_path, paths=("reference", "sanitized"))


def _affine_quantize(x: np.ndarray, scale: float) -> np.ndarray:
    """TFLite Micro's QUANTIZE of float32 into int16: float32 division, std::round (halves away from zero)."""
    v = np.asarray(x, np.float32) / np.float32(scale)
    return np.clip(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)), -32768, 32767).astype(np.int16)


def test_converter_16x8_model_matches_tflm(tmp_path):
    """TFLiteConverter's 16x8 CNN (float in, QUANTIZE to int16 ... DEQUANTIZE, float out; a residual ADD, Keras's
    global average pooling as MEAN): every operator int16
    in edgec's graph; its int16 outputs, from the NumPy reference and the generated C, are TFLite Micro's."""
    graph = importer.load(MODEL, "cnn16")
    assert {graph.tensors[t].dtype for op in graph.ops for t in (*op.inputs, op.output)} == {"int16"}
    assert {op.kind for op in graph.ops} == {"conv2d", "depthwise_conv2d", "add", "max_pool", "avg_pool", "reshape",
                                             "reduce", "fully_connected"}
    rng = np.random.default_rng(5)
    xf = rng.normal(0, 1.5, (12, 1, 12, 12, 2)).astype(np.float32)
    xf[1] = 1e3                                   # saturates the input
    xf[2] = np.float32(graph.tensors[graph.input].scale) * 2.5      # halves: TFLite rounds them away from zero
    want_f = oracle.tflm(MODEL.read_bytes(), xf)
    out_scale = np.float32(graph.tensors[graph.output].scale)
    want = np.round(want_f / out_scale).astype(np.int64)     # DEQUANTIZE's float32 product, undone exactly
    assert np.array_equal((want * out_scale).astype(np.float32), want_f)
    x = _affine_quantize(xf, graph.tensors[graph.input].scale)
    got = reference.run_sequence(graph, [xi.reshape(-1) for xi in x])
    assert got.dtype == np.int16 and np.array_equal(got, want)
    c_out = oracle.run_c([graph], [x.reshape(len(x), -1)], tmp_path, "reference")[0]
    assert np.array_equal(np.ascontiguousarray(c_out).view(np.int16), want)


def _load(tmp_path, case: Case):
    f = tmp_path / f"{case.name}.tflite"
    f.write_bytes(oracle.write(case))
    return importer.load(f, case.name)


def _refusal(tmp_path, case: Case) -> str:
    with pytest.raises(EdgecError) as exc:
        _load(tmp_path, case)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("op", ["DIV", "ELU"])
def test_16x8_operators_edgec_does_not_run_are_refused_naming_them(tmp_path, op):
    """DIV and ELU of int16 activations (TFLite Micro's kernels take no int16): one line naming the operator and
    int16."""
    s = float(np.float32(1e-4))
    tensors = [T((1, 4, 4, 3), [s], [0], cases16.INT16), T((1, 4, 4, 3), [s], [0], cases16.INT16),
               T((1, 4, 4, 3), [s], [0], cases16.INT16)]
    opts = {"DIV": ("DivOptions", {"FusedActivationFunction": 0}), "ELU": None}[op]
    unary = op == "ELU"
    node = Node(op, [0] if unary else [0, 1], 2, opts)
    msg = _refusal(tmp_path, Case(op.lower(), tensors, [node], [0] if unary else [0, 1], 2))
    assert f"{op} (operator #0" in msg and "int16" in msg, msg


def test_16x8_quantization_edgec_cannot_honour_is_refused(tmp_path):
    """16x8 files TFLite Micro's kernels do not take either: a DEPTHWISE_CONV_2D with an int32 bias (its 16x8 kernel
    takes int64; CONV_2D takes both), an int16 zero point other than 0."""
    s = float(np.float32(1e-4))
    rng = np.random.default_rng(0)

    def conv(bias_type, zp, op="CONV_2D"):
        bias = np.zeros(2, np.int64 if bias_type == cases16.INT64 else np.int32)
        dw = op == "DEPTHWISE_CONV_2D"
        wshape = (1, 1, 1, 2) if dw else (2, 1, 1, 2)
        tensors = [T((1, 2, 2, 2), [s], [zp], cases16.INT16),
                   T(wshape, [0.01, 0.01], [0, 0], data=rng.integers(-127, 128, wshape).astype(np.int8),
                     axis=3 if dw else 0),
                   T((2,), [s * 0.01] * 2, [0, 0], bias_type, bias), T((1, 2, 2, 2), [s], [0], cases16.INT16)]
        fields = dict(Padding=1, StrideW=1, StrideH=1, DilationWFactor=1, DilationHFactor=1)
        opts = ("DepthwiseConv2DOptions", {**fields, "DepthMultiplier": 1}) if dw else ("Conv2DOptions", fields)
        return Case(f"{op.lower()}{bias_type}_{zp}", tensors, [Node(op, [0, 1, 2], 3, opts)], 0, 3)
    _load(tmp_path, conv(cases16.INT64, 0))                    # the 16x8 conv itself is taken
    _load(tmp_path, conv(2, 0))                                # with an int32 bias too
    msg = _refusal(tmp_path, conv(2, 0, "DEPTHWISE_CONV_2D"))
    assert "DEPTHWISE_CONV_2D" in msg and "int32 bias" in msg, msg
    assert "zero point 5" in _refusal(tmp_path, conv(cases16.INT64, 5))


def test_bench_oracle_reads_int16_outputs():
    """`edgec bench`'s TFLite Micro check (edgec/frontend/tflite_interpreter.py) of a 16x8 file: its float output
    quantized back to int16 (it was clipped to int8), equal to edgec's reference."""
    from edgec.frontend.tflite_interpreter import interpreter_outputs

    graph = importer.load(MODEL, "cnn16")
    x = np.random.default_rng(6).integers(-32768, 32768, (3, 12 * 12 * 2)).astype(np.int16)
    got = interpreter_outputs(MODEL, x)
    assert got.dtype == np.int16 and np.abs(got).max() > 127
    assert np.array_equal(got, reference.run_sequence(graph, list(x)))
