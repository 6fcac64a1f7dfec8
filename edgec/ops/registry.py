"""The operator registry: one `OpDef` (edgec/ops/opdef.py) per canonical op kind, holding everything Python
knows about it: ONNX import, quantizer, NumPy integer twin, float run, C call, fast-kernel lowering, int16
variant and properties.

Each family module of edgec/ops (conv, dense, matmul, pool, binary, lut, softmax, norm, movement, reduce, resize, ...)
defines its kinds as `OPS = [OpDef(...), ...]` and its ONNX importers as `ONNX = {op_type: import_x}`, where
`import_x(cx, node)` turns one ONNX node into canonical ops through the canonicalizer `cx`
(edgec/frontend/canonicalize.py: its public methods are the importers' API).
The pipeline stages look an op up here (`REGISTRY[op.kind]`) instead of branching on its kind, and every
per-kind table they need is derived below.

Adding an operator: docs/design.md, "Adding an operator".
"""
from __future__ import annotations

from edgec.ir import Graph, Op
from edgec.ops import (binary, concat, conv, convert, cumsum, dense, lut, matmul, movement, norm, pool, rearrange,
                       recurrent, reduce, resize, softmax)
from edgec.ops.opdef import OpDef

MODULES = (movement, concat, rearrange, lut, pool, conv, dense, matmul, binary, softmax, reduce, cumsum, resize, convert,
           recurrent, norm)

REGISTRY: dict[str, OpDef] = {}
for _m in MODULES:
    for _d in _m.OPS:
        assert _d.kind not in REGISTRY, f"op kind {_d.kind} defined twice"
        REGISTRY[_d.kind] = _d

# ONNX op type -> `import_x(cx, node)` in the family module of the canonical op kind it produces
# (edgec/frontend/canonicalize.py calls it with itself as `cx`)
IMPORTERS = {op: fn for _m in MODULES for op, fn in _m.ONNX.items()}
assert len(IMPORTERS) == sum(len(_m.ONNX) for _m in MODULES), "an ONNX op type is imported by two families"
# TFLite builtin operator -> `import_x(tx, op)` in the family module of the kind it produces
# (edgec/frontend/tflite.py calls it with itself as `tx`)
TFLITE_IMPORTERS = {op: fn for _m in MODULES for op, fn in getattr(_m, "TFLITE", {}).items()}
DRIVER_OPS = {"Constant", "Shape"}     # the canonicalizer handles these itself (constants at build time)
SUPPORTED_OPS = frozenset(IMPORTERS) | DRIVER_OPS
# ONNX op type -> `takes_whole(node, rank)`: whether its importer takes this node, else the loader builds the
# operator's ONNX function body (edgec/frontend/functions.py)
TAKES_WHOLE = {op: fn for _m in MODULES for op, fn in getattr(_m, "TAKES_WHOLE", {}).items()}


# per-kind tables the stages use, derived from the registry
ALIAS_OPS = frozenset(k for k, d in REGISTRY.items() if d.alias)
IN_PLACE_OPS = frozenset(k for k, d in REGISTRY.items() if d.in_place)
ROW_BAND_OPS = {k: d.row_bands for k, d in REGISTRY.items() if d.row_bands}
FUSABLE = frozenset(k for k, d in REGISTRY.items() if d.fuses_activation)
WEIGHT_AXIS = {k: d.weight_axis for k, d in REGISTRY.items() if d.weight_axis is not None}
SAME_QPARAMS_OPS = frozenset(k for k, d in REGISTRY.items() if d.qparams == "input")
INT16_KINDS = tuple(k for k, d in REGISTRY.items() if d.int16 is not None and d.weight_axis is not None)
# the kinds `--int16 NODE` may name: the 16x8 weighted layers (the accuracy budget's candidates) and the others
# whose int16 variant is a layer of its own (softmax: int16 scores in, Q0.15 probabilities out)
INT16_NAMEABLE = INT16_KINDS + tuple(k for k, d in REGISTRY.items() if d.int16 is not None and d.int16.layer
                                     and k not in INT16_KINDS)
KERNEL_CODE_BYTES = {k: d.code_bytes for k, d in REGISTRY.items()}
FLOAT_KINDS = frozenset(k for k, d in REGISTRY.items() if d.run_float is not None)
BIAS_CORRECTABLE = frozenset(k for k, d in REGISTRY.items() if d.bias_correction)


def fixed_qparams(op: Op) -> tuple[float, int] | None:
    """An op's output quantization when it does not come from calibration (softmax, argmax...)."""
    d = REGISTRY[op.kind]
    return d.fixed_qparams(op) if d.qparams == "fixed" and d.fixed_qparams else None


def own_qparams(op: Op) -> bool:
    """Whether an op's output quantization is set by the op itself, not by calibration."""
    return op.kind in SAME_QPARAMS_OPS or fixed_qparams(op) is not None


def op_macs(graph: Graph, op: Op) -> int:
    """Multiply-accumulates of one op in one inference (float or quantized weights, same shape)."""
    d = REGISTRY.get(op.kind)        # (a survey's placeholders for unsupported nodes have no entry)
    return d.macs(op, graph.tensors[op.output]) if d is not None and d.macs else 0


def graph_macs(graph: Graph) -> int:
    """Multiply-accumulates of one inference."""
    return sum(op_macs(graph, op) for op in graph.ops)
