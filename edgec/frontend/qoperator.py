"""QOperator models (ONNX Runtime's quantize_static with QuantFormat.QOperator, the ONNX model zoo's `-int8` files):
integer operators rewritten into the QDQ form edgec/frontend/qdq.py takes.

A QOperator file computes on integer tensors: QuantizeLinear at the input, then QLinearConv, QLinearMatMul and
ONNX Runtime's com.microsoft QGemm, QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool,
QLinearConcat, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, each with its inputs' and its output's scale and
zero point as inputs; data movement (Reshape, Flatten, Transpose, MaxPool, Slice, ...) on the integers in between;
DequantizeLinear at the outputs. Its meaning is the QDQ graph: every integer activation x of grid (s, z) stands for
the float (x - z) s. `to_qdq` writes that graph:

- each QLinear* node becomes its float operator, its integer activation inputs read as the floats they stand for
  (the same tensor names, now float), its constant (or integer graph input) operands through a DequantizeLinear
  with the node's scale and zero point (per channel: axis 0 of a Conv's or transposed Gemm's weights, the last axis
  of a MatMul's), a Conv's / QGemm's int32 bias through a DequantizeLinear of scale x_scale * w_scale (ORT's QDQ
  bias), and its output through QuantizeLinear -> DequantizeLinear with the node's output grid;
- a QuantizeLinear of an activation becomes QuantizeLinear -> DequantizeLinear (the output name now the float);
  a DequantizeLinear of such an activation becomes an Identity;
- the data-movement nodes between them are kept: they move grid values, which they do as well in float.

What is refused, every node in one line: a QLinear* operator this table does not have (QLinearConvTranspose,
QLinearWhere, ...), a QGemm whose alpha is not 1 with a bias, a QLinearSoftmax of opset < 13 over an axis other than
the last, a QLinear* pool with channels_last, and ONNX Runtime's dynamic quantization (DynamicQuantizeLinear,
MatMulInteger, ConvInteger: each activation's grid computed at run time, which an int8 firmware has not; give edgec
the float model, or quantize_static's file).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgec.errors import EdgecError

MS = "com.microsoft"
DYNAMIC = ("DynamicQuantizeLinear", "MatMulInteger", "ConvInteger")


def _layout(node) -> tuple[str, list[tuple[int, int, int]], tuple[int, int] | None, int | None] | None:
    """A QOperator node's float operator, its quantized inputs as (value, scale, zero point) input indices, its
    output grid's (scale, zero point) indices (None: a float output) and its int32 bias's index (None: none)."""
    op, n = node.op_type, len(node.input)
    if op == "QLinearConv":
        return "Conv", [(0, 1, 2), (3, 4, 5)], (6, 7), 8 if n > 8 and node.input[8] else None
    if op == "QLinearMatMul":
        return "MatMul", [(0, 1, 2), (3, 4, 5)], (6, 7), None
    if op == "QGemm":
        out = (7, 8) if n > 7 and node.input[7] else None
        return "Gemm", [(0, 1, 2), (3, 4, 5)], out, 6 if n > 6 and node.input[6] else None
    if op in ("QLinearAdd", "QLinearMul"):
        return op[7:], [(0, 1, 2), (3, 4, 5)], (6, 7), None
    if op in ("QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearSigmoid", "QLinearLeakyRelu",
              "QLinearSoftmax"):
        return op[7:], [(0, 1, 2)], (3, 4), None
    if op == "QLinearConcat":
        return "Concat", [(i, i + 1, i + 2) for i in range(2, n, 3)], (0, 1), None
    return None


def is_qoperator(model: onnx.ModelProto) -> bool:
    return any(n.op_type.startswith("QLinear") or n.op_type == "QGemm" or n.op_type in DYNAMIC
               for n in model.graph.node)


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _problem(node, attrs) -> str | None:
    if node.op_type in DYNAMIC:
        return "ONNX Runtime's dynamic quantization (activation grids computed at run time; give edgec the " \
               "float model or quantize_static's file)"
    if _layout(node) is None:
        return "QOperator operator edgec does not rewrite: quantize with QuantFormat.QDQ, or give edgec the float model"
    if attrs.get("channels_last", 0):
        return "channels_last pooling"
    if node.op_type == "QGemm" and attrs.get("alpha", 1.0) != 1.0 and _layout(node)[3] is not None:
        return "alpha other than 1 with a bias"
    if node.op_type == "QLinearSoftmax" and attrs.get("opset", 13) < 13 and attrs.get("axis", -1) != -1:
        return "Softmax of opset < 13 over an axis other than the last"
    return None


def to_qdq(model: onnx.ModelProto, where="model") -> onnx.ModelProto:
    """The QDQ model a QOperator model describes (the model itself when it has no QOperator node)."""
    if not is_qoperator(model):
        return model
    g = model.graph
    bad: dict[str, dict[str, list[str]]] = {}   # reason -> operator -> its nodes: one line names them all
    for node in g.node:
        if node.op_type.startswith("QLinear") or node.op_type == "QGemm" or node.op_type in DYNAMIC:
            why = _problem(node, _attrs(node))
            if why:
                bad.setdefault(why, {}).setdefault(node.op_type, []).append(node.name or node.output[0])
    if bad:
        raise EdgecError(f"{where}: an ONNX model of integer operators edgec cannot rewrite as QDQ: " + "; ".join(
            f"{why}: " + ", ".join(f"{op} x{len(names)} ({', '.join(names[:2])}"
                                    f"{f' and {len(names) - 2} more' if len(names) > 2 else ''})"
                                    for op, names in ops.items()) for why, ops in bad.items()))
    consts = {i.name: i for i in g.initializer}
    for node in g.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            consts[node.output[0]] = node.attribute[0].t
    values = lambda name: numpy_helper.to_array(consts[name])           # noqa: E731
    int_inputs = {i.name for i in g.input if i.type.tensor_type.elem_type != onnx.TensorProto.FLOAT
                  and i.name not in consts}
    new_inits, nodes, count = [], [], [0]

    def fresh(base):
        count[0] += 1
        return f"{base}__qop{count[0]}"

    def dequantized(value, scale, zero, axis=None):
        """A constant's or an integer graph input's float through a DequantizeLinear (an activation: itself)."""
        if value not in consts and value not in int_inputs:
            return value
        out = fresh(value)
        kw = {"axis": axis} if axis is not None and np.size(values(scale)) > 1 else {}
        nodes.append(helper.make_node("DequantizeLinear", [value, scale] + ([zero] if zero else []), [out], name=out,
                                      **kw))
        return out

    def requantized(node, out_idx, produced, name):
        scale, zero = node.input[out_idx[0]], node.input[out_idx[1]]
        q = fresh(name)
        nodes.append(helper.make_node("QuantizeLinear", [produced, scale, zero], [q], name=q))
        nodes.append(helper.make_node("DequantizeLinear", [q, scale, zero], [name], name=fresh(name)))

    for node in g.node:
        if node.op_type == "QuantizeLinear" and node.input[0] not in consts:
            scale, zero = node.input[1], node.input[2] if len(node.input) > 2 else ""
            q = fresh(node.output[0])
            nodes.append(helper.make_node("QuantizeLinear", [node.input[0], scale, zero], [q], name=node.name,
                                          **_attrs(node)))
            nodes.append(helper.make_node("DequantizeLinear", [q, scale, zero], [node.output[0]], name=fresh(q),
                                          **_attrs(node)))
            continue
        if node.op_type == "DequantizeLinear" and node.input[0] not in consts and node.input[0] not in int_inputs:
            nodes.append(helper.make_node("Identity", [node.input[0]], [node.output[0]], name=node.name))
            continue
        layout = _layout(node) if node.domain in ("", "ai.onnx", MS) else None
        if layout is None:
            nodes.append(node)
            continue
        op, triples, out_idx, bias = layout
        attrs = {k: v for k, v in _attrs(node).items() if k not in ("channels_last", "opset")}
        rank_w = len(consts[node.input[3]].dims) if len(triples) > 1 and node.input[3] in consts else 2
        axes = {"Conv": 0, "MatMul": rank_w - 1, "Gemm": 0 if attrs.get("transB", 0) else 1}
        ins = [dequantized(node.input[v], node.input[s], node.input[z], axes.get(op) if k == 1 else None)
               for k, (v, s, z) in enumerate(triples)]
        if bias is not None:
            b_scale = fresh(node.input[bias] + "_scale")
            new_inits.append(numpy_helper.from_array(
                (values(node.input[1]).astype(np.float32) * values(node.input[4]).astype(np.float32))
                .astype(np.float32).reshape(-1), b_scale))
            consts[b_scale] = new_inits[-1]
            ins.append(dequantized(node.input[bias], b_scale, "", 0))
        name = node.output[0]
        produced = fresh(name) if out_idx else name
        nodes.append(helper.make_node(op, ins, [produced], name=node.name or fresh(op), **attrs))
        if out_idx:
            requantized(node, out_idx, produced, name)
    g.ClearField("node")
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    del g.value_info[:]      # the integer activations are floats now: shape inference types them again
    for o in g.output:
        if o.type.tensor_type.elem_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
            raise EdgecError(f"{where}: the QOperator model's output '{o.name}' is integer: edgec takes QOperator "
                             "models whose outputs are DequantizeLinear'd (ONNX Runtime's quantize_static)")
    keep = [o for o in model.opset_import if o.domain != MS or any(n.domain == MS for n in g.node)]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    return model
