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


def test_quantize8_bit_exact(ck):
    """TFLite's QUANTIZE between int8, uint8 and int16 (every direction), random scales and zero points, every
    8-bit input value (int16: a spread over its range): the C kernel and its twin agree."""
    from edgec.fixedpoint.scheme import quantize_multiplier

    rng = np.random.default_rng(29)
    types = (np.int8, np.uint8, np.int16)
    for k in range(72):
        ti, to = k % 3, k // 3 % 3
        x = (np.arange(256, dtype=np.uint8) if ti < 2 else
             rng.integers(-32768, 32768, 256).astype(np.int16))
        xin = x.view(np.int8) if ti == 0 else x
        zp = lambda t: 0 if t == 2 else int(rng.integers(0, 256) if t == 1 else rng.integers(-128, 128))
        m, s = quantize_multiplier(1.0 if k < 9 else float(10 ** rng.uniform(-3, 3)))
        p = dict(n=256, input_zp=zp(ti), mult=m, shift=s, output_zp=zp(to), input_type=ti, output_type=to)
        y = np.zeros(256, types[to])
        ck.lib.edgec_quantize8(ctypes.byref(make("edgec_quantize8_params", p)), ptr(xin), ptr(y))
        want = convert.quantize8(p, xin)
        assert want.dtype == y.dtype and np.array_equal(y, want), p


def test_quantize8_to_int8_fast_loops_edges(ck):
    """The int8-output loops (edgec_quantize8's fast paths): the multiplier 1, every right shift 1-31, multipliers at
    both ends of [2^30, 2^31), inputs at their type's ends and at rounding ties (multiplier 2^30: halves), zero
    points at their ends (int16: the difference up to 65535): C and twin agree bit for bit."""
    rng = np.random.default_rng(32)
    ends = {0: np.arange(-128, 128), 1: np.arange(256), 2: np.r_[-32768, -32767, -2, -1, 0, 1, 2, 32766, 32767,
                                                                   rng.integers(-32768, 32768, 247)]}
    types = (np.int8, np.uint8, np.int16)
    for right in range(0, 32):          # (0: the multiplier 1 (2^30, shift +1), the loop of the same scale)
        for ti, x in ends.items():
            for mult in ((1 << 30, (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31))) if right else (1 << 30,)):
                zps = (-32768, 32767, 0) if ti == 2 else ((0, 255) if ti == 1 else (-128, 127))
                for input_zp in zps:
                    xin = np.asarray(x).astype(types[ti])
                    p = dict(n=xin.size, input_zp=input_zp, mult=mult, shift=-right if right else 1,
                             output_zp=int(rng.integers(-128, 128)), input_type=ti, output_type=0)
                    y = np.zeros(xin.size, np.int8)
                    ck.lib.edgec_quantize8(ctypes.byref(make("edgec_quantize8_params", p)), ptr(xin), ptr(y))
                    np.testing.assert_array_equal(y, convert.quantize8(p, xin), err_msg=str(p))
