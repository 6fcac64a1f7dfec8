"""The reductions (runtime_c/edgec_reduce.c) against its NumPy twin (edgec/ops/reduce.py), bit for bit: sum/mean, max, min, argmax,
argmin (ties: first or last)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import make, ptr
from edgec.ops import reduce
from edgec.fixedpoint import scheme

rng = np.random.default_rng(3)


@pytest.mark.parametrize("seed", range(12))
def test_reduce(ck, seed):
    r = np.random.default_rng(seed)
    outer, n, inner = (int(v) for v in r.integers(1, 6, 3))
    kind = seed % 5
    mult, shift = scheme.quantize_multiplier(float(r.uniform(0.01, 2)) / (n if kind == 0 else 1))
    p = dict(outer=outer, n=n, inner=inner, kind=kind, select_last=seed % 2, input_zp=int(r.integers(-10, 10)),
             mult=mult, shift=shift, output_zp=int(r.integers(-10, 10)), act_min=-128, act_max=127)
    x = rng.integers(-3, 3, outer * n * inner).astype(np.int8)   # ties for argmax/argmin
    out = np.zeros(outer * inner, np.int8)
    ck.lib.edgec_reduce_s8(ctypes.byref(make("edgec_reduce_params", p)), ptr(x), ptr(out))
    assert np.array_equal(out, reduce.reduce_s8(p, x))
