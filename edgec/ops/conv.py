"""Convolutions over channels-last tensors: `conv2d` (OHWI weights), `depthwise_conv2d` ([k_h][k_w][c] weights,
depth multiplier) and `group_conv2d`, int8 and (conv2d, depthwise) TFLite 16x8; 1-D convolutions run as 2-D ones
of height 1. Kernels in runtime_c/edgec_conv.c, the fast ones (im2col conv, depthwise 3x3) in runtime_c/fast/.

Conv and ConvTranspose (zero insertion by a remap, then a stride-1 convolution with the flipped kernel) go through
one emission that decides the kind from the groups. BatchNormalization folds into the Conv/Gemm before it, or
becomes a 1x1 depthwise convolution (per-channel tables over a batch). The window helpers here serve pooling too.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import NO_ACT, Op, Tensor
from edgec.ops import cemit, fast, movement
from edgec.ops.lut import per_channel_affine
from edgec.ops.opdef import CallSite, Equalize, Int16, OpDef
from edgec.fixedpoint.scheme import act_range, finish, finish16, weighted, weighted16


CONV_CHUNK = 16          # EDGEC_CONV_CHUNK in the fast conv kernel: output channels accumulated at a time


# ---- windows (shared with edgec/ops/pool.py) -------------------------------------------------
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
    """TFLite reference_integer_ops::ConvPerChannel, 16x8 (int16 in/out, int8 OHWI weights, int64 bias)."""
    x = np.asarray(x, np.int16).reshape(p["in_h"], p["in_w"], p["in_c"]).astype(np.int64)
    w = np.asarray(w, np.int8).reshape(p["out_c"], p["k_h"], p["k_w"], p["in_c"]).astype(np.int64)
    tap = pad_windows(x, p, 0, int(p["dil_h"]), int(p["dil_w"]))
    acc = np.zeros((p["out_h"], p["out_w"], p["out_c"]), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap(ky, kx) @ w[:, ky, kx, :].T
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
    w = np.asarray(a["weights"] if weights is None else weights, np.float64)
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


# ---- C ------------------------------------------------------------------------------------------
_KERNELS = {"conv2d": ("edgec_conv2d_s8", "edgec_conv2d_s16"),
            "depthwise_conv2d": ("edgec_depthwise_conv2d_s8", "edgec_depthwise_conv2d_s16")}


def c_conv(op: Op, site: CallSite) -> str:
    if op.lowered:
        return cemit.fast_weighted_call(op.lowered["kernel"], site.prefix, site.inputs[0], site.scratch, site.output)
    return cemit.weighted_call(_KERNELS[op.kind][0], site.prefix, site.inputs[0], site.arrays, site.output)


def c_conv16(op: Op, site: CallSite) -> str:
    return cemit.weighted_call16(_KERNELS[op.kind][1], site.prefix, site.inputs[0], site.arrays, site.output)


def c_group_conv(op: Op, site: CallSite) -> str:
    n = site.arrays
    call = (f"edgec_group_conv2d_s8(&p, {op.params['groups']}, {site.inputs[0]}, {n['weights']}, {n['bias']}, "
            f"{n['mult']}, {n['shift']}, {site.output});")
    return cemit.with_params("edgec_conv_params", op.params, call, only_fields=True)


# ---- fast kernels -------------------------------------------------------------------------------
def lower_conv(op: Op) -> dict | None:
    """The im2col kernel (any kernel size, no dilation)."""
    p, a = op.params, op.arrays
    if p["dil_h"] != 1 or p["dil_w"] != 1:
        return None
    w = a["weights"].reshape(p["out_c"], -1)
    got = fast.conv_like(op, w)
    if got is None:
        return None
    k4 = fast.k4(w.shape[1])
    wp = np.zeros((w.shape[0], k4), np.int8)
    wp[:, :w.shape[1]] = w
    keys = ("in_h in_w in_c out_h out_w out_c k_h k_w stride_h stride_w pad_top pad_left "
            "input_zp").split()
    params = {**{k: int(p[k]) for k in keys}, **got[0], "k4": k4}
    return {"kernel": "edgec_conv2d_im2col_s8", "struct": "edgec_conv2d_im2col_params", "params": params,
            "arrays": {"fw": fast.words(wp), "rq": got[1]}, "scratch_bytes": 9 * k4 + 16 * CONV_CHUNK}


def lower_depthwise(op: Op) -> dict | None:
    """Depthwise 3x3: the kernel sweeps along the longer output axis (rows x cols, cols >= rows);
    weights [c][3][3] int16 in that orientation, times two (the kernel requantizes doubled sums)."""
    p = op.params
    if not (p["k_h"] == 3 and p["k_w"] == 3 and p["dil_h"] == 1 and p["dil_w"] == 1 and p["depth_multiplier"] == 1
            and p["in_c"] % 4 == 0 and p["stride_h"] == p["stride_w"] and p["stride_h"] in (1, 2)):
        return None
    c = p["out_c"]
    w = op.arrays["weights"].reshape(3, 3, c)                 # [ky][kx][c]
    got = fast.conv_like(op, w.reshape(9, c).T)
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
            "params": params,
            "arrays": {"fw": fast.words((2 * wk.astype(np.int16)).astype(np.int16)), "rq": got[1]},
            "scratch_bytes": 32 * width + 4 * wd[1]}


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


_EQUALIZE = Equalize(_out_range, _in_range, _scale_out, _scale_in)

OPS = [
    OpDef("conv2d", "conv", quantize_conv, run_conv, float_conv, c_conv, struct="edgec_conv_params",
          fuses_activation=True, weight_axis=0, bias_correction=True, equalize=_EQUALIZE,
          macs=lambda op, out: out.size * int(np.prod(op.attrs.get("weights", op.arrays.get("weights")).shape[1:])),
          lower=lower_conv, int16=Int16(quantize_conv16, run_conv16, c_conv16), code_bytes=720, row_bands="window"),
    OpDef("depthwise_conv2d", "conv", quantize_conv, run_conv, float_conv, c_conv, struct="edgec_conv_params",
          fuses_activation=True, weight_axis=-1, bias_correction=True, equalize=_EQUALIZE, row_bands="window",
          macs=lambda op, out: out.size * int(np.prod(op.attrs.get("weights", op.arrays.get("weights")).shape[:2])),
          lower=lower_depthwise, int16=Int16(quantize_conv16, run_conv16, c_conv16), code_bytes=1300),
    OpDef("group_conv2d", "conv", quantize_group_conv, run_conv, float_conv, c_group_conv,
          fuses_activation=True, weight_axis=0),
]


# ---- ONNX import
def window(cx, node, in_shape, out_shape, kernel, strides, dil):
    """(pad_top, pad_left) for a 1-D or 2-D window over a channels-last tensor."""
    nsp = len(kernel)
    auto = cx.attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begins = []
        for i in range(nsp):
            total = max((out_shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_shape[2 + i], 0)
            begins.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
    elif auto == "VALID":
        begins = [0] * nsp
    else:
        pads = list(cx.attr(node, "pads", [0] * (2 * nsp)))
        begins = pads[:nsp]
    if any(p < 0 for p in begins):
        raise node_error(node, "negative padding is not supported")
    return (0, begins[0]) if nsp == 1 else (begins[0], begins[1])


def spatial(cx, node, x):
    """Input/output sizes as (h, w, c) for a 1-D (h = 1) or 2-D NCHW op."""
    in_shape, out_shape = cx.shape(x, node), cx.shape(node.output[0], node)
    if len(in_shape) not in (3, 4) or in_shape[0] != 1:
        raise node_error(node, f"input shape {list(in_shape)} is not [1, C, L] or [1, C, H, W]")
    if len(in_shape) == 3:
        return in_shape, out_shape, (1, in_shape[2], in_shape[1]), (1, out_shape[2], out_shape[1])
    return (in_shape, out_shape, (in_shape[2], in_shape[3], in_shape[1]),
            (out_shape[2], out_shape[3], out_shape[1]))


def import_conv(cx, node):
    x, w_name = node.input[0], node.input[1]
    x, extra = cx.padded_for_conv.get(x, (x, (0, 0)))    # a zero Pad before the conv: its padding
    if w_name not in cx.consts:
        raise node_error(node, "the weights are not constant")
    w = cx.consts[w_name].astype(np.float32)
    bias = cx.consts[node.input[2]].astype(np.float32) if len(node.input) > 2 and node.input[2] else \
        np.zeros(w.shape[0], np.float32)
    in_shape, out_shape, _, _ = spatial(cx, node, x)     # checks the ranks
    nsp = len(in_shape) - 2
    kernel = list(w.shape[2:])
    strides = list(cx.attr(node, "strides", [1] * nsp))
    dil = list(cx.attr(node, "dilations", [1] * nsp))
    pad_top, pad_left = window(cx, node, in_shape, out_shape, kernel, strides, dil)
    begins = [pad_left + extra[1]] if nsp == 1 else [pad_top + extra[0], pad_left + extra[1]]
    conv_from(cx, node, x, node.output[0], w, bias, strides, dil, begins, cx.attr(node, "group", 1))


def import_conv_transpose(cx, node):
    x, y = node.input[0], node.output[0]
    w = cx.const_input(node, 1).astype(np.float32)          # [C_in, C_out/g, k...]
    shape, yshape = cx.shape(x, node), cx.shape(y, node)
    nsp = len(shape) - 2
    if shape[0] != 1:
        raise node_error(node, f"batch {shape[0]}: convolutions run on a batch of 1")
    if nsp not in (1, 2):
        raise node_error(node, "only 1-D and 2-D ConvTranspose are supported")
    g = int(cx.attr(node, "group", 1))
    kernel = list(w.shape[2:])
    strides = list(cx.attr(node, "strides", [1] * nsp))
    dil = list(cx.attr(node, "dilations", [1] * nsp))
    outpad = list(cx.attr(node, "output_padding", [0] * nsp))
    auto = cx.attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    pads = list(cx.attr(node, "pads", [0] * (2 * nsp)))
    begins = []
    for i in range(nsp):
        total = strides[i] * (shape[2 + i] - 1) + outpad[i] + (kernel[i] - 1) * dil[i] + 1 - yshape[2 + i]
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            begins.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
        elif auto == "VALID":
            begins.append(0)
        else:
            begins.append(pads[i])
    # zero insertion + padding: a stride-1 convolution with the flipped kernel gives the result
    mid = y + "__upsampled"
    mshape = tuple(shape[:2]) + tuple(yshape[2 + i] + (kernel[i] - 1) * dil[i] for i in range(nsp))
    cx.shapes[mid] = mshape

    def fn(i):
        lead = (kernel[i] - 1) * dil[i] - begins[i]

        def idx(m):
            j = np.arange(m) - lead
            ok = (j >= 0) & (j % strides[i] == 0) & (j // strides[i] < shape[2 + i])
            return np.where(ok, j // strides[i], -1)
        return idx
    movement.remap_axes(cx, node, x, mid, [lambda m: np.arange(m), lambda m: np.arange(m)] +
                        [fn(i) for i in range(nsp)])
    cx.graph.retensor(cx.values[mid][0], source=x)
    cin, cog = w.shape[0], w.shape[1]
    wt = w.reshape((g, cin // g, cog) + w.shape[2:]).swapaxes(1, 2).reshape((g * cog, cin // g) + w.shape[2:])
    wt = np.flip(wt, axis=tuple(range(2, 2 + nsp))).copy()
    bias = cx.const_input(node, 2, np.zeros(g * cog, np.float32))
    conv_from(cx, node, mid, y, wt, np.asarray(bias, np.float32), [1] * nsp, dil, [0] * nsp, g)


def conv_from(cx, node, x, y, w, bias, strides, dil, begins, group):
    """A convolution of ONNX value x (NCHW / NCW) with weights [oc, ic/g, k...] into y."""
    in_shape, out_shape = cx.shape(x, node), cx.shape(y, node)
    nsp = len(in_shape) - 2
    kernel = list(w.shape[2:])
    ic, oc = in_shape[1], out_shape[1]
    if nsp == 1:
        w = w[:, :, None, :]
        kernel, strides, dil, begins = [1] + kernel, [1] + list(strides), [1] + list(dil), [0] + list(begins)
        ihwc, ohwc = (1, in_shape[2], ic), (1, out_shape[2], oc)
    else:
        ihwc, ohwc = (in_shape[2], in_shape[3], ic), (out_shape[2], out_shape[3], oc)
    cl = (0,) + tuple(range(2, len(in_shape))) + (1,)
    xin = cx.as_layout(x, cl, node)
    out = cx.new_tensor(y, (1,) + tuple(out_shape[2:]) + (oc,), y)
    common = dict(bias=bias, in_hwc=ihwc, out_hwc=ohwc, kernel=tuple(kernel), stride=tuple(strides),
                  dilation=tuple(dil), pad=tuple(begins), act=NO_ACT)
    if group == 1:
        cx.emit("conv2d", node, [xin], out, weights=w.transpose(0, 2, 3, 1).copy(), **common)
    elif group == ic and w.shape[1] == 1:
        cx.emit("depthwise_conv2d", node, [xin], out, weights=w[:, 0].transpose(1, 2, 0).copy(),
                depth_multiplier=oc // ic, **common)
    else:
        cx.emit("group_conv2d", node, [xin], out, weights=w.transpose(0, 2, 3, 1).copy(), groups=group,
                **common)
    cx.values[y] = (out, cl)


def import_batch_normalization(cx, node):
    x = node.input[0]
    if cx.attr(node, "training_mode", 0) or any(o for o in node.output[1:]):
        raise node_error(node, "training-mode BatchNormalization is not supported (export in eval mode)")
    for i in node.input[1:5]:
        if i not in cx.consts:
            raise node_error(node, f"parameter '{i}' is not constant (training-mode BatchNorm?)")
    gamma, beta, mean, var = (cx.consts[i].astype(np.float64) for i in node.input[1:5])
    eps = float(cx.attr(node, "epsilon", 1e-5))
    s = gamma / np.sqrt(var + eps)
    shift = beta - mean * s
    prod = cx.fusable_producer(x)
    if prod is not None and cx.is_weighted(prod.kind) and prod.attrs["act"] == NO_ACT:
        w = prod.attrs["weights"].astype(np.float64)
        if prod.kind == "depthwise_conv2d":
            w = w * s
        else:
            w = w * s.reshape((-1,) + (1,) * (w.ndim - 1))
        prod.attrs["weights"] = w.astype(np.float32)
        prod.attrs.pop("weight_scale", None)     # a QDQ model's scales were for the unfolded weights
        prod.attrs["bias"] = (prod.attrs["bias"] * s + shift).astype(np.float32)
        cx.rename_output(prod, x, node.output[0], cx.values[x][1])
        return
    # A BatchNorm edgec cannot fold: a 1x1 depthwise convolution does the same.
    in_shape = cx.shape(x, node)
    if in_shape[0] != 1:   # per-channel tables instead of a convolution over a batch of 1
        return per_channel_affine(cx, node, x, s, shift)
    c = in_shape[1]
    hwc = (in_shape[2], in_shape[3], c) if len(in_shape) == 4 else (1, int(np.prod(in_shape[2:])), c)
    xin = cx.as_layout(x, movement.channels_last(len(in_shape)), node)
    out = cx.new_tensor(node.output[0], cx.graph.tensors[xin].shape, node.output[0])
    cx.emit("depthwise_conv2d", node, [xin], out, weights=s.reshape(1, 1, c).astype(np.float32),
            bias=shift.astype(np.float32), in_hwc=hwc, out_hwc=hwc, kernel=(1, 1), stride=(1, 1),
            dilation=(1, 1), pad=(0, 0), act=NO_ACT, depth_multiplier=1)
    cx.values[node.output[0]] = (out, movement.channels_last(len(in_shape)))


ONNX = {"Conv": import_conv, "ConvTranspose": import_conv_transpose,
        "BatchNormalization": import_batch_normalization}


# ---- TFLite import (edgec/frontend/tflite.py)
def import_tflite_conv(tx, op):
    """CONV_2D (OHWI weights) and DEPTHWISE_CONV_2D ([1][k_h][k_w][out_c] weights), per-channel int8."""
    o, depthwise, x, wq = tx.options(op), tx.op_name(op) == "DEPTHWISE_CONV_2D", tx.input(op, 0), tx.const(op, 1)
    (_, ih, iw, ic), (_, oh, ow, oc), out = tx.tensor(x).shape, tx.shape(op.Outputs(0)), tx.output(op)
    win = tx.window(o, (ih, iw), (oh, ow), wq.shape[1:3])
    arrays, w, b = tx.weighted(op, wq[0] if depthwise else wq, -1 if depthwise else 0, 2, out)
    extra = {"depth_multiplier": oc // ic} if depthwise else {}
    tx.emit("depthwise_conv2d" if depthwise else "conv2d", op, [x], out, arrays,
            tx.act_range(op, out, o.FusedActivationFunction()), weights=w, bias=b, in_hwc=(ih, iw, ic),
            out_hwc=(oh, ow, oc), **win, **extra)


TFLITE = {"CONV_2D": import_tflite_conv, "DEPTHWISE_CONV_2D": import_tflite_conv}
