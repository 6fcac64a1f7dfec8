"""requantize: the conversion between an int8 tensor and its int16 twin where a 16x8 layer (--int16,
edgec/quant/int16.py) meets int8 ones (TFLite's Requantize, Q31 multiplier + shift); kernels in
runtime_c/edgec_convert.c."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops.cemit import i16
from edgec.ops.opdef import CallSite, Int16, OpDef
from edgec.quant.scheme import quantize_multiplier, requantize

KIND = "requantize"


def quantize_requantize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    mult, shift = quantize_multiplier(ins[0].scale / out.scale)
    zp = ins[0].zero_point if out.dtype == "int16" else out.zero_point
    op.params = dict(n=out.size, zero_point=int(zp), mult=mult, shift=shift)


def requantize_s8_s16(x, input_zp: int, mult: int, shift: int) -> np.ndarray:
    """int8 (scale s8, zero point) -> int16 (scale s16, zero point 0): mult/shift encode s8 / s16."""
    v = np.asarray(x, np.int8).astype(np.int32) - int(input_zp)
    return np.clip(requantize(v, mult, shift), -32768, 32767).astype(np.int16)


def requantize_s16_s8(x, output_zp: int, mult: int, shift: int) -> np.ndarray:
    """int16 (zero point 0) -> int8 (scale, zero point): mult/shift encode s16 / s8."""
    v = requantize(np.asarray(x, np.int16).astype(np.int32), mult, shift).astype(np.int64) + int(output_zp)
    return np.clip(v, -128, 127).astype(np.int8)


def _run_to16(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return requantize_s8_s16(inputs[0].reshape(-1), p["zero_point"], p["mult"], p["shift"])


def _run_to8(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return requantize_s16_s8(inputs[0].reshape(-1), p["zero_point"], p["mult"], p["shift"])


def _c_to16(op: Op, site: CallSite) -> str:
    p = op.params
    return (f"edgec_requantize_s8_s16({p['n']}, {site.inputs[0]}, {p['zero_point']}, {p['mult']}, "
            f"{p['shift']}, {i16(site.output)});")


def _c_to8(op: Op, site: CallSite) -> str:
    p = op.params
    return (f"edgec_requantize_s16_s8({p['n']}, {i16(site.inputs[0], const=True)}, {p['zero_point']}, "
            f"{p['mult']}, {p['shift']}, {site.output});")


# the main entry converts int16 -> int8; its int16 variant (an int16 output) int8 -> int16
OPS = [OpDef(KIND, "convert", quantize_requantize, _run_to8, lambda op, inputs: inputs[0], _c_to8,
             int16=Int16(lambda op, ins, out: None, _run_to16, _c_to16), sensitivity=False)]
