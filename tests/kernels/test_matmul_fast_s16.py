"""The fast 16x8 matrix product (edgec/ops/matmul.py MATMUL_FAST16, runtime_c/fast/edgec_matmul_fast_s16.c) against
the NumPy twin of TFLite's BatchMatMul<int16_t, int64_t>, bit for bit, through the strides of test_matmul's cases,
on the portable and the DSP path: sums inside int32 (one-multiply requantization) and beyond it (int64), scales
whose total shift leaves edgec_rq16_out's range."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import make, ptr
from edgec.fixedpoint.scheme import quantize_multiplier
from edgec.ir import Op
from edgec.ops import matmul, select
from test_matmul import _case


def _case16(rng):
    p, a, b = _case(rng)
    scale = float(rng.choice([rng.uniform(1e-5, 1e-3), rng.uniform(0.01, 4.0), rng.uniform(1e-9, 1e-7)]))
    mult, shift = quantize_multiplier(scale)
    lo = int(rng.integers(-32768, 0)) if rng.random() < 0.3 else -32768
    p.update(a_zp=0, b_zp=0, output_zp=0, mult=mult, shift=shift, act_min=lo, act_max=32767)
    extreme = rng.random() < 0.3
    a, b = ((rng.choice(np.array([-32768, 32767], np.int16), size=v.size) if extreme
             else rng.integers(-32768, 32768, v.size).astype(np.int16)) for v in (a, b))
    return p, a, b


@pytest.mark.parametrize("path", ["ck", "ck_dsp"])
def test_matmul_fast_s16_is_the_16x8_reference(request, path):
    lib = request.getfixturevalue(path).lib
    rng = np.random.default_rng(21)
    for _ in range(300):
        p, a, b = _case16(rng)
        op = Op("matmul", "mm", (), "y", params=p)
        low = select.fast(op, ("int16", "int16", "int16"))
        assert low is not None and low.kernel is matmul.MATMUL_FAST16
        out = np.zeros(p["batch"] * p["m"] * p["n"], np.int16)
        scratch = np.full(low.scratch_bytes // 4 + 4, 0x5A5A5A5A, np.uint32)      # then 16 guard bytes
        lib.edgec_matmul_fast_s16(ctypes.byref(make("edgec_matmul_params", low.params)), ptr(a), ptr(b),
                                  ptr(scratch), ptr(out))
        assert np.all(scratch[-4:] == 0x5A5A5A5A), "the kernel wrote past the scratch the lowering asked for"
        assert np.array_equal(out, matmul.matmul_s16(p, a, b).reshape(-1)), p
