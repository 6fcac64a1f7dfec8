"""NumPy reference of the 16x8 kernels (TFLite's int16-activation scheme), bit-exact with
the _s16 kernels of runtime_c/ (edgec_nn.h): the escape hatch for a layer whose activations do not survive
int8.

Activations are int16, symmetric (zero point 0); weights int8 symmetric per channel; bias int64;
the int64 accumulator is requantized by TFLite's 64-bit MultiplyByQuantizedMultiplier (the Q31
multiplier reduced to Q15, one rounding shift). `requantize_s8_s16` / `requantize_s16_s8` convert
at the boundary between int8 and int16 layers (TFLite's Requantize, with the int32 multiplier).
Parameters reuse the int8 kernels' dicts (edgec_conv_params / edgec_fully_connected_params); the zero points in
them must be 0 and act_min/act_max are int16 bounds.
"""
from __future__ import annotations

import numpy as np

from .kernels_ref import _pad_windows, requantize


def requantize64(acc, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier(int64 x, int32 mult, int shift), shift in [-31, 7]."""
    x = np.asarray(acc, np.int64)
    m = np.asarray(mult, np.int64)
    s = np.asarray(shift, np.int64)
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - s
    return (x * reduced + (np.int64(1) << (total - 1))) >> total     # floor shift, as the C


def _finish16(acc, mult, shift, p) -> np.ndarray:
    out = requantize64(acc, mult, shift)
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int16)


def conv2d_s16(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::ConvPerChannel, 16x8 (int16 in/out, int8 OHWI weights, int64 bias)."""
    x = np.asarray(x, np.int16).reshape(p["in_h"], p["in_w"], p["in_c"]).astype(np.int64)
    w = np.asarray(w, np.int8).reshape(p["out_c"], p["k_h"], p["k_w"], p["in_c"]).astype(np.int64)
    tap = _pad_windows(x, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) @ w[:, ky, kx, :].T
    return _finish16(acc + np.asarray(bias, np.int64), mult, shift, p)


def depthwise_conv2d_s16(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::DepthwiseConvPerChannel, 16x8 (weights [k_h][k_w][out_c])."""
    x = np.asarray(x, np.int16).reshape(p["in_h"], p["in_w"], p["in_c"]).astype(np.int64)
    w = np.asarray(w, np.int8).reshape(p["k_h"], p["k_w"], p["out_c"]).astype(np.int64)
    x = x[:, :, np.arange(int(p["out_c"])) // int(p["depth_multiplier"])]
    tap = _pad_windows(x, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) * w[ky, kx, :]
    return _finish16(acc + np.asarray(bias, np.int64), mult, shift, p)


def fully_connected_s16(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::FullyConnected, 16x8, per-output-channel multipliers."""
    x = np.asarray(x, np.int16).reshape(p["in_features"]).astype(np.int64)
    w = np.asarray(w, np.int8).reshape(p["out_features"], p["in_features"]).astype(np.int64)
    return _finish16(w @ x + np.asarray(bias, np.int64), mult, shift, p)


def requantize_s8_s16(x, input_zp: int, mult: int, shift: int) -> np.ndarray:
    """int8 (scale s8, zero point) -> int16 (scale s16, zero point 0): mult/shift encode s8 / s16."""
    v = np.asarray(x, np.int8).astype(np.int32) - int(input_zp)
    return np.clip(requantize(v, mult, shift), -32768, 32767).astype(np.int16)


def requantize_s16_s8(x, output_zp: int, mult: int, shift: int) -> np.ndarray:
    """int16 (zero point 0) -> int8 (scale, zero point): mult/shift encode s16 / s8."""
    v = requantize(np.asarray(x, np.int16).astype(np.int32), mult, shift).astype(np.int64) + int(output_zp)
    return np.clip(v, -128, 127).astype(np.int8)
