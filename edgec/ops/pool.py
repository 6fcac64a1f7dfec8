"""Pooling: max_pool and avg_pool over [h][w][c] windows (1-D and 2-D), keeping the input's quantization;
kernels in runtime_c/edgec_pool.c, the global average pool's fast kernel in runtime_c/fast/edgec_pool.c."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops.opdef import CallSite, OpDef
from edgec.quant.scheme import act_range


def pad_windows(x, p, fill, dil_h=1, dil_w=1):
    """Pad x [h,w,c] with `fill` so that every window tap is in range; return tap(ky, kx) -> [out_h, out_w, c]
    (p: a conv or pool params dict)."""
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


def float_windows(x, a, fill):
    """The same over the float attributes of a conv or pool op: x [h, w, c] padded with fill."""
    (ih, iw, _), (oh, ow, _) = a["in_hwc"], a["out_hwc"]
    (kh, kw), (sh, sw) = a["kernel"], a["stride"]
    dh, dw = a.get("dilation", (1, 1))
    pt, pl = a["pad"]
    need_h, need_w = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.pad(x, ((max(pt, 0), max(0, need_h - pt - ih)), (max(pl, 0), max(0, need_w - pl - iw)), (0, 0)),
                constant_values=fill)
    oy, ox = max(pt, 0) - pt, max(pl, 0) - pl

    def tap(ky, kx):
        y0, x0 = oy + ky * dh, ox + kx * dw
        return xp[y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw, :]
    return tap


# ---- quantize ---------------------------------------------------------------------------------
def quantize_pool(op: Op, ins: list[Tensor], out: Tensor) -> None:
    (ih, iw, c), (oh, ow, _) = op.attrs["in_hwc"], op.attrs["out_hwc"]
    op.params = dict(in_h=ih, in_w=iw, c=c, out_h=oh, out_w=ow, k_h=op.attrs["kernel"][0],
                     k_w=op.attrs["kernel"][1], stride_h=op.attrs["stride"][0], stride_w=op.attrs["stride"][1],
                     pad_top=op.attrs["pad"][0], pad_left=op.attrs["pad"][1], **act_range(op, out))


# ---- NumPy integer twins ------------------------------------------------------------------------
def max_pool_s8(p: dict, x) -> np.ndarray:
    """TFLite reference_integer_ops::MaxPool (padded taps ignored, then activation clamp)."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["c"])
    tap = pad_windows(x, p, -128)  # -128 is TFLite's initial max, never beats a real tap
    out = np.full((p["out_h"], p["out_w"], p["c"]), -128, np.int8)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            np.maximum(out, tap(ky, kx), out=out)
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def avg_pool_s8(p: dict, x) -> np.ndarray:
    """TFLite reference_integer_ops::AveragePool (count = valid taps, rounded C division)."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["c"])
    tap_x = pad_windows(x.astype(np.int64), p, 0)
    tap_n = pad_windows(np.ones(x.shape[:2] + (1,), np.int64), p, 0)
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


def run_max_pool(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return max_pool_s8(p, inputs[0].reshape(p["in_h"], p["in_w"], p["c"]))


def run_avg_pool(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return avg_pool_s8(p, inputs[0].reshape(p["in_h"], p["in_w"], p["c"]))


# ---- float --------------------------------------------------------------------------------------
def float_pool(op: Op, inputs: list):
    a = op.attrs
    (ih, iw, c) = a["in_hwc"]
    tap = float_windows(inputs[0].reshape(ih, iw, c), a, np.nan)
    taps = np.stack([tap(ky, kx) for ky in range(a["kernel"][0]) for kx in range(a["kernel"][1])])
    with np.errstate(all="ignore"):
        y = np.nanmax(taps, axis=0) if op.kind == "max_pool" else np.nanmean(taps, axis=0)
    lo, hi = a.get("act", (-np.inf, np.inf))
    return np.clip(np.nan_to_num(y), lo, hi)


# ---- C ------------------------------------------------------------------------------------------
def c_max_pool(op: Op, site: CallSite) -> str:
    return f"edgec_max_pool_s8(&{site.prefix}_params, {site.inputs[0]}, {site.output});"


def c_avg_pool(op: Op, site: CallSite) -> str:
    if op.lowered:
        q = op.lowered["params"]
        return (f"{op.lowered['kernel']}({q['pixels']}, {q['c']}, {q['act_min']}, {q['act_max']}, "
                f"{site.inputs[0]}, {site.output});")
    return f"edgec_avg_pool_s8(&{site.prefix}_params, {site.inputs[0]}, {site.output});"


def lower_avg_pool(op: Op) -> dict | None:
    """A global average pool (one window over the whole input) on the fast kernel."""
    p = op.params
    if not (p["out_h"] == 1 and p["out_w"] == 1 and p["k_h"] == p["in_h"] and p["k_w"] == p["in_w"]
            and p["pad_top"] == 0 and p["pad_left"] == 0):
        return None
    return {"kernel": "edgec_fast_global_avg_pool_s8", "struct": None,
            "params": {"pixels": p["in_h"] * p["in_w"], "c": p["c"], "act_min": p["act_min"],
                       "act_max": p["act_max"]}, "arrays": {}, "scratch_bytes": 0}


OPS = [
    OpDef("max_pool", "pool", quantize_pool, run_max_pool, float_pool, c_max_pool, struct="edgec_pool_params",
          fuses_activation=True, qparams="input", code_bytes=440),
    OpDef("avg_pool", "pool", quantize_pool, run_avg_pool, float_pool, c_avg_pool, struct="edgec_pool_params",
          fuses_activation=True, qparams="input", lower=lower_avg_pool, code_bytes=440),
]
