"""The broadcasting `binary` kind on int16 activations (TFLite's 16x8 SUB, MUL, ADD with broadcasting or a constant,
MAXIMUM, MINIMUM, SQUARED_DIFFERENCE): TFLite Micro's int16 kernels are its int8 arithmetic on int16 values with
zero points 0 and another left shift: 15 for ADD / SUB (sub_common.cc: 65535 << 15 stays within int32), 0 for
SQUARED_DIFFERENCE (the int16 values squared), none for MUL (the product of two int16 values requantized once);
MAXIMUM / MINIMUM compare the int16 values. Kernel edgec_binary_s16 in runtime_c/edgec_elementwise.c (the int8
kernel's element function on int16 data).

The importer (`import_binary16`) is called by binary/tflite.py for any of those operators given an int16
activation; the operators TFLite Micro does not run on int16 (DIV, the comparisons but GREATER, the logical ones)
are refused there, naming the operator.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import NO_ACT, Op, Tensor
from edgec.ops import cemit, tflite16
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite
from edgec.fixedpoint.scheme import act_range16, quantize_multiplier

LEFT_SHIFT16 = {"add": 15, "sub": 15, "sqdiff": 0, "absdiff": 15}
DIV16_MAX_SHIFT = 46      # an int16 Div's numerator shift: |a| * 2^46 < 2^63
TAKES_INT16 = {"ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"}   # TFLM's int16 kernels (16x8)


def quantize_binary16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The 16x8 parameters over the int8 quantizer's (binary/__init__.py quantize_binary): the rescaling of ADD /
    SUB / SQUARED_DIFFERENCE after TFLite's int16 left shift, zero points 0, the int16 clamp."""
    from edgec.ops.binary import BINARY_OPS

    p = op.params
    kind = next(k for k, v in BINARY_OPS.items() if v == int(p["op"]))
    if op.attrs.get("const") is not None and "const_scale" not in op.attrs:
        _const16(op, ins, out, kind)
    if kind in LEFT_SHIFT16:
        ls = LEFT_SHIFT16[kind]
        sa, sb = _scales(op, ins)
        twice = 2.0 * max(sa, sb)
        (p["a_mult"], p["a_shift"]), (p["b_mult"], p["b_shift"]) = (quantize_multiplier(sa / twice),
                                                                    quantize_multiplier(sb / twice))
        real = twice * twice / ((1 << 2 * ls) * out.scale) if kind == "sqdiff" else twice / ((1 << ls) * out.scale)
        p["out_mult"], p["out_shift"] = quantize_multiplier(real)
        p["left_shift"] = ls
    if kind == "div":
        _div16(op, ins, out)
    p.update(a_zp=0, b_zp=0, out_zp=0, **act_range16(op, out))


def _const16(op: Op, ins: list[Tensor], out: Tensor, kind: str) -> None:
    """An ONNX constant operand (a QDQ file's bias or positional embedding over int16 rows) as a TFLite int16
    constant: symmetric, scale max|c| / 32767 (an all-zero one: the activation's), zero point 0."""
    c = np.asarray(op.attrs["const"], np.float64)
    s = float(np.abs(c).max()) / 32767.0 or float(ins[0].scale)
    op.arrays["const"] = np.clip(np.round(c / s), -32767, 32767).astype(np.int16)
    op.params["_const_scale"] = s
    if kind == "mul":
        op.params["out_mult"], op.params["out_shift"] = quantize_multiplier(float(ins[0].scale) * s / out.scale)


def _div16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """A QDQ file's Div of int16 values (TFLite has no int16 DIV; a LayerNorm the exporter decomposed, attention
    scaled by an activation): q = a * 2^s / b in int64, rounded half away from zero (a divisor of 0: +-INT32_MAX),
    saturated to int32, then requantized by M = sa / (sb so 2^s). s puts M in [2^-16, 2^-15): q's rounding is below
    2^-16 of an output step, and a q that saturates int32 saturates the int16 output too (2^31 M >= 2^15)."""
    from edgec.ops.binary import BINARY_OPS

    sa, sb = _scales(op, ins)
    real = sa / (sb * out.scale)
    s = min(max(int(np.floor(np.log2(real))) + 16, 0), DIV16_MAX_SHIFT)
    op.params["out_mult"], op.params["out_shift"] = quantize_multiplier(real / 2.0 ** s)
    op.params.update(op=BINARY_OPS["div16"], left_shift=s)


def div16(p: dict, va, vb) -> np.ndarray:
    """The int16 Div's quotient (see _div16), the int32 that is requantized."""
    num = np.asarray(va, np.int64) * (np.int64(1) << int(p["left_shift"]))
    den = np.asarray(vb, np.int64)
    q = (np.abs(num) + np.abs(den) // 2) // np.maximum(np.abs(den), 1)       # round half away from zero
    q = np.minimum(np.where((num < 0) != (den < 0), -q, q), (1 << 31) - 1)
    big = (1 << 31) - 1
    q = np.where(den == 0, np.where(num < 0, -big, np.where(num > 0, big, 0)), np.maximum(q, -big))
    return q.astype(np.int32)


def _scales(op: Op, ins: list[Tensor]) -> tuple[float, float]:
    """The scales of the two operands, a stored constant's from its params (the file's)."""
    if len(ins) == 2:
        return ins[0].scale, ins[1].scale
    c = float(op.attrs.get("const_scale", op.params.get("_const_scale", 1.0)))
    return (c, ins[0].scale) if op.params.get("_const_first") else (ins[0].scale, c)


def run_binary16(op: Op, inputs: list) -> np.ndarray:
    from edgec.ops.binary import _operands, binary_s8

    return binary_s8(op.params, *_operands(op, inputs, op.arrays.get("const")), dtype=np.int16)


def c_binary16(op: Op, low, site: CallSite) -> str:
    from edgec.ops.binary import _operands

    const = site.arrays.get("const")
    ins = [cemit.i16(x, const=True) for x in site.inputs]
    a, b = _operands(op, ins, None if const is None else f"(const int16_t *){const}")
    call = f"{low.kernel.name}(&p, {a}, {b}, {cemit.i16(site.output)});"
    return cemit.with_params("edgec_binary_params", op.params, call)


BINARY16 = Kernel("edgec_binary_s16", ("binary",), REFERENCE, c_binary16, precision=INT16, run=run_binary16)


# ---- TFLite import
def _constant16(tx, op, k: int):
    """(None, (Tensor, int16 values)) of a constant int16 operand (one scale, zero point 0)."""
    i = op.Inputs(k)
    data = tx.const(op, k)
    if data is None or data.dtype != np.int16:
        raise tx.unsupported(f"input {k} must be an int16 activation or an int16 constant beside int16 activations")
    scales, zps, _ = tx.qparams(i)
    if scales.size != 1 or int(zps[0]) != 0:
        raise tx.unsupported(f"constant input {k} needs one scale and zero point 0 (TFLite's 16x8 operators)")
    return Tensor(name=f"constant{k}", shape=data.shape or (1,), source="", scale=float(scales[0]), zero_point=0,
                  dtype="int16"), np.ascontiguousarray(data)


def import_binary16(tx, op, name: str, kind: str, a: str | None, b: str | None):
    """ADD / SUB / MUL / MAXIMUM / MINIMUM / SQUARED_DIFFERENCE with an int16 activation (16x8): a `binary` op on
    edgec_binary_s16 (an ADD of two activations of one shape: the `add` kind, binary/add16.py)."""
    from edgec.ops.binary import quantize_binary
    from edgec.ops.movement import RANK

    if name not in TAKES_INT16:
        raise tx.unsupported(f"{name} with int16 activations (16x8): TFLite Micro's {name} takes no int16")
    k_act = 0 if a is not None else 1
    x, out = tflite16.activations(tx, op, k_act)
    tensors = {0: a, 1: b}
    consts = {k: _constant16(tx, op, k) for k in (0, 1) if tensors[k] is None}
    for k in (0, 1):
        if k not in consts and tx.tensor(tensors[k]).dtype != "int16":
            raise tx.unsupported(f"input {k} is {tx.tensor(tensors[k]).dtype} beside an int16 one")
    tflite16.check_zero_points(tx, op, [t for t in (a, b) if t is not None])
    o = tx.options(op)
    fused = o.FusedActivationFunction() if o is not None and hasattr(o, "FusedActivationFunction") else 0
    act = tx.act_range(op, out, fused)
    shapes = [tx.tensor(tensors[k]).shape if k not in consts else consts[k][0].shape for k in (0, 1)]
    if max(len(s) for s in shapes) > RANK:
        raise tx.unsupported(f"broadcasting over more than {RANK} dimensions")
    if name == "ADD" and not consts and shapes[0] == shapes[1]:
        return tx.emit("add", op, [a, b], out, None, act)
    if kind.endswith("_raw"):
        for t in [tensors[k] for k in (0, 1) if k not in consts]:
            tx.same_qparams(t, out, name)
        for t, _ in consts.values():
            if t.scale != tx.tensor(out).scale:
                raise tx.unsupported(f"{name} of a constant quantized unlike the output")
    attrs = dict(op=kind, a_shape=shapes[0], b_shape=shapes[1], const=None, const_first=False)
    if not consts:
        return tx.emit("binary", op, [a, b], out, None, act, **attrs)
    if len(consts) == 2:
        raise tx.unsupported("both operands are constants (nothing computed at run time)")
    (k, (t, data)), = consts.items()
    first = k == 0
    probe = Op(kind="binary", name="probe", inputs=(), output=out, attrs={**attrs, "act": NO_ACT})
    ins = [t, tx.tensor(x)] if first else [tx.tensor(x), t]
    quantize_binary(probe, ins, tx.tensor(out))
    probe.params.update(_const_first=first)
    quantize_binary16(probe, ins, tx.tensor(out))
    params = {**probe.params, **act, "_const_first": first, "_const_scale": t.scale}
    real = (data.astype(np.float64) * t.scale).astype(np.float32)
    attrs.update(const=real, const_first=first, const_scale=t.scale)
    return tx.emit("binary", op, [x], out, {"const": data}, params, **attrs)


def import_prelu16(tx, op):
    """PRELU of an int16 activation (16x8) with a constant int8 alpha (TFLite Micro's int16 PRELU takes int8 alpha):
    the broadcasting `binary` kind's `prelu` (its multipliers from the double scale ratios of
    CalculatePreluParams), the alpha's int8 values stored as int16 with its zero point."""
    from edgec.ops.binary import BINARY_OPS, quantize_binary

    x, out = tflite16.activations(tx, op, 0)
    alpha = tx.const(op, 1)
    if alpha is None or alpha.dtype != np.int8:
        raise tx.unsupported("alpha (input 1) must be a constant int8 tensor (TFLite Micro's int16 PRELU)")
    s_a, zp_a, _ = tx.qparams(op.Inputs(1))
    if s_a.size != 1:
        raise tx.unsupported("alpha has a scale per channel (TFLite's kernel takes one)")
    xt, t = tx.tensor(x), tx.tensor(out)
    try:
        np.broadcast_shapes(xt.shape, alpha.shape)
    except ValueError:
        raise tx.unsupported(f"alpha of shape {list(alpha.shape)} does not broadcast to {list(xt.shape)}") from None
    data = np.ascontiguousarray(alpha).astype(np.int16)
    ta = Tensor(name="alpha", shape=data.shape or (1,), source="", scale=float(s_a[0]), zero_point=int(zp_a[0]),
                dtype="int16")
    attrs = dict(op="prelu", a_shape=xt.shape, b_shape=ta.shape, const=None, const_first=False)
    probe = Op(kind="binary", name="probe", inputs=(), output=out, attrs={**attrs, "act": NO_ACT})
    quantize_binary(probe, [xt, ta], t)
    m1, s1 = quantize_multiplier(float(xt.scale) / float(t.scale))
    m2, s2 = quantize_multiplier(float(xt.scale) * float(s_a[0]) / float(t.scale))
    params = {**probe.params, "op": BINARY_OPS["prelu"], "a_zp": 0, "b_zp": int(zp_a[0]), "out_zp": 0,
              "a_mult": m1, "a_shift": s1, "b_mult": m2, "b_shift": s2, "act_min": -32768, "act_max": 32767,
              "_const_first": False, "_const_scale": ta.scale}
    real = ((data.astype(np.float64) - int(zp_a[0])) * float(s_a[0])).astype(np.float32)
    attrs.update(const=real, const_scale=ta.scale)
    return tx.emit("binary", op, [x], out, {"const": data}, params, **attrs)
