"""Quantization stage: qparams, per-channel weights, int32 bias, fused activation clamps."""
from __future__ import annotations

import math

import numpy as np
import pytest

from edgec.ir import Graph, Op, Tensor
from edgec.quant.quantize import quantize
from edgec.fixedpoint.scheme import dequantize, qparams_from_range, quantize_input
from edgec.fixedpoint import scheme


@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (0.0, 6.0), (0.5, 3.0), (-4.0, -1.0), (-0.01, 250.0)])
def test_qparams_cover_range_and_zero(lo, hi):
    scale, zp = qparams_from_range(lo, hi)
    assert -128 <= zp <= 127
    t = Tensor("t", (1,), "t", scale, zp)
    # zero is exactly representable, the range's ends are within half a step
    assert dequantize(t, np.array([zp], np.int8))[0] == 0.0
    for v in (min(lo, 0.0), max(hi, 0.0)):
        back = dequantize(t, quantize_input(t, np.array([v], np.float32)))[0]
        assert abs(back - v) <= scale / 2 + 1e-6


def test_constant_zero_range_is_usable():
    scale, zp = qparams_from_range(0.0, 0.0)
    assert scale > 0 and zp == -128


def _fc_graph(weights, bias, act=(-math.inf, math.inf)):
    tensors = {"x": Tensor("x", (1, weights.shape[1]), "x"), "y": Tensor("y", (1, weights.shape[0]), "y")}
    op = Op("fully_connected", "fc", ("x",), "y", attrs={"weights": weights, "bias": bias, "act": act})
    return Graph("g", tensors, (op,), "x", "y", (1, weights.shape[1]), output_onnx_shape=(1, weights.shape[0]))


def test_per_channel_weights_and_bias():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 16)).astype(np.float32) * np.array([[0.01], [0.1], [1.0], [10.0]], np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    g = quantize(_fc_graph(w, b), {"x": (-2.0, 2.0), "y": (-30.0, 30.0)})
    op = g.ops[0]
    wq = op.arrays["weights"]
    assert wq.dtype == np.int8 and np.all(np.abs(wq).max(axis=1) == 127)    # every channel uses its full range
    s_in = g.tensors["x"].scale
    w_scale = np.abs(w.astype(np.float64)).max(axis=1) / 127
    assert np.all(np.abs(wq * w_scale[:, None] - w) <= w_scale[:, None] / 2 + 1e-6)
    assert np.all(np.abs(op.arrays["bias"] * s_in * w_scale - b) <= s_in * w_scale / 2 + 1e-6)
    for c in range(4):
        m, s = scheme.quantize_multiplier(s_in * w_scale[c] / g.tensors["y"].scale)
        assert (op.arrays["mult"][c], op.arrays["shift"][c]) == (m, s)


def test_requantize_once_rounds_a_float_models_layer_to_the_nearest_level():
    """--requantize once (ptq.one_rounding): a float model's fully connected (or convolution) layer whose multiplier
    TFLite's form writes as a right shift of a few bits (here 0.0009 .. 0.002: shifts -8 .. -10, a convolution's
    usual) rounds its int32 accumulator once, to the nearest output level, as ONNX Runtime's float requantization
    of the same integers does. TFLite's normalized multiplier (the default) rounds the product to 31 - r fractional
    bits and then again when shifting right by r, putting some outputs a level off the nearest (docs/corpus.md:
    with one rounding timm_tinynet_e_96 and tv_mobilenet_v2_035_96_dynamo reach ONNX Runtime's INT8)."""
    from edgec.quant import ptq, reference

    rng = np.random.default_rng(11)
    w = rng.standard_normal((64, 48)).astype(np.float32) * 0.1
    b = rng.standard_normal(64).astype(np.float32) * 0.1
    ranges = {"x": (-1.0, 1.0), "y": (-1.5, 1.5)}
    g = quantize(ptq.one_rounding(_fc_graph(w, b)), ranges)
    op, x_t, y_t = g.ops[0], g.tensors["x"], g.tensors["y"]
    assert set(op.arrays["shift"].tolist()) == {0}            # shift 0 for every channel: nothing rounded twice
    xq = rng.integers(-128, 128, (400, 48)).astype(np.int8)
    acc = (xq.astype(np.int64) - x_t.zero_point) @ op.arrays["weights"].astype(np.int64).T + op.arrays["bias"]
    exact = acc * (op.arrays["mult"].astype(np.float64) / 2.0 ** 31)     # the multiplier as stored, unrounded
    nearest = np.clip(np.floor(exact + 0.5) + y_t.zero_point, -128, 127)
    got = np.stack([reference.run(g, xq[i:i + 1]).reshape(-1) for i in range(len(xq))])
    assert np.array_equal(got, nearest)
    # the default: TFLite's normalized form for the same accumulators, some outputs a level off the nearest
    t = quantize(_fc_graph(w, b), ranges)
    assert set(t.ops[0].arrays["shift"].tolist()) <= {-8, -9, -10}
    assert np.array_equal(t.ops[0].arrays["weights"], op.arrays["weights"])
    twice = np.stack([reference.run(t, xq[i:i + 1]).reshape(-1) for i in range(len(xq))])
    assert 0 < np.count_nonzero(twice != nearest) and np.all(np.abs(twice - nearest) <= 1)


def test_requantize_option_is_checked_and_taken_from_the_command_line():
    from edgec import cli
    from edgec.errors import EdgecError
    from edgec.quant import ptq

    assert ptq.QuantOptions(requantize="once").checked().requantize == "once"
    for flag, want in (([], "tflite"), (["--requantize", "once"], "once")):
        args = cli.parser().parse_args(["calibrate", "m.onnx", "--calib", "c.npz", *flag])
        assert cli._quant_options(args).requantize == want
    with pytest.raises(EdgecError, match="--requantize 'twice'; use one of tflite, once"):
        ptq.QuantOptions(requantize="twice").checked()


def test_fused_relu6_becomes_a_clamp():
    w = np.eye(4, dtype=np.float32)
    g = quantize(_fc_graph(w, np.zeros(4, np.float32), act=(0.0, 6.0)), {"x": (-8.0, 8.0), "y": (-1.0, 8.0)})
    y, p = g.tensors["y"], g.ops[0].params
    assert p["act_min"] == y.zero_point
    assert abs((p["act_max"] - y.zero_point) * y.scale - 6.0) <= y.scale / 2
