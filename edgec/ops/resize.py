"""resize_linear: separable (bi)linear resize of [h][w][c], weights in Q10; kernel in runtime_c/edgec_resize.c.
(Nearest-neighbour resizes are remaps, edgec/ops/movement.py.)"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.opdef import CallSite, OpDef
from edgec.ops.softmax import _round_div_pot


def quantize_resize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    (ih, iw, c), (oh, ow, _) = a["in_hwc"], a["out_hwc"]
    op.params = dict(in_h=ih, in_w=iw, c=c, out_h=oh, out_w=ow)
    op.arrays["idx"] = np.concatenate([a["y0"], a["y1"], a["x0"], a["x1"]]).astype(np.int32)
    op.arrays["frac"] = np.round(np.concatenate([a["fy"], a["fx"]]) * 1024).astype(np.int32)


def resize_linear_s8(p: dict, idx, frac, x) -> np.ndarray:
    """Separable linear resize of [h][w][c] (channels last): per output row/column two source
    indices and a Q10 weight of the second; result rounded half away from zero."""
    h, w, c = int(p["in_h"]), int(p["in_w"]), int(p["c"])
    oh, ow = int(p["out_h"]), int(p["out_w"])
    x = np.asarray(x, np.int8).reshape(h, w, c).astype(np.int64)
    idx = np.asarray(idx, np.int64)
    frac = np.asarray(frac, np.int64)
    y0, y1, x0, x1 = idx[:oh], idx[oh:2 * oh], idx[2 * oh:2 * oh + ow], idx[2 * oh + ow:]
    fy, fx = frac[:oh].reshape(-1, 1, 1), frac[oh:].reshape(1, -1, 1)
    one = 1 << 10
    top = x[y0][:, x0] * (one - fx) + x[y0][:, x1] * fx
    bot = x[y1][:, x0] * (one - fx) + x[y1][:, x1] * fx
    v = top * (one - fy) + bot * fy
    return np.clip(_round_div_pot(v, 20), -128, 127).astype(np.int8).reshape(-1)


def float_resize(op: Op, inputs: list):
    a = op.attrs
    (ih, iw, c) = a["in_hwc"]
    x = inputs[0].reshape(ih, iw, c)
    fy, fx = np.asarray(a["fy"]).reshape(-1, 1, 1), np.asarray(a["fx"]).reshape(1, -1, 1)
    top = x[a["y0"]][:, a["x0"]] * (1 - fx) + x[a["y0"]][:, a["x1"]] * fx
    bot = x[a["y1"]][:, a["x0"]] * (1 - fx) + x[a["y1"]][:, a["x1"]] * fx
    return top * (1 - fy) + bot * fy


def c_resize(op: Op, site: CallSite) -> str:
    n = site.arrays
    call = f"edgec_resize_linear_s8(&p, {n['idx']}, {n['frac']}, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_resize_params", op.params, call)


OPS = [OpDef("resize_linear", "resize", quantize_resize,
             lambda op, inputs: resize_linear_s8(op.params, op.arrays["idx"], op.arrays["frac"], inputs[0]),
             float_resize, c_resize, qparams="input")]
