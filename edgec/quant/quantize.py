"""Quantization of the canonical graph: float graph + value ranges -> INT8 graph (TFLite INT8 scheme,
edgec/fixedpoint/scheme.py).

Every tensor gets its scale and zero point (from its calibrated range, from its input's for ops that keep
it, or fixed by the op, such as softmax's 1/256), then every op its integer parameters from its registry
entry's quantizer (edgec/ops/). Layers chosen for --int16 (edgec/quant/int16.py) run their 16x8 variant.
"""
from __future__ import annotations

import math
from dataclasses import replace

from edgec.errors import EdgecError
from edgec.ir import Graph, Tensor
from edgec.ops import registry
from edgec.ops.registry import REGISTRY
from edgec.quant.int16 import SUFFIX
from edgec.fixedpoint.scheme import MultiplierRangeError, qparams16, qparams_from_range


def quantize(graph: Graph, ranges: dict[str, tuple[float, float]], per_channel: bool = True) -> Graph:
    """The quantized graph: every tensor with its quantization and every op with its integer parameters, made
    anew (`graph` is not changed, so a search may quantize one float graph many times).

    per_channel=False quantizes each layer's weights with one scale (still stored per channel).
    ONNX values in graph.fixed_qparams (a QDQ model's own) take those instead of their ranges."""
    fixed = graph.fixed_qparams
    one_rounding = {"one_rounding": True} if fixed else {}    # a QDQ file: requantized as ONNX Runtime does, once
    graph = own_scales(graph, ranges)
    tensors = dict(graph.tensors)

    def from_range(name: str) -> Tensor:
        t = tensors[name]
        own = input_grid(graph, name) if name in graph.inputs else view_grid(graph, name)
        if own is not None and (t.dtype != "int16" or t.name in graph.inputs or not t.name.endswith(SUFFIX)):
            # (a QDQ file's int16 tensor: its 16x8 grid, edgec/frontend/qdq16.py; --int16 on a QDQ tensor:
            shift = 128 if t.dtype == "uint8" else 0     # int16 wins; an int16 input is an audio front end's 2^-15
            # grid, edgec/ops/signal/mfcc_onnx.py; a uint8 input port: the same grid, its zero point 128 higher)
            return _set(tensors, t, float(own[0]), int(own[1]) + shift)
        if t.dtype in ("bool", "int32"):   # a comparison's mask (edgec/ops/where.py): 0 or 1 bytes; token ids
            return _set(tensors, t, 1.0, 0)
        if t.source not in ranges:
            raise EdgecError(f"no calibration range for tensor '{t.source}'")
        lo, hi = ranges[t.source]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise EdgecError(f"tensor '{t.source}': its calibration range [{lo}, {hi}] is not finite; "
                             "check the calibration data and the model's weights")
        return _set(tensors, t, *(qparams16 if t.dtype == "int16" else qparams_from_range)(lo, hi))

    for name in graph.inputs:
        from_range(name)
    ops = []
    for old in graph.ops:
        op = old.fresh(attrs={**old.attrs, "per_channel": per_channel, **one_rounding}, lowering=None)   # below
        out = tensors[op.output]
        src = tensors[op.inputs[0]]
        d = REGISTRY[op.kind]
        if d.qparams == "input":
            out = _set(tensors, out, src.scale, src.zero_point)
        elif out.dtype == "int16" and d.int16 is not None and d.int16.fixed_qparams is not None:
            out = _set(tensors, out, *d.int16.fixed_qparams)        # a 16x8 layer's own output grid (softmax)
        elif registry.fixed_qparams(op) is not None:
            out = _set(tensors, out, *registry.fixed_qparams(op))
        else:
            out = from_range(op.output)
        _quantize_op(op, [tensors[i] for i in op.inputs], out)
        ops.append(op)
    return graph.replace_ops(ops, tensors)


def _quantize_op(op, ins: list[Tensor], out: Tensor) -> None:
    """op's integer parameters from its registry entry's quantizer (and its 16x8 one for an int16 layer)."""
    d = REGISTRY[op.kind]
    try:
        d.quantize(op, ins, out)
        if out.dtype == "int16" and d.int16 is not None:     # a 16x8 layer (edgec/quant/int16.py)
            d.int16.quantize(op, ins, out)
    except MultiplierRangeError as exc:   # a scale ratio no Q31 multiplier + shift can express
        raise EdgecError(f"node '{op.name}' ({op.kind}): {exc}; the scales of its input, weights and output "
                         "are too far apart (check the weights and the calibration data)") from None


def requantize_op(graph: Graph, k: int, new) -> Graph:
    """The quantized `graph` with its op k replaced by `new` (the same op with other float attributes, a bias
    correction's bias) and quantized anew on the tensors' quantization as it is: what `quantize` of the float
    graph with that op would give, without quantizing every other op again (bias correction's per-layer step)."""
    op = new.fresh(lowering=None)
    _quantize_op(op, [graph.tensors[i] for i in op.inputs], graph.tensors[op.output])
    return graph.replace_ops(graph.ops[:k] + (op,) + graph.ops[k + 1:])


def input_grid(graph: Graph, name: str) -> tuple[float, int] | None:
    """A QDQ model's own quantization of a graph input that the file quantizes only after ops that keep their
    input's quantization (a Reshape then QuantizeLinear, as tf2onnx writes a flattened input): ONNX Runtime
    quantizes the reshaped float input with that QuantizeLinear's scale and zero point, the same as quantizing the
    input with them first. None when no such QuantizeLinear follows the input alone."""
    return _grid_after(graph, name, lambda op: REGISTRY[op.kind].qparams == "input")


def view_grid(graph: Graph, name: str) -> tuple[float, int] | None:
    """A QDQ model's own quantization of a tensor: its ONNX value's, or, where the file quantizes it only after a
    view (an ONNX ReduceMean without keepdims is a pool then a reshape here; a Flatten then QuantizeLinear), that
    view's output's: the same values, so ONNX Runtime's QuantizeLinear after the view is the same grid on this
    tensor. None when neither is the file's."""
    return _grid_after(graph, name, lambda op: REGISTRY[op.kind].alias and op.inputs[0] not in graph.outputs)


def _grid_after(graph: Graph, name: str, passes) -> tuple[float, int] | None:
    """The file's own (scale, zero point) of name's ONNX value, or of the first that follows it through ops
    `passes` accepts, each its value's only reader (on its first input); None when the chain meets neither."""
    fixed, seen = graph.fixed_qparams, set()
    while fixed and name not in seen:
        seen.add(name)
        if graph.tensors[name].source in fixed:
            return fixed[graph.tensors[name].source]
        readers = [op for op in graph.ops if name in op.inputs]
        if len(readers) != 1 or readers[0].inputs[0] != name or not passes(readers[0]):
            return None
        name = readers[0].output
    return None


def own_scales(graph: Graph, ranges: dict[str, tuple[float, float]]) -> Graph:
    """The graph with every op that would keep its input's quantization but is closer to float with its own
    output scale (OpDef.own_scale: a global average pool whose output range is much narrower than its input's)
    replaced by the op that computes the same with its own; int8 tensors with calibrated ranges, or both with a
    QDQ model's own quantization (NNCF's pooled features: the ranges its int8 grids span)."""
    fixed, t = graph.fixed_qparams, graph.tensors
    ops, changed = [], False
    for op in graph.ops:
        d, src, out = REGISTRY[op.kind], t[op.inputs[0]] if op.inputs else None, t[op.output]
        new = None
        if d.own_scale is None or src is None or out.dtype != src.dtype or out.dtype not in ("int8", "int16"):
            pass
        elif out.dtype == "int16":        # a QDQ file's int16 mean (edgec/frontend/qdq16.py): the file's grid
            og, ig = view_grid(graph, out.name), view_grid(graph, src.name)
            if og is not None and not out.name.endswith(SUFFIX) and (ig is not None or src.source in ranges):
                new = d.own_scale(op, ranges[src.source] if ig is None else _grid_range16(*ig),
                                  _grid_range16(*og), given=True)
        elif src.source in ranges and out.source in ranges and not ({src.source, out.source} & set(fixed)):
            new = d.own_scale(op, ranges[src.source], ranges[out.source])
        elif None not in (grids := (view_grid(graph, src.name), view_grid(graph, out.name))) \
                and grids[0] != grids[1]:
            new = d.own_scale(op, *[_grid_range(*g) for g in grids], given=True)
        changed |= new is not None
        ops.append(new or op)
    return graph.replace_ops(ops) if changed else graph


def _grid_range(scale: float, zero_point: int) -> tuple[float, float]:
    """The float range an int8 grid spans."""
    return float(scale) * (-128 - int(zero_point)), float(scale) * (127 - int(zero_point))


def _grid_range16(scale: float, zero_point: int) -> tuple[float, float]:
    """The float range a symmetric int16 grid spans."""
    return -32767 * float(scale), 32767 * float(scale)


def _set(tensors: dict[str, Tensor], t: Tensor, scale: float, zero_point: int) -> Tensor:
    """Tensor t with this quantization, in the new graph's tensors."""
    tensors[t.name] = replace(t, scale=scale, zero_point=zero_point)
    return tensors[t.name]
