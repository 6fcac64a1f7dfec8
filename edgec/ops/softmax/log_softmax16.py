"""The int16 LogSoftmax of an int16 tail (edgec/quant/int16.py `tail_default`; its op and kernel records are
edgec/ops/softmax/__init__.py's): int16 scores in (zero point 0, scale s_in), log-probabilities out on the output's
calibrated symmetric int16 grid (scale s_out), kernel `edgec_log_softmax_s16` in runtime_c/edgec_softmax.c.

Per row: d = max - x (0..65535); exp(-d s_in) = exp_hi[d >> 8] * exp_lo[d & 255] in Q30 (softmax's two Q15 tables,
softmax.exp16_tables); their sum S >= 2^30 (the max's term), taken as S >> 11 in Q12.19 (cols < 4096 keeps it in
int32), its ln in Q5.26 by TFLite's log_x_for_x_greater_than_or_equal_to_1 (gemmlowp.log_x_ge_1); then
y / s_out = -(d k_in + (ln k_ln >> 26)) / 2^16 with k_in = round(s_in / s_out 2^16), k_ln = round(2^16 / s_out),
rounded half away from zero and clamped to int16.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import EdgecError
from edgec.fixedpoint import gemmlowp
from edgec.ir import Op, Tensor
from edgec.ops import cemit

MAX_COLS = 4095          # S < 2^42: S >> 11 is an int32


def takes(op: Op) -> bool:
    """Whether this log_softmax has the int16 variant (edgec's own arithmetic, rows short enough)."""
    return op.attrs.get("arithmetic") is None and int(op.attrs["cols"]) <= MAX_COLS


def quantize(op: Op, ins: list[Tensor], out: Tensor, exp16_tables) -> None:
    k_in, k_ln = round(ins[0].scale / out.scale * 65536), round(65536 / out.scale)
    if not takes(op) or max(k_in, k_ln) >= 2 ** 31:
        raise EdgecError(f"node '{op.name}': no int16 LogSoftmax over {op.attrs['cols']} values with input scale "
                         f"{ins[0].scale} and output scale {out.scale}; leave it int8 (--int8-tail)")
    op.params.clear()
    op.params.update(rows=op.attrs["rows"], cols=op.attrs["cols"], k_in=int(k_in), k_ln=int(k_ln))
    op.arrays.pop("exp_table", None)
    op.arrays.pop("log_table", None)
    op.arrays["exp_hi"], op.arrays["exp_lo"] = exp16_tables(ins[0].scale)


def log_softmax_s16(p: dict, exp_hi, exp_lo, x) -> np.ndarray:
    x = np.asarray(x, np.int16).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64)
    d = x.max(axis=1, keepdims=True) - x
    e = np.asarray(exp_hi, np.int64)[d >> 8] * np.asarray(exp_lo, np.int64)[d & 255]
    z = e.sum(axis=1, keepdims=True) >> 11
    ln = np.maximum(gemmlowp.log_x_ge_1(z, 12, 5).astype(np.int64), 0)     # Q5.26 (ln(1) approximated below 0)
    y16 = d * int(p["k_in"]) + ((ln * int(p["k_ln"])) >> 26)       # -y / s_out in Q16, >= 0
    return np.clip(-((y16 + (1 << 15)) >> 16), -32768, 32767).astype(np.int16).reshape(-1)


def run(op: Op, inputs: list) -> np.ndarray:
    return log_softmax_s16(op.params, op.arrays["exp_hi"], op.arrays["exp_lo"], inputs[0])


def c_call(op: Op, low, site) -> str:
    a = site.arrays
    call = (f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {a['exp_hi']}, {a['exp_lo']},\n"
            f"        {cemit.i16(site.output)});")
    return cemit.with_params("edgec_log_softmax16_params", op.params, call)
