"""Stage 4: float canonical graph + value ranges -> INT8 graph (TFLite INT8 scheme).

Activations: asymmetric int8 (scale, zero point) per tensor. Weights: symmetric
int8 per output channel. Bias: int32 at scale input_scale * weight_scale[c].
Requantization: Q31 multiplier + power-of-two shift per output channel.
Pooling, reshape and transpose keep their input's quantization; softmax output
is fixed at scale 1/256, zero point -128 (as in TFLite).
"""
from __future__ import annotations

import math

import numpy as np

from edgec.codegen import lowering as fastkernels
from edgec.quant import int16
from edgec.ops import kernels_ref as K
from edgec.ops import ops_ext
from edgec.errors import EdgecError
from edgec.ir import DTYPES, SAME_QPARAMS_OPS, Graph, Op, Tensor


def qparams_from_range(lo: float, hi: float) -> tuple[float, int]:
    """Scale and zero point covering [lo, hi] (widened to include 0) with int8."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-12:
        return 1.0, -128 if lo == 0.0 else 0
    scale = (hi - lo) / 255.0
    zp = int(np.clip(round(-128 - lo / scale), -128, 127))
    return scale, zp


def quantize_input(t: Tensor, x: np.ndarray) -> np.ndarray:
    """Float input data -> int8 (int16 for an int16 tensor) with the tensor's quantization (as the host sends it)."""
    info = np.iinfo(DTYPES[t.dtype])
    return np.clip(np.round(x / t.scale) + t.zero_point, info.min, info.max).astype(DTYPES[t.dtype])


def dequantize(t: Tensor, q: np.ndarray) -> np.ndarray:
    return (q.astype(np.float32) - t.zero_point) * np.float32(t.scale)


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
        t.scale, t.zero_point = (int16.qparams if t.dtype == "int16" else qparams_from_range)(lo, hi)

    from_range(graph.tensors[graph.input])
    for op in graph.ops:
        op.attrs["per_channel"] = per_channel
        out = graph.tensors[op.output]
        src = graph.tensors[op.inputs[0]]
        if op.kind in SAME_QPARAMS_OPS:
            out.scale, out.zero_point = src.scale, src.zero_point
        elif op.kind == "softmax":
            out.scale, out.zero_point = 1.0 / 256.0, -128
        elif ops_ext.fixed_qparams(op) is not None:
            out.scale, out.zero_point = ops_ext.fixed_qparams(op)
        else:
            from_range(out)
        ins = [graph.tensors[i] for i in op.inputs]
        try:
            if int16.is_int16(graph, op):
                int16.quantize_op(op, ins, out, _QUANTIZERS.get(op.kind))
            else:
                _QUANTIZERS[op.kind](op, ins, out)
        except K.MultiplierRangeError as exc:   # a scale ratio no Q31 multiplier + shift can express
            raise EdgecError(f"node '{op.name}' ({op.kind}): {exc}; the scales of its input, weights and output "
                             "are too far apart (check the weights and the calibration data)") from None
    fastkernels.lower_graph(graph)   # fast kernels: their constants and scratch memory (for the planner)
    return graph


def _act_range(op: Op, out: Tensor) -> dict:
    lo, hi = op.attrs.get("act", (-math.inf, math.inf))
    qmin = -128 if lo == -math.inf else max(-128, out.zero_point + int(round(lo / out.scale)))
    qmax = 127 if hi == math.inf else min(127, out.zero_point + int(round(hi / out.scale)))
    return {"act_min": qmin, "act_max": max(qmin, qmax)}


WEIGHT_AXIS = {"conv2d": 0, "depthwise_conv2d": -1, "fully_connected": 0}


def quantize_weights(w: np.ndarray, channel_axis: int, per_channel: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights and their scale for every output channel (one shared scale if not per_channel)."""
    w = np.asarray(w, np.float64)
    axes = tuple(a for a in range(w.ndim) if a != channel_axis % w.ndim)
    wmax = np.max(np.abs(w), axis=axes)
    if not per_channel:
        wmax = np.full_like(wmax, np.max(wmax))
    w_scale = np.where(wmax > 0, wmax / 127.0, 1.0)
    shape = [1] * w.ndim
    shape[channel_axis] = -1
    return np.clip(np.round(w / w_scale.reshape(shape)), -127, 127).astype(np.int8), w_scale


def _weights(op: Op, inp: Tensor, out: Tensor, channel_axis: int) -> None:
    if not np.all(np.isfinite(op.attrs["weights"])):
        raise EdgecError(f"node '{op.name}': weights contain NaN or Inf")
    if "weight_scale" in op.attrs:      # a QDQ model's own weight scales (edgec/qdq.py)
        w_scale = np.asarray(op.attrs["weight_scale"], np.float64)
        shape = [1] * op.attrs["weights"].ndim
        shape[channel_axis] = -1
        wq = np.clip(np.round(op.attrs["weights"] / w_scale.reshape(shape)), -128, 127).astype(np.int8)
    else:
        wq, w_scale = quantize_weights(op.attrs["weights"], channel_axis, op.attrs.get("per_channel", True))
    bias_scale = inp.scale * w_scale
    bq = np.clip(np.round(op.attrs["bias"].astype(np.float64) / bias_scale), -2**31, 2**31 - 1).astype(np.int32)
    mult, shift = zip(*(K.quantize_multiplier(s / out.scale) for s in bias_scale))
    op.arrays.update(weights=wq, bias=bq, mult=np.array(mult, np.int32), shift=np.array(shift, np.int32))


def _conv(op: Op, ins: list[Tensor], out: Tensor) -> None:
    (ih, iw, ic), (oh, ow, oc) = op.attrs["in_hwc"], op.attrs["out_hwc"]
    _weights(op, ins[0], out, -1 if op.kind == "depthwise_conv2d" else 0)   # group_conv2d: OHWI like conv2d
    op.params = dict(in_h=ih, in_w=iw, in_c=ic, out_h=oh, out_w=ow, out_c=oc,
                     k_h=op.attrs["kernel"][0], k_w=op.attrs["kernel"][1],
                     stride_h=op.attrs["stride"][0], stride_w=op.attrs["stride"][1],
                     dil_h=op.attrs["dilation"][0], dil_w=op.attrs["dilation"][1],
                     pad_top=op.attrs["pad"][0], pad_left=op.attrs["pad"][1],
                     input_zp=ins[0].zero_point, output_zp=out.zero_point, **_act_range(op, out),
                     depth_multiplier=op.attrs.get("depth_multiplier", 1))


def _fc(op: Op, ins: list[Tensor], out: Tensor) -> None:
    _weights(op, ins[0], out, 0)
    n_out, n_in = op.attrs["weights"].shape
    op.params = dict(in_features=n_in, out_features=n_out, input_zp=ins[0].zero_point,
                     output_zp=out.zero_point, **_act_range(op, out))


def _pool(op: Op, ins: list[Tensor], out: Tensor) -> None:
    (ih, iw, c), (oh, ow, _) = op.attrs["in_hwc"], op.attrs["out_hwc"]
    op.params = dict(in_h=ih, in_w=iw, c=c, out_h=oh, out_w=ow, k_h=op.attrs["kernel"][0],
                     k_w=op.attrs["kernel"][1], stride_h=op.attrs["stride"][0], stride_w=op.attrs["stride"][1],
                     pad_top=op.attrs["pad"][0], pad_left=op.attrs["pad"][1], **_act_range(op, out))


def _add(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, b = ins
    p = K.add_params(a.scale, a.zero_point, b.scale, b.zero_point, out.scale, out.zero_point)
    op.params = dict(n=out.size, **{**p, **_act_range(op, out)})


def _softmax(op: Op, ins: list[Tensor], out: Tensor) -> None:
    op.params = dict(rows=op.attrs["rows"], cols=op.attrs["cols"])
    op.arrays["exp_table"] = np.asarray(K.softmax_table(ins[0].scale), np.uint32)


def _transpose(op: Op, ins: list[Tensor], out: Tensor) -> None:
    dims = list(ins[0].shape)
    perm = list(op.attrs["perm"])
    if len(dims) > 4:
        squeezed = [i for i, d in enumerate(dims) if d != 1]
        if len(squeezed) > 4:
            raise EdgecError(f"node '{op.name}': a transpose of more than 4 non-unit dimensions is not supported")
        keep = [p for p in perm if dims[p] != 1]
        perm = [squeezed.index(p) for p in keep]
        dims = [dims[i] for i in squeezed]
    lead = 4 - len(dims)
    op.params = dict(dims=[1] * lead + dims, perm=list(range(lead)) + [p + lead for p in perm])


def _nothing(op: Op, ins: list[Tensor], out: Tensor) -> None:
    pass


_QUANTIZERS = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "fully_connected": _fc, "max_pool": _pool,
    "avg_pool": _pool, "add": _add, "softmax": _softmax, "transpose": _transpose, "reshape": _nothing,
}
_QUANTIZERS.update(ops_ext.QUANTIZERS)
