"""CumSum, end to end (the operator the "Adding an operator" walkthrough of docs/design.md adds): the C kernel
(runtime_c/edgec_cumsum.c) against its NumPy twin (edgec/ops/cumsum.py) bit for bit, the twin against float,
and ONNX CumSum models (every axis, exclusive, reverse, NCHW) through the whole pipeline: canonical graph
against onnxruntime, generated C bit-exact with the reference."""
from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest
from onnx import helper

from ckernels import make, ptr
from conftest import check_generated_c, make_model
from edgec.errors import EdgecError
from edgec.frontend import canonicalize
from edgec.ops import cumsum
from edgec.fixedpoint import scheme
from onnx_int8 import float_then_int8


def _params(r, outer, n, inner, exclusive, reverse):
    mult, shift = scheme.quantize_multiplier(float(r.uniform(0.002, 0.5)))
    return dict(outer=outer, n=n, inner=inner, exclusive=exclusive, reverse=reverse,
                input_zp=int(r.integers(-128, 128)), mult=mult, shift=shift, output_zp=int(r.integers(-128, 128)),
                act_min=int(r.integers(-128, -60)), act_max=int(r.integers(60, 128)))


@pytest.mark.parametrize("exclusive,reverse", list(itertools.product((0, 1), (0, 1))))
def test_kernel_matches_twin(ck, exclusive, reverse):
    r = np.random.default_rng(40 + 2 * exclusive + reverse)
    for _ in range(200):
        outer, n, inner = (int(v) for v in r.integers(1, 9, 3))
        p = _params(r, outer, n, inner, exclusive, reverse)
        x = r.integers(-128, 128, outer * n * inner).astype(np.int8)
        out = np.full(x.size, 99, np.int8)
        ck.lib.edgec_cumsum_s8(ctypes.byref(make("edgec_cumsum_params", p)), ptr(x), ptr(out))
        np.testing.assert_array_equal(out, cumsum.cumsum_s8(p, x))


def test_long_sums_saturate_like_the_c(ck):
    """Sums far outside int8 (n = 4000 of -128..127) clamp to the activation range, the same on both sides."""
    r = np.random.default_rng(7)
    p = dict(_params(r, 1, 4000, 2, 0, 1), act_min=-128, act_max=127)
    x = np.full(8000, 127, np.int8)
    out = np.zeros(x.size, np.int8)
    ck.lib.edgec_cumsum_s8(ctypes.byref(make("edgec_cumsum_params", p)), ptr(x), ptr(out))
    np.testing.assert_array_equal(out, cumsum.cumsum_s8(p, x))
    assert out.max() == 127


def test_twin_tracks_float():
    """Dequantized, the integer running sums are the float ones within one output step (+ input rounding)."""
    r = np.random.default_rng(3)
    xf = r.uniform(-1, 1, (3, 20, 4))
    s_in, s_out = 2 / 255, float(np.abs(np.cumsum(xf, axis=1)).max()) / 127
    xq = np.clip(np.round(xf / s_in), -128, 127).astype(np.int8)
    for exclusive, reverse in itertools.product((0, 1), (0, 1)):
        mult, shift = scheme.quantize_multiplier(s_in / s_out)
        p = dict(outer=3, n=20, inner=4, exclusive=exclusive, reverse=reverse, input_zp=0, mult=mult, shift=shift,
                 output_zp=0, act_min=-128, act_max=127)
        got = cumsum.cumsum_s8(p, xq).reshape(3, 20, 4) * s_out
        op = type("Op", (), {"attrs": dict(outer=3, n=20, inner=4, exclusive=exclusive, reverse=reverse)})()
        want = cumsum.float_cumsum(op, [xq.astype(np.float64) * s_in])
        assert np.abs(got - want).max() <= s_out, (exclusive, reverse)


def _model(shape, axis, exclusive, reverse, before_conv=False):
    nodes, inits = [], {"axis": np.array(axis, np.int64)}
    src = "x"
    if before_conv:      # an NCHW conv first: CumSum then runs on a channels-last tensor
        c = shape[1]
        inits.update(w=np.random.default_rng(0).normal(size=(c, c, 1, 1)) * 0.5, b=np.zeros(c))
        nodes.append(helper.make_node("Conv", ["x", "w", "b"], ["h"], name="conv"))
        src = "h"
    nodes.append(helper.make_node("CumSum", [src, "axis"], ["y"], exclusive=exclusive, reverse=reverse,
                                  name="cumsum"))
    return make_model(nodes, ("x", list(shape)), ("y", list(shape)), inits, opset=14)


CASES = [((1, 12), 1, 0, 0), ((1, 12), -1, 1, 0), ((1, 12), 1, 0, 1), ((1, 12), 1, 1, 1),
         ((1, 3, 5, 4), 2, 0, 0), ((1, 3, 5, 4), 1, 1, 1), ((1, 3, 5, 4), 3, 0, 1)]


@pytest.mark.parametrize("shape,axis,exclusive,reverse,before_conv",
                         [c + (False,) for c in CASES] + [c + (True,) for c in CASES if len(c[0]) == 4])
def test_onnx_cumsum_end_to_end(shape, axis, exclusive, reverse, before_conv, tmp_path):
    model = _model(shape, axis, exclusive, reverse, before_conv)
    x = np.random.default_rng(1).uniform(-1, 1, (24,) + shape[1:]).astype(np.float32)
    graph, want, got = float_then_int8(model, x, "cumsum_model")
    assert np.abs(got - want).max() <= 4 * graph.tensors[graph.output].scale + 0.05 * np.ptp(want)
    check_generated_c(graph, x, tmp_path)


def test_axis_must_be_one_constant_integer():
    model = make_model([helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")], ("x", [1, 4]),
                       ("y", [1, 4]), {"axis": np.array([0, 1], np.int64)}, opset=14)
    with pytest.raises(EdgecError, match="node 'cumsum' .*axis must be one integer"):
        canonicalize.canonicalize(model, "m")
