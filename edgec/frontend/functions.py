"""Operators ONNX defines as functions, expanded into the operators they are made of.

Many newer operators (LayerNormalization, RMSNormalization, CenterCropPad, ...) are defined by ONNX as a
function of older ones (onnx.defs: a function body, or one built for the node's attributes and input
types). When edgec has no canonicalization of its own for such a node and every operator of its body
is one edgec has, the node is replaced by its body before canonicalization: the shape computations in
it are then folded (edgec/frontend/fold.py) and the rest runs as usual. A node whose body needs operators edgec
lacks stays as it is, and is reported under its own name.
"""
from __future__ import annotations

import onnx
from onnx import defs, helper

# operators whose ONNX function bodies edgec builds (the conformance table counts them as supported)
EXPANDED = {"LayerNormalization", "RMSNormalization", "CenterCropPad", "ReduceL2", "ReduceLogSum", "SwiGLU",
            "RotaryEmbedding"}
FOLDED = {"Shape", "Size", "ConstantOfShape", "Range", "Mod"}     # in bodies: computed at build time only


def expand_functions(model: onnx.ModelProto, supported: set[str], takes_whole: dict | None = None) -> bool:
    """Replace (in place) every node edgec lacks whose ONNX function body it can build; True if any was.
    takes_whole: op type -> (node, input rank, constant names) -> whether edgec's importer takes that node as it
    is."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    g = model.graph
    types = {vi.name: vi.type for vi in list(g.value_info) + list(g.input) + list(g.output)}
    for init in g.initializer:
        types[init.name] = helper.make_tensor_type_proto(init.data_type, list(init.dims))
    consts = {i.name for i in g.initializer} | {o for n in g.node if n.op_type == "Constant" for o in n.output}
    for n in g.node:        # torch.onnx shares equal weights through Identity nodes: those are constants too, and
        # so is a QDQ pair's Clip of a constant (ORT's A16W8 LayerNormalization scale: edgec/frontend/qdq.py)
        if n.op_type in ("Identity", "Clip") and n.input and all(i in consts for i in n.input if i):
            consts.add(n.output[0])
    nodes, changed = [], False
    for k, node in enumerate(g.node):
        body = None
        whole = (takes_whole or {}).get(node.op_type)
        if node.domain in ("", "ai.onnx") and (node.op_type not in supported or
                                               (whole is not None and not whole(node, _rank(types, node), consts))):
            body = _body(node, opset, types)
        if body is None or not all(n.op_type in supported | FOLDED for n in body.node):
            nodes.append(node)
            continue
        nodes += _inline(node, body, f"{node.name or f'{node.op_type}_{k}'}")
        changed = True
    if changed:
        del g.node[:]
        g.node.extend(nodes)
    return changed


def _rank(types: dict, node: onnx.NodeProto) -> int | None:
    t = types.get(node.input[0]) if node.input else None
    return len(t.tensor_type.shape.dim) if t is not None and t.tensor_type.HasField("shape") else None


def _body(node: onnx.NodeProto, opset: int | None, types: dict) -> onnx.FunctionProto | None:
    """The function body of `node` written for the newest opset not above the model's, or None."""
    opset = opset or defs.onnx_opset_version()
    try:
        schema = defs.get_schema(node.op_type, opset)
        plain = [v for v in schema.function_opset_versions if v <= opset]
        dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
        if plain:
            body = schema.get_function_with_opset_version(max(plain))
            return onnx.FunctionProto.FromString(body) if isinstance(body, bytes) else body
        if dependent and all(i in types for i in node.input if i):
            raw = schema.get_context_dependent_function_with_opset_version(
                max(dependent), node.SerializeToString(),
                [types[i].SerializeToString() if i else b"" for i in node.input])
            return onnx.FunctionProto.FromString(raw)
    except Exception:       # no schema or no body for this node: it stays as it is
        return None
    return None


def _inline(node: onnx.NodeProto, fn: onnx.FunctionProto, prefix: str) -> list[onnx.NodeProto]:
    """The body's nodes with the call's inputs, outputs and attributes substituted."""
    rename = {}
    for formal, actual in zip(fn.input, list(node.input) + [""] * len(fn.input)):
        rename[formal] = actual
    for formal, actual in zip(fn.output, list(node.output) + [""] * len(fn.output)):
        rename[formal] = actual or f"{prefix}/{formal}"
    attrs = {a.name: a for a in node.attribute}
    out = []
    for k, n in enumerate(fn.node):
        m = onnx.NodeProto()
        m.CopyFrom(n)
        m.name = f"{prefix}/{n.op_type}_{k}"
        for lst in (m.input, m.output):
            for i, v in enumerate(lst):
                if v:
                    lst[i] = rename.setdefault(v, f"{prefix}/{v}")
        kept = []
        for a in m.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name not in attrs:
                    continue            # the caller left it at its default: so does the body's node
                b = onnx.AttributeProto()
                b.CopyFrom(attrs[a.ref_attr_name])
                b.name = a.name
                kept.append(b)
            else:
                kept.append(a)
        del m.attribute[:]
        m.attribute.extend(kept)
        out.append(m)
    return out
