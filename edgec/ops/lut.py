"""lut: any elementwise int8 -> int8 function as 256-entry tables computed at build time (one table, or one
per index of an axis: per-channel constants, PRelu); kernel in runtime_c/edgec_elementwise.c."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit, elementwise
from edgec.ops.opdef import CallSite, OpDef


def quantize_lut(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    op.params = dict(n=out.size, count=a["count"], inner=a["inner"])
    op.arrays["table"] = elementwise.table(a["fn"], a["fparams"], a["consts"], x.scale, x.zero_point,
                                           out.scale, out.zero_point)


def lut_s8(p: dict, table, x) -> np.ndarray:
    """y[i] = table[((i / inner) % count) * 256 + x[i] + 128]."""
    x = np.asarray(x, np.int8).reshape(-1, int(p["count"]), int(p["inner"])).astype(np.int64)
    t = np.asarray(table, np.int8).reshape(int(p["count"]), 256)
    ch = np.arange(int(p["count"])).reshape(1, -1, 1)
    return t[ch, x + 128].reshape(-1)


def run_lut(op: Op, inputs: list) -> np.ndarray:
    return lut_s8(op.params, op.arrays["table"], inputs[0])


def float_lut(op: Op, inputs: list):
    a = op.attrs
    c = a["consts"]
    xs = inputs[0].reshape(-1, a["count"], a["inner"])
    cs = None if c is None else np.asarray(c, np.float64).reshape((1, a["count"], 1) + np.shape(c)[1:])
    return elementwise.apply(a["fn"], xs, cs, a["fparams"])


def c_lut(op: Op, site: CallSite) -> str:
    call = f"edgec_lut_s8(&p, {site.arrays['table']}, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_lut_params", op.params, call)


OPS = [OpDef("lut", "elementwise", quantize_lut, run_lut, float_lut, c_lut)]
