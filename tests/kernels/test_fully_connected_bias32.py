"""The fully connected kernel for any int32 bias (runtime_c/fast/edgec_fully_connected_bias32.c, edgec/ops/dense.py
lower_fc_bias32) against the reference twin (dense.fully_connected_s8), bit for bit: random shapes (odd sizes, a
partial last block of rows), biases over the whole int32 range (the sums wrap), per-tensor and per-channel
multipliers, fused activation ranges; the portable path and the Arm DSP path (intrinsics emulated in C); and the
selector puts such a layer on it, not on the reference kernel."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import make, ptr
from edgec.fixedpoint import scheme
from edgec.ir import Op
from edgec.ops import dense, select


def _layer(r):
    n_in, n_out = int(r.integers(1, 70)), int(r.integers(1, 19))
    per_channel = bool(r.random() < 0.5)
    ms = [scheme.quantize_multiplier(float(10 ** r.uniform(-5, 0))) for _ in range(n_out if per_channel else 1)]
    mult = np.resize(np.array([m for m, _ in ms], np.int32), n_out)
    shift = np.resize(np.array([s for _, s in ms], np.int32), n_out)
    lo, hi = (-128, 127) if r.random() < 0.6 else (int(r.integers(-128, 0)), int(r.integers(0, 128)))
    p = dict(in_features=n_in, out_features=n_out, input_zp=int(r.integers(-128, 128)),
             output_zp=int(r.integers(-128, 128)), act_min=lo, act_max=hi)
    big = r.random() < 0.7
    bias = r.integers(-(1 << 31), 1 << 31, n_out) if big else r.integers(-(1 << 12), 1 << 12, n_out)
    a = dict(weights=r.integers(-127, 128, n_out * n_in).astype(np.int8), bias=bias.astype(np.int32),
             mult=mult, shift=shift)
    return Op("fully_connected", "fc", ("x",), "y", params=p, arrays=a)


@pytest.mark.parametrize("lib", ["ck", "ck_dsp"])
def test_bias32_matches_twin(lib, request):
    ck = request.getfixturevalue(lib)
    r = np.random.default_rng(32)
    ran = 0
    for _ in range(150):
        op = _layer(r)
        lowered = dense.lower_fc_bias32(op)
        if lowered is None:      # a right shift past what edgec_rq_any's saturation keeps exact
            continue
        params, arrays = lowered
        p, a = op.params, op.arrays
        x = r.integers(-128, 128, p["in_features"]).astype(np.int8)
        out = np.full(p["out_features"], 99, np.int8)
        ck.lib.edgec_fully_connected_bias32_s8(ctypes.byref(make("edgec_fully_connected_packed_params", params)),
                                               ptr(x), ptr(arrays["fw"]), ptr(arrays["rq_any"]), ptr(out))
        want = dense.fully_connected_s8(p, x, a["weights"], a["bias"], a["mult"], a["shift"])
        np.testing.assert_array_equal(out, want, err_msg=str(p))
        ran += 1
    assert ran > 120


def test_selector_takes_large_biases_to_bias32():
    """A bias beyond the packed kernel's |acc| < 2^30 whose outputs still vary with the input: bias32. (With 47
    inputs such a bias saturates every output, a constant channel the packed kernel takes as a constant record
    (edgec/ops/fast.py constant_channels): that is checked too.)"""
    r = np.random.default_rng(5)
    n_in, n_out = 4096, 3          # |acc| up to 4096 * 127 * 128: 6.6 output steps at scale 1e-7 around 2e9 * 1e-7
    mult, shift = scheme.quantize_multiplier(1e-7)
    p = dict(in_features=n_in, out_features=n_out, input_zp=0, output_zp=-128, act_min=-128, act_max=127)
    a = dict(weights=r.integers(-127, 128, n_out * n_in).astype(np.int8), bias=np.full(n_out, 2_000_000_000, np.int32),
             mult=np.full(n_out, mult, np.int32), shift=np.full(n_out, shift, np.int32))
    op = Op("fully_connected", "fc", ("x",), "y", params=p, arrays=a)
    assert dense.lower_fc(op) is None                  # beyond the packed kernel's |acc| < 2^30, not constant
    assert select.select(op, select.Options()).kernel is dense.BIAS32
    op.arrays["bias"][:] = 1000
    assert select.select(op, select.Options()).kernel is not dense.BIAS32
    small = _layer(r)                                  # 47 inputs or fewer: such a bias saturates every output
    small.arrays["bias"] = np.full(small.params["out_features"], 2_000_000_000, np.int32)
    small.arrays["mult"], small.arrays["shift"] = (np.full(small.params["out_features"], v, np.int32)
                                                   for v in (1 << 30, -8))
    assert dense.lower_fc(small) is not None
    assert select.select(small, select.Options()).kernel is not dense.BIAS32
