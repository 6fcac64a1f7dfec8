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
from edgec.fixedpoint.scheme import quantize_multiplier, requantize

# TFLite's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h): sigmoid(i / 24) in 0.16 format
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535],
    np.int64)
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
