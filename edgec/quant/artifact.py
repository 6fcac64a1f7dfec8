"""Save and load a quantized graph (the build folder's record of what the device runs).

`quantized.json` holds the structure and integer parameters, `quantized.npz`
the integer arrays; `bench` reloads them to run the NumPy reference. The model
hash identifies the quantized model and is compiled into the firmware.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Graph, Op, Tensor


def graph_to_json(graph: Graph) -> dict:
    ports = {"ports": {"more_inputs": graph.more_inputs, "more_outputs": graph.more_outputs,
                       "names": graph.port_names, "shapes": {k: list(v) for k, v in graph.port_shapes.items()}}} \
        if graph.port_names else {}      # several inputs or outputs (a single-I/O model's record is unchanged)
    return {**ports,
        "name": graph.name, "input": graph.input, "output": graph.output,
        "input_onnx_shape": list(graph.input_onnx_shape), "output_onnx_shape": list(graph.output_onnx_shape),
        **({"input_perm": list(graph.input_perm)} if graph.input_perm else {}),
        "tensors": [{"name": t.name, "shape": list(t.shape), "source": t.source, "scale": t.scale,
                     "zero_point": t.zero_point, **({"dtype": t.dtype} if t.dtype != "int8" else {})}
                    for t in graph.tensors.values()],
        "ops": [{"kind": op.kind, "name": op.name, "inputs": op.inputs, "output": op.output,
                 "params": op.params, "arrays": sorted(op.arrays)} for op in graph.ops],
    }


def graph_hash(graph: Graph) -> str:
    """16 hex digits identifying the quantized model (structure, parameters and constants), whatever its C name
    (--name): two exports of one model under two names, or a build and its export, have one hash."""
    record = dict(graph_to_json(graph), name="")
    h = hashlib.sha256(json.dumps(record, sort_keys=True).encode())
    for op in graph.ops:
        for key in sorted(op.arrays):
            a = np.ascontiguousarray(op.arrays[key])
            h.update(key.encode() + str(a.dtype).encode() + a.tobytes())
    return h.hexdigest()[:16]


def save_graph(graph: Graph, folder: Path) -> None:
    (folder / "quantized.json").write_text(json.dumps(graph_to_json(graph), indent=1))
    arrays = {f"{i}.{k}": v for i, op in enumerate(graph.ops) for k, v in op.arrays.items()}
    np.savez(folder / "quantized.npz", **arrays)


def load_graph(folder: Path) -> Graph:
    try:
        meta = json.loads((folder / "quantized.json").read_text())
        arrays = np.load(folder / "quantized.npz")
        tensors = {t["name"]: Tensor(name=t["name"], shape=tuple(t["shape"]), source=t["source"],
                                     scale=t["scale"], zero_point=t["zero_point"], dtype=t.get("dtype", "int8"))
                   for t in meta["tensors"]}
        ops = [Op(kind=o["kind"], name=o["name"], inputs=tuple(o["inputs"]), output=o["output"], params=o["params"],
                  arrays={k: arrays[f"{i}.{k}"] for k in o["arrays"]}) for i, o in enumerate(meta["ops"])]
        return Graph(name=meta["name"], tensors=tensors, ops=tuple(ops), input=meta["input"], output=meta["output"],
                     input_onnx_shape=tuple(meta["input_onnx_shape"]), input_perm=tuple(meta.get("input_perm", ())),
                     output_onnx_shape=tuple(meta["output_onnx_shape"]),
                     more_inputs=tuple(meta.get("ports", {}).get("more_inputs", ())),
                     more_outputs=tuple(meta.get("ports", {}).get("more_outputs", ())),
                     port_names=meta.get("ports", {}).get("names", {}),
                     port_shapes={k: tuple(v) for k, v in meta.get("ports", {}).get("shapes", {}).items()})
    except Exception as exc:    # missing, truncated (zip, zlib, npy) or edited (JSON of the wrong shape)
        raise EdgecError(f"{folder}: the quantized model record is missing or damaged ({type(exc).__name__}: {exc}); "
                         "run `edgec build` again") from None
