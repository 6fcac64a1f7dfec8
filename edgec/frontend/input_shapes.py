"""A model's graph input shapes made static before shape inference (edgec/frontend/loader.py's `prepare`).

A dynamic batch dimension (dimension 0) is pinned to 1. Every other symbolic or unknown input dimension (a
torch.onnx export with `dynamic_axes={"x": {0: "batch", 2: "T"}}`: the time axis of an audio or 1-D model) takes
its size from the calibration set: the sample shape of its array (`x` (N, *input shape without batch), `x_<name>`
for one of several inputs; only the arrays' .npy headers are read, edgec/data.py `sample_shapes`). A dimension
name shared by several inputs must get one size from all of them. Without a calibration set, or when the set cannot
give the size, one line names the input, the axis and its name and says what to do; `edgec inspect` without one
says what it can (`unsized`: every node and whether edgec has its operator, the shapes left unknown)."""
from __future__ import annotations

from pathlib import Path

import onnx

from edgec import data
from edgec.errors import EdgecError


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The real inputs (ONNX lists initializers as inputs in old IR versions)."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _dynamic(model: onnx.ModelProto) -> list[tuple[onnx.ValueInfoProto, int, onnx.TensorShapeProto.Dimension]]:
    """(input, axis, dimension) of every input dimension after the batch one whose size the file does not fix."""
    return [(vi, i, d) for vi in graph_inputs(model) for i, d in enumerate(vi.type.tensor_type.shape.dim)
            if i > 0 and not d.HasField("dim_value")]


def has_dynamic_axes(model: onnx.ModelProto) -> bool:
    """An input dimension other than the batch that only the calibration set can fix."""
    return bool(_dynamic(model))


def _named(i: int, d) -> str:
    return f"dimension {i} ('{d.dim_param}')" if d.dim_param else f"dimension {i} (unnamed)"


def pin_inputs(model: onnx.ModelProto, where, calib: str | Path | None = None) -> None:
    """Pin, in place, the batch dimension of the inputs and outputs to 1 and every other dynamic input dimension
    to the calibration set's size along it (see the module's text)."""
    inputs = graph_inputs(model)
    if not inputs or not model.graph.output:
        raise EdgecError(f"{where}: the model has {len(inputs)} inputs and {len(model.graph.output)} outputs; "
                         "edgec builds models that compute an output from an input")
    for vi in list(inputs) + list(model.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and not dims and vi in inputs:
            raise EdgecError(f"{where}: input '{vi.name}' is a scalar (rank 0); edgec builds models whose input and "
                             "output are tensors: export the model with a batch dimension (e.g. shape [1])")
        if dims and not dims[0].HasField("dim_value"):
            dims[0].dim_value = 1          # dynamic batch -> 1
    dynamic = _dynamic(model)
    if not dynamic:
        return
    if calib is None:
        vi, i, d = dynamic[0]
        raise EdgecError(f"{where}: input '{vi.name}' has a dynamic {_named(i, d)}; edgec takes its size from the "
                         "calibration set: give --calib FILE.npz (x: N samples of the input's shape; edgec inspect "
                         "reads it too), or export the model with a fixed input shape")
    shapes = data.sample_shapes(calib)
    sizes: dict[str, tuple[int, str, int]] = {}       # dimension name -> (size, input, axis)
    for vi, i, d in dynamic:
        key = "x" if len(inputs) == 1 else f"x_{vi.name}"
        rank = len(vi.type.tensor_type.shape.dim)
        shape = shapes.get(key)
        if shape is None or len(shape) != rank or shape[i] < 1:
            got = "has no array '" + key + "'" if shape is None else f"has {key} shaped {list(shape)}"
            want = ", ".join(str(x.dim_value) if x.HasField("dim_value") else (x.dim_param or "?")
                             for x in vi.type.tensor_type.shape.dim[1:])
            raise EdgecError(f"{where}: input '{vi.name}' has a dynamic {_named(i, d)}, taken from the calibration "
                             f"set, but {calib} {got}; give {key} shaped (N, {want}) with every size at least 1, or "
                             "export the model with a fixed input shape")
        size = int(shape[i])
        if d.dim_param and sizes.setdefault(d.dim_param, (size, vi.name, i))[0] != size:
            first = sizes[d.dim_param]
            raise EdgecError(f"{where}: input '{vi.name}' {_named(i, d)} is {size} in the calibration set but input "
                             f"'{first[1]}' dimension {first[2]} of the same name is {first[0]}; give calibration "
                             f"arrays of one size along '{d.dim_param}', or export the model with a fixed input shape")
        d.dim_value = size                 # (clears dim_param: one of the two)
    for vi in model.graph.output:          # an output along the same named axis (a per-frame output)
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in sizes:
                d.dim_value = sizes[d.dim_param][0]


def unsized(model: onnx.ModelProto, where) -> dict | None:
    """For a model with a dynamic input dimension and no calibration set to size it (`edgec inspect MODEL`): what
    can be said without shapes, every node and whether edgec has its operator (shapes, MACs and memory need the
    size: `note` says how to give it); None when every input dimension but the batch is fixed."""
    from edgec.frontend.support import Problem
    from edgec.ops.registry import SUPPORTED_OPS
    from edgec.frontend.functions import EXPANDED

    dynamic = _dynamic(model)
    if not dynamic:
        return None
    known = SUPPORTED_OPS | EXPANDED | {"QuantizeLinear", "DequantizeLinear", "Constant", "Identity"}
    inits = {i.name: i for i in model.graph.initializer}
    nodes, problems = [], []
    for k, n in enumerate(model.graph.node):
        bad = n.domain not in ("", "ai.onnx") or n.op_type not in known
        problem = Problem(model, k, n).to_json() if bad else None
        problems += [problem] if bad else []
        nodes.append({"name": n.name or f"node #{k}", "op": n.op_type, "inputs": [], "outputs": [],
                      "params": sum(_count(inits[x]) for x in n.input if x in inits), "supported": not bad,
                      "problem": problem})
    axes = ", ".join(f"input '{vi.name}' {_named(i, d)}" for vi, i, d in dynamic)
    dims = lambda vi: [d.dim_value if d.HasField("dim_value") else 1 if i == 0 else (d.dim_param or "?")  # noqa: E731
                       for i, d in enumerate(vi.type.tensor_type.shape.dim)]    # (the batch: 1, as edgec pins it)
    from edgec.frontend.support import opset_of
    ins = [{"name": v.name, "shape": dims(v)} for v in graph_inputs(model)]
    outs = [{"name": v.name, "shape": dims(v)} for v in model.graph.output]
    return {"model": str(where), "opset": opset_of(model, ""), "input": ins[0], "output": outs[0], "inputs": ins,
            "outputs": outs,
            "parameters": sum(_count(i) for i in model.graph.initializer), "nodes": nodes, "problems": problems,
            "unsupported": [f"{p['op']} ({p['node']}, opset {p['opset']})" for p in problems],
            "macs": None, "canonical_ops": None, "arena_bytes_estimate": None,
            "note": f"{axes} is dynamic: shapes, MACs and memory are sized from a calibration set; give --calib "
                    "FILE.npz (x: N samples of the input's shape); the operators are checked by type only"}


def _count(init: onnx.TensorProto) -> int:
    n = 1
    for d in init.dims:
        n *= int(d)
    return n
