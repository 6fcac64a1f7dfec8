"""The resize family (runtime_c/edgec_resize.c) against its NumPy twin (edgec/ops/resize.py), bit for bit: linear resize."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import log_softmax_resize_cases, make, ptr
from edgec.ops import resize


@pytest.mark.parametrize("seed", range(6))
def test_resize_linear(ck, seed):
    _, (q, idx, frac, x) = log_softmax_resize_cases(seed)
    out = np.zeros(70, np.int8)
    ck.lib.edgec_resize_linear_s8(ctypes.byref(make("edgec_resize_params", q)), ptr(x), ptr(idx), ptr(frac), ptr(out))
    assert np.array_equal(out, resize.resize_linear_s8(q, idx, frac, x))
