"""TFLite's 16x8 elementwise activations on int16 (zero point 0) as TFLite Micro's reference kernels compute them:
LOGISTIC and TANH (reference_integer_ops' int16 Logistic / Tanh: the input rescaled to 1/(3 * 4096) by an integer
multiplier and shift, then TFLite's 256-entry sigmoid table of sigmoid(i/24) in 0.16 format, interpolated over 9
(tanh: 8) fraction bits; output scale 2^-15), RELU (ReluQuantized: requantized by the scale ratio, clamped at the
output's 0), RELU6 (Relu6Quantized: a clamp on the input's grid), LEAKY_RELU (QuantizeLeakyRelu: one multiplier
at or above 0, alpha's below) and ABS (AbsEvalQuantized: |x|, rescaled where the scales differ). They are the
`lut` kind's int16 kernel (edgec_activation_s16 in runtime_c/edgec_elementwise.c: no table per op, the sigmoid
table in the runtime); the importers of lut/__init__.py and lut/tflite.py send an int16 input here (`int16_or`).
"""
from __future__ import annotations

import math

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit, tflite16
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite
from edgec.ops.recurrent_tflite import SIGMOID_TABLE       # TFLite's sigmoid(i / 24) in 0.16: the LSTM's gates too
from edgec.fixedpoint.scheme import quantize_multiplier, requantize

FNS = {"LOGISTIC": 0, "TANH": 1, "RELU": 2, "RELU6": 3, "LEAKY_RELU": 4, "ABS": 5}


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's CheckedLog2 (float32): whether x is a power of two (within 1e-3 of the exponent), and its rounded
    log2."""
    f = np.float32
    v = f(np.log(f(x))) * (f(1.0) / f(np.log(f(2.0))))
    r = f(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))
    return bool(abs(v - r) < f(1e-3)), int(r)


def input_rescale(name: str, scale: float) -> tuple[int, int]:
    """(multiplier, right shift) of LogisticPrepare / TanhPrepare for an int16 input, the power-of-two case
    (multiplier 0) folded as the kernels fold it (3 << shift, shift 0)."""
    pot, log2 = checked_log2(scale)
    shift = 12 + log2
    pot = pot and shift in ((0,) if name == "LOGISTIC" else (0, 1))
    if pot:
        return 3 << shift, 0
    m, shift = float(np.float32(scale)) * 4096.0 * 3.0, 0
    while m <= 32767.0 / 2.0 and shift <= 30:
        shift, m = shift + 1, m * 2.0
    return int(m), shift


def _rescaled(p: dict, x: np.ndarray) -> np.ndarray:
    shift = int(p["input_shift"])
    rnd = 1 << (shift - 1) if shift > 0 else 0
    return (x * int(p["input_mult"]) + rnd) >> shift


def logistic16(p: dict, x: np.ndarray) -> np.ndarray:
    v = _rescaled(p, x)
    a = np.abs(v)
    uh = np.minimum(a >> 9, 254)
    ua, ub = SIGMOID_TABLE[uh], SIGMOID_TABLE[uh + 1]
    r = np.where(a >> 9 >= 255, 0x7FFF << 10, (ua << 9) + (a & 0x1FF) * (ub - ua))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return r >> 10


def tanh16(p: dict, x: np.ndarray) -> np.ndarray:
    v = _rescaled(p, x)
    a = np.abs(v)
    uh = np.minimum(a >> 8, 254)
    ua, ub = SIGMOID_TABLE[uh], SIGMOID_TABLE[uh + 1]
    r = np.where(a >> 8 >= 255, 0xFFFF << 8, (ua << 8) + (a & 0xFF) * (ub - ua))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return r >> 8


def activation_s16(p: dict, x) -> np.ndarray:
    """The int16 activation `fn` of every value (see the module doc)."""
    x = np.asarray(x, np.int16).astype(np.int64)
    fn = int(p["fn"])
    if fn == FNS["LOGISTIC"]:
        y = logistic16(p, x)
    elif fn == FNS["TANH"]:
        y = tanh16(p, x)
    elif fn == FNS["RELU6"]:
        y = x
    elif fn == FNS["ABS"]:
        y = np.abs(x)
        if int(p["input_mult"]):
            y = requantize(y, p["input_mult"], p["input_shift"]).astype(np.int64)
    else:
        y = requantize(x, p["input_mult"], p["input_shift"]).astype(np.int64)
        if fn == FNS["LEAKY_RELU"]:
            neg = requantize(x, p["alpha_mult"], p["alpha_shift"]).astype(np.int64) * int(p["alpha_sign"])
            y = np.where(x >= 0, y, neg)
    y = np.clip(y, int(p["act_min"]), int(p["act_max"]))
    return ((y + 32768) % 65536 - 32768).astype(np.int16)       # the C's cast to int16


def quantize_activation16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The int16 kernel reads its params only (given by the importer): the int8 quantizer's table is dropped."""
    op.arrays.pop("table", None)


def run_activation16(op: Op, inputs: list) -> np.ndarray:
    return activation_s16(op.params, inputs[0])


def c_activation16(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {cemit.i16(site.output)});"
    return cemit.with_params("edgec_activation16_params", op.params, call, only_fields=True)


ACTIVATION16 = Kernel("edgec_activation_s16", ("lut",), REFERENCE, c_activation16, precision=INT16,
                      run=run_activation16, code_bytes=400)


# ---- TFLite import
def _round_half_away(v: float) -> int:
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def int16_or(import_int8):
    """The importer of LOGISTIC, TANH, RELU, RELU6, LEAKY_RELU or ABS: an int16 input (16x8) here, else the int8
    one."""
    def import_x(tx, op):
        i = op.Inputs(0)
        if i in tx.values and tx.tensor(tx.values[i]).dtype == "int16":
            return import_activation16(tx, op)
        return import_int8(tx, op)
    return import_x


def import_activation16(tx, op):
    """LOGISTIC, TANH, RELU, RELU6, LEAKY_RELU or ABS of an int16 activation (16x8): the `lut` kind on
    edgec_activation_s16 with TFLite Micro's Prepare of each."""
    name = tx.op_name(op)
    alpha = float(np.float32(tx.options(op).Alpha())) if name == "LEAKY_RELU" else None
    x, out = tflite16.activations(tx, op, 0)
    xt, t = tx.tensor(x), tx.tensor(out)
    f = np.float32
    p = dict(n=xt.size, fn=FNS[name], input_mult=0, input_shift=0, alpha_mult=0, alpha_shift=0, alpha_sign=1,
             act_min=-32768, act_max=32767)
    if name in ("LOGISTIC", "TANH"):
        pot, log2 = checked_log2(t.scale)
        if not pot or log2 != -15:
            raise tx.unsupported(f"int16 {name} output of scale {t.scale} (TFLite Micro takes 2^-15)")
        p["input_mult"], p["input_shift"] = input_rescale(name, xt.scale)
        fn = "sigmoid" if name == "LOGISTIC" else "tanh"
    elif name == "RELU6":
        tx.same_qparams(x, out, name)
        six = _round_half_away(float(f(6.0) / f(xt.scale)))
        p.update(act_min=0, act_max=min(32767, six))
        fn = "clip"
    elif name == "ABS":        # AbsEvalQuantized: |x|, rescaled where the two scales differ (their ratio in double,
        if f(xt.scale) != f(t.scale):      # as the tflite-micro wheel computes it: every int16 value checked)
            p["input_mult"], p["input_shift"] = quantize_multiplier(float(f(xt.scale)) / float(f(t.scale)))
        fn = "abs"
    elif name == "RELU":
        p["input_mult"], p["input_shift"] = quantize_multiplier(float(xt.scale) / float(t.scale))
        p["act_min"] = 0
        fn = "clip"
    else:
        p["input_mult"], p["input_shift"] = quantize_multiplier(float(f(xt.scale) / f(t.scale)))
        p["alpha_mult"], p["alpha_shift"] = quantize_multiplier(abs(float(f(f(xt.scale) * f(alpha)) / f(t.scale))))
        p["alpha_sign"] = -1 if alpha < 0 else 1
        fn = "leaky_relu"
    fparams = {"lo": 0.0, "hi": 6.0 if name == "RELU6" else math.inf} if fn == "clip" else \
        ({"alpha": alpha} if fn == "leaky_relu" else {})
    tx.emit("lut", op, [x], out, None, p, fn=fn, fparams=fparams, consts=None, count=1, inner=xt.size)
