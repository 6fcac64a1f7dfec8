"""The convolutions' arithmetic: quantizers (int8 and TFLite 16x8), the NumPy integer twins bit-exact with
runtime_c/edgec_conv.c, the float run, and cross-layer equalization (--equalize) of their weights."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops.conv.windows import float_windows, pad_windows
from edgec.ops.opdef import Equalize
from edgec.fixedpoint.scheme import act_range, finish, finish16, finish16_b32, weighted, weighted16


# ---- quantize ---------------------------------------------------------------------------------
def quantize_conv(op: Op, ins: list[Tensor], out: Tensor) -> None:
    (ih, iw, ic), (oh, ow, oc) = op.attrs["in_hwc"], op.attrs["out_hwc"]
    weighted(op, ins[0], out, _axis(op))
    op.params.update(in_h=ih, in_w=iw, in_c=ic, out_h=oh, out_w=ow, out_c=oc,
                     k_h=op.attrs["kernel"][0], k_w=op.attrs["kernel"][1],
                     stride_h=op.attrs["stride"][0], stride_w=op.attrs["stride"][1],
                     dil_h=op.attrs["dilation"][0], dil_w=op.attrs["dilation"][1],
                     pad_top=op.attrs["pad"][0], pad_left=op.attrs["pad"][1],
                     input_zp=ins[0].zero_point, output_zp=out.zero_point, **act_range(op, out),
                     depth_multiplier=op.attrs.get("depth_multiplier", 1))


def quantize_group_conv(op: Op, ins: list[Tensor], out: Tensor) -> None:
    quantize_conv(op, ins, out)
    op.params["groups"] = op.attrs["groups"]


def quantize_conv16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    weighted16(op, ins, out, _axis(op))


def _axis(op: Op) -> int:
    """The output-channel axis of the weights (group_conv2d: OHWI like conv2d)."""
    return -1 if op.kind == "depthwise_conv2d" else 0


# ---- NumPy integer twins (bit-exact with the C) -------------------------------------------------
def conv2d_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::ConvPerChannel (int8, OHWI weights, dilation, per-channel requant)."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["in_c"])
    w = np.asarray(w, np.int8).reshape(p["out_c"], p["k_h"], p["k_w"], p["in_c"]).astype(np.int64)
    xz = x.astype(np.int64) - int(p["input_zp"])  # padded taps are 0 after zero point removal
    tap = pad_windows(xz, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) @ w[:, ky, kx, :].T
    acc = (acc + np.asarray(bias, np.int64)).astype(np.int32)  # int32 accumulator, as TFLite
    return finish(acc, mult, shift, p)


def depthwise_conv2d_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::DepthwiseConvPerChannel (weights [k_h][k_w][out_c])."""
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["in_c"])
    w = np.asarray(w, np.int8).reshape(p["k_h"], p["k_w"], p["out_c"]).astype(np.int64)
    src = np.arange(int(p["out_c"])) // int(p["depth_multiplier"])
    xz = x.astype(np.int64)[:, :, src] - int(p["input_zp"])  # [h][w][out_c]
    tap = pad_windows(xz, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) * w[ky, kx, :]
    acc = (acc + np.asarray(bias, np.int64)).astype(np.int32)
    return finish(acc, mult, shift, p)


def group_conv2d_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """Grouped convolution: group g reads input channels [g*in_c/groups, ...) with weights
    [out_c][k_h][k_w][in_c/groups]; output channels of group g are [g*out_c/groups, ...)."""
    g = int(p["groups"])
    ic, oc = int(p["in_c"]) // g, int(p["out_c"]) // g
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["in_c"])
    w = np.asarray(w, np.int8).reshape(p["out_c"], p["k_h"], p["k_w"], ic)
    outs = []
    for k in range(g):
        q = dict(p, in_c=ic, out_c=oc)
        sl = slice(k * oc, (k + 1) * oc)
        outs.append(conv2d_s8(q, x[:, :, k * ic:(k + 1) * ic], w[sl], np.asarray(bias)[sl],
                              np.asarray(mult)[sl], np.asarray(shift)[sl]))
    return np.concatenate(outs, axis=2)


def conv2d_s16(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::ConvPerChannel, 16x8 (int16 in/out, int8 OHWI weights, int64 bias; an int32
    bias: ConvPerChannel<int32_t>, its sum wrapping in int32)."""
    x = np.asarray(x, np.int16).reshape(p["in_h"], p["in_w"], p["in_c"]).astype(np.int64)
    w = np.asarray(w, np.int8).reshape(p["out_c"], p["k_h"], p["k_w"], p["in_c"]).astype(np.int64)
    tap = pad_windows(x, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) @ w[:, ky, kx, :].T
    if np.asarray(bias).dtype == np.int32:      # TFLite's int32-bias 16x8 conv: an int32 sum, 32-bit requantization
        return finish16_b32(acc + np.asarray(bias, np.int64), mult, shift, p)
    return finish16(acc + np.asarray(bias, np.int64), mult, shift, p)


def depthwise_conv2d_s16(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::DepthwiseConvPerChannel, 16x8 (weights [k_h][k_w][out_c])."""
    x = np.asarray(x, np.int16).reshape(p["in_h"], p["in_w"], p["in_c"]).astype(np.int64)
    w = np.asarray(w, np.int8).reshape(p["k_h"], p["k_w"], p["out_c"]).astype(np.int64)
    x = x[:, :, np.arange(int(p["out_c"])) // int(p["depth_multiplier"])]
    tap = pad_windows(x, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) * w[ky, kx, :]
    return finish16(acc + np.asarray(bias, np.int64), mult, shift, p)


_TWINS = {"conv2d": (conv2d_s8, conv2d_s16), "depthwise_conv2d": (depthwise_conv2d_s8, depthwise_conv2d_s16),
          "group_conv2d": (group_conv2d_s8, None)}


def run_conv(op: Op, inputs: list) -> np.ndarray:
    p, a = op.params, op.arrays
    x = inputs[0].reshape(p["in_h"], p["in_w"], p["in_c"])
    return _TWINS[op.kind][0](p, x, a["weights"], a["bias"], a["mult"], a["shift"])


def run_conv16(op: Op, inputs: list) -> np.ndarray:
    p, a = op.params, op.arrays
    return _TWINS[op.kind][1](p, inputs[0], a["weights"], a["bias"], a["mult"], a["shift"])


# ---- float --------------------------------------------------------------------------------------
def float_conv(op: Op, inputs: list, weights=None, bias=None, act: bool = True):
    """The op in float, optionally with other weights/bias and without its fused activation."""
    a = op.attrs
    w = np.asarray(a.get("float_weights", a["weights"]) if weights is None else weights, np.float64)  # the model's own
    b = np.asarray(a.get("float_bias", a["bias"]) if bias is None else bias, np.float64)   # the model's own bias
    (ih, iw, ic), (oh, ow, oc) = a["in_hwc"], a["out_hwc"]
    tap = float_windows(inputs[0].reshape(ih, iw, ic), a, 0.0)
    acc = np.zeros((oh, ow, oc))
    kh, kw = a["kernel"]
    for ky in range(kh):
        for kx in range(kw):
            t = tap(ky, kx)
            if op.kind == "conv2d":
                acc += t @ w[:, ky, kx, :].T
            elif op.kind == "depthwise_conv2d":
                acc += t[:, :, np.arange(oc) // a["depth_multiplier"]] * w[ky, kx, :]
            else:
                g = a["groups"]
                gi, go = ic // g, oc // g
                for k in range(g):
                    acc[:, :, k * go:(k + 1) * go] += t[:, :, k * gi:(k + 1) * gi] @ w[k * go:(k + 1) * go, ky, kx, :].T
    y = acc + b
    lo, hi = a.get("act", (-np.inf, np.inf))
    return np.clip(y, lo, hi) if act else y


# ---- cross-layer equalization -------------------------------------------------------------------
def _scale_out(op: Op, s: np.ndarray) -> None:
    shape = (-1, 1, 1, 1) if op.kind == "conv2d" else (-1,)
    op.attrs["weights"] = (op.attrs["weights"] / s.reshape(shape)).astype(np.float32)
    op.attrs["bias"] = (op.attrs["bias"] / s).astype(np.float32)


def _scale_in(op: Op, s: np.ndarray) -> None:
    if op.kind == "conv2d":
        op.attrs["weights"] = (op.attrs["weights"] * s).astype(np.float32)
    else:
        op.attrs["weights"] = (op.attrs["weights"] * np.repeat(s, int(op.attrs.get("depth_multiplier", 1))))\
            .astype(np.float32)


def _out_range(op: Op) -> np.ndarray:
    w = np.abs(op.attrs["weights"])
    return w.max(axis=(1, 2, 3)) if op.kind == "conv2d" else w.max(axis=(0, 1))


def _in_range(op: Op) -> np.ndarray:
    w = np.abs(op.attrs["weights"])
    if op.kind == "conv2d":
        return w.max(axis=(0, 1, 2))
    dm = int(op.attrs.get("depth_multiplier", 1))
    return w.max(axis=(0, 1)).reshape(-1, dm).max(axis=1)


EQUALIZE = Equalize(_out_range, _in_range, _scale_out, _scale_in)
