"""The fast 1-D depthwise convolution (runtime_c/fast/edgec_depthwise_conv2d_line.c): an image of height 1 or width 1
with a kernel 1 tap across (the streaming wake-word model's temporal convolutions: 3 to 15 taps, strides, dilations),
any taps, stride, dilation and padding along the line, 4 channels a pass, as a kernel record. It takes what the
depthwise 3x3 kernel (depthwise3x3.py) does not, before the reference kernel."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.ops import cemit, fast
from edgec.ops.kernel import FAST, Kernel

STRUCT = "edgec_depthwise_conv2d_line_params"


def along(p) -> str | None:
    """The axis a depthwise convolution runs along when it is 1-D ("h": a column, width 1; "w": a row), else None."""
    if p["in_w"] == 1 and p["out_w"] == 1 and p["k_w"] == 1 and p["pad_left"] == 0:
        return "h"
    if p["in_h"] == 1 and p["out_h"] == 1 and p["k_h"] == 1 and p["pad_top"] == 0:
        return "w"
    return None


def lower_line(op: Op):
    """Depth multiplier 1, channels a multiple of 4, one line: weights [c / 4][k][w0, w2, w1, w3] int16 (the
    order the kernel's SXTB16 pairs read them), the requantization records with the input zero point folded in."""
    p = op.params
    axis = along(p)
    if axis is None or p["depth_multiplier"] != 1 or p["in_c"] % 4:
        return None
    c = p["out_c"]
    k = p["k_h"] if axis == "h" else p["k_w"]
    w = op.arrays["weights"].reshape(k, c)                      # [tap][c]
    got = fast.conv_like(op, np.ascontiguousarray(w.T))
    if got is None:
        return None
    packed = w.reshape(k, c // 4, 4)[:, :, [0, 2, 1, 3]].transpose(1, 0, 2).astype(np.int16)
    h = axis == "h"
    params = {"len": p["in_h"] if h else p["in_w"], "c": c, "out_len": p["out_h"] if h else p["out_w"], "k": k,
              "stride": p["stride_h"] if h else p["stride_w"], "dilation": p["dil_h"] if h else p["dil_w"],
              "pad": p["pad_top"] if h else p["pad_left"], "input_zp": int(p["input_zp"]),
              "act_min": got[0]["act_min"], "act_max": got[0]["act_max"]}
    return params, {"fw": fast.words(np.ascontiguousarray(packed)), "rq": got[1]}


LINE = Kernel("edgec_depthwise_conv2d_line_s8", ("depthwise_conv2d",), FAST, cemit.fast_weighted, lower=lower_line,
              struct=STRUCT)

KERNELS = [LINE]
