"""The fast SVDF kernel (runtime_c/fast/edgec_svdf_fast.c, edgec/ops/svdf.py lower_svdf_fast) against the NumPy twin
of the reference kernel (svdf.svdf_s8), bit for bit: random shapes (rank > 1, several batches, odd sizes), int8 and
int16 states, biases over the whole int32 range (the sums wrap), consecutive calls with the state carried; with
the portable path and the Arm DSP path (intrinsics emulated in C)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import make, ptr
from edgec.fixedpoint import scheme
from edgec.ir import Op
from edgec.ops import svdf


def _case(r):
    batch, n_in, units, rank, memory = (int(r.integers(1, 4)), int(r.integers(1, 40)), int(r.integers(1, 11)),
                                        int(r.integers(1, 4)), int(r.integers(1, 35)))
    sixteen = bool(r.random() < 0.4)
    lo, hi = (-32768, 32767) if sixteen else (-128, 127)
    (m1, s1), (m2, s2) = (scheme.quantize_multiplier(float(10 ** r.uniform(-5, 0.5))) for _ in range(2))
    p = dict(batch=batch, input_size=n_in, rank=rank, units=units, memory=memory,
             input_zp=int(r.integers(-128, 128)), state_zp=int(r.integers(-100, 100)) if not sixteen else 0,
             state_min=lo, state_max=hi, mult1=m1, shift1=s1, mult2=m2, shift2=s2, output_zp=int(r.integers(-128, 128)))
    big = bool(r.random() < 0.5)       # TFLite Micro's keyword benchmark: random biases near +-2^31
    bias = r.integers(-(1 << 31), 1 << 31, units) if big else r.integers(-(1 << 16), 1 << 16, units)
    a = dict(w_feature=r.integers(-127, 128, units * rank * n_in).astype(np.int8),
             w_time=r.integers(lo + 1, hi + 1, units * rank * memory).astype(np.int16), bias=bias.astype(np.int32))
    return p, a


@pytest.mark.parametrize("lib", ["ck", "ck_dsp"])
def test_fast_svdf_matches_twin(lib, request):
    ck = request.getfixturevalue(lib)
    r = np.random.default_rng(31)
    declined = 0
    for _ in range(120):
        p, a = _case(r)
        op = Op("svdf", "svdf", ("x",), "y", params=p, arrays=a)
        lowered = svdf.lower_svdf_fast(op)
        if lowered is None:         # a right shift past what edgec_rq_any's saturation keeps exact
            declined += 1
            continue
        params, arrays = lowered
        n = p["batch"] * p["units"] * p["rank"] * p["memory"]
        state = np.full(n, p["state_zp"], np.int16)                  # after reset
        carried = state.copy()
        for _ in range(3):                                            # consecutive calls: the state carried
            x = r.integers(-128, 128, p["batch"] * p["input_size"]).astype(np.int8)
            out = np.full(p["batch"] * p["units"], 99, np.int8)
            ck.lib.edgec_svdf_fast_s8(ctypes.byref(make("edgec_svdf_fast_params", params)), ptr(x),
                                      ptr(arrays["w_feature"]), ptr(arrays["fbias"]), ptr(arrays["w_time"]),
                                      ptr(arrays["tbias"]), ptr(state), ptr(out))
            np.testing.assert_array_equal(out, svdf.svdf_s8(p, a, x, carried), err_msg=str(p))
            np.testing.assert_array_equal(state, carried, err_msg=str(p))
    assert declined < 20
