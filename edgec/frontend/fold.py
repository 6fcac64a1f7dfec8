"""Build-time computations folded away before canonicalization, so that every shape is static.

Exporters compute shapes in the graph: PyTorch's TorchScript exporter writes Shape -> Gather ->
Unsqueeze -> Concat -> Reshape for `x.view(x.size(0), -1)` and a ConstantOfShape / Slice / Transpose /
Cast chain for the pads of F.pad. onnx's shape inference cannot see through all of that, so the values
after it have no static shape. `fold_constants` evaluates every node whose inputs are all known at
build time (initializers, Constant, the Shape of a tensor of static shape) with onnx's reference
runtime, turns the results into initializers and infers shapes again, until nothing changes. None of
it then runs on the device. Models whose shapes are all static already are returned untouched.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from edgec.limits import DEFAULT as DEFAULT_MEMORY_LIMIT


CONTROL_FLOW = {"If", "Loop", "Scan"}
MAX_ROUNDS = 16


def fold_constants(model: onnx.ModelProto, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> onnx.ModelProto:
    """`model` with every build-time computation folded into initializers, shapes inferred again (none that
    would allocate more than memory_limit bytes)."""
    for _ in range(MAX_ROUNDS):
        if _all_static(model):
            return model
        folded = _fold_once(model, memory_limit)
        if folded is None:
            return model
        model = shape_inference.infer_shapes(folded, strict_mode=True, data_prop=True)
    return model


def static_shape(vi: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    """The static shape of a value, or None if any dimension is unknown."""
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return tuple(dims)


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...] | None]:
    g = model.graph
    return {vi.name: static_shape(vi) for vi in list(g.value_info) + list(g.input) + list(g.output)}


def _all_static(model: onnx.ModelProto) -> bool:
    shapes = _shapes(model)
    inits = {i.name for i in model.graph.initializer}
    if any(n.op_type == "If" for n in model.graph.node):     # its condition may be known at build time
        return False
    return all(shapes.get(o) is not None for n in model.graph.node for o in n.output if o and o not in inits)


def _fold_once(model: onnx.ModelProto, memory_limit: int) -> onnx.ModelProto | None:
    """One pass over the nodes; None when nothing could be folded."""
    from onnx.reference import ReferenceEvaluator

    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    shapes = _shapes(model)
    outputs = {o.name for o in g.output}
    keep, new, changed = [], {}, False
    for n in g.node:
        value = None
        branch = _taken_branch(n, consts)
        if branch is not None:          # an If whose condition is known at build time: the branch it takes
            nodes, values = branch
            keep.extend(nodes)
            for k, v in values.items():
                consts[k] = new[k] = v
            changed = True
            continue
        if n.domain not in ("", "ai.onnx") or n.op_type in CONTROL_FLOW or not n.output:
            keep.append(n)
            continue
        if n.op_type == "Shape" and n.input[0] not in consts and shapes.get(n.input[0]) is not None:
            start = _attr(n, "start", 0)
            end = _attr(n, "end", None)
            value = [np.array(shapes[n.input[0]][start:end], np.int64)]
        elif all(i in consts or i == "" for i in n.input) and not _too_big(n, consts, shapes, memory_limit):
            try:
                inputs = [i for i in n.input if i]
                graph = onnx.helper.make_graph(
                    [n], "fold", [onnx.helper.make_tensor_value_info(i, onnx.TensorProto.UNDEFINED, None)
                                  for i in inputs],
                    [onnx.helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in n.output])
                m = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
                value = ReferenceEvaluator(m).run(None, {i: consts[i] for i in inputs})
            except Exception:       # the canonicalizer says what is wrong with this node, if anything
                value = None
        if value is None or any(o in outputs for o in n.output):
            keep.append(n)
            continue
        for o, v in zip(n.output, value):
            if o:
                consts[o] = new[o] = np.asarray(v)
        changed = True
    if not changed:
        return None
    used = {i for n in keep for i in (*n.input, *subgraph_reads(n))} | outputs
    folded = onnx.ModelProto.FromString(model.SerializeToString())
    fg = folded.graph
    del fg.node[:]
    fg.node.extend(keep)
    inits = [i for i in fg.initializer if i.name in used] + \
        [numpy_helper.from_array(v, k) for k, v in new.items() if k in used]
    del fg.initializer[:]
    fg.initializer.extend(inits)
    real = [i for i in fg.input if i.name not in consts or i.name in used and i.name not in new]
    del fg.input[:]
    fg.input.extend(real)
    del fg.value_info[:]
    return folded


def _taken_branch(n: onnx.NodeProto, consts: dict):
    """An If whose condition is a build-time constant (TorchScript checks a rank or a dimension so, e.g.
    F.local_response_norm): (the nodes of the branch it takes, their values renamed into the graph and its last
    ones writing the If's outputs; the branch's initializers, renamed) -- or None (another node, a condition known
    only at run time, a branch holding a subgraph of its own)."""
    if n.op_type != "If" or n.domain not in ("", "ai.onnx") or n.input[0] not in consts:
        return None
    cond = np.asarray(consts[n.input[0]])
    if cond.size != 1:
        return None
    body = onnx.helper.get_attribute_value(
        next(a for a in n.attribute if a.name == ("then_branch" if bool(cond.reshape(-1)[0]) else "else_branch")))
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for b in body.node for a in b.attribute) \
            or len(body.output) != len(n.output):
        return None
    prefix = f"{n.name or n.output[0]}/"
    local = {o for b in body.node for o in b.output if o} | {i.name for i in body.initializer}
    final = {b.name: o for b, o in zip(body.output, n.output) if b.name in local}
    rename = {x: final.get(x, prefix + x) for x in local}
    nodes = []
    for b in body.node:
        c = onnx.NodeProto.FromString(b.SerializeToString())
        c.name = prefix + (b.name or b.op_type)
        c.input[:] = [rename.get(i, i) for i in b.input]
        c.output[:] = [rename.get(o, o) for o in b.output]
        nodes.append(c)
    for b, o in zip(body.output, n.output):
        if b.name not in final:           # the branch returns an outer value (or one of its initializers) as is
            nodes.append(onnx.helper.make_node("Identity", [rename.get(b.name, b.name)], [o], name=prefix + o))
    values = {rename[i.name]: numpy_helper.to_array(i) for i in body.initializer}
    if any(o in values for o in n.output):
        return None
    return nodes, values


def subgraph_reads(node: onnx.NodeProto) -> set[str]:
    """The values the subgraphs of a node (a Loop's body, an If's branches, nested ones too) read: outer-scope
    values among them (torch.onnx's scripted loop reads the Constants before it) stay in the graph."""
    names: set[str] = set()
    for a in node.attribute:
        for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
            for n in g.node:
                names.update(i for i in n.input if i)
                names |= subgraph_reads(n)
    return names


def _too_big(n, consts: dict, shapes: dict, limit: int) -> bool:
    """Would folding this node allocate more than edgec's memory limit? (Left unfolded, the size check of
    the loader names it.)  From its static output shapes, or from the shape constant of the ops that make
    large tensors from small inputs."""
    sizes = [int(np.prod(shapes[o], dtype=np.int64)) for o in n.output if shapes.get(o) is not None]
    try:
        if n.op_type in ("ConstantOfShape", "Expand") and len(n.input) >= 1:
            dims = consts[n.input[-1 if n.op_type == "Expand" else 0]].astype(np.int64).reshape(-1)
            sizes.append(int(np.prod(np.maximum(dims, 1), dtype=np.float64)))
        elif n.op_type == "Tile":
            sizes.append(int(np.prod(consts[n.input[1]], dtype=np.float64) * consts[n.input[0]].size))
        elif n.op_type == "Range":
            start, stop, step = (float(np.asarray(consts[i]).reshape(-1)[0]) for i in n.input[:3])
            sizes.append(int(abs((stop - start) / step)) if step else 0)
    except (KeyError, ValueError, TypeError, IndexError, OverflowError):
        return False
    return any(8 * s > limit for s in sizes)


def _attr(n, name, default=None):
    for a in n.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default
