"""The type conversions (runtime_c/edgec_convert.c) against their NumPy twins (edgec/ops/convert.py), bit for bit: int8 <-> int16 at
the boundaries of a chain of 16x8 layers, both directions."""
from __future__ import annotations

import ctypes

import numpy as np

from ckernels import fully_connected_s16_and_conversion_cases, make, ptr
from edgec.ops import convert


def test_conversions_bit_exact(ck):
    for _, ((x8, zp, m, s), (x16, zp16, m16, s16)) in fully_connected_s16_and_conversion_cases():
        # int8 <-> int16 at the boundary of an int16 region, both directions
        up = np.zeros(50, np.int16)
        ck.lib.edgec_requantize_s8_s16(ctypes.byref(make("edgec_requantize_params", dict(n=50, zero_point=zp, mult=m,
                                                                                           shift=s))), ptr(x8), ptr(up))
        assert np.array_equal(up, convert.requantize_s8_s16(x8, zp, m, s))
        down = np.zeros(50, np.int8)
        ck.lib.edgec_requantize_s16_s8(ctypes.byref(make("edgec_requantize_params", dict(n=50, zero_point=zp16,
                                                                                           mult=m16, shift=s16))),
                                       ptr(x16), ptr(down))
        assert np.array_equal(down, convert.requantize_s16_s8(x16, zp16, m16, s16))
