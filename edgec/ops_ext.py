"""The extended canonical ops (canonicalize_ext.py) after canonicalization, one place per op kind:
its integer parameters (quantize), its integer reference run (bit-exact with the C) and the
C statement that calls its kernel (codegen).
"""
from __future__ import annotations

import numpy as np

from . import cheader, elementwise
from . import kernels_ext as KX
from . import kernels_ref as K
from .errors import EdgecError
from .ir import Op, Tensor

KINDS = {"lut", "binary", "remap", "concat", "reduce", "group_conv2d", "fully_connected_rows", "matmul",
         "log_softmax", "resize_linear"}
SAME_QPARAMS = {"remap", "resize_linear"}


def fixed_qparams(op: Op) -> tuple[float, int] | None:
    """Output quantization that does not come from calibration."""
    if op.kind == "reduce" and op.attrs["how"] in ("argmax", "argmin"):
        return 1.0, 0
    return None


# ---- quantize ---------------------------------------------------------------------------------
def _q(op: Op, ins: list[Tensor], out: Tensor) -> None:
    from . import quantize as Q

    a = op.attrs
    k = op.kind
    x = ins[0]
    if k == "lut":
        op.params = dict(n=out.size, count=a["count"], inner=a["inner"])
        op.arrays["table"] = elementwise.table(a["fn"], a["fparams"], a["consts"], x.scale, x.zero_point,
                                               out.scale, out.zero_point)
    elif k == "binary":
        _q_binary(op, ins, out, Q._act_range(op, out))
    elif k == "remap":
        dims = [1] * (KX.RANK - len(a["dims"])) + [int(d) for d in a["dims"]]
        tables = [np.zeros(1, np.int64)] * (KX.RANK - len(a["tables"])) + list(a["tables"])
        start = np.cumsum([0] + [len(t) for t in tables[:-1]]).tolist()
        pad = int(np.clip(round(a["pad"] / x.scale) + x.zero_point, -128, 127))
        op.params = dict(dims=dims, start=[int(s) for s in start], pad_value=pad)
        op.arrays["offsets"] = np.concatenate(tables).astype(np.int32)
    elif k == "concat":
        total = sum(a["chunks"])
        parts, off = [], 0
        for i, (t, chunk) in enumerate(zip(ins, a["chunks"])):
            same = (t.scale, t.zero_point) == (out.scale, out.zero_point)
            if not same:
                op.arrays[f"table{i}"] = elementwise.table("identity", {}, None, t.scale, t.zero_point,
                                                           out.scale, out.zero_point)
            parts.append(dict(outer=a["outer"], chunk=chunk, out_stride=total, out_offset=off))
            off += chunk
        op.params = dict(parts=parts)
    elif k == "reduce":
        kind = a["how"]
        n = a["n"]
        real = x.scale / out.scale / (n if kind == "mean" else 1)
        mult, shift = K.quantize_multiplier(real)
        code = KX.REDUCE_KINDS["sum" if kind == "mean" else kind]
        op.params = dict(outer=a["outer"], n=n, inner=a["inner"], kind=code, select_last=a["select_last"],
                         input_zp=x.zero_point, mult=mult, shift=shift, output_zp=out.zero_point,
                         act_min=-128, act_max=127)
    elif k == "group_conv2d":
        Q._conv(op, ins, out)
        op.params["groups"] = a["groups"]
    elif k == "fully_connected_rows":
        Q._fc(op, ins, out)
        op.params["rows"] = a["rows"]
    elif k == "matmul":
        mult, shift = K.quantize_multiplier(ins[0].scale * ins[1].scale / out.scale)
        op.params = dict(batch=a["batch"], m=a["m"], k=a["k"], n=a["n"], a_batch_stride=a["a_batch_stride"],
                         b_batch_stride=a["b_batch_stride"], a_zp=ins[0].zero_point, b_zp=ins[1].zero_point,
                         mult=mult, shift=shift, output_zp=out.zero_point, **Q._act_range(op, out))
    elif k == "log_softmax":
        k_in, k_ln = round(x.scale / out.scale * 65536), round(65536 / out.scale)
        if max(abs(k_in), k_ln) >= 2 ** 31:
            raise EdgecError(f"node '{op.name}': LogSoftmax output range too narrow for int8 (scale {out.scale})")
        op.params = dict(rows=a["rows"], cols=a["cols"], k_in=int(k_in), k_ln=int(k_ln), output_zp=out.zero_point)
        op.arrays["exp_table"] = np.asarray(K.softmax_table(x.scale), np.uint32)
        op.arrays["log_table"] = KX.log2_table()
    elif k == "resize_linear":
        (ih, iw, c), (oh, ow, _) = a["in_hwc"], a["out_hwc"]
        op.params = dict(in_h=ih, in_w=iw, c=c, out_h=oh, out_w=ow)
        op.arrays["idx"] = np.concatenate([a["y0"], a["y1"], a["x0"], a["x1"]]).astype(np.int32)
        op.arrays["frac"] = np.round(np.concatenate([a["fy"], a["fx"]]) * 1024).astype(np.int32)


def _strides6(shape, out_dims):
    shape = [1] * (KX.RANK - len(shape)) + [int(d) for d in shape]
    strides, acc = [0] * KX.RANK, 1
    for k in range(KX.RANK - 1, -1, -1):
        strides[k] = acc if shape[k] > 1 else 0
        acc *= shape[k]
    return strides


def _q_binary(op: Op, ins: list[Tensor], out: Tensor, act: dict) -> None:
    a = op.attrs
    tensors = list(ins)
    if a["const"] is not None:
        c = np.asarray(a["const"], np.float64)
        from .quantize import qparams_from_range
        s, zp = qparams_from_range(float(c.min()), float(c.max()))
        const = Tensor(name="const", shape=c.shape, source="", scale=s, zero_point=zp)
        op.arrays["const"] = np.clip(np.round(c / s) + zp, -128, 127).astype(np.int8)
        tensors.insert(0 if a["const_first"] else 1, const)
    ta, tb = tensors
    dims = [1] * (KX.RANK - len(out_shape(op))) + list(out_shape(op))
    p = dict(op=KX.BINARY_OPS[a["op"]], dims=dims, a_stride=_strides6(a["a_shape"], dims),
             b_stride=_strides6(a["b_shape"], dims), a_zp=ta.zero_point, b_zp=tb.zero_point,
             a_mult=0, a_shift=0, b_mult=0, b_shift=0, left_shift=K.ADD_LEFT_SHIFT, out_zp=out.zero_point)
    if a["op"] in ("add", "sub", "max", "min"):
        ap = K.add_params(ta.scale, ta.zero_point, tb.scale, tb.zero_point, out.scale, out.zero_point)
        p.update(a_mult=ap["input1_mult"], a_shift=ap["input1_shift"], b_mult=ap["input2_mult"],
                 b_shift=ap["input2_shift"], out_mult=ap["output_mult"], out_shift=ap["output_shift"])
    elif a["op"] == "mul":
        p["out_mult"], p["out_shift"] = K.quantize_multiplier(ta.scale * tb.scale / out.scale)
    else:
        p["out_mult"], p["out_shift"] = K.quantize_multiplier(ta.scale / (tb.scale * out.scale * (1 << KX.DIV_SHIFT)))
    p.update(act)
    p["_const_first"] = bool(a["const_first"])
    op.params = p


def out_shape(op: Op) -> tuple[int, ...]:
    """Broadcast physical shape of a binary op."""
    return tuple(np.broadcast_shapes(tuple(op.attrs["a_shape"]), tuple(op.attrs["b_shape"])))


QUANTIZERS = {k: _q for k in KINDS}


# ---- integer reference ------------------------------------------------------------------------
def run_op(op: Op, inputs: list[np.ndarray]) -> np.ndarray:
    p, a = op.params, op.arrays
    k = op.kind
    x = inputs[0]
    if k == "lut":
        return KX.lut_s8(p, a["table"], x)
    if k == "binary":
        operands = list(inputs)
        if "const" in a:
            operands.insert(0 if _const_first(op) else 1, a["const"])
        return KX.binary_s8(p, *operands)
    if k == "remap":
        return KX.remap_s8(p, a["offsets"], x)
    if k == "concat":
        out = np.zeros(p["parts"][0]["outer"] * p["parts"][0]["out_stride"], np.int8)
        for i, (part, t) in enumerate(zip(p["parts"], inputs)):
            KX.concat_part_s8(part, a.get(f"table{i}"), t, out)
        return out
    if k == "reduce":
        return KX.reduce_s8(p, x)
    if k == "group_conv2d":
        return KX.group_conv2d_s8(p, x, a["weights"], a["bias"], a["mult"], a["shift"])
    if k == "fully_connected_rows":
        return KX.fully_connected_rows_s8(p, p["rows"], x, a["weights"], a["bias"], a["mult"], a["shift"])
    if k == "matmul":
        return KX.matmul_s8(p, x, inputs[1])
    if k == "log_softmax":
        return KX.log_softmax_s8(p, a["exp_table"], a["log_table"], x)
    if k == "resize_linear":
        return KX.resize_linear_s8(p, a["idx"], a["frac"], x)
    raise ValueError(f"no reference for op kind {k}")


def _const_first(op: Op) -> bool:
    """Whether a binary op's stored constant is its first operand (in params: saved graphs have no attrs)."""
    return bool(op.params.get("_const_first", False))


# ---- C ------------------------------------------------------------------------------------------
STRUCTS = {"lut": "edgec_lut_params", "binary": "edgec_binary_params", "remap": "edgec_remap_params",
           "reduce": "edgec_reduce_params", "group_conv2d": "edgec_conv_params",
           "fully_connected_rows": "edgec_fully_connected_params", "matmul": "edgec_matmul_params",
           "log_softmax": "edgec_log_softmax_params", "resize_linear": "edgec_resize_params"}


def _init(params: dict, fields=None) -> str:
    def v(x):
        return "{" + ", ".join(str(int(i)) for i in x) + "}" if isinstance(x, (list, tuple)) else str(int(x))
    keys = fields or [k for k in params if not k.startswith("_")]
    return "{" + ", ".join(f".{k} = {v(params[k])}" for k in keys) + "}"


def c_call(op: Op, names: dict, inputs: list[str], output: str) -> str:
    """The C statement (a block with its static const parameters) running one extended op."""
    k = op.kind
    p = dict(op.params)
    x = inputs[0]
    struct = STRUCTS.get(k)
    if k in ("group_conv2d", "fully_connected_rows"):
        extra = p.pop("groups" if k == "group_conv2d" else "rows")
        decl = f"static const {struct} p = {_init(p, cheader.field_names(struct))};"   # the order of edgec_nn.h
        fn = "edgec_group_conv2d_s8" if k == "group_conv2d" else "edgec_fully_connected_rows_s8"
        call = (f"{fn}(&p, {extra}, {x}, {names['weights']}, {names['bias']}, {names['mult']}, "
                f"{names['shift']}, {output});")
        return "{ " + decl + "\n      " + call + " }"
    if k == "concat":
        lines = []
        for i, (part, t) in enumerate(zip(p["parts"], inputs)):
            table = names.get(f"table{i}", "0")
            lines.append(f"{{ static const edgec_concat_params p = {_init(part)}; "
                         f"edgec_concat_part_s8(&p, {table}, {t}, {output}); }}")
        return "\n    ".join(lines)
    decl = f"static const {struct} p = {_init(p)};"
    if k == "lut":
        call = f"edgec_lut_s8(&p, {names['table']}, {x}, {output});"
    elif k == "binary":
        operands = list(inputs)
        if "const" in names:
            operands.insert(0 if _const_first(op) else 1, names["const"])
        call = f"edgec_binary_s8(&p, {operands[0]}, {operands[1]}, {output});"
    elif k == "remap":
        call = f"edgec_remap_s8(&p, {names['offsets']}, {x}, {output});"
    elif k == "reduce":
        call = f"edgec_reduce_s8(&p, {x}, {output});"
    elif k == "matmul":
        call = f"edgec_matmul_s8(&p, {x}, {inputs[1]}, {output});"
    elif k == "log_softmax":
        call = f"edgec_log_softmax_s8(&p, {names['exp_table']}, {names['log_table']}, {x}, {output});"
    elif k == "resize_linear":
        call = f"edgec_resize_linear_s8(&p, {names['idx']}, {names['frac']}, {x}, {output});"
    else:
        raise ValueError(k)
    return "{ " + decl + "\n      " + call + " }"
