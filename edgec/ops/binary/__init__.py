"""Elementwise ops of two operands: `add` (two tensors of one shape, TFLite's int8 Add; may run in place) and
`binary` (broadcasting add/sub/mul/div/max/min over up to 6 dimensions, of two tensors or of a tensor and a
stored constant); kernels in runtime_c/edgec_elementwise.c, the fast add in runtime_c/fast/.

A constant operand that is one number, or varies along one axis only, becomes a `lut` instead (one table per
value); a constant Add after a Conv/Gemm becomes its bias; x * Sigmoid(x) and x * HardSigmoid(x) fuse into the
Sigmoid's table (SiLU, HardSwish).
"""
from __future__ import annotations

import functools

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import NO_ACT, Op, SYNTHETIC, Tensor
from edgec.ops import cemit, movement
from edgec.ops.binary import fold
from edgec.ops.binary.add16 import ADD16, quantize_add16
from edgec.ops.binary.add_lut import ADD_LUT, ADD_LUT_MVE
from edgec.ops.binary.int16 import BINARY16, div16, quantize_binary16
from edgec.ops.binary.mul import MUL_BCAST
from edgec.ops.lut import emit_lut, is_table
from edgec.ops.movement import RANK, offsets
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.fixedpoint.scheme import act_range, qparams_from_range, quantize_multiplier, requantize


ADD_LEFT_SHIFT = 20
BINARY_OPS = {"add": 0, "sub": 1, "max": 2, "min": 3, "mul": 4, "div": 5,
              "max_raw": 6, "min_raw": 7,     # TFLite's MAXIMUM/MINIMUM: of the int8 values, nothing rescaled
              "sqdiff": 8,                    # TFLite's SQUARED_DIFFERENCE: add's rescaling (left shift 7), squared
              "div_tflite": 9,                # TFLite's DIV: a gemmlowp reciprocal of the divisor (div_tflite below)
              # TFLite's comparisons (both inputs rescaled by their own scale after << 8; a bool 0 / 1 out) and
              # logical operators (of bool bytes)
              "equal": 10, "not_equal": 11, "greater": 12, "greater_equal": 13, "less": 14, "less_equal": 15,
              "logical_and": 16, "logical_or": 17,
              "prelu": 18,                    # TFLite's 16x8 PRELU (binary/int16.py): x >= 0 or x * alpha rescaled
              "div16": 19,                    # a QDQ file's int16 Div (binary/int16.py div16): int64 quotient
              "absdiff": 20}                  # |a - b|: a Sub read by an Abs alone (lut.emit_lut), rounded once
COMPARE_LEFT_SHIFT = 8
SQDIFF_LEFT_SHIFT = 7
DIV_SHIFT = 16


# ---- quantize ---------------------------------------------------------------------------------
def add_params(s1: float, zp1: int, s2: float, zp2: int, so: float, zpo: int) -> dict:
    """Parameters of TFLite's int8 Add (PrepareGeneralSubOp / CalculateArithmeticParams style)."""
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = quantize_multiplier(s1 / twice_max)
    m2, sh2 = quantize_multiplier(s2 / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << ADD_LEFT_SHIFT) * so))
    return {"input1_zp": int(zp1), "input1_mult": m1, "input1_shift": sh1,
            "input2_zp": int(zp2), "input2_mult": m2, "input2_shift": sh2,
            "output_mult": mo, "output_shift": sho, "output_zp": int(zpo),
            "left_shift": ADD_LEFT_SHIFT, "act_min": -128, "act_max": 127}


def quantize_add(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, b = ins
    p = add_params(a.scale, a.zero_point, b.scale, b.zero_point, out.scale, out.zero_point)
    op.params.update(n=out.size, **{**p, **act_range(op, out)})


def _strides6(shape):
    shape = [1] * (RANK - len(shape)) + [int(d) for d in shape]
    strides, acc = [0] * RANK, 1
    for k in range(RANK - 1, -1, -1):
        strides[k] = acc if shape[k] > 1 else 0
        acc *= shape[k]
    return strides


def out_shape(op: Op) -> tuple[int, ...]:
    """Broadcast physical shape of a binary op."""
    return tuple(np.broadcast_shapes(tuple(op.attrs["a_shape"]), tuple(op.attrs["b_shape"])))


def quantize_binary(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    tensors = list(ins)
    if a["const"] is not None:
        c = np.asarray(a["const"], np.float64)
        s, zp = (1.0, 0) if a.get("bool_const") else qparams_from_range(float(c.min()), float(c.max()))
        if not a.get("bool_const") and not c.any():    # zeros (a Cast to bool: x != 0) on the other operand's grid,
            s, zp = ins[0].scale, ins[0].zero_point     # where 0 is its zero point exactly
        const = Tensor(name="const", shape=c.shape, source="", scale=s, zero_point=zp)
        op.arrays["const"] = (c != 0).astype(np.int8) if a.get("bool_const") else \
            np.clip(np.round(c / s) + zp, -128, 127).astype(np.int8)      # a mask's constant: its 0 / 1 bytes
        tensors.insert(0 if a["const_first"] else 1, const)
    ta, tb = tensors
    dims = [1] * (RANK - len(out_shape(op))) + list(out_shape(op))
    p = dict(op=BINARY_OPS[a["op"]], dims=dims, a_stride=_strides6(a["a_shape"]),
             b_stride=_strides6(a["b_shape"]), a_zp=ta.zero_point, b_zp=tb.zero_point,
             a_mult=0, a_shift=0, b_mult=0, b_shift=0, left_shift=ADD_LEFT_SHIFT, out_zp=out.zero_point)
    if a["op"] in ("add", "sub", "max", "min", "absdiff"):
        ap = add_params(ta.scale, ta.zero_point, tb.scale, tb.zero_point, out.scale, out.zero_point)
        p.update(a_mult=ap["input1_mult"], a_shift=ap["input1_shift"], b_mult=ap["input2_mult"],
                 b_shift=ap["input2_shift"], out_mult=ap["output_mult"], out_shift=ap["output_shift"])
    elif a["op"] == "sqdiff":       # TFLite's PrepareQuantized of SQUARED_DIFFERENCE
        twice = 2.0 * max(ta.scale, tb.scale)
        (p["a_mult"], p["a_shift"]), (p["b_mult"], p["b_shift"]) = (quantize_multiplier(ta.scale / twice),
                                                                    quantize_multiplier(tb.scale / twice))
        p["out_mult"], p["out_shift"] = quantize_multiplier(twice * twice / ((1 << 2 * SQDIFF_LEFT_SHIFT) * out.scale))
        p["left_shift"] = SQDIFF_LEFT_SHIFT
    elif a["op"] == "mul":
        p["out_mult"], p["out_shift"] = quantize_multiplier(ta.scale * tb.scale / out.scale)
    elif BINARY_OPS[a["op"]] >= BINARY_OPS["equal"]:    # TFLite Micro's ComparisonsPrepare: each scale alone
        unit = 2.0 * max(ta.scale, tb.scale) if a.get("common_scale") else 1.0     # ONNX: below 1, any grids
        (p["a_mult"], p["a_shift"]), (p["b_mult"], p["b_shift"]) = (quantize_multiplier(float(ta.scale) / unit),
                                                                    quantize_multiplier(float(tb.scale) / unit))
        p.update(left_shift=COMPARE_LEFT_SHIFT, out_mult=0, out_shift=0)
    elif a["op"] == "div_tflite":   # TFLite Micro's CalculateOpDataDiv: the ratio in float32
        f = np.float32
        p["out_mult"], p["out_shift"] = quantize_multiplier(float(f(ta.scale) / (f(tb.scale) * f(out.scale))))
    else:
        p["out_mult"], p["out_shift"] = quantize_multiplier(ta.scale / (tb.scale * out.scale * (1 << DIV_SHIFT)))
    p.update(act_range(op, out))
    p["_const_first"] = bool(a["const_first"])
    op.params.update(p)


# ---- NumPy integer twins ------------------------------------------------------------------------
def add_s8(p: dict, a, b) -> np.ndarray:
    """TFLite reference_integer_ops::AddElementwise (same shapes, no broadcasting)."""
    a = np.asarray(a, np.int8)
    ls = 1 << int(p.get("left_shift", ADD_LEFT_SHIFT))
    v1 = (a.astype(np.int64) - int(p["input1_zp"])) * ls
    v2 = (np.asarray(b, np.int8).reshape(a.shape).astype(np.int64) - int(p["input2_zp"])) * ls
    s1 = requantize(v1, p["input1_mult"], p["input1_shift"]).astype(np.int64)
    s2 = requantize(v2, p["input2_mult"], p["input2_shift"]).astype(np.int64)
    raw = (s1 + s2).astype(np.int32)
    out = requantize(raw, p["output_mult"], p["output_shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def div_tflite(p: dict, va, vb) -> np.ndarray:
    """TFLite's DivElementwise of offset values: signs moved to the numerator, the divisor's reciprocal by
    GetReciprocal (gemmlowp's 1 / (1 + x)), the numerator's sign bits as headroom, then one requantization by
    output_shift - reciprocal shift - headroom (a divisor of 0, which TFLite leaves undefined, as x86 runs it)."""
    from edgec.fixedpoint.gemmlowp import one_over_one_plus_x, srdhm, wrap32

    neg = vb < 0
    a, b = np.where(neg, -va, va), np.where(neg, -vb, vb)
    bits = np.frexp(b.astype(np.float64))[1].astype(np.int64)           # bit length of 0..255
    clz = 32 - bits
    recip_shift = 31 - clz
    inv = one_over_one_plus_x(wrap32(np.where(clz >= 32, b, b << np.minimum(clz, 31)) - (1 << 31)))
    headroom = 31 - np.frexp(np.where(a < 0, -a - 1, a).astype(np.float64))[1].astype(np.int64)
    unscaled = srdhm(a << headroom, inv)
    out = requantize(unscaled, p["out_mult"], p["out_shift"] - recip_shift - headroom).astype(np.int64)
    return np.clip(out + int(p["out_zp"]), int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def binary_s8(p: dict, a, b, dtype=np.int8) -> np.ndarray:
    """Broadcasting elementwise op on [dims] (6-D, strides 0 where an input is broadcast); int16 values (16x8,
    binary/int16.py) with dtype."""
    dims = [int(d) for d in p["dims"]]
    va = np.asarray(a, dtype).reshape(-1)[offsets(dims, p["a_stride"])].astype(np.int64) - int(p["a_zp"])
    vb = np.asarray(b, dtype).reshape(-1)[offsets(dims, p["b_stride"])].astype(np.int64) - int(p["b_zp"])
    op = int(p["op"])
    if op == BINARY_OPS["div_tflite"]:
        return div_tflite(p, va, vb)
    if op == BINARY_OPS["prelu"]:
        y = np.where(va >= 0, requantize(va, p["a_mult"], p["a_shift"]),
                     requantize(va * vb, p["b_mult"], p["b_shift"]))
        return np.clip(y.astype(np.int64) + int(p["out_zp"]), int(p["act_min"]), int(p["act_max"])).astype(dtype)
    if op == BINARY_OPS["div16"]:
        out = requantize(div16(p, va, vb), p["out_mult"], p["out_shift"]).astype(np.int64) + int(p["out_zp"])
        return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(dtype)
    if op >= BINARY_OPS["logical_and"] and op != BINARY_OPS["absdiff"]:
        ra, rb = va + int(p["a_zp"]) != 0, vb + int(p["b_zp"]) != 0
        return ((ra & rb) if op == BINARY_OPS["logical_and"] else (ra | rb)).astype(np.int8)
    if BINARY_OPS["equal"] <= op < BINARY_OPS["logical_and"]:
        ls = 1 << int(p["left_shift"])
        sa = requantize(va * ls, p["a_mult"], p["a_shift"]).astype(np.int64)
        sb = requantize(vb * ls, p["b_mult"], p["b_shift"]).astype(np.int64)
        compare = (np.equal, np.not_equal, np.greater, np.greater_equal, np.less, np.less_equal)
        return compare[op - BINARY_OPS["equal"]](sa, sb).astype(np.int8)
    if op in (BINARY_OPS["max_raw"], BINARY_OPS["min_raw"]):
        ra, rb = va + int(p["a_zp"]), vb + int(p["b_zp"])
        return (np.maximum(ra, rb) if op == BINARY_OPS["max_raw"] else np.minimum(ra, rb)).astype(dtype)
    if op <= BINARY_OPS["min"] or op in (BINARY_OPS["sqdiff"], BINARY_OPS["absdiff"]):
        ls = 1 << int(p["left_shift"])
        sa = requantize(va * ls, p["a_mult"], p["a_shift"]).astype(np.int64)
        sb = requantize(vb * ls, p["b_mult"], p["b_shift"]).astype(np.int64)
        raw = (sa - sb) ** 2 if op == BINARY_OPS["sqdiff"] else np.abs(sa - sb) if op == BINARY_OPS["absdiff"] \
            else [sa + sb, sa - sb, np.maximum(sa, sb), np.minimum(sa, sb)][op]
    elif op == BINARY_OPS["mul"]:
        raw = va * vb
    else:
        num = va << DIV_SHIFT
        den = vb
        q = (np.abs(num) + np.abs(den) // 2) // np.maximum(np.abs(den), 1)   # round half away from zero
        q = np.where((num < 0) != (den < 0), -q, q)
        big = np.int64((1 << 31) - 1)
        raw = np.where(den == 0, np.where(num < 0, -big, np.where(num > 0, big, 0)), q)
    out = requantize(raw.astype(np.int32), p["out_mult"], p["out_shift"]).astype(np.int64) + int(p["out_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(dtype)


def run_add(op: Op, inputs: list) -> np.ndarray:
    return add_s8(op.params, inputs[0].reshape(-1), inputs[1].reshape(-1))


def _const_first(op: Op) -> bool:
    """Whether a binary op's stored constant is its first operand (in params: saved graphs have no attrs)."""
    return bool(op.params.get("_const_first", False))


def _operands(op: Op, inputs: list, const) -> list:
    operands = list(inputs)
    if const is not None:
        operands.insert(0 if _const_first(op) else 1, const)
    return operands


def run_binary(op: Op, inputs: list) -> np.ndarray:
    return binary_s8(op.params, *_operands(op, inputs, op.arrays.get("const")))


# ---- float --------------------------------------------------------------------------------------
_FLOAT = {"add": np.add, "sub": np.subtract, "max": np.maximum, "min": np.minimum, "mul": np.multiply,
          "div": np.divide, "div_tflite": np.divide, "div16": np.divide, "max_raw": np.maximum, "equal": np.equal,
          "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
          "less_equal": np.less_equal, "logical_and": np.logical_and, "logical_or": np.logical_or, "min_raw": np.minimum,
          "sqdiff": lambda a, b: (a - b) ** 2, "prelu": lambda a, b: np.where(a < 0, a * b, a),
          "absdiff": lambda a, b: np.abs(a - b)}


def _act(y, op: Op):
    lo, hi = op.attrs.get("act", (-np.inf, np.inf))
    return np.clip(y, lo, hi)


def float_add(op: Op, inputs: list):
    x = inputs[0]
    return _act(x + inputs[1].reshape(x.shape), op)


def float_binary(op: Op, inputs: list):
    a = op.attrs
    c = a["const"]
    x, y = (c, inputs[0]) if c is not None and a["const_first"] else \
        (inputs[0], c) if c is not None else (inputs[0], inputs[1])
    with np.errstate(all="ignore"):
        return _act(_FLOAT[a["op"]](x.reshape(a["a_shape"]), y.reshape(a["b_shape"])), op)


# ---- kernels -------------------------------------------------------------------------------------
def c_add(op: Op, low, site: CallSite) -> str:
    x, y = site.inputs
    return f"{low.kernel.name}(&{site.prefix}_params, {x}, {y},\n        {site.output});"


def c_binary(op: Op, low, site: CallSite) -> str:
    a, b = _operands(op, site.inputs, site.arrays.get("const"))
    return cemit.with_params("edgec_binary_params", op.params, f"{low.kernel.name}(&p, {a}, {b}, {site.output});")


ADD = Kernel("edgec_add_s8", ("add",), REFERENCE, c_add, run=run_add, struct="edgec_add_params", code_bytes=580)
BINARY = Kernel("edgec_binary_s8", ("binary",), REFERENCE, c_binary, run=run_binary)
QDQ16 = ("add", "sub", "mul", "div")   # a QDQ file's broadcast Add / Sub / Mul of two int16 activations (TFLite's
# 16x8), and Div (edgec's own: binary/int16.py div16)
KERNELS = [ADD, BINARY, ADD_LUT, ADD_LUT_MVE, ADD16, BINARY16, MUL_BCAST]

OPS = [
    OpDef("add", "elementwise", quantize_add, float_add, in_place=True, fuses_activation=True,
          row_bands="elementwise", int16=Int16(quantize_add16, between=lambda op: True, qdq=always)),
    OpDef("binary", "elementwise", quantize_binary, float_binary, fuses_activation=True,
          int16=Int16(quantize_binary16, qdq=lambda op: op.attrs["op"] in QDQ16,
                      between=lambda op: op.attrs["op"] == "sub", rows=lambda op: op.attrs["op"] in QDQ16)),   # a Sub between int16 layers (a tail's difference)
]


# ---- ONNX import
MAX_LUT_TABLES = 64          # per-axis tables (256 bytes each) before a constant operand is stored instead
BINARY_FNS = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "max", "Min": "min", "Pow": "pow"}
CONST_FNS = {  # (op, constant is the first operand) -> lut function
    ("add", False): "add_c", ("add", True): "add_c", ("mul", False): "mul_c", ("mul", True): "mul_c",
    ("sub", False): "sub_c", ("sub", True): "rsub_c", ("div", False): "div_c", ("div", True): "rdiv_c",
    ("max", False): "max_c", ("max", True): "max_c", ("min", False): "min_c", ("min", True): "min_c",
    ("pow", False): "pow_c", ("pow", True): "rpow_c",
}


def import_add(cx, node):
    a, b = node.input
    if a in cx.consts or b in cx.consts:
        if not fold.add_constant(cx, node, b if a in cx.consts else a, cx.consts[a if a in cx.consts else b]):
            binary(cx, node, "add")
        return
    sa, sb = cx.shape(a, node), cx.shape(b, node)
    if sa != sb:
        return binary(cx, node, "add")
    ta, perm = cx.activation(a, node)
    tb = cx.as_layout(b, perm, node)
    out = cx.new_tensor(node.output[0], cx.graph.tensors[ta].shape, node.output[0])
    cx.emit("add", node, [ta, tb], out, act=NO_ACT)
    cx.values[node.output[0]] = (out, perm)


def import_mul(cx, node):
    a, b = node.input
    if a not in cx.consts and b not in cx.consts and _fuse_gate(cx, node):
        return
    if (a in cx.consts) != (b in cx.consts) and not cx.graph.fixed_qparams and \
            fold.mul_constant(cx, node, b if a in cx.consts else a, np.asarray(cx.consts[a if a in cx.consts else b])):
        return
    binary(cx, node, "mul")


def _fuse_gate(cx, node) -> bool:
    """x * Sigmoid(x) -> one SiLU table; x * HardSigmoid(x) -> HardSwish."""
    for x, s in (node.input, node.input[::-1]):
        if s not in cx.values or x not in cx.values or not cx.single_use(s):
            continue
        prod = cx.graph.producer(cx.values[s][0])
        tx, px = cx.values[x]
        if prod is None or not is_table(prod) or prod.inputs != (tx,) or cx.values[s][1] != px:
            continue
        if prod.attrs["fn"] == "sigmoid":
            prod.attrs["fn"] = "silu"
        elif prod.attrs["fn"] == "hard_sigmoid":
            prod.attrs["fn"] = "hard_swish"
        else:
            continue
        cx.rename_output(prod, s, node.output[0], px)
        return True
    return False


def import_prelu(cx, node):
    slope = cx.const_input(node, 1)
    const_operand(cx, node, node.input[0], slope.astype(np.float64), "prelu")


def _variadic(cx, node, op, y=None):
    """Sum/Max/Min of n tensors: a chain of binary ops (intermediates are edgec's own tensors); the constants
    among them folded into one, last in the chain (the ops are commutative)."""
    y = y or node.output[0]
    if len(node.input) == 1:
        cx.values[y] = cx.activation(node.input[0], node)
        return
    inputs = [v for v in node.input if v not in cx.consts]
    consts = [v for v in node.input if v in cx.consts]
    if len(consts) > 1 and inputs:
        fold = {"add": np.add, "max": np.maximum, "min": np.minimum}[op]
        combined = f"{SYNTHETIC}{y}__constants"
        cx.consts[combined] = functools.reduce(fold, (np.asarray(cx.consts[c], np.float32) for c in consts))
        consts = [combined]
    inputs += consts
    if not inputs[:1] or inputs[0] in cx.consts:
        inputs = list(node.input)
    acc = inputs[0]
    for k, nxt in enumerate(inputs[1:]):
        last = k == len(inputs) - 2
        out = y if last else f"{SYNTHETIC}{y}__{k}"
        if not last:
            cx.shapes[out] = tuple(np.broadcast_shapes(cx.shape(acc, node), cx.shape(nxt, node)))   # nxt: no constant
        binary(cx, onnx.helper.make_node(node.op_type, [acc, nxt], [out], name=node.name), op)
        acc = out


def import_sum(cx, node):
    _variadic(cx, node, "add")


def import_max(cx, node):
    _variadic(cx, node, "max")


def import_min(cx, node):
    _variadic(cx, node, "min")


def import_mean(cx, node):
    if len(node.input) == 1:
        return movement.alias(cx, node)
    mid = f"{SYNTHETIC}{node.output[0]}__sum"
    cx.shapes[mid] = cx.shape(node.output[0], node)
    _variadic(cx, node, "add", mid)
    emit_lut(cx, node, mid, node.output[0], "mul_c", consts=np.array([1.0 / len(node.input)]))


def import_binary(cx, node):
    """Sub, Div, Pow."""
    binary(cx, node, BINARY_FNS[node.op_type])


def binary(cx, node, op, source=None):
    if len(node.input) != 2:
        raise node_error(node, f"{node.op_type} of {len(node.input)} tensors is not supported (two)")
    a, b = node.input
    if a in cx.consts or b in cx.consts:
        first = a in cx.consts
        x, c = (b, cx.consts[a]) if first else (a, cx.consts[b])
        return const_operand(cx, node, x, np.asarray(c, np.float64), CONST_FNS[(op, first)],
                             op=op, const_first=first)
    if op == "pow":
        raise node_error(node, "Pow of two tensors is not supported (a constant exponent is)")
    y = node.output[0]
    yshape = cx.shape(y, node)
    r = len(yshape)
    sa, sb = cx.shape(a, node), cx.shape(b, node)
    perm = cx.activation(a if len(sa) == r else b, node)[1]
    ta, tb = movement.in_layout(cx, a, r, perm, node), movement.in_layout(cx, b, r, perm, node)
    pa = tuple(((1,) * (r - len(sa)) + tuple(sa))[p] for p in perm)
    pb = tuple(((1,) * (r - len(sb)) + tuple(sb))[p] for p in perm)
    if r > RANK:
        raise node_error(node, f"broadcasting over {r} dimensions is not supported (at most {RANK})")
    out = cx.new_tensor(y, tuple(yshape[p] for p in perm) or (1,), source or y)
    cx.emit("binary", node, [ta, tb], out, op=op, a_shape=pa, b_shape=pb, const=None, const_first=False,
            act=NO_ACT)
    cx.values[y] = (out, perm)


def const_operand(cx, node, x, c, fn, op=None, const_first=False):
    """x (op) constant: a table (per axis if the constant varies along one), else a stored operand."""
    y = node.output[0]
    xshape, yshape = cx.shape(x, node), cx.shape(y, node)
    tensor, perm = cx.activation(x, node)
    r = len(xshape)
    wide = y in cx.qdq.get("int16", ()) and c.size > 1 and op in QDQ16    # int16 rows: a stored operand (16x8)
    if tuple(xshape) == tuple(yshape) and c.ndim <= r and not wide:
        cphys = c.reshape((1,) * (r - c.ndim) + c.shape).transpose(perm)
        phys = [xshape[p] for p in perm]
        varying = [k for k in range(r) if cphys.shape[k] > 1]
        if not varying:
            return emit_lut(cx, node, x, y, fn, consts=cphys.reshape(1))
        lo, hi = varying[0], varying[-1]
        if all(k in varying or phys[k] == 1 for k in range(lo, hi + 1)):
            count = int(np.prod([phys[k] for k in varying]))
            if count <= MAX_LUT_TABLES:
                return emit_lut(cx, node, x, y, fn, consts=cphys.reshape(-1), count=count,
                                inner=int(np.prod(phys[hi + 1:], dtype=np.int64)))
    if op is None or op == "pow":
        raise node_error(node, f"a constant operand of shape {list(c.shape)} that varies along several "
                               "axes is supported only for Add/Sub/Mul/Div/Max/Min")
    ry = len(yshape)
    if ry > RANK:
        raise node_error(node, f"broadcasting over {ry} dimensions is not supported (at most {RANK})")
    perm_y = tuple(range(ry - r)) + tuple(p + ry - r for p in perm)
    tx = movement.in_layout(cx, x, ry, perm_y, node)
    cfull = c.reshape((1,) * (ry - c.ndim) + c.shape).transpose(perm_y)
    px = tuple(((1,) * (ry - r) + tuple(xshape))[p] for p in perm_y)
    out = cx.new_tensor(y, tuple(yshape[p] for p in perm_y) or (1,), y)
    cx.emit("binary", node, [tx], out, op=op, a_shape=cfull.shape if const_first else px,
            b_shape=px if const_first else cfull.shape, const=cfull.astype(np.float32),
            const_first=const_first, act=NO_ACT)
    cx.values[y] = (out, perm_y)


ONNX = {
    "Add": import_add, "Sub": import_binary, "Mul": import_mul, "Div": import_binary, "Pow": import_binary,
    "Max": import_max, "Min": import_min, "Sum": import_sum, "Mean": import_mean, "PRelu": import_prelu,
    "Abs": fold.import_abs,
}
