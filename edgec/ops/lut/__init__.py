"""`lut`: any elementwise int8 -> int8 function as 256-entry tables computed at build time (one table, or one per
index of an axis: per-channel constants, PRelu); kernel in runtime_c/edgec_elementwise.c.

FUNCTIONS holds the float definition of every such function: f(x, c, **params) on float64 arrays, where c is the
per-index constant of a per-axis table (PRelu slopes, a per-channel Add/Mul operand...) or None. The same function
builds the tables (`table`) and runs the float reference (`float_lut`), so both describe one computation. The
ONNX import makes tables of every unary activation (Sigmoid, Tanh, Gelu, LeakyRelu...), of a Relu/Clip with no
producer to fuse into, and, with at most a per-axis constant, of x (op) constant, PRelu and an unfoldable
BatchNorm.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit, movement
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef
from edgec.ops.lut.int16 import ACTIVATION16, int16_or, quantize_activation16
from edgec.ops.lut.table16 import LUT16, as_table16, quantize_table16


def quantize_lut(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    op.params.update(n=out.size, count=a["count"], inner=a["inner"])
    op.arrays["table"] = table(a["fn"], a["fparams"], a["consts"], x.scale, x.zero_point,
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
    return apply(a["fn"], xs, cs, a["fparams"])


def c_lut(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.arrays['table']}, {site.output});"
    return cemit.with_params("edgec_lut_params", op.params, call)


def quantize_lut16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """An int16 `lut`: a TFLite 16x8 file's activation (its importer's params) or, marked by `as_table16` (a QDQ
    file's int16 ONNX activation; a float model's named by `--int16` or ending an int16 tail, edgec/quant/int16.py
    `mark`), a 513-entry table."""
    (quantize_table16 if op.attrs.get("table16") else quantize_activation16)(op, ins, out)


# the functions an int16 tail may end a float model with (int16.tail_default): continuous, so that the table's
# interpolation between its 513 samples stays within an int16 step or so of the function (a step, a pole or an
# infinite slope, floor, sign, log, sqrt, reciprocal..., is left int8)
SMOOTH16 = frozenset({"sigmoid", "tanh", "softplus", "softsign", "silu", "gelu", "elu", "celu", "selu", "mish",
                      "hard_sigmoid", "hard_swish", "leaky_relu", "relu", "clip", "abs", "neg", "atan", "exp",
                      "identity", "add_c", "sub_c", "rsub_c", "mul_c", "affine", "max_c", "min_c"})


def tail16(op: Op) -> bool:
    """Whether this table may end a float model as an int16 tail (one table, a smooth function; Pow by a whole
    exponent 1..4: a squared error)."""
    a = op.attrs
    if a.get("count", 1) != 1:
        return False
    if a.get("fn") == "pow_c":
        e = np.asarray(a.get("consts"), np.float64).reshape(-1)
        return e.size == 1 and float(e[0]) in (1.0, 2.0, 3.0, 4.0)
    return a.get("fn") in SMOOTH16


OPS = [OpDef("lut", "elementwise", quantize_lut, float_lut,
             int16=Int16(quantize_lut16, layer=True, qdq=lambda op: op.attrs.get("count", 1) == 1, as16=as_table16,
                         tail=tail16))]
KERNELS = [Kernel("edgec_lut_s8", ("lut",), REFERENCE, c_lut, run=run_lut), LUT16, ACTIVATION16]


def is_table(op) -> bool:
    """Whether `op` is a table of this kind (other families fuse into one: x * Sigmoid(x) -> SiLU)."""
    return op.kind == OPS[0].kind


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _softplus(x):
    return np.logaddexp(0.0, x)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))))   # not x ** 3: pow()
        # took 2-130 ms on a (99, 256) tensor, 42 % of a transformer's sensitivity pass (KWT-1); x * x * x 30 us
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _hard_sigmoid(x, alpha=0.2, beta=0.5):
    return np.clip(alpha * x + beta, 0, 1)


def _selu(x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return gamma * np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1))


def _safe(fn):
    def wrapped(x, *a, **k):
        with np.errstate(all="ignore"):
            return fn(x, *a, **k)
    return wrapped


FUNCTIONS = {
    # unary
    "relu": lambda x, c: np.maximum(x, 0),
    "clip": lambda x, c, lo=-math.inf, hi=math.inf: np.clip(x, lo, hi),
    "sigmoid": lambda x, c: _sigmoid(x),
    "silu": lambda x, c: x * _sigmoid(x),
    "tanh": lambda x, c: np.tanh(x),
    "hard_sigmoid": lambda x, c, alpha=0.2, beta=0.5: _hard_sigmoid(x, alpha, beta),
    "hard_swish": lambda x, c, alpha=1 / 6, beta=0.5: x * _hard_sigmoid(x, alpha, beta),
    "elu": lambda x, c, alpha=1.0: np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1)),
    "celu": lambda x, c, alpha=1.0: np.maximum(x, 0) + np.minimum(0, alpha * (np.exp(np.minimum(x, 0) / alpha) - 1)),
    "selu": lambda x, c, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875: _selu(x, alpha, gamma),
    "gelu": lambda x, c, approximate="none": _gelu(x, approximate),
    "softplus": lambda x, c: _softplus(x),
    "softsign": lambda x, c: x / (1 + np.abs(x)),
    "mish": lambda x, c: x * np.tanh(_softplus(x)),
    "leaky_relu": lambda x, c, alpha=0.01: np.where(x >= 0, x, alpha * x),
    "thresholded_relu": lambda x, c, alpha=1.0: np.where(x > alpha, x, 0),
    "shrink": lambda x, c, bias=0.0, lambd=0.5: np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)),
    "exp": lambda x, c: np.exp(x),
    "log": lambda x, c: np.log(x),
    "sqrt": lambda x, c: np.sqrt(x),
    "reciprocal": lambda x, c: 1.0 / x,
    "rsqrt": lambda x, c: 1.0 / np.sqrt(x),
    "abs": lambda x, c: np.abs(x),
    "neg": lambda x, c: -x,
    "erf": lambda x, c: _erf(x),
    "sin": lambda x, c: np.sin(x), "cos": lambda x, c: np.cos(x), "tan": lambda x, c: np.tan(x),
    "asin": lambda x, c: np.arcsin(x), "acos": lambda x, c: np.arccos(x), "atan": lambda x, c: np.arctan(x),
    "sinh": lambda x, c: np.sinh(x), "cosh": lambda x, c: np.cosh(x),
    "asinh": lambda x, c: np.arcsinh(x), "acosh": lambda x, c: np.arccosh(x), "atanh": lambda x, c: np.arctanh(x),
    "floor": lambda x, c: np.floor(x), "ceil": lambda x, c: np.ceil(x), "round": lambda x, c: np.round(x),
    "sign": lambda x, c: np.sign(x),
    # x op constant (c broadcast per table index)
    "add_c": lambda x, c: x + c, "sub_c": lambda x, c: x - c, "rsub_c": lambda x, c: c - x,
    "mul_c": lambda x, c: x * c, "div_c": lambda x, c: x / c, "rdiv_c": lambda x, c: c / x,
    "max_c": lambda x, c: np.maximum(x, c), "min_c": lambda x, c: np.minimum(x, c),
    "pow_c": lambda x, c: np.power(x, c), "rpow_c": lambda x, c: np.power(c, x),
    "prelu": lambda x, c: np.where(x < 0, c * x, x),
    "identity": lambda x, c: x,
    "affine": lambda x, c: x * c[..., 0] + c[..., 1],      # c = (scale, shift) per index
}
FUNCTIONS = {k: _safe(v) for k, v in FUNCTIONS.items()}


def _chain(x, c, steps=()):
    """Tables composed (one table for a chain of them, edgec/ops/lut `emit_lut`): each step (fn, params, offset,
    width, vector) reads its constant from columns offset.. of c (one column, or `width` as a vector)."""
    for fn, params, off, width, vector in steps:
        x = FUNCTIONS[fn](x, None if width == 0 else c[..., off:off + width] if vector else c[..., off], **params)
    return x


FUNCTIONS["chain"] = _chain

# ONNX op type -> (function name, {ONNX attribute: (param name, default)})
UNARY_ONNX = {
    "Sigmoid": ("sigmoid", {}), "Tanh": ("tanh", {}), "Exp": ("exp", {}), "Log": ("log", {}),
    "Sqrt": ("sqrt", {}), "Reciprocal": ("reciprocal", {}), "Abs": ("abs", {}), "Neg": ("neg", {}),
    "Erf": ("erf", {}), "Softplus": ("softplus", {}), "Softsign": ("softsign", {}), "Mish": ("mish", {}),
    "Sin": ("sin", {}), "Cos": ("cos", {}), "Tan": ("tan", {}), "Asin": ("asin", {}), "Acos": ("acos", {}),
    "Atan": ("atan", {}), "Sinh": ("sinh", {}), "Cosh": ("cosh", {}), "Asinh": ("asinh", {}),
    "Acosh": ("acosh", {}), "Atanh": ("atanh", {}), "Floor": ("floor", {}), "Ceil": ("ceil", {}),
    "Round": ("round", {}), "Sign": ("sign", {}), "Swish": ("silu", {}),
    "HardSigmoid": ("hard_sigmoid", {"alpha": ("alpha", 0.2), "beta": ("beta", 0.5)}),
    "HardSwish": ("hard_swish", {}),
    "Elu": ("elu", {"alpha": ("alpha", 1.0)}),
    "Celu": ("celu", {"alpha": ("alpha", 1.0)}),
    "Selu": ("selu", {"alpha": ("alpha", 1.67326319217681884765625), "gamma": ("gamma", 1.05070102214813232421875)}),
    "Gelu": ("gelu", {"approximate": ("approximate", "none")}),
    "LeakyRelu": ("leaky_relu", {"alpha": ("alpha", 0.01)}),
    "ThresholdedRelu": ("thresholded_relu", {"alpha": ("alpha", 1.0)}),
    "Shrink": ("shrink", {"bias": ("bias", 0.0), "lambd": ("lambd", 0.5)}),
}


def apply(fn: str, x: np.ndarray, c=None, params: dict | None = None) -> np.ndarray:
    return FUNCTIONS[fn](np.asarray(x, np.float64), c, **(params or {}))


def table(fn: str, params: dict, consts, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """int8 tables [count][256]: entry q is quantize(f(dequantize(q), c)) for each constant c."""
    q = np.arange(-128, 128, dtype=np.float64)
    x = (q - in_zp) * in_scale
    consts = None if consts is None else np.asarray(consts, np.float64)
    cs = [None] if consts is None else list(consts if consts.ndim == 2 else consts.reshape(-1))
    rows = []
    for c in cs:
        y = np.nan_to_num(apply(fn, x, c, params), nan=0.0, posinf=1e30, neginf=-1e30)
        rows.append(np.clip(np.round(y / out_scale) + out_zp, -128, 127))
    return np.asarray(rows, np.int8).reshape(-1)


def scalar_factor(op: Op) -> float | None:
    """c when `op` is x * c (or x / c) for one positive constant c, else None: a product reading x instead may
    scale its own multiplier by c."""
    a = op.attrs
    if op.kind != "lut" or a.get("fn") not in ("mul_c", "div_c") or a.get("count", 1) != 1 or a.get("fparams") \
            or a.get("consts") is None or np.asarray(a["consts"]).size != 1:
        return None
    c = float(np.asarray(a["consts"]).reshape(-1)[0])
    if not np.isfinite(c) or c <= 0:
        return None
    return c if a["fn"] == "mul_c" else 1.0 / c


# ---- ONNX import
def emit_lut(cx, node, x, y, fn, params=None, consts=None, count=1, inner=1) -> None:
    """y = fn(x) as a table (`count` tables, one per constant, each used for `inner` elements in a row); when x is
    a table's output read by this node alone, that table computes fn of its function instead (one rounding to
    int8 where there were two: a BatchNorm left as Mul and Add, then a Relu, is one table)."""
    tensor, perm = cx.activation(x, node)
    prod = cx.fusable_producer(x)
    if prod is not None and is_table(prod) and "fn" in prod.attrs and not cx.graph.fixed_qparams:
        fused = _composed(prod.attrs, fn, dict(params or {}), consts, count, inner)
        if fused is not None:
            cx.rename_output(prod, x, y, perm)
            op = cx.graph.producer(cx.values[y][0])
            cx.graph.replace_op(op, dataclasses.replace(op, attrs={**op.attrs, **fused}))
            return
    out = cx.new_tensor(y, cx.graph.tensors[tensor].shape, y)
    cx.emit("lut", node, [tensor], out, fn=fn, fparams=dict(params or {}),
            consts=None if consts is None else np.asarray(consts, np.float64), count=count, inner=inner)
    cx.values[y] = (out, perm)


def _steps(a: dict, rows: int) -> tuple[list, list]:
    """A table's attrs as chain steps and their constant columns (each [rows, width])."""
    if a["fn"] == "chain":
        c = a["consts"]
        return list(a["fparams"]["steps"]), ([] if c is None else [np.broadcast_to(c, (rows, c.shape[-1]))])
    c = a["consts"]
    if c is None:
        return [(a["fn"], a["fparams"], 0, 0, False)], []
    c = np.asarray(c, np.float64)
    vector = c.ndim == 2
    col = c.reshape(-1, c.shape[-1]) if vector else c.reshape(-1, 1)
    return [(a["fn"], a["fparams"], 0, col.shape[1], vector)], [np.broadcast_to(col, (rows, col.shape[1]))]


def _composed(first: dict, fn, params, consts, count, inner) -> dict | None:
    """The attrs of one table computing fn(first's function), or None (their per-index layouts differ)."""
    if first["count"] > 1 and count > 1 and (first["count"], first["inner"]) != (count, inner):
        return None
    rows, row_inner = (count, inner) if count > 1 else (first["count"], first["inner"])
    steps, cols = [], []
    second = {"fn": fn, "fparams": params, "consts": None if consts is None else np.asarray(consts, np.float64)}
    for a in (first, second):
        s, c = _steps(a, rows)
        if any(np.shape(x)[0] not in (1, rows) for x in c):
            return None
        off = sum(x.shape[1] for x in cols)
        steps += [(f, p, o + off, w, v) for f, p, o, w, v in s]
        cols += c
    return {"fn": "chain", "fparams": {"steps": tuple(steps)}, "count": rows, "inner": row_inner,
            "consts": np.concatenate(cols, axis=1) if cols else None}


def import_unary(cx, node):
    fn, attrs = UNARY_ONNX[node.op_type]
    params = {}
    for attr, (pname, default) in attrs.items():
        v = cx.attr(node, attr, default)
        params[pname] = v.decode() if isinstance(v, bytes) else v
    if node.op_type == "Swish":
        params = {}
        alpha = float(cx.attr(node, "alpha", 1.0))
        if alpha != 1.0:
            raise node_error(node, "Swish with alpha != 1 is not supported")
    emit_lut(cx, node, node.input[0], node.output[0], fn, params)


def per_channel_affine(cx, node, x, scale, shift):
    """y = x * scale[c] + shift[c] along ONNX axis 1: one table per channel."""
    tensor, perm = cx.activation(x, node)
    shape = cx.shape(x, node)
    k = perm.index(1)
    inner = int(np.prod([shape[a] for a in perm[k + 1:]], dtype=np.int64))
    emit_lut(cx, node, x, node.output[0], "affine", consts=np.stack([scale, shift], axis=1),
             count=shape[1], inner=inner)


def _clamp(cx, node, lo, hi):
    """Relu/Clip: fused into the op producing the input when it can, else a table."""
    if cx.fuse_activation(node, lo, hi):
        return
    if node.name in cx.qdq["clips"] and not _regridded(cx, node):   # a QDQ pair's saturation: the int8 tensor
        return movement.alias(cx, node)                                 # does it already
    emit_lut(cx, node, node.input[0], node.output[0], "clip", {"lo": lo, "hi": hi})


def _regridded(cx, node) -> bool:
    """A QDQ pair on a tensor whose int8 grid is its input's (a Slice, Reshape, MaxPool... keeps it), and the pair's
    grid is another: ONNX Runtime's QOperator files calibrate a float Slice's output on its own (ShuffleNet's channel
    split, docs/corpus.md), so the pair requantizes and saturates there; a table does the same."""
    x = node.input[0]
    grid = cx.graph.fixed_qparams.get(x)
    if grid is None or x in cx.qdq.get("int16", []) or x not in cx.values:
        return False
    inherited = cx.inherited_grid(x)
    return inherited is not None and tuple(inherited) != tuple(grid)


def import_relu(cx, node):
    _clamp(cx, node, 0.0, math.inf)


def import_clip(cx, node):
    if cx.opset < 11:
        lo, hi = cx.attr(node, "min", -math.inf), cx.attr(node, "max", math.inf)
    else:
        bounds = []
        for i, default in ((1, -math.inf), (2, math.inf)):
            name = node.input[i] if len(node.input) > i else ""
            if name and name not in cx.consts:
                raise node_error(node, "Clip bounds must be constant")
            bounds.append(float(cx.consts[name]) if name else default)
        lo, hi = bounds
    _clamp(cx, node, lo, hi)


ONNX = {**{op: import_unary for op in UNARY_ONNX if op != "Abs"}, "Relu": import_relu, "Clip": import_clip}
# (Abs: edgec/ops/binary/fold.py import_abs, which folds a Sub read by it alone, else makes this table)


# ---- TFLite import (edgec/frontend/tflite.py)
TFLITE_OUTPUT = {"LOGISTIC": (1 / 256, -128, 8, "sigmoid"), "TANH": (1 / 128, 0, 7, "tanh")}


def tflite_table(name: str, scale: float, zp: int) -> np.ndarray:
    """TFLite Micro's int8 LOGISTIC / TANH (reference_integer_ops) of every int8 input, as a table: the input
    rescaled into Q4.27 by a multiplier from frexp (not QuantizeMultiplier), gemmlowp's logistic or tanh, a
    rounding shift into the fixed output quantization; inputs beyond the radius saturate."""
    from edgec.fixedpoint import gemmlowp
    from edgec.fixedpoint.scheme import requantize

    q, shift = math.frexp(float(scale) * (1 << 27))
    mult = int(math.copysign(math.floor(abs(q * (1 << 31)) + 0.5), q))
    radius = math.floor(15 * (1 << 27) / (1 << shift)) if shift >= 0 else 1 << 30
    x = np.arange(-128, 128, dtype=np.int64) - int(zp)
    v = requantize(np.clip(x, -radius, radius), mult, shift).astype(np.int64)
    _, out_zp, bits, _ = TFLITE_OUTPUT[name]
    f = gemmlowp.logistic(v, 4) if name == "LOGISTIC" else gemmlowp.tanh(v, 4)
    y = np.clip(gemmlowp.rdivpot(f, 31 - bits) + out_zp, -128, 127)
    return np.where(x <= -radius, -128, np.where(x >= radius, 127, y)).astype(np.int8)


def import_tflite_activation(tx, op):
    """LOGISTIC (output 1/256, -128) and TANH (1/128, 0): TFLite's fixed-point functions as a table."""
    name, x = tx.op_name(op), tx.input(op, 0)
    out, (scale, zp, _, fn) = tx.output(op), TFLITE_OUTPUT[tx.op_name(op)]
    t = tx.tensor(out)
    if (t.scale, t.zero_point) != (scale, zp):
        raise tx.unsupported(f"int8 {name} output quantized ({t.scale}, {t.zero_point}), not ({scale}, {zp})")
    xt = tx.tensor(x)
    tx.emit("lut", op, [x], out, {"table": tflite_table(name, xt.scale, xt.zero_point)}, fn=fn, fparams={},
            consts=None, count=1, inner=xt.size)


def _i16(v):
    return np.clip(v, -32768, 32767)


def hard_swish_table(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """TFLite's int8 HARD_SWISH (reference_ops::HardSwish and its Prepare: float32 scales, int16 fixed-point
    multipliers) of every int8 input."""
    from edgec.fixedpoint import gemmlowp
    from edgec.fixedpoint.scheme import quantize_multiplier

    f32 = np.float32
    hires = f32(1.0 / 128.0) * f32(in_scale)

    def q16(real):
        m, e = quantize_multiplier(float(real))
        return (32767 if m >= (1 << 31) - 1 - (1 << 15) else (m + (1 << 15)) >> 16), e
    out_m, out_e = q16(hires / f32(out_scale))
    relu_m, relu_e = q16(hires / f32(3.0 / 32768.0))

    def srdhm16(a, b):
        ab = np.asarray(a, np.int64) * b
        v = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
        return np.where(v >= 0, v >> 15, -((-v) >> 15))       # C division: toward zero (no saturation case here)
    x = (np.arange(-128, 128, dtype=np.int64) - int(in_zp)) * 128
    pre = srdhm16(x, out_m)
    r = _i16(x << max(relu_e - 1, 0)) if relu_e > 0 else x
    r = srdhm16(r, relu_m)
    r = _i16(r * 2) if relu_e > 0 else (gemmlowp.rdivpot(r, -relu_e) if relu_e < 0 else r)
    r = (r + (1 << 15)) >> 1
    ab = r * pre
    y = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))            # SaturatingDoublingHighMul: truncating
    y = gemmlowp.rdivpot(y, -out_e) + int(out_zp)
    if out_e > 0:
        raise ValueError("HARD_SWISH output multiplier above 1")
    return np.clip(y, -128, 127).astype(np.int8)


def import_tflite_hard_swish(tx, op):
    """HARD_SWISH: TFLite's int8 arithmetic as a table."""
    x, out = tx.input(op, 0), tx.output(op)
    xt, t = tx.tensor(x), tx.tensor(out)
    try:
        table = hard_swish_table(xt.scale, xt.zero_point, t.scale, t.zero_point)
    except ValueError as exc:
        raise tx.unsupported(str(exc)) from None
    tx.emit("lut", op, [x], out, {"table": table}, fn="hard_swish", fparams={}, consts=None, count=1, inner=xt.size)


RELUS = {"RELU": (0.0, None), "RELU6": (0.0, 6.0)}      # (TFLM has no RELU_N1_TO_1 kernel to check one against)


def relu_table(name: str, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """TFLite Micro's int8 RELU (ReluQuantized: requantize, then the clamp of CalculateReluOpData) and RELU6
    (Relu6Quantized: a clamp on the input's grid, whatever the output's quantization) of every int8 input."""
    from edgec.fixedpoint.scheme import quantize_multiplier, requantize

    mult, shift = quantize_multiplier(float(in_scale) / float(out_scale))
    lo, hi = RELUS[name]

    def q(f):
        v = float(np.float32(f) / np.float32(out_scale))
        return int(out_zp) + int(math.copysign(math.floor(abs(v) + 0.5), v))
    if hi is not None:      # TFLM's Relu6Quantized: a clamp on the input's own grid, no requantization
        six = np.float32(hi) / np.float32(in_scale)
        six = int(in_zp) + int(math.copysign(math.floor(abs(float(six)) + 0.5), float(six)))
        return np.clip(np.arange(-128, 128), int(in_zp), min(127, six)).astype(np.int8)
    y = requantize(np.arange(-128, 128) - int(in_zp), mult, shift).astype(np.int64) + int(out_zp)
    return np.clip(y, max(-128, q(lo)), 127).astype(np.int8)


def import_tflite_relu(tx, op):
    """RELU and RELU6 with nothing to fuse into: a table."""
    x, out = tx.input(op, 0), tx.output(op)
    xt, t = tx.tensor(x), tx.tensor(out)
    table = relu_table(tx.op_name(op), xt.scale, xt.zero_point, t.scale, t.zero_point)
    tx.emit("lut", op, [x], out, {"table": table}, fn="clip", fparams={"lo": RELUS[tx.op_name(op)][0],
            "hi": RELUS[tx.op_name(op)][1] or math.inf}, consts=None, count=1, inner=xt.size)


TFLITE = {"LOGISTIC": int16_or(import_tflite_activation), "TANH": int16_or(import_tflite_activation),
          "HARD_SWISH": import_tflite_hard_swish, "RELU": int16_or(import_tflite_relu),
          "RELU6": int16_or(import_tflite_relu)}
