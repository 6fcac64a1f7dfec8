"""NumPy integer reference kernels, bit-exact with the int8 kernels of runtime_c/ (edgec_nn.h).

Numerics follow the TFLite / TFLM int8 reference kernels (see docs/design.md).
Activations are NHWC int8 without a batch dimension; parameters are passed as a
dict whose keys are the field names of the matching C params struct.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
ADD_LEFT_SHIFT = 20


class MultiplierRangeError(ValueError):
    """A real multiplier outside what a Q31 multiplier and a shift <= 30 can express."""


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real ~= mult * 2**(shift - 31), mult in [2**30, 2**31)."""
    if real == 0.0:
        return 0, 0
    if not math.isfinite(real):
        raise MultiplierRangeError(f"multiplier {real} is not finite")
    q, e = math.frexp(real)
    v = q * float(1 << 31)  # exact (power-of-two scaling)
    q_fixed = int(math.copysign(math.floor(abs(v) + 0.5), v))  # std::round: half away from zero
    if q_fixed == (1 << 31):
        q_fixed //= 2
        e += 1
    if e < -31:
        return 0, 0
    if e > 30:
        raise MultiplierRangeError(f"multiplier {real:.6g} is too large for a Q31 multiplier with shift <= 30")
    return q_fixed, e


def requantize(acc, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier (double rounding); mult/shift broadcast over the last axis."""
    x = np.asarray(acc, dtype=np.int64)
    m = np.asarray(mult, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    x = (x << left).astype(np.int32).astype(np.int64)  # int32 wrap, as the C cast
    ab = x * m
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    hi = np.where(t >= 0, t >> 31, -((-t) >> 31))  # C division: truncation toward zero
    hi = np.where((x == INT32_MIN) & (m == INT32_MIN), INT32_MAX, hi)
    mask = (np.int64(1) << right) - 1
    threshold = (mask >> 1) + (hi < 0)
    out = (hi >> right) + ((hi & mask) > threshold)
    return out.astype(np.int32)


def _finish(acc, mult, shift, p) -> np.ndarray:
    """Requantize an int32 accumulator, add the output zero point and clamp to int8 activation range."""
    out = requantize(acc, mult, shift).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def _pad_windows(x, p, fill, dil_h=1, dil_w=1):
    """Pad x [h,w,c] with `fill` so that every window tap is in range; return (xp, tap_slice_fn)."""
    in_h, in_w = x.shape[0], x.shape[1]
    out_h, out_w = int(p["out_h"]), int(p["out_w"])
    sh, sw = int(p["stride_h"]), int(p["stride_w"])
    pt, pl = int(p["pad_top"]), int(p["pad_left"])
    need_h = (out_h - 1) * sh + (int(p["k_h"]) - 1) * dil_h + 1
    need_w = (out_w - 1) * sw + (int(p["k_w"]) - 1) * dil_w + 1
    # crop (negative pad) is impossible to express with np.pad, so pad generously then slice
    pb = max(0, need_h - pt - in_h)
    pr = max(0, need_w - pl - in_w)
    xp = np.pad(x, ((max(pt, 0), pb), (max(pl, 0), pr), (0, 0)), constant_values=fill)
    oy0, ox0 = max(pt, 0) - pt, max(pl, 0) - pl

    def tap(ky, kx):
        y0 = oy0 + ky * dil_h
        x0 = ox0 + kx * dil_w
        return xp[y0:y0 + (out_h - 1) * sh + 1:sh, x0:x0 + (out_w - 1) * sw + 1:sw, :]

    return tap


def conv2d_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::ConvPerChannel (int8, OHWI weights, dilation, per-channel requant)."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["in_c"])
    w = np.asarray(w, np.int8).reshape(p["out_c"], p["k_h"], p["k_w"], p["in_c"]).astype(np.int64)
    xz = x.astype(np.int64) - int(p["input_zp"])  # padded taps are 0 after zero point removal
    tap = _pad_windows(xz, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) @ w[:, ky, kx, :].T
    acc = (acc + np.asarray(bias, np.int64)).astype(np.int32)  # int32 accumulator, as TFLite
    return _finish(acc, mult, shift, p)


def depthwise_conv2d_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::DepthwiseConvPerChannel (weights [k_h][k_w][out_c])."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["in_c"])
    w = np.asarray(w, np.int8).reshape(p["k_h"], p["k_w"], p["out_c"]).astype(np.int64)
    src = np.arange(int(p["out_c"])) // int(p["depth_multiplier"])
    xz = x.astype(np.int64)[:, :, src] - int(p["input_zp"])  # [h][w][out_c]
    tap = _pad_windows(xz, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) * w[ky, kx, :]
    acc = (acc + np.asarray(bias, np.int64)).astype(np.int32)
    return _finish(acc, mult, shift, p)


def fully_connected_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::FullyConnected, with per-output-channel multipliers (TFLM style)."""
    x = np.asarray(x, np.int8).reshape(p["in_features"]).astype(np.int64) - int(p["input_zp"])
    w = np.asarray(w, np.int8).reshape(p["out_features"], p["in_features"]).astype(np.int64)
    acc = (w @ x + np.asarray(bias, np.int64)).astype(np.int32)
    return _finish(acc, mult, shift, p)


def max_pool_s8(p: dict, x) -> np.ndarray:
    """TFLite reference_integer_ops::MaxPool (padded taps ignored, then activation clamp)."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["c"])
    tap = _pad_windows(x, p, -128)  # -128 is TFLite's initial max, never beats a real tap
    out = np.full((p["out_h"], p["out_w"], p["c"]), -128, np.int8)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            np.maximum(out, tap(ky, kx), out=out)
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def avg_pool_s8(p: dict, x) -> np.ndarray:
    """TFLite reference_integer_ops::AveragePool (count = valid taps, rounded C division)."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["c"])
    tap_x = _pad_windows(x.astype(np.int64), p, 0)
    tap_n = _pad_windows(np.ones(x.shape[:2] + (1,), np.int64), p, 0)
    acc = np.zeros((p["out_h"], p["out_w"], p["c"]), np.int64)
    cnt = np.zeros((p["out_h"], p["out_w"], 1), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap_x(ky, kx)
            cnt += tap_n(ky, kx)
    c = np.maximum(cnt, 1)  # no valid tap (degenerate padding): average 0, as the C
    num = np.abs(acc) + c // 2
    avg = np.where(acc > 0, num // c, -(num // c))  # (sum +- count/2) / count, truncating
    return np.clip(avg, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def add_params(s1: float, zp1: int, s2: float, zp2: int, so: float, zpo: int) -> dict:
    """Parameters of TFLite's int8 Add (PrepareGeneralSubOp / CalculateArithmeticParams style)."""
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = quantize_multiplier(s1 / twice_max)
    m2, sh2 = quantize_multiplier(s2 / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << ADD_LEFT_SHIFT) * so))
    return {"input1_zp": int(zp1), "input1_mult": m1, "input1_shift": sh1,
            "input2_zp": int(zp2), "input2_mult": m2, "input2_shift": sh2,
            "output_mult": mo, "output_shift": sho, "output_zp": int(zpo),
            "left_shift": ADD_LEFT_SHIFT, "act_min": -128, "act_max": 127}


def add_s8(p: dict, a, b) -> np.ndarray:
    """TFLite reference_integer_ops::AddElementwise (same shapes, no broadcasting)."""
    a = np.asarray(a, np.int8)
    ls = 1 << int(p.get("left_shift", ADD_LEFT_SHIFT))
    v1 = (a.astype(np.int64) - int(p["input1_zp"])) * ls
    v2 = (np.asarray(b, np.int8).reshape(a.shape).astype(np.int64) - int(p["input2_zp"])) * ls
    s1 = requantize(v1, p["input1_mult"], p["input1_shift"]).astype(np.int64)
    s2 = requantize(v2, p["input2_mult"], p["input2_shift"]).astype(np.int64)
    raw = (s1 + s2).astype(np.int32)
    out = requantize(raw, p["output_mult"], p["output_shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def softmax_table(input_scale: float, beta: float = 1.0) -> np.ndarray:
    """Build-time exp LUT for edgec's softmax: entry d = round(exp(-d*scale*beta) * 2**24)."""
    t = [max(0, int(round(math.exp(-d * input_scale * beta) * (1 << 24)))) for d in range(256)]
    return np.asarray(t, dtype=np.uint32)


def softmax_s8(x, exp_table) -> np.ndarray:
    """edgec LUT softmax over the last axis (not TFLite's); output scale 1/256, zero point -128."""
    x = np.asarray(x, np.int8)
    x2 = x.reshape(-1, x.shape[-1]).astype(np.int64)
    e = np.asarray(exp_table, np.uint64)[x2.max(axis=1, keepdims=True) - x2]
    s = e.sum(axis=1, keepdims=True, dtype=np.uint64)
    q = (e * np.uint64(512) + s) // (np.uint64(2) * s)
    out = q.astype(np.int64) - 128
    return np.clip(out, -128, 127).astype(np.int8).reshape(x.shape)


def transpose_s8(x, perm) -> np.ndarray:
    """TFLite reference_ops::Transpose (== numpy.transpose) for rank <= 4."""
    return np.ascontiguousarray(np.transpose(np.asarray(x, np.int8), [int(i) for i in perm]))
