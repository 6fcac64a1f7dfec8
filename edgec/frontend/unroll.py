"""ONNX Loops with a trip count known at build time, and Scans of a length known at build time, unrolled into the
graph before canonicalization.

tf2onnx leaves a Keras 3 LSTM or GRU (rolled, as Keras writes it) as an ONNX `Loop` whose body is one time step:
its trip count is the number of frames (a constant once the batch is pinned and shapes are folded), its
condition compares counters that start as constants, and its carried values are the recurrent state (and the
cell's weights, passed through unchanged). Such a loop is nothing but its body written out once per iteration:
`unroll_loops` writes it so (each iteration's values renamed, the iteration number a constant), evaluating at
build time whatever the body computes from constants only (the counters, the condition), so that the condition
of every iteration is known. Loop outputs: the last iteration's carried values, and each scan output the
iterations' values stacked on a new first axis (Unsqueeze + Concat).

A Loop whose body is exactly a Keras GRU or LSTM cell never gets here: edgec/frontend/loop_recurrent.py makes it
one ONNX GRU / LSTM node first (edgec's own op). A Loop is left as it is (and the canonicalizer refuses it as control flow, naming it) when its trip count or
condition is not known at build time, when its body holds a subgraph of its own, or when unrolling it would write
more than MAX_NODES nodes.

tf2onnx writes a TF1 `dynamic_rnn` (a while loop over a TensorArray) as a `Scan` over the time-major frames, its
carried state the cell's state and a step counter: `unroll_scans` splits each scan input into one slice a step and
writes the body once per step the same way; a Scan whose scan inputs' length is not known is left to be refused.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

MAX_NODES = 20000        # nodes written for one Loop (a 100-step LSTM cell of ~40 nodes is 4,000)
MAX_TRIPS = 4096


def unroll_loops(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """`model` with every Loop it can unroll written out, or None if it has none."""
    def rewrite(n, k, consts, opset, added, swaps):
        try:
            return _unroll(n, k, consts, opset)
        except (ValueError, TypeError, IndexError, KeyError):   # a malformed Loop: the canonicalizer names it
            return None
    return rewrite_loops(model, rewrite)


def unroll_scans(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """`model` with every Scan of a length known at build time written out (tf2onnx writes a TF1 `dynamic_rnn`,
    e.g. Arm's ML-KWS-for-MCU GRU / LSTM / CRNN keyword models, as a Scan over the frames), or None if it has none."""
    shapes = {v.name: [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
              for v in [*model.graph.input, *model.graph.value_info]}
    shapes.update({i.name: list(i.dims) for i in model.graph.initializer})

    def rewrite(n, k, consts, opset, added, swaps):
        try:
            return _unroll_scan(n, k, consts, opset, shapes)
        except (ValueError, TypeError, IndexError, KeyError):   # a malformed Scan: the canonicalizer names it
            return None
    return rewrite_loops(model, rewrite, "Scan")


def is_loop(n: onnx.NodeProto, kind: str = "Loop") -> bool:
    return n.op_type == kind and n.domain in ("", "ai.onnx")


def rewrite_loops(model: onnx.ModelProto, rewrite, kind: str = "Loop") -> onnx.ModelProto | None:
    """The walk both Loop rewriters share: `model` with each Loop node `n` (the k-th node) replaced by the nodes
    `rewrite(n, k, consts, opset, added, swaps)` returns (None: left as it is), or None if nothing changed.
    `consts` holds the initializers' values (a rewriter may add the values it evaluates, seen by the Loops after
    it), `added` the new constants a rewriter writes, `swaps` the nodes to put in place of a later node (by id).
    New constants read by a node or a graph output become initializers."""
    g = model.graph
    if not any(is_loop(n, kind) for n in g.node):
        return None
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    nodes, added, swaps, changed = [], {}, {}, False
    for k, n in enumerate(g.node):
        written = swaps.get(id(n))
        if is_loop(n, kind):
            written = rewrite(n, k, consts, opset, added, swaps)
        if written is None:
            nodes.append(n)
        else:
            nodes.extend(written)
            changed = True
    if not changed:
        return None
    out = onnx.ModelProto.FromString(model.SerializeToString())
    used = {i for n in nodes for i in n.input} | {o.name for o in g.output}
    have = {i.name for i in g.initializer}
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), name)
                                 for name, v in {**consts, **added}.items() if name in used and name not in have)
    del out.graph.value_info[:]
    return out


def _unroll(loop: onnx.NodeProto, index: int, consts: dict, opset: int) -> list[onnx.NodeProto] | None:
    body = next((a.g for a in loop.attribute if a.name == "body"), None)
    if body is None or len(loop.input) < 2:
        return None
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in body.node for a in n.attribute):
        return None
    trips = loop.input[0] if loop.input else ""
    cond = loop.input[1] if len(loop.input) > 1 else ""
    if (trips and trips not in consts) or (cond and cond not in consts):
        return None
    limit = int(np.asarray(consts[trips]).reshape(-1)[0]) if trips else MAX_TRIPS + 1
    go = bool(np.asarray(consts[cond]).reshape(-1)[0]) if cond else True
    if limit > MAX_TRIPS or limit * len(body.node) > MAX_NODES:
        return None
    n_carried = len(loop.input) - 2
    if len(body.input) != n_carried + 2 or len(body.output) < 1 + n_carried:
        return None
    carried = list(loop.input[2:])
    scans: list[list[str]] = [[] for _ in body.output[1 + n_carried:]]
    local = {**consts, **{i.name: numpy_helper.to_array(i) for i in body.initializer}}
    written: list[onnx.NodeProto] = []
    prefix = f"{loop.name or f'loop{index}'}/unrolled"
    it = 0
    while go and it < limit:
        names = {body.input[0].name: f"{prefix}/{it}/iteration", body.input[1].name: f"{prefix}/{it}/cond_in"}
        local[names[body.input[0].name]] = np.array(it, np.int64)
        local[names[body.input[1].name]] = np.array(go)
        names.update({vi.name: c for vi, c in zip(body.input[2:], carried)})
        for j, node in enumerate(body.node):
            for o in node.output:
                if o:
                    names[o] = f"{prefix}/{it}/{o}"
            step = helper.make_node(node.op_type, [names.get(i, i) if i else "" for i in node.input],
                                    [names[o] if o else "" for o in node.output],
                                    name=f"{prefix}/{it}/{node.name or j}", domain=node.domain)
            step.attribute.extend(node.attribute)
            if not evaluate_node(step, local, opset):
                written.append(step)
        outs = [names.get(o.name, o.name) for o in body.output]
        if outs[0] not in local:               # the condition is computed from run-time values
            return None
        go = bool(np.asarray(local[outs[0]]).reshape(-1)[0])
        carried = outs[1:1 + n_carried]
        for s, name in zip(scans, outs[1 + n_carried:]):
            s.append(name)
        it += 1
    if it == 0 and scans:
        return None                            # (an empty scan output has no shape the graph could take)
    consts.update({k: v for k, v in local.items() if k not in consts})
    for o, c in zip(loop.output[:n_carried], carried):
        if o:
            written.append(helper.make_node("Identity", [c], [o], name=f"{prefix}/{o}"))
    for o, s in zip(loop.output[n_carried:], scans):
        if o:
            written.extend(_stack(o, s, prefix, consts, opset))
    return written


def _unroll_scan(scan: onnx.NodeProto, index: int, consts: dict, opset: int, shapes: dict):
    """A Scan (opset 9 on) written out: its scan inputs split along their axes into one slice a step (reversed
    where its direction says so), its body written once per step, its state carried, its scan outputs stacked."""
    attrs = {a.name: a for a in scan.attribute}
    body = attrs["body"].g if "body" in attrs else None
    if body is None or opset < 9:
        return None
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in body.node for a in n.attribute):
        return None
    m = attrs["num_scan_inputs"].i
    n_state = len(scan.input) - m
    ints = {k: list(attrs[k].ints) if k in attrs else [] for k in
            ("scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions")}
    xs = list(scan.input[n_state:])
    in_axes = [(a + len(shapes[x])) % len(shapes[x]) for a, x in zip(ints["scan_input_axes"] or [0] * m, xs)]
    steps = {shapes[x][a] for x, a in zip(xs, in_axes)}
    if len(steps) != 1 or None in steps or n_state < 0 or len(body.input) != n_state + m:
        return None
    limit = steps.pop()
    n_out = len(body.output) - n_state
    if limit < 1 or limit > MAX_TRIPS or limit * (len(body.node) + 2) > MAX_NODES or n_out < 0:
        return None
    prefix = f"{scan.name or f'scan{index}'}/unrolled"
    written, slices = [], []
    for j, (x, axis) in enumerate(zip(xs, in_axes)):
        parts = [f"{prefix}/in{j}/{t}" for t in range(limit)]
        sizes = f"{prefix}/in{j}/sizes"
        consts[sizes] = np.ones(limit, np.int64)
        split = (helper.make_node("Split", [x, sizes], parts, axis=axis, name=f"{prefix}/in{j}") if opset >= 13 else
                 helper.make_node("Split", [x], parts, axis=axis, split=[1] * limit, name=f"{prefix}/in{j}"))
        squeezed = []
        for t, part in enumerate(parts):
            written_axes = f"{prefix}/in{j}/axes"
            consts[written_axes] = np.array([axis], np.int64)
            squeezed.append(helper.make_node("Squeeze", [part, written_axes] if opset >= 13 else [part],
                                             [f"{part}/slice"], name=f"{part}/slice",
                                             **({} if opset >= 13 else {"axes": [axis]})))
        written += [split, *squeezed]
        order = [q.output[0] for q in squeezed]
        slices.append(order[::-1] if (ints["scan_input_directions"] or [0] * m)[j] else order)
    state = list(scan.input[:n_state])
    outs: list[list[str]] = [[] for _ in range(n_out)]
    local = {**consts, **{i.name: numpy_helper.to_array(i) for i in body.initializer}}
    for t in range(limit):
        names = {vi.name: c for vi, c in zip(body.input, state + [s[t] for s in slices])}
        for j, node in enumerate(body.node):
            names.update({o: f"{prefix}/{t}/{o}" for o in node.output if o})
            step = helper.make_node(node.op_type, [names.get(i, i) if i else "" for i in node.input],
                                    [names[o] if o else "" for o in node.output],
                                    name=f"{prefix}/{t}/{node.name or j}", domain=node.domain)
            step.attribute.extend(node.attribute)
            if not evaluate_node(step, local, opset):
                written.append(step)
        res = [names.get(o.name, o.name) for o in body.output]
        state = res[:n_state]
        for o, name in zip(outs, res[n_state:]):
            o.append(name)
    consts.update({k: v for k, v in local.items() if k not in consts})
    for o, c in zip(scan.output[:n_state], state):
        if o:
            written.append(helper.make_node("Identity", [c], [o], name=f"{prefix}/{o}"))
    axes_out = ints["scan_output_axes"] or [0] * n_out
    dirs_out = ints["scan_output_directions"] or [0] * n_out
    for o, values, axis, back in zip(scan.output[n_state:], outs, axes_out, dirs_out):
        if o:
            written.extend(_stack(o, values[::-1] if back else values, prefix, consts, opset, axis))
    return written


def _stack(out: str, values: list[str], prefix: str, consts: dict, opset: int, axis: int = 0) -> list[onnx.NodeProto]:
    """Nodes writing `out` = the values stacked on a new axis `axis` (0: first)."""
    nodes, parts = [], []
    for k, v in enumerate(values):
        part = f"{prefix}/{out}/{k}"
        if opset >= 13:
            axes = f"{prefix}/{out}/axes"
            consts[axes] = np.array([axis], np.int64)
            nodes.append(helper.make_node("Unsqueeze", [v, axes], [part], name=part))
        else:
            nodes.append(helper.make_node("Unsqueeze", [v], [part], axes=[axis], name=part))
        parts.append(part)
    nodes.append(helper.make_node("Concat", parts, [out], axis=axis, name=f"{prefix}/{out}"))
    return nodes


def evaluate_node(node: onnx.NodeProto, consts: dict, opset: int) -> bool:
    """Evaluate a node whose inputs are all constants into `consts` (True), or leave it to the graph (False)."""
    inputs = [i for i in node.input if i]
    if not all(i in consts for i in inputs) or node.domain not in ("", "ai.onnx"):
        return False
    from onnx.reference import ReferenceEvaluator
    try:
        graph = helper.make_graph(
            [node], "step", [helper.make_tensor_value_info(i, onnx.TensorProto.UNDEFINED, None) for i in inputs],
            [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output if o])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        values = ReferenceEvaluator(m).run(None, {i: consts[i] for i in inputs})
    except Exception:          # noqa: BLE001  (left to the graph: the canonicalizer says what is wrong with it)
        return False
    for o, v in zip([o for o in node.output if o], values):
        consts[o] = np.asarray(v)
    return True
