"""The int16 `add` (TFLite's 16x8 Add): two int16 tensors of one shape between two int16 layers
(edgec/quant/int16.py passes an int16 chain through it, so a residual add keeps the chain int16).

TFLite Micro's add for int16 (add_common.cc CalculateOpDataAdd, reference_integer_ops::Add): the int8 scheme
with zero points 0 and a left shift of 15 instead of 20 (an int16 value << 15 stays within int32), each input
rescaled by its multiplier to twice the larger input scale, the sum requantized, then the int16 activation
clamp. Kernel edgec_add_s16 in runtime_c/edgec_elementwise.c.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite
from edgec.fixedpoint.scheme import act_range16, quantize_multiplier, requantize

LEFT_SHIFT16 = 15


def quantize_add16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The 16x8 parameters (run after the int8 quantizer, which they replace)."""
    a, b = ins
    twice_max = 2.0 * max(a.scale, b.scale)
    m1, sh1 = quantize_multiplier(a.scale / twice_max)
    m2, sh2 = quantize_multiplier(b.scale / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << LEFT_SHIFT16) * out.scale))
    op.params.update(n=out.size, input1_zp=0, input1_mult=m1, input1_shift=sh1, input2_zp=0, input2_mult=m2,
                     input2_shift=sh2, output_mult=mo, output_shift=sho, output_zp=0, left_shift=LEFT_SHIFT16,
                     **act_range16(op, out))


def add_s16(p: dict, a, b) -> np.ndarray:
    """TFLite reference_integer_ops::Add of int16 values (same shapes)."""
    a = np.asarray(a, np.int16).reshape(-1)
    ls = 1 << int(p["left_shift"])
    v1 = (a.astype(np.int64) - int(p["input1_zp"])) * ls
    v2 = (np.asarray(b, np.int16).reshape(-1).astype(np.int64) - int(p["input2_zp"])) * ls
    s1 = requantize(v1, p["input1_mult"], p["input1_shift"]).astype(np.int64)
    s2 = requantize(v2, p["input2_mult"], p["input2_shift"]).astype(np.int64)
    raw = (s1 + s2).astype(np.int32)
    out = requantize(raw, p["output_mult"], p["output_shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int16)


def run_add16(op: Op, inputs: list) -> np.ndarray:
    return add_s16(op.params, inputs[0], inputs[1])


def c_add16(op: Op, low, site: CallSite) -> str:
    x, y = site.inputs
    return (f"{low.kernel.name}(&{site.prefix}_params, {cemit.i16(x, const=True)}, {cemit.i16(y, const=True)},\n"
            f"        {cemit.i16(site.output)});")


ADD16 = Kernel("edgec_add_s16", ("add",), REFERENCE, c_add16, precision=INT16, run=run_add16,
               struct="edgec_add_params", code_bytes=580)
