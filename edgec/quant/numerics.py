"""Numeric hazards found at build time: refused with a clear EdgecError, or reported as warnings.

Before quantization (`check_finite`): NaN or Inf in any constant of the canonical graph (weights, biases,
folded constants) is an error naming the node (a constant whose only non-finite values are -inf is an additive
attention mask edgec/ops/softmax/masked.py could not fold into its Softmax: the error says so). (Non-finite
calibration data and values are refused by edgec/data.py and edgec/quant/calibrate.py; multipliers no Q31
multiplier + shift can express by edgec/quant/quantize.py, naming the node.)

After quantization (`warnings`), each a one-line warning naming the node or tensor:
- a tensor that is constant over the whole calibration set (an all-zero input, a dead channel
  path): its int8 scale is arbitrary and the layers after it learn nothing from the data;
- an int32 accumulator a worst-case input could overflow: per output channel
  sum(|w_q|) * max|x_q - zp| + |bias_q| > 2^31 - 1 (the C accumulates in int32: overflow there is
  undefined behaviour, the NumPy reference wraps);
- output channels whose weights are tiny against their bias or output range (dead channels): the
  int32 bias saturates or the multiplier underflows to 0, so they output a constant.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.ops.registry import REGISTRY
from edgec.ops.registry import WEIGHT_AXIS as ACCUMULATING   # int8 weights, int32 accumulator

INT32_MAX = (1 << 31) - 1
CONSTANT_SPAN = 1e-12       # as quantize.qparams_from_range: a narrower range gets an arbitrary scale


def check_finite(graph: Graph) -> None:
    """EdgecError if a constant of any op holds NaN or Inf."""
    for op in graph.ops:
        for key, value in op.attrs.items():
            if isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                if np.all(np.isfinite(value) | (value == -np.inf)):     # a mask: -inf where attention may not look
                    raise EdgecError(f"node '{op.name}' ({op.kind}): its {key} hold -inf, an additive attention mask "
                                     "edgec cannot fold into a Softmax (it folds a constant of 0 and -inf, or of 0 and "
                                     "values <= -1e4, added to the scores right before the Softmax or chosen in by a "
                                     "Where: edgec/ops/softmax/masked.py); give the mask in that form, or the model "
                                     "without it")
                raise EdgecError(f"node '{op.name}' ({op.kind}): its {key} hold NaN or Inf; fix the model's "
                                 "constants (a diverged training run or a damaged file)")


def warnings(graph: Graph, ranges: dict[str, tuple[float, float]]) -> list[str]:
    """One-line warnings about the quantized graph (see the module doc)."""
    out = []
    fixed = {op.output for op in graph.ops if REGISTRY[op.kind].distribution}   # (log) probabilities: range known
    for t in graph.tensors.values():
        if t.source in ranges and t.name not in fixed:
            lo, hi = ranges[t.source]
            if max(hi, 0.0) - min(lo, 0.0) < CONSTANT_SPAN or hi - lo < CONSTANT_SPAN:
                what = "the model input" if t.name == graph.input else f"tensor '{t.source}'"
                out.append(f"{what} is constant ({lo:g}) over the whole calibration set: its int8 scale is "
                           "arbitrary; check the calibration data (all zeros? one repeated sample?)")
    for op in graph.ops:
        axis = ACCUMULATING.get(op.kind)
        if axis is None or "weights" not in op.arrays:
            continue
        x = graph.tensors[op.inputs[0]]
        w = np.abs(op.arrays["weights"].astype(np.int64))
        channels = w.shape[axis]
        per_channel = np.moveaxis(w, axis, 0).reshape(channels, -1).sum(axis=1)
        bias = np.abs(op.arrays["bias"].astype(np.int64)) if "bias" in op.arrays else np.zeros(channels, np.int64)
        max_dev = max(127 - x.zero_point, x.zero_point + 128)
        bound = per_channel * max_dev + bias
        # channels whose weights are tiny against their bias or the output range (dead channels of a folded
        # BatchNorm): the bias saturates int32 and/or the multiplier underflows to 0 -> a constant output
        tiny = bias >= INT32_MAX
        if "mult" in op.arrays:
            tiny |= (op.arrays["mult"] == 0) & (per_channel > 0)
        if np.any(tiny):
            c = int(np.flatnonzero(tiny)[0])
            out.append(f"node '{op.name}' ({op.kind}): {int(tiny.sum())} output channel(s) (first: {c}) have weights "
                       "so small against their bias or output range that their int32 bias saturates or their "
                       "multiplier underflows to 0: they output a constant 0.0 instead of about their bias, and "
                       "their accumulator may overflow int32 (dead channels? retrain or prune them)")
        risky = (bound > INT32_MAX) & ~tiny
        if np.any(risky):
            c = int(np.argmax(np.where(risky, bound, -1)))
            out.append(f"node '{op.name}' ({op.kind}): a worst-case input could overflow its int32 accumulator "
                       f"(channel {c}: {int(per_channel[c])} x {max_dev} + |bias| {int(bias[c])} = {int(bound[c]):,} "
                       f"> 2^31 - 1); split the layer or bound its inputs")
    return out
