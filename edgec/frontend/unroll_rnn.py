"""An ONNX GRU / LSTM whose initial state depends on a model input at run time (a streaming model's state given as
a model input), written out step by step in ONNX operators: edgec's recurrent op starts from a constant state, so such
a node was refused. Each gate's input projection over the whole sequence (X W^T + Wb + Rb), then per step the
recurrent product, the gate activations and the state update exactly as ONNX defines them (GRU: z, r, h gates,
linear_before_reset either way; LSTM: i, o, f, c gates); Y, Y_h and Y_c as the node gives them. Forward or reverse,
one direction, the default activations, no clip, no peepholes, no sequence_lens (others stay for the importer,
which names what it does not take)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


class _Writer:
    def __init__(self, base: str):
        self.base, self.nodes, self.inits, self.k = base, [], [], 0

    def fresh(self, tag: str) -> str:
        self.k += 1
        return f"{self.base}/unrolled_{tag}_{self.k}"

    def const(self, value, tag: str) -> str:
        name = self.fresh(tag)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], tag: str, out: str | None = None) -> str:
        out = out or self.fresh(tag)
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.fresh(op)))
        return out


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def run_time_values(model: onnx.ModelProto) -> set[str]:
    """The values that depend on a model input at run time (not through a Shape alone: shapes are static here).
    PyTorch's zero initial state (Shape / Gather / Concat / ConstantOfShape or Expand) is not one of them: the
    importer folds it to a constant."""
    init = {i.name for i in model.graph.initializer}
    live = {i.name for i in model.graph.input if i.name not in init}
    for n in model.graph.node:
        if n.op_type not in ("Shape", "Size") and any(i in live for i in n.input):
            live.update(o for o in n.output if o)
    return live


def _takes(node, consts: dict, live: set[str]) -> bool:
    """A node this rewrite writes out: a GRU / LSTM of one direction whose initial state (h or c) depends on a model
    input at run time (a constant one, or one computed from constants, is the recurrent op's)."""
    if node.op_type not in ("GRU", "LSTM") or node.domain not in ("", "ai.onnx"):
        return False
    states = [i for i in (5, 6) if len(node.input) > i and node.input[i]]
    if not any(node.input[i] in live for i in states):
        return False
    direction = _attr(node, "direction", b"forward")
    plain = (_attr(node, "activations", None) is None and _attr(node, "clip", None) is None
             and not _attr(node, "layout", 0) and not _attr(node, "input_forget", 0))
    extra = [i for i in (4, 7) if len(node.input) > i and node.input[i]]     # sequence_lens, peepholes
    return (plain and not extra and direction in (b"forward", b"reverse", "forward", "reverse")
            and all(len(node.input) > i and node.input[i] in consts for i in (1, 2)))


def _write(node, consts: dict, shapes: dict) -> tuple[list, list]:
    gru = node.op_type == "GRU"
    steps, batch, _ = shapes[node.input[0]]
    W, R = consts[node.input[1]][0], consts[node.input[2]][0]
    hid = R.shape[-1]
    g = 3 if gru else 4
    B = consts[node.input[3]][0] if len(node.input) > 3 and node.input[3] else np.zeros(2 * g * hid, np.float32)
    wr = _Writer(node.name or node.output[0] or node.op_type)
    flat, one = wr.const(np.array([batch, hid], np.int64), "bh"), wr.const(np.array([1, batch, hid], np.int64), "1bh")

    def state(i):
        if len(node.input) > i and node.input[i]:
            return wr.node("Reshape", [node.input[i], flat], "h0")
        return None

    h, c = state(5), (None if gru else state(6))
    zero = wr.const(np.zeros((batch, hid), np.float32), "zero")
    h, c = h or zero, c or zero
    gates = []                                  # X W^T + Wb (+ Rb, but GRU's h gate with linear_before_reset)
    for k in range(g):
        rb = B[g * hid + k * hid:g * hid + (k + 1) * hid]
        bias = B[k * hid:(k + 1) * hid] + (0 if gru and k == 2 else rb)
        xw = wr.node("MatMul", [node.input[0], wr.const(W[k * hid:(k + 1) * hid].T.astype(np.float32), "W")], "xw")
        gates.append(wr.node("Add", [xw, wr.const(bias.astype(np.float32), "b")], "xwb"))
    rec = [wr.const(R[k * hid:(k + 1) * hid].T.astype(np.float32), "R") for k in range(g)]
    order = range(steps - 1, -1, -1) if _attr(node, "direction", b"forward") in (b"reverse", "reverse") else range(steps)
    axis, ys = wr.const(np.array([0], np.int64), "axis"), {}
    for t in order:
        at = [wr.const(np.array([t], np.int64), "t"), wr.const(np.array([t + 1], np.int64), "t1"), axis]
        x = [wr.node("Reshape", [wr.node("Slice", [p, *at], "xt"), flat], "xt") for p in gates]
        hr = [wr.node("MatMul", [h, r], "hr") for r in rec]
        if gru:
            z = wr.node("Sigmoid", [wr.node("Add", [x[0], hr[0]], "z")], "z")
            r = wr.node("Sigmoid", [wr.node("Add", [x[1], hr[1]], "r")], "r")
            rbh = wr.const(B[g * hid + 2 * hid:].astype(np.float32), "rbh")
            if _attr(node, "linear_before_reset", 0):
                cand = wr.node("Mul", [r, wr.node("Add", [hr[2], rbh], "hrb")], "rh")
            else:
                cand = wr.node("Add", [wr.node("MatMul", [wr.node("Mul", [r, h], "rh"), rec[2]], "rhR"), rbh], "rhRb")
            n = wr.node("Tanh", [wr.node("Add", [x[2], cand], "n")], "n")
            h = wr.node("Add", [n, wr.node("Mul", [z, wr.node("Sub", [h, n], "hn")], "zhn")], "h")   # (1-z)n + zh
        else:
            i, o, f = (wr.node("Sigmoid", [wr.node("Add", [x[k], hr[k]], "g")], "g") for k in (0, 1, 2))
            cand = wr.node("Tanh", [wr.node("Add", [x[3], hr[3]], "c")], "c")
            c = wr.node("Add", [wr.node("Mul", [f, c], "fc"), wr.node("Mul", [i, cand], "ic")], "c")
            h = wr.node("Mul", [o, wr.node("Tanh", [c], "tc")], "h")
        ys[t] = h
    outs = list(node.output) + [""] * 3
    if outs[0]:
        step = wr.const(np.array([1, 1, batch, hid], np.int64), "11bh")
        wr.nodes.append(helper.make_node("Concat", [wr.node("Reshape", [ys[t], step], "y") for t in range(steps)],
                                         [outs[0]], axis=0, name=wr.fresh("Concat")))
    if outs[1]:
        wr.node("Reshape", [h, one], "yh", outs[1])
    if outs[2] and not gru:
        wr.node("Reshape", [c, one], "yc", outs[2])
    return wr.nodes, wr.inits


def unroll_state_inputs(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """The model with every GRU / LSTM of a non-constant initial state written out (shapes inferred before), or
    None when it has none."""
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    live = run_time_values(model)
    todo = {k for k, n in enumerate(model.graph.node) if _takes(n, consts, live)}
    if not todo:
        return None
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    if any(not shapes.get(model.graph.node[k].input[0]) or 0 in shapes[model.graph.node[k].input[0]] for k in todo):
        return None
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes = []
    for k, n in enumerate(model.graph.node):
        if k in todo:
            written, inits = _write(n, consts, shapes)
            nodes += written
            out.graph.initializer.extend(inits)
        else:
            nodes.append(n)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out
