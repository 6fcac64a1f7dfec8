"""What edgec cannot build of a model, found before anything is built: every node whose operator edgec
does not have, and every node it has only within limits that this node exceeds (canonicalize.problems
runs the whole canonicalization, past each problem, and collects them).
"""
from __future__ import annotations

import onnx


class Problem:
    """A node edgec cannot build: an operator it does not have, or one it has used beyond its limits."""

    def __init__(self, model: onnx.ModelProto, index: int, node: onnx.NodeProto, what: str | None = None):
        self.node = node.name or f"node #{index}"
        self.op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        self.opset = opset_of(model, node.domain)
        self.unsupported = what is None
        self.what = what or unsupported_reason(node)
        prefix = f"node '{node.name}' ({node.op_type}): "
        self.detail = self.what[len(prefix):] if self.what.startswith(prefix) else self.what
        self.label = f"{self.op} ({self.node}, opset {self.opset})"

    def __str__(self) -> str:
        return f"{self.label}: {self.detail}"

    def to_json(self) -> dict:
        return {"node": self.node, "op": self.op, "opset": self.opset,
                "kind": "unsupported" if self.unsupported else "limit", "what": self.detail}


def opset_of(model: onnx.ModelProto, domain: str) -> int | None:
    domains = ("", "ai.onnx") if domain in ("", "ai.onnx") else (domain,)
    return next((o.version for o in model.opset_import if o.domain in domains), None)


CONTROL_FLOW = {"If", "Loop", "Scan"}


def unsupported_reason(node: onnx.NodeProto) -> str:
    if node.domain not in ("", "ai.onnx"):
        return f"operator of the custom domain '{node.domain}' (edgec knows the default ONNX domain only)"
    if node.op_type in CONTROL_FLOW:
        return "control flow is not supported: export with static shapes and fixed loop counts (tracing " \
               "unrolls loops), or fold the branch"
    if node.op_type.startswith("QLinear") or node.op_type in ("ConvInteger", "MatMulInteger"):
        return "integer operator (QOperator format): quantize with QuantFormat.QDQ, or give edgec the float model"
    return "unsupported operator"


def problems_message(found: list[Problem]) -> str:
    """One line naming every problem (a single limit keeps its own message)."""
    bad = [p for p in found if p.unsupported]
    limits = [p for p in found if not p.unsupported]
    if not bad and len(limits) == 1:
        return limits[0].what
    parts = []
    if bad:
        parts.append(f"unsupported operators: {', '.join(p.label for p in bad)}")
    if limits:
        parts.append(f"{len(limits)} node{'s' if len(limits) > 1 else ''} beyond edgec's limits: "
                     + "; ".join(p.what for p in limits))
    return "; ".join(parts) + "; nothing was built (`edgec inspect MODEL` lists every node)"


def problems_line(problems: list[dict]) -> str:
    """Every operator kind in the way, once: operators of one kind with the same reason share an entry
    ("REDUCE_PROD (operators #2, #5, #43 and 5 more: ...)"), so a long list does not cut off the last kinds."""
    groups: dict[tuple, list[int]] = {}
    for p in problems:
        groups.setdefault((p["op"], p["what"]), []).append(p["index"])
    parts = []
    for (op, what), at in groups.items():
        where = f"operator #{at[0]}" if len(at) == 1 else \
            "operators " + ", ".join(f"#{i}" for i in at[:3]) + (f" and {len(at) - 3} more" if len(at) > 3 else "")
        parts.append(f"{op} ({where}: {what})")
    return "; ".join(parts)
