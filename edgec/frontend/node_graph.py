"""An ONNX graph's nodes with their producers, readers and constants, as the recognizers of operators written as
several nodes walk them (edgec/frontend/decomposed.py, edgec/frontend/decomposed_l2.py)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


class Nodes:
    """The model's nodes with their producers, readers and constants (initializers and Constant nodes)."""

    def __init__(self, nodes, consts: dict, outputs, shapes: dict):
        self.nodes, self.shapes, self.outputs = list(nodes), shapes, set(outputs)
        self.consts = dict(consts)
        for n in self.nodes:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name in ("value", "value_float", "value_floats"):
                v = helper.get_attribute_value(n.attribute[0])
                self.consts[n.output[0]] = numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)
        self.producer = {o: k for k, n in enumerate(self.nodes) for o in n.output if o}
        self.readers: dict[str, list[int]] = {}
        for k, n in enumerate(self.nodes):
            for i in dict.fromkeys(n.input):
                self.readers.setdefault(i, []).append(k)
        self.used: set[int] = set()          # nodes already part of a fused subgraph

    def scalar(self, v: str) -> float | None:
        c = self.consts.get(v)
        return float(np.asarray(c).reshape(-1)[0]) if c is not None and np.asarray(c).size == 1 else None

    def only_reader(self, v: str) -> int | None:
        """The one node reading `v` (which is no model output), or None."""
        r = self.readers.get(v, [])
        return r[0] if len(r) == 1 and v not in self.outputs and r[0] not in self.used else None

    def plain(self, k: int, types) -> bool:
        n = self.nodes[k]
        return n.domain in ("", "ai.onnx") and n.op_type in types and k not in self.used


def other(n, v: str) -> str | None:
    """The operand of binary node `n` that is not `v` (None unless exactly one is)."""
    rest = [i for i in n.input if i != v]
    return rest[0] if len(rest) == 1 and len(n.input) == 2 else None
