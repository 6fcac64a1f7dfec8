"""int4 weights (--weights int4, --int4 NODE; the `_s4` kernel records of edgec/ops/conv/, dense.py, recurrent.py):
TFLite's nibble order, the s4 C kernels
bit-exact with the NumPy twins on random cases, a whole model (the digits example) bit-exact in generated C
with its weight arrays halved, the selection of layers and its errors, and the sensitivity table's 4-bit
column."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import conv_case, i8, make, ptr, requant_params
from conftest import REPO, check_generated_c
from edgec import api
from edgec.errors import EdgecError
from edgec.ops import conv, dense, select
from edgec.ops.kernel import FAST
from edgec.ops.registry import INT4_KINDS
from edgec.quant import ptq
from edgec.fixedpoint import scheme

DIGITS = REPO / "examples" / "digits_cnn"


def test_pack_int4_uses_tflite_nibble_order_and_round_trips():
    assert scheme.pack_int4(np.array([1, -2, 7])).view(np.uint8).tolist() == [0xE1, 0x07]
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 64, 101):
        v = rng.integers(-8, 8, size=n).astype(np.int8)
        packed = scheme.pack_int4(v)
        assert packed.size == (n + 1) // 2
        assert np.array_equal(scheme.unpack_int4(packed, n), v)


def test_int4_weights_are_symmetric_per_channel_in_narrow_range():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 3, 3, 2)).astype(np.float32) * rng.uniform(0.01, 3, size=(6, 1, 1, 1))
    q, s = scheme.quantize_weights(w, 0, qmax=7)
    assert q.min() >= -7 and q.max() <= 7
    assert np.all(np.abs(q).reshape(6, -1).max(axis=1) == 7)       # every channel uses its full range
    assert np.allclose(s, np.abs(w).reshape(6, -1).max(axis=1) / 7)


def _call(ck, kernel, struct, p, x, packed, bias, mult, shift, n_out):
    out = np.zeros(n_out, np.int8)
    args = [np.ascontiguousarray(a, t) for a, t in ((x, np.int8), (packed, np.int8), (bias, np.int32),
                                                  (mult, np.int32), (shift, np.int32))]
    getattr(ck.lib, kernel)(ctypes.byref(make(struct, p)), *(ptr(a) for a in args), ptr(out))
    return out


@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_s4_kernels_bit_exact(ck, depthwise):
    rng = np.random.default_rng(40 + depthwise)
    twin = conv.depthwise_conv2d_s8 if depthwise else conv.conv2d_s8
    kernel = "edgec_depthwise_conv2d_s4" if depthwise else "edgec_conv2d_s4"
    for _ in range(300):
        p, x, _, bias, mult, shift = conv_case(rng, depthwise)
        shape = (p["k_h"], p["k_w"], p["out_c"]) if depthwise else (p["out_c"], p["k_h"], p["k_w"], p["in_c"])
        w = rng.integers(-8, 8, size=shape).astype(np.int8)
        want = twin(p, x, w, bias, mult, shift).reshape(-1)
        got = _call(ck, kernel, "edgec_conv_params", p, x, scheme.pack_int4(w), bias, mult, shift, want.size)
        assert np.array_equal(got, want)


def test_fully_connected_s4_kernel_bit_exact(ck):
    rng = np.random.default_rng(42)
    for _ in range(300):
        n_in, n_out = int(rng.integers(1, 200)), int(rng.integers(1, 30))   # odd sizes: rows start mid-byte
        zi, zo = (int(v) for v in rng.integers(-128, 128, size=2))
        p = dict(in_features=n_in, out_features=n_out, input_zp=zi, output_zp=zo, act_min=-128, act_max=127)
        w = rng.integers(-8, 8, size=(n_out, n_in)).astype(np.int8)
        bias = rng.integers(-20000, 20000, size=n_out).astype(np.int32)
        mult, shift = requant_params(rng, n_out, 700.0 * np.sqrt(n_in))
        x = i8(rng, n_in)
        want = dense.fully_connected_s8(p, x, w, bias, mult, shift)
        got = _call(ck, "edgec_fully_connected_s4", "edgec_fully_connected_params", p, x, scheme.pack_int4(w),
                    bias, mult, shift, n_out)
        assert np.array_equal(got, want)


@pytest.fixture(scope="module")
def digits_int4():
    """The digits example quantized twice: int8 and int4 weights (no sensitivity report)."""
    out = {}
    for weights in ("int8", "int4"):
        options = ptq.QuantOptions.plain(weights=weights, sensitivity_samples=0)
        out[weights] = api.calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz", options)[1].graph
    return out


def test_digits_int4_generated_c_is_bit_exact_and_weights_halve(digits_int4, tmp_path):
    g4, g8 = digits_int4["int4"], digits_int4["int8"]
    four = [op for op in g4.ops if select.int4_weights(op)]
    assert {op.kind for op in four} == {"conv2d", "depthwise_conv2d", "fully_connected"}
    packed = sum(op.arrays["weights4"].nbytes for op in four)
    int8_weights = {op.name: op.arrays["weights"].size for op in g8.ops if "weights" in op.arrays}
    assert packed == sum((int8_weights[op.name] + 1) // 2 for op in four)
    assert g4.weights_bytes() < 0.6 * g8.weights_bytes()
    x = np.load(DIGITS / "test.npz")["x"][:40]
    check_generated_c(g4, x, tmp_path, flags=("-O1", "-fsanitize=undefined", "-fno-sanitize-recover=all"))


def test_digits_int4_keeps_accuracy_near_int8(digits_int4):
    from edgec.quant import reference
    d = np.load(DIGITS / "test.npz")
    x, y = d["x"][:120], d["y"][:120]

    def accuracy(g):
        xq = scheme.quantize_input(g.tensors[g.input], x)
        return np.mean([int(np.argmax(reference.run(g, q))) == t for q, t in zip(xq, y)])
    a8, a4 = accuracy(digits_int4["int8"]), accuracy(digits_int4["int4"])
    assert a4 >= a8 - 0.05, (a8, a4)


def test_int4_names_one_layer_and_reports_bad_names():
    options = ptq.QuantOptions(int4=("/fc/Gemm",), sensitivity_samples=0)
    g = api.calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz", options)[1].graph
    assert [op.name for op in g.ops if select.int4_weights(op)] == ["/fc/Gemm"]
    with pytest.raises(EdgecError, match=r"--int4 '/nope' \(no such node\).*/conv1/Conv"):
        api.calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz",
                            ptq.QuantOptions(int4=("/nope",), sensitivity_samples=0))
    with pytest.raises(EdgecError, match="also --int16"):
        api.calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz",
                            ptq.QuantOptions(int4=("/fc/Gemm",), int16=("/fc/Gemm",), sensitivity_samples=0))


def test_sensitivity_shows_each_layers_cost_at_4_bits(digits_int4):
    """The int4 column of the int8 model's table is what the int4 model's own table measures for the layer."""
    from edgec.quant import sensitivity
    x = np.load(DIGITS / "calib.npz")["x"][:4]
    rows8 = {r["layer"]: r for r in sensitivity.analyse(digits_int4["int8"], x)}
    rows4 = {r["layer"]: r for r in sensitivity.analyse(digits_int4["int4"], x)}
    weighted = [n for n, r in rows8.items() if r["kind"] in INT4_KINDS]
    assert len(weighted) == 4 and rows8["/Add"]["int4_output_db"] is None
    for n in weighted:
        assert rows8[n]["int4_output_db"] == rows4[n]["isolated_output_db"]
        assert rows8[n]["int4_output_db"] < rows8[n]["isolated_output_db"] - 3     # 4 bits cost more than 8
    assert "int4 -> output dB" in sensitivity.table(list(rows8.values()))


def test_build_report_lists_int4_layers(tmp_path):
    report = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", "host", tmp_path / "b", firmware=False,
                       options=ptq.QuantOptions(int4=("/fc/Gemm", "/dw/Conv"), sensitivity_samples=0))
    assert report["quantization"]["int4_layers"] == ["/dw/Conv", "/fc/Gemm"]


@pytest.mark.parametrize("path", ["portable", "dsp-emulated"])
def test_fast_fully_connected_s4_bit_exact(ck, ck_dsp, path):
    """The fast int4 kernel (edgec/ops/dense.py lower_fc4) on both inner-loop paths, odd sizes included."""
    from edgec.ir import Op
    lib = (ck if path == "portable" else ck_dsp).lib
    rng = np.random.default_rng(43)
    checked = 0
    for _ in range(150):
        n_in, n_out = int(rng.integers(1, 100)), int(rng.integers(1, 20))
        zi, zo = (int(v) for v in rng.integers(-128, 128, size=2))
        p = dict(in_features=n_in, out_features=n_out, input_zp=zi, output_zp=zo, act_min=-128, act_max=127)
        w = rng.integers(-8, 8, size=(n_out, n_in)).astype(np.int8)
        mult, shift = requant_params(rng, n_out, 700.0 * np.sqrt(n_in))
        bias = rng.integers(-20000, 20000, size=n_out).astype(np.int32)
        op = Op(kind="fully_connected", name="fc", inputs=("x",), output="y", params=p,
                arrays=dict(weights4=scheme.pack_int4(w), bias=bias, mult=mult, shift=shift))
        low = select.fast(op)
        if low is None:                       # a multiplier outside the fast path
            continue
        assert low.kernel.name == "edgec_fully_connected_packed_s4"
        x = i8(rng, n_in)
        got = np.zeros(n_out, np.int8)
        scratch = np.zeros(low.scratch_bytes + 16, np.int8)
        rq = np.ascontiguousarray(low.arrays["rq"], np.int32)
        lib.edgec_fully_connected_packed_s4(ctypes.byref(make(low.struct, low.params)), ptr(x),
                                            ptr(low.arrays["fw"]), ptr(rq), ptr(scratch), ptr(got))
        assert np.array_equal(got, dense.fully_connected_s8(p, x, w, bias, mult, shift))
        checked += 1
    assert checked > 100


def test_digits_int4_fast_path_generated_c_is_bit_exact(digits_int4, tmp_path):
    from edgec import pipeline
    g = pipeline.lower(digits_int4["int4"])         # a new graph: the fixture's stays as it is
    assert {op.lowering.kernel.name for op in g.ops if op.lowering and op.lowering.kernel.role == FAST
            and select.int4_weights(op)} == \
        {"edgec_fully_connected_packed_s4", "edgec_conv2d_im2col_s4", "edgec_depthwise_conv2d_3x3_s4"}
    x = np.load(DIGITS / "test.npz")["x"][:20]
    check_generated_c(g, x, tmp_path, flags=("-O1", "-DEDGEC_EMULATE_DSP"))


GESTURE = REPO / "examples" / "gesture_rnn"


@pytest.fixture(scope="module")
def gesture_int4():
    """The gesture LSTM quantized with int8 and with int4 weights (a 4-sample sensitivity report each)."""
    out = {}
    for weights in ("int8", "int4"):
        options = ptq.QuantOptions.plain(weights=weights, sensitivity_samples=4)
        out[weights] = api.calibrate_model(GESTURE / "lstm.onnx", GESTURE / "calib.npz", options)[1]
    return out


def test_lstm_matrices_take_int4_weights(gesture_int4):
    """--weights int4 packs the LSTM's W and R (and the head's weights) two per byte, the weights <= 55 % of int8,
    and lowers the LSTM onto the fast s4 kernel."""
    from edgec.codegen import constants
    from edgec import pipeline
    from edgec.quant import int4layers
    g4, g8 = gesture_int4["int4"].graph, gesture_int4["int8"].graph
    assert "/rnn/LSTM" in int4layers.candidates(g8)          # (so --max-accuracy-drop may choose it too)
    lstm = next(op for op in g4.ops if op.kind == "lstm")
    assert select.int4_weights(lstm) and "w_x" not in lstm.arrays
    assert lstm.arrays["w_x4"].nbytes + lstm.arrays["w_h4"].nbytes == 4 * 24 * 3 // 2 + 4 * 24 * 24 // 2
    lstm8 = next(op for op in g8.ops if op.kind == "lstm")
    assert lstm8.arrays["w_x"].size + lstm8.arrays["w_h"].size == 4 * 24 * (3 + 24)
    assert constants.breakdown(g4)["weights"] <= 0.55 * constants.breakdown(g8)["weights"]
    g4 = pipeline.lower(g4)
    assert next(op for op in g4.ops if op.kind == "lstm").lowering.kernel.name == "edgec_recurrent_fast_s4"
    # (generated C of an int4 LSTM, bit-exact: tests/kernels/test_recurrent.py test_onnx_end_to_end)


def test_sensitivity_shows_the_lstm_cost_at_4_bits(gesture_int4):
    rows8 = {r["layer"]: r for r in gesture_int4["int8"].sensitivity}
    rows4 = {r["layer"]: r for r in gesture_int4["int4"].sensitivity}
    assert rows8["/rnn/LSTM"]["int4_output_db"] is not None
    assert rows8["/rnn/LSTM"]["int4_output_db"] < rows8["/rnn/LSTM"]["isolated_output_db"] - 3
    assert rows8["/rnn/LSTM"]["int4_output_db"] == rows4["/rnn/LSTM"]["isolated_output_db"]


def test_macs_of_an_int4_layer_read_back_from_a_build(digits_int4):
    """A saved build's ops keep no float weights and an int4 layer no int8 ones: its MACs (bench --profile) come
    from its parameters."""
    import dataclasses
    from edgec.ops.registry import op_macs
    g = digits_int4["int4"]
    kinds = set()
    for op in (o for o in g.ops if select.int4_weights(o)):      # fully connected, conv2d and depthwise ones
        assert op_macs(g, dataclasses.replace(op, attrs={})) == op_macs(g, op) > 0, op.name
        kinds.add(op.kind)
    assert kinds == {"fully_connected", "conv2d", "depthwise_conv2d"}
