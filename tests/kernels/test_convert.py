"""The type conversions (runtime_c/edgec_convert.c) against their NumPy twins (edgec/ops/convert.py), bit for bit: int8 <-> int16 at
the boundaries of a chain of 16x8 layers, both directions."""
from __future__ import annotations

import numpy as np

from ckernels import I32, fully_connected_s16_and_conversion_cases, ptr
from edgec.ops import convert


def test_conversions_bit_exact(ck):
    for _, ((x8, zp, m, s), (x16, zp16, m16, s16)) in fully_connected_s16_and_conversion_cases():
        # int8 <-> int16 at the boundary of an int16 region, both directions
        up = np.zeros(50, np.int16)
        ck.lib.edgec_requantize_s8_s16(I32(50), ptr(x8), I32(zp), I32(m), I32(s), ptr(up))
        assert np.array_equal(up, convert.requantize_s8_s16(x8, zp, m, s))
        down = np.zeros(50, np.int8)
        ck.lib.edgec_requantize_s16_s8(I32(50), ptr(x16), I32(zp16), I32(m16), I32(s16), ptr(down))
        assert np.array_equal(down, convert.requantize_s16_s8(x16, zp16, m16, s16))
