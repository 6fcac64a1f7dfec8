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
    return Graph("g", tensors, (op,), "x", "y", (1, weights.shape[1]), (1, weights.shape[0]))


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


def test_fused_relu6_becomes_a_clamp():
    w = np.eye(4, dtype=np.float32)
    g = quantize(_fc_graph(w, np.zeros(4, np.float32), act=(0.0, 6.0)), {"x": (-8.0, 8.0), "y": (-1.0, 8.0)})
    y, p = g.tensors["y"], g.ops[0].params
    assert p["act_min"] == y.zero_point
    assert abs((p["act_max"] - y.zero_point) * y.scale - 6.0) <= y.scale / 2
