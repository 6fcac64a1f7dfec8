"""Elementwise ops of two operands: `add` (two tensors of one shape) and `binary` (broadcasting
add/sub/mul/div/max/min of two tensors, or of a tensor and a stored constant).

A constant operand that is one number, or varies along one axis only, becomes a `lut` instead (one
table per value); a constant Add after a Conv/Gemm becomes its bias; x * Sigmoid(x) and
x * HardSigmoid(x) fuse into the Sigmoid's table (SiLU, HardSwish).
"""
from __future__ import annotations

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import NO_ACT, SYNTHETIC
from edgec.ops import movement
from edgec.ops.kernels_ext import RANK
from edgec.ops.lut import emit_lut

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
        if not _add_constant(cx, node, b if a in cx.consts else a, cx.consts[a if a in cx.consts else b]):
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


def _add_constant(cx, node, x, c):
    """x + constant: becomes the bias of the Conv/Gemm producing x."""
    prod = cx.fusable_producer(x)
    xshape = cx.shape(x, node)
    per_channel = None
    try:
        full = np.broadcast_to(c.astype(np.float32), xshape).reshape(xshape[0], xshape[1], -1) \
            if len(xshape) >= 3 else np.broadcast_to(c.astype(np.float32), xshape).reshape(1, -1, 1)
        if np.all(full == full[:, :, :1]):
            per_channel = full[0, :, 0].copy()
    except ValueError:
        pass
    if prod is None or not cx.is_weighted(prod.kind) or prod.attrs["act"] != NO_ACT or per_channel is None \
            or tuple(cx.shape(node.output[0], node)) != tuple(xshape):
        return False
    prod.attrs["bias"] = (prod.attrs["bias"] + per_channel).astype(np.float32)
    cx.rename_output(prod, x, node.output[0], cx.values[x][1])
    return True


def import_mul(cx, node):
    a, b = node.input
    if a not in cx.consts and b not in cx.consts and _fuse_gate(cx, node):
        return
    binary(cx, node, "mul")


def _fuse_gate(cx, node) -> bool:
    """x * Sigmoid(x) -> one SiLU table; x * HardSigmoid(x) -> HardSwish."""
    for x, s in (node.input, node.input[::-1]):
        if s not in cx.values or x not in cx.values or not cx.single_use(s):
            continue
        prod = cx.graph.producer(cx.values[s][0])
        tx, px = cx.values[x]
        if prod is None or prod.kind != "lut" or prod.inputs != [tx] or cx.values[s][1] != px:
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
    """Sum/Max/Min of n tensors: a chain of binary ops (intermediates are edgec's own tensors)."""
    y = y or node.output[0]
    if len(node.input) == 1:
        cx.values[y] = cx.activation(node.input[0], node)
        return
    acc = node.input[0]
    for k, nxt in enumerate(node.input[1:]):
        last = k == len(node.input) - 2
        out = y if last else f"{SYNTHETIC}{y}__{k}"
        if not last:
            cx.shapes[out] = tuple(np.broadcast_shapes(cx.shape(acc, node), cx.shape(nxt, node)))
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
    if tuple(xshape) == tuple(yshape) and c.ndim <= r:
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
}
