"""The operator registry: one `OpDef` (edgec/ops/opdef.py) per canonical op kind, holding everything Python
knows about it but its kernels (ONNX import, quantizers, float run, properties), and one `Kernel`
(edgec/ops/kernel.py) per C entry point the generated code may call (its twin, packing, scratch and C call).

Each family module (or package) of edgec/ops (conv, dense, matmul, pool, binary, lut, softmax, norm, movement,
reduce, resize, ...) defines its kinds as `OPS = [OpDef(...), ...]`, its kernels as `KERNELS = [Kernel(...), ...]`
and its ONNX importers as `ONNX = {op_type: import_x}`, where `import_x(cx, node)` turns one ONNX node into
canonical ops through the canonicalizer `cx` (edgec/frontend/canonicalize.py: its public methods are the
importers' API). The pipeline stages look an op up here (`REGISTRY[op.kind]`) instead of branching on its kind,
every per-kind table they need is derived below, and the kernel an op runs on is chosen by edgec/ops/select.py
from the records collected here.

Adding an operator: docs/design.md, "Adding an operator".
"""
from __future__ import annotations

from edgec.ir import Graph, Op
from edgec.ops import (add_n, binary, concat, constant, conv, convert, cumsum, dense, detection, float_tail, gather,
                       lut, matmul, movement, nms,
                       norm, pool, rearrange, recurrent, recurrent_tflite, reduce, resize, signal, softmax, svdf,
                       variables, where)
from edgec.ops.binary import compare as binary_compare, tflite as binary_tflite
from edgec.ops.lut import tflite as lut_tflite
from edgec.ops.softmax import masked as softmax_masked
from edgec.ops.kernel import DEFAULT_CODE_BYTES, FAST, HELIUM, INT4, INT8, INT16, REFERENCE, VARIANT, Kernel
from edgec.ops.opdef import OpDef

MODULES = (movement, concat, rearrange, lut, lut_tflite, pool, conv, dense, matmul, binary, binary_tflite, softmax,
           softmax_masked, reduce,
           binary_compare, cumsum, add_n, where, resize, convert, recurrent, recurrent_tflite, svdf, norm, detection, nms, signal,
           constant, float_tail, variables, gather)

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


def _integer_or(integer_fn, family_fn):
    """A builtin operator on a signal front end's plain integers goes to edgec/ops/signal, else to its family."""
    def import_x(tx, op):
        if signal.takes_integer(tx, op):
            return integer_fn(tx, op)
        if family_fn is None:
            raise tx.unsupported("taken only on the plain integers of a signal-library front end "
                                 "(docs/tflite-operators.md)")
        return family_fn(tx, op)
    return import_x


for _op, _fn in signal.TFLITE_INTEGER.items():
    TFLITE_IMPORTERS[_op] = _integer_or(_fn, TFLITE_IMPORTERS.get(_op))


def _float_or(float_fn, family_fn):
    """A builtin operator computing in float (a float tail) goes to edgec/ops/float_tail, else to its family."""
    return lambda tx, op: (float_fn if float_tail.takes(tx, op) else family_fn)(tx, op)


for _op, _fn in float_tail.TFLITE_FLOAT.items():
    TFLITE_IMPORTERS[_op] = _float_or(_fn, TFLITE_IMPORTERS[_op])


_dequantize = TFLITE_IMPORTERS["DEQUANTIZE"]      # a DEQUANTIZE into a resource variable: edgec/ops/variables.py
TFLITE_IMPORTERS["DEQUANTIZE"] = lambda tx, op: (variables.import_dequantize_to_variable if variables.into_variable(
    tx, op) else _dequantize)(tx, op)
_gather = TFLITE_IMPORTERS["GATHER"]      # computed indices into a constant table: a lookup (edgec/ops/float_tail)
TFLITE_IMPORTERS["GATHER"] = lambda tx, op: (gather.import_tflite_gather if gather.takes(tx, op)   # both at run time
                                             else float_tail.import_gather if float_tail.computed_indices(tx, op)
                                             else _gather)(tx, op)
DRIVER_OPS = {"Constant", "Shape"}     # the canonicalizer handles these itself (constants at build time)
SUPPORTED_OPS = frozenset(IMPORTERS) | DRIVER_OPS
# ONNX op type -> `takes_whole(node, rank)`: whether its importer takes this node, else the loader builds the
# operator's ONNX function body (edgec/frontend/functions.py)
GRAPH_IMPORTERS = tuple(fn for _m in MODULES for fn in getattr(_m, "GRAPH_IMPORTERS", ()))
TAKES_WHOLE = {op: fn for _m in MODULES for op, fn in getattr(_m, "TAKES_WHOLE", {}).items()}

# every kernel record, in its family's order (a fast kernel's speed variants fastest first)
KERNELS: list[Kernel] = [k for _m in MODULES for k in getattr(_m, "KERNELS", [])]
KERNEL: dict[str, Kernel] = {k.name: k for k in KERNELS}
assert len(KERNEL) == len(KERNELS), "a C kernel declared twice"
FAMILY_OF_KERNEL = {n: _m.__name__ for _m in MODULES for k in getattr(_m, "KERNELS", [])
                    for n in (k.name, *k.entries)}
# (kind, precision) -> its reference kernels (the first that applies to an op runs it) and default fast kernels
REFERENCES: dict[tuple[str, str], list[Kernel]] = {}
FASTS: dict[tuple[str, str], list[Kernel]] = {}
for _k in KERNELS:
    assert all(kind in REGISTRY for kind in _k.kinds), (_k.name, _k.kinds)
    for _kind in _k.kinds:
        if _k.role in (REFERENCE, FAST):
            (REFERENCES if _k.role == REFERENCE else FASTS).setdefault((_kind, _k.precision), []).append(_k)
# a fast kernel -> its speed variants (in order) and its Helium kernel
VARIANTS: dict[Kernel, list[Kernel]] = {}
HELIUM_OF: dict[Kernel, Kernel] = {}
for _k in KERNELS:
    if _k.role == VARIANT:
        VARIANTS.setdefault(_k.base, []).append(_k)
    elif _k.role == HELIUM:
        assert _k.base not in HELIUM_OF, _k.name
        HELIUM_OF[_k.base] = _k
assert all(d.alias or (k, INT8) in REFERENCES for k, d in REGISTRY.items()), "a kind without an int8 kernel"


# per-kind tables the stages use, derived from the registry
ALIAS_OPS = frozenset(k for k, d in REGISTRY.items() if d.alias)
IN_PLACE_OPS = frozenset(k for k, d in REGISTRY.items() if d.in_place)
ROW_BAND_OPS = {k: d.row_bands for k, d in REGISTRY.items() if d.row_bands}
FUSABLE = frozenset(k for k, d in REGISTRY.items() if d.fuses_activation)
WEIGHT_AXIS = {k: d.weight_axis for k, d in REGISTRY.items() if d.weight_axis is not None}
SAME_QPARAMS_OPS = frozenset(k for k, d in REGISTRY.items() if d.qparams == "input")
INT16_KINDS = tuple(k for k, d in REGISTRY.items() if (k, INT16) in REFERENCES and d.int16 is not None
                    and d.weight_axis is not None)
# the kinds `--int16 NODE` may name: the 16x8 weighted layers (the accuracy budget's candidates) and the others
# whose int16 variant is a layer of its own (softmax: int16 scores in, Q0.15 probabilities out)
INT16_NAMEABLE = INT16_KINDS + tuple(k for k, d in REGISTRY.items() if d.int16 is not None and d.int16.layer
                                     and k not in INT16_KINDS)
# the kinds an int16 chain passes through between two int16 layers (edgec/quant/int16.py): views, and the ops
# that keep their input's grid and have an int16 kernel (pools)
INT16_THROUGH = frozenset(k for k, d in REGISTRY.items() if d.alias or (
    d.int16 is not None and (d.qparams == "input" or d.int16.between is not None) and (k, INT16) in REFERENCES))


def int16_through(op) -> bool:
    """Whether an int16 chain may pass through this op (a view, a pool, an add or concat that can)."""
    d = REGISTRY[op.kind]
    return op.kind in INT16_THROUGH and (d.int16 is None or d.int16.between is None or d.int16.between(op))
# the kinds with a kernel taking packed int4 weights (--weights int4; edgec/quant/int4layers.py)
INT4_KINDS = tuple(k for k in REGISTRY if (k, INT4) in REFERENCES)
# fit-check code estimate of each kind, whichever of its kernels runs: its first int8 reference kernel's
KERNEL_CODE_BYTES = {k: (REFERENCES[k, INT8][0].code_bytes if (k, INT8) in REFERENCES else None) or DEFAULT_CODE_BYTES
                     for k in REGISTRY}
FLOAT_KINDS = frozenset(k for k, d in REGISTRY.items() if d.run_float is not None)
ADAPTIVE_ROUNDING = frozenset(k for k, d in REGISTRY.items() if d.adaptive_rounding)
BIAS_CORRECTABLE = frozenset(k for k, d in REGISTRY.items() if d.bias_correction)


def quantize(op: Op, ins: list, out) -> None:
    """op's parameters from its kind's quantizer, then, int16 in and out, its 16x8 one (`OpDef.int16`)."""
    d = REGISTRY[op.kind]
    d.quantize(op, ins, out)
    if d.int16 is not None and out.dtype == "int16" and ins and ins[0].dtype == "int16":
        d.int16.quantize(op, ins, out)


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


def state_fields(op: Op) -> tuple:
    """The state an op keeps from one inference to the next (edgec/ops/state.py `Field`s; empty: none)."""
    d = REGISTRY.get(op.kind)           # (a survey's placeholder for a node edgec cannot build has no kind)
    return tuple(d.state(op)) if d is not None and d.state is not None else ()


def keeps_state(graph: Graph) -> bool:
    """Whether the model carries state between inferences (TFLite Micro's semantics: until reset)."""
    return any(state_fields(op) for op in graph.ops)


def state_index(graph: Graph, i: int) -> int | None:
    """The op whose state buffer op i uses: itself if it keeps state, the op it names as `state_of` (a variable's
    assignment: its read), else None."""
    op = graph.ops[i]
    if state_fields(op):
        return i
    owner = variables.state_owner(op)
    return None if owner is None else next(k for k, o in enumerate(graph.ops) if o.name == owner)
