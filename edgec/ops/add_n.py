"""add_n: the elementwise sum of several tensors of one shape and one quantization (TFLite's ADD_N, int8), in
TFLite Micro's arithmetic: each input rescaled as its ADD rescales it (the offset value shifted left 20 bits, times
a Q31 one half), the int32 sum (wrapping, as TFLite's; starting from the rescaled -zp, as TFLite's does)
requantized to the output; kernel in
runtime_c/edgec_elementwise.c.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.fixedpoint.scheme import act_range, quantize_multiplier, requantize

LEFT_SHIFT = 20      # TFLite Micro's kAddNIntegerShift (and CUMSUM's kCumSumIntegerShift)


# ---- quantize ---------------------------------------------------------------------------------
def sum_params(in_scale: float, out_scale: float) -> dict:
    """TFLite Micro's Prepare of ADD_N and CUMSUM: input multiplier s / (2 s), output 2 s / (2^20 s_out) (double)."""
    twice = 2.0 * float(in_scale)
    in_mult, in_shift = quantize_multiplier(float(in_scale) / twice)
    mult, shift = quantize_multiplier(twice / ((1 << LEFT_SHIFT) * float(out_scale)))
    return dict(left_shift=LEFT_SHIFT, input_mult=in_mult, input_shift=in_shift, mult=mult, shift=shift)


def quantize_add_n(op: Op, ins: list[Tensor], out: Tensor) -> None:
    op.params.update(n=out.size, count=len(ins), input_zp=ins[0].zero_point, output_zp=out.zero_point,
                     **sum_params(ins[0].scale, out.scale), **act_range(op, out))


# ---- NumPy integer twin (bit-exact with the C) ----------------------------------------------------
def rescaled(p: dict, x) -> np.ndarray:
    """Each int8 value as TFLite's ADD_N and CUMSUM add it: ((x - zp) << 20) times the input multiplier."""
    v = (np.asarray(x, np.int8).astype(np.int64) - int(p["input_zp"])) << int(p["left_shift"])
    return requantize(v, p["input_mult"], p["input_shift"]).astype(np.int64)


def finished(p: dict, acc) -> np.ndarray:
    """An int64 sum wrapped to int32 (TFLite's accumulator), requantized, offset and clamped to int8."""
    acc = np.asarray(acc, np.int64).astype(np.int32)
    out = requantize(acc, p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def start(p: dict) -> int:
    """Where TFLite's sums start: not 0 but the input offset -zp rescaled (its accumulator starts at
    input1_offset, "x = 0" as its comment says only for a zero point of 0)."""
    return int(rescaled(p, np.zeros(1, np.int8))[0])


def add_n_s8(p: dict, inputs: list) -> np.ndarray:
    return finished(p, start(p) + sum(rescaled(p, np.asarray(x).reshape(-1)) for x in inputs))


def run_add_n(op: Op, inputs: list) -> np.ndarray:
    return add_n_s8(op.params, inputs)


def float_add_n(op: Op, inputs: list):
    return sum(np.asarray(x, np.float32) for x in inputs)


# ---- C ------------------------------------------------------------------------------------------
def c_add_n(op: Op, low, site: CallSite) -> str:
    ins = ", ".join(site.inputs)
    call = f"{{ const int8_t *const in[] = {{{ins}}};\n      {low.kernel.name}(&p, in, {site.output}); }}"
    return cemit.with_params("edgec_add_n_params", op.params, call)


OPS = [OpDef("add_n", "elementwise", quantize_add_n, float_add_n)]
KERNELS = [Kernel("edgec_add_n_s8", ("add_n",), REFERENCE, c_add_n, run=run_add_n, code_bytes=300)]
ONNX: dict = {}


# ---- TFLite import
def import_tflite_add_n(tx, op):
    """ADD_N of activations of one shape and one quantization (TFLite Micro requires both)."""
    xs = [tx.input(op, k) for k in range(op.InputsLength())]
    shape = tx.tensor(xs[0]).shape
    for x in xs[1:]:
        t, first = tx.tensor(x), tx.tensor(xs[0])
        if t.shape != shape or (t.scale, t.zero_point) != (first.scale, first.zero_point):
            raise tx.unsupported("inputs of different shapes or quantizations (TFLite Micro requires them alike)")
    out = tx.output(op)
    p = sum_params(tx.tensor(xs[0]).scale, tx.tensor(out).scale)
    if p["shift"] > 0:
        raise tx.unsupported("output scale below 2^-19 of the input's (TFLite's multiplier must be below one)")
    tx.emit("add_n", op, xs, out)


TFLITE = {"ADD_N": import_tflite_add_n}
