"""Quantization of the canonical graph: float graph + value ranges -> INT8 graph (TFLite INT8 scheme,
edgec/fixedpoint/scheme.py).

Every tensor gets its scale and zero point (from its calibrated range, from its input's for ops that keep
it, or fixed by the op, such as softmax's 1/256), then every op its integer parameters from its registry
entry's quantizer (edgec/ops/). Layers chosen for --int16 (edgec/quant/int16.py) run their 16x8 variant.
"""
from __future__ import annotations

import math

from edgec.errors import EdgecError
from edgec.ir import Graph, Tensor
from edgec.ops import registry
from edgec.ops.registry import REGISTRY
from edgec.fixedpoint.scheme import MultiplierRangeError, qparams16, qparams_from_range


def quantize(graph: Graph, ranges: dict[str, tuple[float, float]], per_channel: bool = True) -> Graph:
    """Fill in every tensor's quantization and every op's integer parameters (in place).

    per_channel=False quantizes each layer's weights with one scale (still stored per channel).
    ONNX values in graph.fixed_qparams (a QDQ model's own) take those instead of their ranges."""
    fixed = graph.fixed_qparams

    def from_range(t: Tensor):
        if t.source in fixed and t.dtype != "int16":   # (--int16 on a QDQ tensor: int16 wins)
            t.scale, t.zero_point = float(fixed[t.source][0]), int(fixed[t.source][1])
            return
        if t.source not in ranges:
            raise EdgecError(f"no calibration range for tensor '{t.source}'")
        lo, hi = ranges[t.source]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise EdgecError(f"tensor '{t.source}': its calibration range [{lo}, {hi}] is not finite; "
                             "check the calibration data and the model's weights")
        t.scale, t.zero_point = (qparams16 if t.dtype == "int16" else qparams_from_range)(lo, hi)

    for name in graph.inputs:
        from_range(graph.tensors[name])
    for op in graph.ops:
        op.attrs["per_channel"] = per_channel
        out = graph.tensors[op.output]
        src = graph.tensors[op.inputs[0]]
        d = REGISTRY[op.kind]
        if d.qparams == "input":
            out.scale, out.zero_point = src.scale, src.zero_point
        elif registry.fixed_qparams(op) is not None:
            out.scale, out.zero_point = registry.fixed_qparams(op)
        else:
            from_range(out)
        ins = [graph.tensors[i] for i in op.inputs]
        try:
            d.quantize(op, ins, out)
            if out.dtype == "int16" and d.int16 is not None:     # a 16x8 layer (edgec/quant/int16.py)
                d.int16.quantize(op, ins, out)
        except MultiplierRangeError as exc:   # a scale ratio no Q31 multiplier + shift can express
            raise EdgecError(f"node '{op.name}' ({op.kind}): {exc}; the scales of its input, weights and output "
                             "are too far apart (check the weights and the calibration data)") from None
    return graph
