"""ONNX comparisons (Greater, GreaterOrEqual, Less, LessOrEqual, Equal) as the package's `binary` kind: TFLite's
comparison arithmetic, a bool mask out (one byte, 0 or 1, never quantized) that a Where reads (edgec/ops/where.py).
ONNX's boolean logic of such masks (And, Or, Xor, Not; what torch.onnx exports for F.hardshrink or a mask of two
comparisons) is the same kind on the bool bytes: TFLite's LOGICAL_AND / LOGICAL_OR, Xor as NOT_EQUAL of two masks
and Not as NOT_EQUAL to a constant true (as edgec/ops/binary/tflite.py reads LOGICAL_NOT)."""
from __future__ import annotations

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import NO_ACT, SYNTHETIC
from edgec.ops.movement import RANK, in_layout

OPS: list = []      # no kind of its own: the kinds are the package's (__init__.py)
KERNELS: list = []

COMPARE = {"Greater": "greater", "GreaterOrEqual": "greater_equal", "Less": "less", "LessOrEqual": "less_equal",
           "Equal": "equal"}


def _emit_mask(cx, node, op: str, bool_const: bool = False):
    """The `binary` op `op` of node's two inputs (one may be a constant), its output a bool mask."""
    a, b = node.input
    out = node.output[0]
    yshape = tuple(cx.shape(out, node))
    r = len(yshape)
    if r > RANK:
        raise node_error(node, f"broadcasting over {r} dimensions is not supported (at most {RANK})")
    if a in cx.consts and b in cx.consts:
        raise node_error(node, "both operands are constants (nothing computed at run time)")
    acts = [v for v in (a, b) if v not in cx.consts]
    full = [v for v in acts if len(cx.shape(v, node)) == r]
    perm = cx.activation(full[0], node)[1] if full else tuple(range(r))
    inputs, shapes, const, first = [], [], None, False
    for k, v in enumerate((a, b)):
        shape = (1,) * (r - len(cx.shape(v, node))) + tuple(cx.shape(v, node))
        if v in cx.consts:
            const = np.asarray(cx.consts[v], np.float32).reshape(shape).transpose(perm)
            first = k == 0
        else:
            inputs.append(in_layout(cx, v, r, perm, node))
        shapes.append(tuple(shape[p] for p in perm))
    t = cx.new_tensor(out, tuple(yshape[p] for p in perm) or (1,), out)
    cx.graph.retensor(t, dtype="bool", scale=1.0, zero_point=0)
    cx.emit("binary", node, inputs, t, op=op, a_shape=shapes[0], b_shape=shapes[1],
            const=const, const_first=first, act=NO_ACT, common_scale=True, bool_const=bool_const)
    cx.values[out] = (t, perm)


LOGIC = {"And": "logical_and", "Or": "logical_or", "Xor": "not_equal", "Not": "not_equal"}


def import_logic(cx, node):
    """And / Or / Xor of two bool masks or of a mask and a bool constant (stored as its 0 / 1 bytes), Not of one
    mask (NOT_EQUAL to a stored true): one bool byte out. A value (not a comparison's mask) is refused."""
    if node.op_type == "Not":
        true = f"{SYNTHETIC}{node.output[0]}__true"
        cx.consts[true] = np.array(True)
        node = onnx.helper.make_node("Not", [node.input[0], true], list(node.output), name=node.name)
    for v in node.input:
        if v not in cx.consts and cx.graph.tensors[cx.activation(v, node)[0]].dtype != "bool":
            raise node_error(node, f"{node.op_type} of a value is not supported (of comparisons' bool masks: "
                                   "Greater, Less, Equal..., or of constants)")
    _emit_mask(cx, node, LOGIC[node.op_type], bool_const=True)


def import_compare(cx, node):
    """Greater / Less / ... / Equal of two activations or of an activation and a constant: the binary family's
    TFLite comparison (both operands rescaled, then compared; `common_scale`: their multipliers taken relative to
    the larger scale, so any two grids compare), a bool output (one byte, 0 or 1, never quantized) that a Where
    reads as its mask. A peak test of a strictly increasing function's values is made on its input (`_peak_test`)."""
    for v in node.input:
        if v not in cx.consts and cx.graph.tensors[cx.activation(v, node)[0]].dtype == "bool":
            raise node_error(node, f"{node.op_type} of a bool tensor is not supported (of values)")
    _emit_mask(cx, _peak_test(cx, node), COMPARE[node.op_type])


# ONNX functions that are strictly increasing: f(a) = f(b) exactly when a = b, so MaxPool(f(x)) = f(x) exactly where
# MaxPool(x) = x (f(max) = max f); their int8 tables are non-decreasing (rounding and the clamp keep the order)
INCREASING = {"Sigmoid", "Tanh", "Exp", "Erf", "Atan", "Softsign", "Asinh", "Sinh"}


def _peak_test(cx, node):
    """`Equal(MaxPool(f(x)), f(x))` (a CenterNet heat map's peak test, f a Sigmoid...) as `Equal(MaxPool(x), x)`,
    the same mask in exact arithmetic, else node as it is. In int8 the table f maps several levels of x to one of
    its output (its slope below the grids' ratio), so two neighbours a level apart in x become a tie in f(x) and
    both pass as peaks; compared on x (whose max pool keeps x's grid) the test keeps only the ties x itself has:
    never more peaks than the test on f(x), as a non-decreasing table keeps max f = f(max). (In float32 a saturated
    f ties too, Sigmoid above 17: there the float model marks both neighbours, this test the larger.)"""
    if node.op_type != "Equal" or any(v in cx.consts for v in node.input):
        return node
    made = {o: n for _, n in cx.nodes for o in n.output}
    for pool, value in (node.input, node.input[::-1]):
        mp, fn = made.get(pool), made.get(value)
        if (mp is None or fn is None or mp.op_type != "MaxPool" or list(mp.input) != [value]
                or len([o for o in mp.output if o]) != 1 or fn.op_type not in INCREASING or len(fn.input) != 1
                or fn.input[0] in cx.consts or fn.input[0] not in cx.values):
            continue
        from edgec.ops.pool import import_max_pool

        x = fn.input[0]
        pre = f"{SYNTHETIC}{mp.output[0]}__of_{x}"
        if pre not in cx.values:
            twin = onnx.NodeProto()
            twin.CopyFrom(mp)
            del twin.input[:]
            del twin.output[:]
            twin.input.append(x)
            twin.output.append(pre)
            cx.shapes[pre] = cx.shape(pool, node)   # x has f(x)'s shape: the pool's output has the pool's
            import_max_pool(cx, twin)
            t = cx.values[pre][0]       # its grid is x's (a max pool keeps its input's): no range of its own
            cx.graph.retensor(t, source=cx.graph.tensors[cx.activation(x, node)[0]].source)
        return onnx.helper.make_node("Equal", [pre, x] if pool == node.input[0] else [x, pre], list(node.output),
                                     name=node.name)
    return node


def import_cast_to_bool(cx, node):
    """Cast of a value to bool (ONNX: x != 0): the comparison NOT_EQUAL to a constant 0 held on the value's own grid
    (binary/__init__.py quantize_binary), so a value is true exactly when its integer is not the zero point."""
    zero = f"{SYNTHETIC}{node.output[0]}__zero"
    cx.consts[zero] = np.array(0.0, np.float32)
    _emit_mask(cx, onnx.helper.make_node("NotEqual", [node.input[0], zero], list(node.output), name=node.name),
               "not_equal")


ONNX = {**{k: import_compare for k in COMPARE}, **{k: import_logic for k in LOGIC}}
