"""`layer_norm`: ONNX LayerNormalization over the last axis as one op, int8 in and out, in one pass over each row
with integer statistics (kernel runtime_c/edgec_norm.c). A LayerNormalization edgec cannot take whole (another
axis, its Mean/InvStdDev outputs asked for) is expanded into its ONNX function body as before
(edgec/frontend/functions.py asks `takes_whole`).

The arithmetic, per row of C values x (input zero point z, scale s): d = x - z, S1 = sum d, S2 = sum d^2 (int32),
V = C*S2 - S1^2 + E with E = round(C^2 * epsilon / s^2), so that (x_i - mean) / sqrt(var + epsilon) is exactly
(C*d_i - S1) / sqrt(V). sqrt(V) is an integer square root of V scaled by 4^e into [2^28, 2^30) (a 15-bit root),
its reciprocal inv = 2^31 // root one 32-bit division; the normalized value n_i = (C*d_i - S1) * inv >> sh is
int16 with F fraction bits (F keeps |n| < 2^15: |normalized| < sqrt(C)). Then gamma and beta as one int16
multiply and an int32 add (gamma scaled by 2^k, beta by 2^(F+k)), requantized to the output.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import NO_ACT, Op, SYNTHETIC, Tensor
from edgec.ops import cemit, movement
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.lut import per_channel_affine
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.fixedpoint.scheme import act_range, act_range16, quantize_multiplier, requantize

EPS_MAX = (1 << 31) - 1     # E is an int32 (an epsilon this large against the input's scale swamps the variance)


# ---- quantize ---------------------------------------------------------------------------------
def frac_bits(cols: int) -> int:
    """Fraction bits of the normalized values: |n| < sqrt(C) * 2^F <= 2^15."""
    return 15 - max(0, math.ceil(0.5 * math.log2(cols))) if cols > 1 else 15


def quantize_layer_norm(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    cols = int(a["cols"])
    f = frac_bits(cols)
    g = np.asarray(a["gamma"], np.float64)
    b = np.asarray(a["beta"], np.float64)
    gmax = float(np.abs(g).max())
    k = min(24, math.floor(math.log2(32767.0 / gmax))) if gmax > 0 else 0
    while True:
        gq = np.round(g * 2.0 ** k)
        bq = np.round(b * 2.0 ** (f + k))
        mult, shift = quantize_multiplier(2.0 ** -(f + k) / out.scale)
        if (np.abs(bq).max(initial=0) <= (1 << 30) and mult != 0) or k < -30:
            break
        k -= 1
    eps = min(round(cols * cols * float(a["epsilon"]) / (x.scale * x.scale)), EPS_MAX)
    op.params.update(rows=int(a["rows"]), cols=cols, input_zp=x.zero_point, eps_q=int(eps), eps_shift=0,
                     frac_bits=f, mult=mult, shift=shift, output_zp=out.zero_point, **act_range(op, out), rms=int(bool(a.get("rms"))))
    op.arrays["gamma"] = np.clip(gq, -32767, 32767).astype(np.int16)
    op.arrays["beta"] = np.clip(bq, -(1 << 30), 1 << 30).astype(np.int32)


# ---- NumPy integer twin -------------------------------------------------------------------------
def layer_norm_s8(p: dict, x, gamma, beta, dtype=np.int8) -> np.ndarray:
    rows, cols = int(p["rows"]), int(p["cols"])
    d = np.asarray(x, dtype).reshape(rows, cols).astype(np.int64) - int(p["input_zp"])
    s1, s2 = d.sum(axis=1) * (0 if p.get("rms") else 1), (d * d).sum(axis=1)     # RMSNorm: no mean
    v = np.maximum(cols * s2 - s1 * s1 + (int(p["eps_q"]) << 2 * int(p.get("eps_shift", 0))), 1)
    n = np.empty((rows, cols), np.int64)
    for r in range(rows):
        vr, e = int(v[r]), 0
        while vr < (1 << 28):
            vr, e = vr << 2, e + 1
        while vr >= (1 << 30):
            vr, e = vr >> 2, e - 1
        inv = (1 << 31) // math.isqrt(vr)
        sh = 31 - int(p["frac_bits"]) - e
        n[r] = (((cols * d[r] - s1[r]) * inv) + (1 << (sh - 1))) >> sh
    n = np.clip(n, -32768, 32767)
    acc = n * np.asarray(gamma, np.int64) + np.asarray(beta, np.int64)
    y = requantize(acc, p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(y, int(p["act_min"]), int(p["act_max"])).astype(dtype).reshape(-1)


def run_layer_norm(op: Op, inputs: list) -> np.ndarray:
    return layer_norm_s8(op.params, inputs[0], op.arrays["gamma"], op.arrays["beta"])


# ---- int16 (a QDQ file's int16 rows, edgec/frontend/qdq16.py; TFLite has no LayerNormalization: its converters
# decompose it): the int8 arithmetic above on int16 values, zero points 0, int64 statistics (edgec_layer_norm_s16),
# epsilon as eps_q * 4^eps_shift (an int16 input's scale makes C^2 eps / s^2 exceed int32 where eps matters; at
# most 2^60: the row's C^2 * 2^30 beside it stays within int64 up to C = 2^15 values a row)
def quantize_layer_norm16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, s = op.attrs, float(ins[0].scale)
    eps, k = min(round(int(a["cols"]) ** 2 * float(a["epsilon"]) / (s * s)), 1 << 60), 0   # (then V < 2^62)
    while (eps + (1 << 2 * k >> 1)) >> 2 * k > EPS_MAX:
        k += 1
    op.params.update(input_zp=0, output_zp=0, eps_q=(eps + (1 << 2 * k >> 1)) >> 2 * k, eps_shift=k,
                     **act_range16(op, out))


def run_layer_norm16(op: Op, inputs: list) -> np.ndarray:
    return layer_norm_s8(op.params, inputs[0], op.arrays["gamma"], op.arrays["beta"], np.int16)


def c_layer_norm16(op: Op, low, site: CallSite) -> str:
    call = (f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {site.arrays['gamma']}, "
            f"{site.arrays['beta']}, {cemit.i16(site.output)});")
    return cemit.with_params("edgec_layer_norm_params", op.params, call)


def float_layer_norm(op: Op, inputs: list):
    a = op.attrs
    x = np.asarray(inputs[0], np.float64).reshape(int(a["rows"]), int(a["cols"]))
    z = x if a.get("rms") else x - x.mean(axis=1, keepdims=True)
    y = z / np.sqrt((z * z).mean(axis=1, keepdims=True) + float(a["epsilon"])) * a["gamma"] + a["beta"]
    lo, hi = a.get("act", NO_ACT)
    return np.clip(y, lo, hi).reshape(-1)


# ---- C ------------------------------------------------------------------------------------------
def c_layer_norm(op: Op, low, site: CallSite) -> str:
    call = (f"{low.kernel.name}(&p, {site.inputs[0]}, {site.arrays['gamma']}, {site.arrays['beta']}, "
            f"{site.output});")
    return cemit.with_params("edgec_layer_norm_params", op.params, call)


L2_MAX_COLS = ((1 << 31) - 1) // (255 * 255)      # rows whose int32 sum of squares cannot overflow


# ---- `l2_norm`: TFLite's L2_NORMALIZATION over the last axis (int8: reference_integer_ops::L2Normalization)
L2_FRACTION = 15        # the normalized value's fraction bits before a calibrated output grid (|x / ||x||| <= 1)


def quantize_l2_norm(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """TFLite's op: the output on its fixed 1/128 grid (out_mult 0). An ONNX model's (attrs calibrated): the
    normalized value with L2_FRACTION bits, then requantized to the output's calibrated grid: a unit vector's
    components are mostly far below 1, and 1/128 is then a coarse grid (PyTorch's F.normalize of a 24-value
    embedding: 33.5 dB from float on 1/128, ONNX Runtime's INT8 34.4)."""
    out_mult, out_shift = quantize_multiplier(2.0 ** -L2_FRACTION / out.scale) if op.attrs.get("calibrated") \
        else (0, 0)
    op.params.update(rows=op.attrs["rows"], cols=op.attrs["cols"], input_zp=ins[0].zero_point,
                     out_mult=out_mult, out_shift=out_shift, output_zp=out.zero_point if out_mult else 0)


def l2_norm_s8(p: dict, x) -> np.ndarray:
    """Per row: S = sum (x - zp)^2 (int32), TFLite's inverse square root of S as a multiplier and shift, each
    x - zp requantized by it with 7 more bits (the output in 1/128, zero point 0, whatever the file says); with
    out_mult, with L2_FRACTION more bits, then requantized by out_mult / out_shift plus output_zp."""
    from edgec.ops.lut.tflite import inv_sqrt_multiplier

    v = np.asarray(x, np.int8).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64) - int(p["input_zp"])
    out = np.empty(v.shape, np.int8)
    om = int(p.get("out_mult", 0))
    for r, row in enumerate(v):
        mult, shift = inv_sqrt_multiplier(int((row * row).sum()))
        if om:
            n = requantize(row, mult, shift + L2_FRACTION)
            y = requantize(n, om, int(p["out_shift"])).astype(np.int64) + int(p["output_zp"])
        else:
            y = requantize(row, mult, shift + 7)
        out[r] = np.clip(y, -128, 127)
    return out.reshape(-1)


def run_l2_norm(op: Op, inputs: list) -> np.ndarray:
    return l2_norm_s8(op.params, inputs[0])


def float_l2_norm(op: Op, inputs: list):
    v = np.asarray(inputs[0], np.float64).reshape(op.attrs["rows"], op.attrs["cols"])
    return (v / np.sqrt(np.maximum((v * v).sum(axis=1, keepdims=True), 1e-6))).astype(np.float32)


def c_l2_norm(op: Op, low, site: CallSite) -> str:
    return cemit.with_params("edgec_l2_norm_params", op.params,
                             f"{low.kernel.name}(&p, {site.inputs[0]}, {site.output});")


# ---- the int16 variant (an int16 tail, edgec/quant/int16.py `tail_default`): int16 in (zero point 0), Q0.15 out
def quantize_l2_norm16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The normalized value is the output itself (Q0.15, Int16.fixed_qparams): no output multiplier; the input's
    scale cancels out of x / ||x||."""
    op.params.clear()
    op.params.update(rows=op.attrs["rows"], cols=op.attrs["cols"])


def l2_norm_s16(p: dict, x) -> np.ndarray:
    """Per row: S = sum x^2 (int64, at least 1), scaled by 4^e into V in [2^28, 2^30), root = floor(sqrt(V))
    (15 bits), inv = 2^31 // root ~ 2^(31 - e) / sqrt(S); y = round(x * inv / 2^(16 - e)) (half up) = x / sqrt(S)
    in Q0.15 (a row of zeros gives zeros), clamped to int16."""
    v = np.asarray(x, np.int16).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64)
    out = np.empty(v.shape, np.int16)
    for r, row in enumerate(v):
        s, e = max(int((row * row).sum()), 1), 0
        while s < (1 << 28):
            s, e = s << 2, e + 1
        while s >= (1 << 30):
            s, e = s >> 2, e - 1
        inv = (1 << 31) // math.isqrt(s)
        sh = 16 - e
        out[r] = np.clip((row * inv + (1 << (sh - 1))) >> sh, -32768, 32767)
    return out.reshape(-1)


def run_l2_norm16(op: Op, inputs: list) -> np.ndarray:
    return l2_norm_s16(op.params, inputs[0])


def c_l2_norm16(op: Op, low, site: CallSite) -> str:
    return cemit.with_params("edgec_l2_norm16_params", op.params,
                             f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, "
                             f"{cemit.i16(site.output)});")


OPS = [OpDef("layer_norm", "norm", quantize_layer_norm, float_layer_norm, fuses_activation=True, in_place=True,
             int16=Int16(quantize_layer_norm16, qdq=always, rows=always)),
       OpDef("l2_norm", "norm", quantize_l2_norm, float_l2_norm, in_place=True, qparams="fixed",
             fixed_qparams=lambda op: None if op.attrs.get("calibrated") else (1.0 / 128.0, 0),
             int16=Int16(quantize_l2_norm16, layer=True, fixed_qparams=(1.0 / 32768.0, 0),
                         tail=lambda op: bool(op.attrs.get("calibrated"))))]
KERNELS = [Kernel("edgec_layer_norm_s8", ("layer_norm",), REFERENCE, c_layer_norm, run=run_layer_norm, code_bytes=600),
           Kernel("edgec_layer_norm_s16", ("layer_norm",), REFERENCE, c_layer_norm16, precision=INT16,
                  run=run_layer_norm16),
           Kernel("edgec_l2_norm_s8", ("l2_norm",), REFERENCE, c_l2_norm, run=run_l2_norm, code_bytes=500),
           Kernel("edgec_l2_norm_s16", ("l2_norm",), REFERENCE, c_l2_norm16, precision=INT16, run=run_l2_norm16)]


# ---- ONNX import
def takes_whole(node, rank: int | None, consts=None) -> bool:
    """Whether `import_layer_norm` takes this LayerNormalization as one op (else its function body is built):
    over the last axis, Scale and B constants, no Mean/InvStdDev output."""
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    last = axis == -1 or (rank is not None and axis == rank - 1)
    params = all(v in consts for v in node.input[1:] if v) if consts is not None else True
    return last and params and len([o for o in node.output if o]) == 1


def import_layer_norm(cx, node):
    """LayerNormalization over the last axis; RMSNormalization (ONNX's, or PyTorch's decomposed nn.RMSNorm,
    edgec/frontend/decomposed.py) the same op without the mean: the kernel's row sum taken as 0 makes C d / sqrt(C
    S2 + E) = x / sqrt(mean(x^2) + epsilon) exactly."""
    x, y = node.input[0], node.output[0]
    shape = cx.shape(x, node)
    if not takes_whole(node, len(shape)) or not shape:
        raise node_error(node, f"{node.op_type} is taken over the last axis only, without Mean/InvStdDev")
    cols = int(shape[-1])
    gamma = np.broadcast_to(np.asarray(cx.const_input(node, 1), np.float64).reshape(-1), (cols,)).copy()
    beta = np.broadcast_to(np.asarray(cx.const_input(node, 2, np.zeros(1)), np.float64).reshape(-1), (cols,)).copy()
    tensor, perm = cx.activation(x, node)
    if perm[-1] != len(shape) - 1:          # each row's values must lie together
        perm = movement.identity(len(shape))
        tensor = cx.as_layout(x, perm, node)
    out = cx.new_tensor(y, cx.graph.tensors[tensor].shape, y)
    cx.emit("layer_norm", node, [tensor], out, rows=int(np.prod(shape, dtype=np.int64)) // cols, cols=cols,
            gamma=gamma, beta=beta, epsilon=float(cx.attr(node, "epsilon", 1e-5)), act=NO_ACT,
            rms=node.op_type == "RMSNormalization")
    cx.values[y] = (out, perm)


def selected_rows(idx: np.ndarray | None, cols: int) -> int | None:
    """How many whole rows of `cols` values an op only moving bytes picks (idx: the input index of each of its
    outputs, movement.source_index; each row in one piece, in any order), else None."""
    if idx is None or idx.size % cols or idx.size == 0:
        return None
    rows = idx.reshape(-1, cols)
    whole = np.all(rows == rows[:, :1] + np.arange(cols)) and np.all(rows[:, 0] % cols == 0)
    return len(rows) if whole else None


def normalize_selected_rows(g) -> None:
    """A layer_norm whose only reader keeps some of its rows (a ViT's class token: Gather of row 0 after the final
    LayerNormalization) normalizes those rows only, after the selection (g: the canonicalizer's ir.GraphBuilder).
    Each row is normalized on its own and the normalized rows keep the grid of all of them (the LayerNormalization
    output's range), so the int8 values are the same bit for bit; the other rows' work is not done. (A grid of the
    class token's own measured no better: timm_vit_tiny_32 +0.05 dB, torch_postnorm_transformer_op15 -0.05 dB.)"""
    for norm in list(g.ops):
        readers = g.consumers(norm.output) if norm.kind == "layer_norm" else []
        if len(readers) != 1 or norm.output in g.outputs:
            continue
        pick, cols = readers[0], int(norm.attrs["cols"])
        rows = selected_rows(movement.source_index(pick, g.tensors[pick.output].size), cols)
        if rows is None or rows >= int(norm.attrs["rows"]):
            continue
        picked = g.tensors[pick.output]
        mid = SYNTHETIC + norm.output + "__rows"
        g.tensors[mid] = Tensor(name=mid, shape=picked.shape, source=mid)
        i, j = (next(k for k, op in enumerate(g.ops) if op is o) for o in (norm, pick))   # the selection where the
        # norm was, the norm where the selection was
        g.ops[i] = dataclasses.replace(pick, inputs=norm.inputs, output=mid)
        g.ops[j] = dataclasses.replace(norm, inputs=(mid,), output=pick.output, attrs={**norm.attrs, "rows": rows})
        g.retensor(pick.output, source=g.tensors[norm.output].source)
        del g.tensors[norm.output]


MAX_COLS = ((1 << 31) - 1) // (255 * 255)     # the kernel's int32 sum of squares of a row cannot overflow


def import_instance_norm(cx, node):
    """InstanceNormalization over each (n, c) plane [N, C, D...] as `layer_norm` rows (ONNX layout: the plane's values
    together). A scale and B of one value each over the channels (what torch.onnx writes for a GroupNorm: Reshape to
    [N, G, -1], InstanceNormalization with ones and zeros, Reshape back, then Mul and Add by the affine weights; an
    InstanceNorm without affine weights) are the rows' gamma and beta; per-channel ones are a per-channel table
    (`affine`, edgec/ops/lut) after the rows, on edgec's own tensor of the normalized planes."""
    x, y = node.input[0], node.output[0]
    shape = cx.shape(x, node)
    if len(shape) < 3:
        raise node_error(node, f"InstanceNormalization of a {len(shape)}-D input (ONNX asks for [N, C, D...])")
    scale = np.broadcast_to(np.asarray(cx.const_input(node, 1), np.float64).reshape(-1), (shape[1],))
    bias = np.broadcast_to(np.asarray(cx.const_input(node, 2), np.float64).reshape(-1), (shape[1],))
    cols = int(np.prod(shape[2:], dtype=np.int64))
    if cols > MAX_COLS:
        raise node_error(node, f"InstanceNormalization over {cols} values a plane (edgec's kernel takes up to "
                         f"{MAX_COLS})")
    uniform = np.ptp(scale) == 0 and np.ptp(bias) == 0
    normed = y if uniform else SYNTHETIC + y + "__normed"    # edgec's own tensor: not an ONNX value
    perm = movement.identity(len(shape))
    tensor = cx.as_layout(x, perm, node)
    out = cx.new_tensor(normed, cx.graph.tensors[tensor].shape, normed)
    gain, shift = (scale[0], bias[0]) if uniform else (1.0, 0.0)
    cx.emit("layer_norm", node, [tensor], out, rows=int(np.prod(shape[:2], dtype=np.int64)), cols=cols,
            gamma=np.full(cols, gain), beta=np.full(cols, shift), epsilon=float(cx.attr(node, "epsilon", 1e-5)),
            act=NO_ACT)
    cx.values[normed] = (out, perm)
    if not uniform:
        cx.shapes[normed] = tuple(shape)
        per_channel_affine(cx, onnx.helper.make_node("InstanceNormalization", [normed], [y], name=node.name), normed,
                           scale.copy(), bias.copy())


def import_lp_norm(cx, node):
    """LpNormalization p=2 (also PyTorch's decomposed F.normalize, edgec/frontend/decomposed_l2.py, and a float
    .tflite's L2_NORMALIZATION): the `l2_norm` op over its axis, the values' physical order made to end with it;
    TFLite's int8 L2_NORMALIZATION with the output on its calibrated grid (quantize_l2_norm)."""
    x, y = node.input[0], node.output[0]
    shape = cx.shape(x, node)
    axis = int(cx.attr(node, "axis", -1))
    if int(cx.attr(node, "p", 2)) != 2 or not shape or not -len(shape) <= axis < len(shape):
        raise node_error(node, "LpNormalization is supported with p=2 only (an L2 norm)")
    axis %= len(shape)
    cols = int(shape[axis])
    if cols > L2_MAX_COLS:
        raise node_error(node, f"LpNormalization over {cols} values a row (edgec's kernel takes up to {L2_MAX_COLS}: "
                               "their int32 sum of squares could overflow)")
    tensor, perm = cx.activation(x, node)
    if perm[-1] != axis:                    # each row's values must lie together
        perm = tuple(k for k in range(len(shape)) if k != axis) + (axis,)
        tensor = cx.as_layout(x, perm, node)
    out = cx.new_tensor(y, cx.graph.tensors[tensor].shape, y)
    cx.emit("l2_norm", node, [tensor], out, rows=int(np.prod(shape, dtype=np.int64)) // cols, cols=cols,
            calibrated=True)
    cx.values[y] = (out, perm)


ONNX = {"LayerNormalization": import_layer_norm, "InstanceNormalization": import_instance_norm,
        "LpNormalization": import_lp_norm, "RMSNormalization": import_layer_norm}
TAKES_WHOLE = {"LayerNormalization": takes_whole, "RMSNormalization": takes_whole}


# ---- TFLite import
def import_tflite_l2_norm(tx, op):
    """L2_NORMALIZATION over the last axis (up to 4-D, no fused activation, as TFLite Micro takes it)."""
    x, out = tx.input(op, 0), tx.output(op)
    shape = tx.tensor(x).shape
    o = tx.options(op)
    if len(shape) > 4 or (o is not None and o.FusedActivationFunction()):
        raise tx.unsupported("an input above 4-D or a fused activation (TFLite Micro takes neither)")
    if shape[-1] > L2_MAX_COLS:
        raise tx.unsupported(f"{shape[-1]} values per row: their sum of squares could overflow TFLite's int32")
    tx.emit("l2_norm", op, [x], out, rows=int(np.prod(shape[:-1], dtype=np.int64)), cols=int(shape[-1]))


TFLITE = {"L2_NORMALIZATION": import_tflite_l2_norm}
