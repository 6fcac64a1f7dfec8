"""Lowering of quantized ops onto the fast kernels (runtime_c/fast/), done at build time.

For each op the fast kernels can run bit-exactly, `lower(op)` returns the C params struct, the
constant arrays (weights padded and reordered for the inner loops, one requantization record per
output channel, lookup tables) and the scratch memory the kernel needs; ops it returns None for
keep the portable reference kernels (the family files of runtime_c/).

What moves from run time to build time:
- the input zero point: sum((x - zp) * w) + bias == sum(x * w) + (bias - zp * sum(w)), with padded
  taps holding zp itself, so the inner loops multiply raw int8 values;
- requantization: TFLite's SaturatingRoundingDoublingHighMul followed by RoundingDivideByPOT is,
  for a multiplier m in (2^30, 2^31) and a right shift e >= 0, exactly
      (((2*acc*m + 2^31 + [e>0] * 2^(31+e)) >> 32) - [e>0][acc<0]) >> e
  (both roundings folded into one constant, see `rq_records`): SMMLAR, ADD and a shift on Arm;
- Add's two input rescalings: a 256-entry table per input.

The lowering needs |accumulator| < 2^30 (so 2*acc fits in int32); `lower` checks the bound from
the weights and bias and declines layers that could exceed it.
"""
from __future__ import annotations

import numpy as np

from . import kernels_ref as K
from .ir import Graph, Op

RQ_FIELDS = ("bias", "mult", "khi", "neg", "shift")
ACC_LIMIT = 1 << 30
MAX_RIGHT_SHIFT = 22     # keeps |hi word + zp * 2^shift| < 2^31 for |acc| < 2^30
SCRATCH_ALIGN = 16
CONV_CHUNK = 16          # EDGEC_CONV_CHUNK in fast/edgec_conv_fast.c: output channels accumulated at a time


def _k4(n: int) -> int:
    return (n + 3) // 4 * 4


def rq_records(bias: np.ndarray, mult: np.ndarray, shift: np.ndarray, zp: int = 0) -> np.ndarray | None:
    """[n, 5] int32 edgec_rq records (bias, mult, khi, neg, shift), or None if a multiplier/shift is
    outside the fast path.

    The output zero point is folded in: (v >> e) + zp == (v + zp * 2^e) >> e."""
    bias = np.asarray(bias, np.int64)
    mult = np.asarray(mult, np.int64)
    shift = np.asarray(shift, np.int64)
    if np.any(shift > 0) or np.any(shift < -MAX_RIGHT_SHIFT) or np.any(mult == 1 << 30) or np.any(mult < 0):
        return None
    e = -shift
    khi_pos = np.where(e > 0, np.left_shift(1, np.maximum(e - 1, 0)), 0) + int(zp) * np.left_shift(1, e)
    neg = -(e > 0).astype(np.int64)
    if np.any(np.abs(bias) >= ACC_LIMIT):
        return None
    return np.stack([bias, mult, khi_pos, neg, e], axis=1).astype(np.int32)


def _folded_bias(bias, w2d: np.ndarray, zp: int, mult) -> np.ndarray | None:
    """bias - zp * sum(w) per output row of w2d [out][k]; None if |acc| could reach 2^30.

    A channel with multiplier 0 (all-zero weights) outputs the zero point whatever its accumulator:
    its bias becomes 0 (the quantizer may have saturated it)."""
    w = w2d.astype(np.int64)
    live = np.asarray(mult, np.int64) != 0
    b = np.where(live, np.asarray(bias, np.int64) - int(zp) * w.sum(axis=1), 0)
    if np.any(np.abs(b) + 128 * np.abs(w).sum(axis=1) >= ACC_LIMIT):
        return None
    return b


def _words(a: np.ndarray) -> np.ndarray:
    """Bytes (int8 or int16 data, C order) as little-endian uint32 words."""
    raw = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    assert raw.size % 4 == 0
    return raw.view("<u4").astype(np.uint32)


def _conv_like(op: Op, w2d: np.ndarray) -> tuple[dict, np.ndarray] | None:
    p = op.params
    bias = _folded_bias(op.arrays["bias"], w2d, p["input_zp"], op.arrays["mult"])
    rq = None if bias is None else rq_records(bias, op.arrays["mult"], op.arrays["shift"], p["output_zp"])
    return None if rq is None else ({k: int(p[k]) for k in ("output_zp", "act_min", "act_max")}, rq)


def lower(op: Op) -> dict | None:
    """{kernel, struct, params, arrays: {name: array}, scratch_bytes} for the fast kernel, or None."""
    p, a = op.params, op.arrays
    if op.kind == "conv2d" and p["dil_h"] == 1 and p["dil_w"] == 1:
        w = a["weights"].reshape(p["out_c"], -1)
        got = _conv_like(op, w)
        if got is None:
            return None
        k4 = _k4(w.shape[1])
        wp = np.zeros((w.shape[0], k4), np.int8)
        wp[:, :w.shape[1]] = w
        keys = ("in_h in_w in_c out_h out_w out_c k_h k_w stride_h stride_w pad_top pad_left "
                "input_zp").split()
        params = {**{k: int(p[k]) for k in keys}, **got[0], "k4": k4}
        return {"kernel": "edgec_conv2d_im2col_s8", "struct": "edgec_conv2d_im2col_params", "params": params,
                "arrays": {"fw": _words(wp), "rq": got[1]}, "scratch_bytes": 9 * k4 + 16 * CONV_CHUNK}
    if (op.kind == "depthwise_conv2d" and p["k_h"] == 3 and p["k_w"] == 3 and p["dil_h"] == 1
            and p["dil_w"] == 1 and p["depth_multiplier"] == 1 and p["in_c"] % 4 == 0
            and p["stride_h"] == p["stride_w"] and p["stride_h"] in (1, 2)):
        return _lower_dw3x3(op)
    if op.kind == "fully_connected":
        w = a["weights"].reshape(p["out_features"], p["in_features"])
        got = _conv_like(op, w)
        if got is None:
            return None
        n_out, n_in = w.shape
        k4 = _k4(n_in)
        wp = np.zeros((n_out, k4), np.int8)
        wp[:, :n_in] = w
        blocks = n_out // 4 * 4
        head = wp[:blocks].reshape(-1, 4, k4 // 4, 4).transpose(0, 2, 1, 3)   # [block][group][row][4]
        packed = np.concatenate([head.reshape(-1), wp[blocks:].reshape(-1)]).astype(np.int8)
        params = {"in_features": n_in, "out_features": n_out, **got[0], "k4": k4}
        return {"kernel": "edgec_fully_connected_packed_s8", "struct": "edgec_fully_connected_packed_params",
                "params": params, "arrays": {"fw": _words(packed), "rq": got[1]}, "scratch_bytes": 2 * k4}
    if op.kind == "add":
        v = np.arange(-128, 128, dtype=np.int64)
        ls = 1 << int(p["left_shift"])
        lut1 = K.requantize((v - p["input1_zp"]) * ls, p["input1_mult"], p["input1_shift"]).astype(np.int64)
        lut2 = K.requantize((v - p["input2_zp"]) * ls, p["input2_mult"], p["input2_shift"]).astype(np.int64)
        if np.abs(lut1).max() + np.abs(lut2).max() >= ACC_LIMIT:
            return None
        rq = rq_records(np.zeros(1), np.array([p["output_mult"]]), np.array([p["output_shift"]]), p["output_zp"])
        if rq is None:
            return None
        params = {k: int(p[k]) for k in ("n", "output_zp", "act_min", "act_max")}
        return {"kernel": "edgec_add_lut_s8", "struct": "edgec_add_lut_params", "params": params,
                "arrays": {"lut1": lut1.astype(np.int32), "lut2": lut2.astype(np.int32), "rq": rq},
                "scratch_bytes": 0}
    if (op.kind == "avg_pool" and p["out_h"] == 1 and p["out_w"] == 1 and p["k_h"] == p["in_h"]
            and p["k_w"] == p["in_w"] and p["pad_top"] == 0 and p["pad_left"] == 0):
        return {"kernel": "edgec_avg_pool_global_s8", "struct": None,
                "params": {"pixels": p["in_h"] * p["in_w"], "c": p["c"], "act_min": p["act_min"],
                           "act_max": p["act_max"]}, "arrays": {}, "scratch_bytes": 0}
    return None


def _lower_dw3x3(op: Op) -> dict | None:
    """Depthwise 3x3: the kernel sweeps along the longer output axis (rows x cols, cols >= rows);
    weights [c][3][3] int16 in that orientation, times two (the kernel requantizes doubled sums)."""
    p, c = op.params, op.params["out_c"]
    w = op.arrays["weights"].reshape(3, 3, c)                 # [ky][kx][c]
    got = _conv_like(op, w.reshape(9, c).T)
    if got is None:
        return None
    h, wd = (p["in_h"], p["out_h"], p["pad_top"]), (p["in_w"], p["out_w"], p["pad_left"])
    steps = (p["in_w"] * c, c, p["out_w"] * c, c)               # bytes between rows, columns (in, out)
    wk = w.transpose(2, 0, 1)                                  # [c][ky][kx]
    if p["out_h"] > p["out_w"]:                                # sweep down the image's columns
        h, wd, steps, wk = wd, h, (steps[1], steps[0], steps[3], steps[2]), wk.transpose(0, 2, 1)
    params = {"rows": h[0], "cols": wd[0], "c": c, "out_rows": h[1], "out_cols": wd[1], "stride": p["stride_h"],
              "pad_top": h[2], "pad_left": wd[2], "in_row_step": steps[0], "in_col_step": steps[1],
              "out_row_step": steps[2], "out_col_step": steps[3], "input_zp": int(p["input_zp"]),
              "act_min": got[0]["act_min"], "act_max": got[0]["act_max"]}
    width = (wd[1] - 1) * p["stride_h"] + 3
    return {"kernel": "edgec_depthwise_conv2d_3x3_s8", "struct": "edgec_depthwise_conv2d_3x3_params",
            "params": params, "arrays": {"fw": _words((2 * wk.astype(np.int16)).astype(np.int16)), "rq": got[1]},
            "scratch_bytes": 32 * width + 4 * wd[1]}


def lower_graph(graph: Graph) -> None:
    """Choose the fast kernel of every op that has one: op.lowered holds its call data and constants
    (what the generated code will contain), op.attrs['scratch_bytes'] its scratch memory (for the planner)."""
    for op in graph.ops:
        int8 = all(graph.tensors[t].dtype == "int8" for t in (*op.inputs, op.output))
        op.lowered = lower(op) if int8 else None       # int16 layers keep their 16x8 kernels
        if op.lowered and op.lowered["scratch_bytes"]:
            size = op.lowered["scratch_bytes"]
            op.attrs["scratch_bytes"] = (size + SCRATCH_ALIGN - 1) // SCRATCH_ALIGN * SCRATCH_ALIGN
        else:
            op.attrs.pop("scratch_bytes", None)


def run_rq(acc: np.ndarray, rq: np.ndarray) -> np.ndarray:
    """NumPy model of edgec_out()'s requantization and output zero point (before the clamp), for tests."""
    acc = np.asarray(acc, np.int64)
    mult, khi, neg, sh = (rq[..., i].astype(np.int64) for i in range(1, 5))
    hi = ((2 * acc * mult + (khi << 32) + (1 << 31)) >> 32) + np.where(acc < 0, neg, 0)
    return (hi >> sh).astype(np.int32)
