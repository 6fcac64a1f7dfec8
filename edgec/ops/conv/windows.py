"""Windows of a convolution or pooling over a channels-last image (shared with edgec/ops/pool.py): the taps of
every output pixel, in the integer twins (`pad_windows`, from the C params) and the float runs (`float_windows`,
from the float attributes)."""
from __future__ import annotations

import numpy as np


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

