"""reduce: sum/mean, max, min, argmax, argmin over the middle axis of [outer][n][inner]; kernel in
runtime_c/edgec_reduce.c. Argmax/argmin outputs are indices (scale 1, zero point 0)."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.opdef import CallSite, OpDef
from edgec.quant.scheme import quantize_multiplier, requantize

REDUCE_KINDS = {"sum": 0, "max": 1, "min": 2, "argmax": 3, "argmin": 4}


def fixed_qparams(op: Op) -> tuple[float, int] | None:
    return (1.0, 0) if op.attrs["how"] in ("argmax", "argmin") else None


def quantize_reduce(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    kind = a["how"]
    n = a["n"]
    real = x.scale / out.scale / (n if kind == "mean" else 1)
    mult, shift = quantize_multiplier(real)
    code = REDUCE_KINDS["sum" if kind == "mean" else kind]
    op.params = dict(outer=a["outer"], n=n, inner=a["inner"], kind=code, select_last=a["select_last"],
                     input_zp=x.zero_point, mult=mult, shift=shift, output_zp=out.zero_point,
                     act_min=-128, act_max=127)


def reduce_s8(p: dict, x) -> np.ndarray:
    """Reduce [outer][n][inner] over n: sum (then requantize: mean is a sum with 1/n in the
    multiplier), max/min (then requantize), argmax/argmin (first or last index, clamped to int8)."""
    x = np.asarray(x, np.int8).reshape(int(p["outer"]), int(p["n"]), int(p["inner"])).astype(np.int64)
    kind = int(p["kind"])
    if kind >= REDUCE_KINDS["argmax"]:
        v = x if kind == REDUCE_KINDS["argmax"] else -x
        if int(p["select_last"]):
            idx = int(p["n"]) - 1 - np.argmax(v[:, ::-1, :], axis=1)
        else:
            idx = np.argmax(v, axis=1)
        return np.clip(idx, int(p["act_min"]), int(p["act_max"])).astype(np.int8).reshape(-1)
    if kind == REDUCE_KINDS["sum"]:
        acc = (x - int(p["input_zp"])).sum(axis=1)
    elif kind == REDUCE_KINDS["max"]:
        acc = x.max(axis=1) - int(p["input_zp"])
    else:
        acc = x.min(axis=1) - int(p["input_zp"])
    out = requantize(acc.astype(np.int32), p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8).reshape(-1)


def float_reduce(op: Op, inputs: list):
    a = op.attrs
    x = inputs[0].reshape(a["outer"], a["n"], a["inner"])
    kind = a["how"]
    if kind in ("argmax", "argmin"):
        v = x if kind == "argmax" else -x
        if a["select_last"]:
            return a["n"] - 1 - np.argmax(v[:, ::-1], axis=1)
        return np.argmax(v, axis=1)
    return {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[kind](x, axis=1)


def c_reduce(op: Op, site: CallSite) -> str:
    return cemit.with_params("edgec_reduce_params", op.params, f"edgec_reduce_s8(&p, {site.inputs[0]}, {site.output});")


OPS = [OpDef("reduce", "reduce", quantize_reduce, lambda op, inputs: reduce_s8(op.params, inputs[0]), float_reduce,
             c_reduce, qparams="fixed", fixed_qparams=fixed_qparams)]
