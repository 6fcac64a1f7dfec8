"""Pooling: `max_pool` and `avg_pool` windows over channels-last tensors (1-D pools run as 2-D ones of height 1),
keeping the input's quantization; kernels in runtime_c/edgec_pool.c, the global average pool's fast one (and its
Helium one) in runtime_c/fast/. Global pools and a ReduceMean over the spatial axes are pools of the whole plane;
an AveragePool that counts its padding pads explicitly first (a remap). An AveragePool whose sum a QONNX Trunc
rounds (Brevitas TruncAvgPool2d, edgec/frontend/qonnx.py) carries that rounding (attrs["rounding"]: half to even,
floor or ceil of sum / count, in place of TFLite's half away from zero) and runs on its own kernel.
"""
from __future__ import annotations

import json

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import NO_ACT, Op, SYNTHETIC, Tensor
from edgec.ops import cemit, movement
from edgec.ops.conv import float_windows, pad_windows, spatial, window
from edgec.ops.kernel import FAST, HELIUM, INT16, MVE, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.ops.reduce import mean_of, reduce
from edgec.fixedpoint.scheme import act_range, act_range16
from edgec.ops.tflite16 import activations


# ---- quantize ---------------------------------------------------------------------------------
def quantize_pool(op: Op, ins: list[Tensor], out: Tensor) -> None:
    (ih, iw, c), (oh, ow, _) = op.attrs["in_hwc"], op.attrs["out_hwc"]
    op.params.update(in_h=ih, in_w=iw, c=c, out_h=oh, out_w=ow, k_h=op.attrs["kernel"][0],
                     k_w=op.attrs["kernel"][1], stride_h=op.attrs["stride"][0], stride_w=op.attrs["stride"][1],
                     pad_top=op.attrs["pad"][0], pad_left=op.attrs["pad"][1], **act_range(op, out))
    if "rounding" in op.attrs:            # (Python-only: kept in the build folder's record, quantized.json)
        op.params["_rounding"] = ROUNDINGS[op.attrs["rounding"]]


def quantize_pool16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The int16 pool between two int16 layers (edgec/quant/int16.py): the input's symmetric grid, int16 clamp."""
    op.params.update(**act_range16(op, out))


TRUNC_POOLS = "edgec.qonnx.trunc_pools"    # ONNX metadata: {pool node: {"rounding", "area"}} (edgec/frontend/qonnx.py)
ROUNDINGS = {"even": 0, "floor": 1, "ceil": 2}     # attrs["rounding"] -> the C kernel's EDGEC_ROUND_* (edgec_nn.h)

NARROW = 2.0          # a global average pool whose output range is this many times narrower than its input's ...
MAX_RATIO = 2.0 ** 16  # ... (and no more than this: the mean's int32 sum times its multiplier stays in range)


def own_scale(op: Op, in_range: tuple, out_range: tuple, given: bool = False) -> Op | None:
    """A global average pool with no activation whose calibrated output range is much narrower than its input's
    (the mean of ReLU images, a few tenths where the image spans several units): as a mean with its own output
    scale (edgec/ops/reduce.py; one rounding at the finer scale instead of the input's step), as ONNX Runtime
    and TFLite's MEAN quantize it; given=True (a QDQ model's own two grids): whatever their ratio. Others: None
    (the pool keeps its input's quantization)."""
    a = op.attrs
    (ih, iw, c), (oh, ow, _) = a["in_hwc"], a["out_hwc"]
    act, half = tuple(a.get("act", NO_ACT)), (out_range[1] - out_range[0]) / 255 / 2
    subsumed = given and act[0] <= out_range[0] + half and act[1] >= out_range[1] - half   # the grid's saturation
    if op.kind != "avg_pool" or "rounding" in a or (oh, ow) != (1, 1) or tuple(a["kernel"]) != (ih, iw) \
            or any(a["pad"]) or (act != NO_ACT and not subsumed):
        return None
    wide, narrow = in_range[1] - min(in_range[0], 0.0), max(out_range[1], 0.0) - min(out_range[0], 0.0)
    if not (narrow > 0 and (given or NARROW <= wide / narrow) and wide / narrow <= MAX_RATIO):
        return None
    return mean_of(op.name, op.inputs[0], op.output, 1, ih * iw, c)


# ---- NumPy integer twins ------------------------------------------------------------------------
def max_pool_s8(p: dict, x, dtype=np.int8) -> np.ndarray:
    """TFLite reference_integer_ops::MaxPool (padded taps ignored, then activation clamp); int16 with dtype."""
    low = int(np.iinfo(dtype).min)
    x = np.asarray(x, dtype).reshape(p["in_h"], p["in_w"], p["c"])
    tap = pad_windows(x, p, low)  # the type's lowest value is TFLite's initial max, never beats a real tap
    out = np.full((p["out_h"], p["out_w"], p["c"]), low, dtype)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            np.maximum(out, tap(ky, kx), out=out)
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(dtype)


def avg_pool_s8(p: dict, x, dtype=np.int8, rounding: str | None = None) -> np.ndarray:
    """TFLite reference_integer_ops::AveragePool (count = valid taps, rounded C division); AveragePool16 with
    dtype int16 (the same int32 sum and rounding); `rounding` (QONNX's Trunc): sum / count rounded half to even,
    down or up instead."""
    x = np.asarray(x, dtype).reshape(p["in_h"], p["in_w"], p["c"])
    tap_x = pad_windows(x.astype(np.int64), p, 0)
    tap_n = pad_windows(np.ones(x.shape[:2] + (1,), np.int64), p, 0)
    acc = np.zeros((p["out_h"], p["out_w"], p["c"]), np.int64)
    cnt = np.zeros((p["out_h"], p["out_w"], 1), np.int64)
    for ky in range(int(p["k_h"])):
        for kx in range(int(p["k_w"])):
            acc += tap_x(ky, kx)
            cnt += tap_n(ky, kx)
    c = np.maximum(cnt, 1)  # no valid tap (degenerate padding): average 0, as the C
    if rounding is not None:
        q, r = np.divmod(acc, c)                        # floor, 0 <= r < count
        up = {"floor": np.zeros_like(r, bool), "ceil": r > 0,
              "even": (2 * r > c) | ((2 * r == c) & (q % 2 == 1))}[rounding]
        avg = np.where(cnt > 0, q + up, 0)
        return np.clip(avg, int(p["act_min"]), int(p["act_max"])).astype(dtype)
    num = np.abs(acc) + c // 2
    avg = np.where(acc > 0, num // c, -(num // c))  # (sum +- count/2) / count, truncating
    return np.clip(avg, int(p["act_min"]), int(p["act_max"])).astype(dtype)


def run_max_pool(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return max_pool_s8(p, inputs[0].reshape(p["in_h"], p["in_w"], p["c"]))


def run_avg_pool(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return avg_pool_s8(p, inputs[0].reshape(p["in_h"], p["in_w"], p["c"]))


def trunc_rounding(op: Op) -> str | None:
    """A QONNX Trunc pool's rounding ("even", "floor", "ceil"), from its attrs or from its quantized params (a
    graph reloaded from the build folder keeps params only), else None."""
    if "_rounding" in op.params:
        return next(k for k, v in ROUNDINGS.items() if v == op.params["_rounding"])
    return op.attrs.get("rounding")


def run_avg_pool_trunc(op: Op, inputs: list) -> np.ndarray:
    return avg_pool_s8(op.params, inputs[0], rounding=trunc_rounding(op))


def run_max_pool16(op: Op, inputs: list) -> np.ndarray:
    return max_pool_s8(op.params, inputs[0], np.int16)


def run_avg_pool16(op: Op, inputs: list) -> np.ndarray:
    return avg_pool_s8(op.params, inputs[0], np.int16)


# ---- float --------------------------------------------------------------------------------------
def float_pool(op: Op, inputs: list):
    a = op.attrs
    (ih, iw, c) = a["in_hwc"]
    tap = float_windows(inputs[0].reshape(ih, iw, c), a, np.nan)
    taps = np.stack([tap(ky, kx) for ky in range(a["kernel"][0]) for kx in range(a["kernel"][1])])
    with np.errstate(all="ignore"):
        y = np.nanmax(taps, axis=0) if op.kind == "max_pool" else np.nanmean(taps, axis=0)
    lo, hi = a.get("act", (-np.inf, np.inf))
    return np.clip(np.nan_to_num(y), lo, hi)


# ---- kernels -------------------------------------------------------------------------------------
def c_pool(op: Op, low, site: CallSite) -> str:
    return f"{low.kernel.name}(&{site.prefix}_params, {site.inputs[0]}, {site.output});"


def c_pool16(op: Op, low, site: CallSite) -> str:
    return (f"{low.kernel.name}(&{site.prefix}_params, {cemit.i16(site.inputs[0], const=True)}, "
            f"{cemit.i16(site.output)});")


def c_pool_trunc(op: Op, low, site: CallSite) -> str:
    return (f"{low.kernel.name}(&{site.prefix}_params, {ROUNDINGS[trunc_rounding(op)]}, {site.inputs[0]}, "
            f"{site.output});")


def c_global(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_avg_pool_global_params", low.params, call)


def lower_avg_pool(op: Op):
    """A global average pool (one window over the whole input) on the fast kernel (runtime_c/fast/)."""
    p = op.params
    if trunc_rounding(op) is not None:   # a QONNX Trunc's rounding: its own reference kernel
        return None
    if not (p["out_h"] == 1 and p["out_w"] == 1 and p["k_h"] == p["in_h"] and p["k_w"] == p["in_w"]
            and p["pad_top"] == 0 and p["pad_left"] == 0):
        return None
    return {"pixels": p["in_h"] * p["in_w"], "c": p["c"], "act_min": p["act_min"], "act_max": p["act_max"]}, {}


MAX_POOL = Kernel("edgec_max_pool_s8", ("max_pool",), REFERENCE, c_pool, run=run_max_pool, struct="edgec_pool_params",
                  code_bytes=440)
AVG_POOL = Kernel("edgec_avg_pool_s8", ("avg_pool",), REFERENCE, c_pool, run=run_avg_pool, struct="edgec_pool_params",
                  code_bytes=440, applies=lambda op: trunc_rounding(op) is None)
AVG_POOL_TRUNC = Kernel("edgec_avg_pool_trunc_s8", ("avg_pool",), REFERENCE, c_pool_trunc, run=run_avg_pool_trunc,
                        struct="edgec_pool_params", applies=lambda op: trunc_rounding(op) is not None)
GLOBAL = Kernel("edgec_avg_pool_global_s8", ("avg_pool",), FAST, c_global, lower=lower_avg_pool)
GLOBAL_MVE = Kernel("edgec_avg_pool_global_mve_s8", ("avg_pool",), HELIUM, c_global, base=GLOBAL, isa=MVE,
                    lower=lambda op, base: (base.params, base.arrays))      # 4 channels per vector: nothing repacked
# int16 pools: only between two int16 layers (edgec/quant/int16.py passes an int16 chain through them)
MAX_POOL16 = Kernel("edgec_max_pool_s16", ("max_pool",), REFERENCE, c_pool16, precision=INT16, run=run_max_pool16,
                    struct="edgec_pool_params")
AVG_POOL16 = Kernel("edgec_avg_pool_s16", ("avg_pool",), REFERENCE, c_pool16, precision=INT16, run=run_avg_pool16,
                    struct="edgec_pool_params")
KERNELS = [MAX_POOL, AVG_POOL, AVG_POOL_TRUNC, GLOBAL, GLOBAL_MVE, MAX_POOL16, AVG_POOL16]

OPS = [
    OpDef("max_pool", "pool", quantize_pool, float_pool, fuses_activation=True, qparams="input", row_bands="window",
          int16=Int16(quantize_pool16, qdq=always)),
    OpDef("avg_pool", "pool", quantize_pool, float_pool, fuses_activation=True, qparams="input", row_bands="window",
          int16=Int16(quantize_pool16, qdq=always), own_scale=own_scale),
]


# ---- ONNX import
def pool(cx, node, kind, kernel, strides, pad):
    x = node.input[0]
    in_shape, out_shape, ihwc, ohwc = spatial(cx, node, x)
    nsp = len(in_shape) - 2
    xin = cx.as_layout(x, movement.channels_last(len(in_shape)), node)
    out = cx.new_tensor(node.output[0], (1,) + (ohwc if nsp == 2 else ohwc[1:]), node.output[0])
    if nsp == 1:
        kernel, strides = [1] + list(kernel), [1] + list(strides)
    extra = _trunc_rounding(cx, node, kernel) if kind == "avg_pool" else {}
    cx.emit(kind, node, [xin], out, in_hwc=ihwc, out_hwc=ohwc, kernel=tuple(kernel),
            stride=tuple(strides), pad=pad, act=NO_ACT, **extra)
    cx.values[node.output[0]] = (out, movement.channels_last(len(out_shape)))


def _trunc_rounding(cx, node, kernel) -> dict:
    """{"rounding": ...} of an AveragePool whose sum a QONNX Trunc rounds (edgec/frontend/qonnx.py), else {}."""
    meta = next((json.loads(p.value) for p in cx.model.metadata_props if p.key == TRUNC_POOLS), {})
    trunc = meta.get(node.name) if node.name else None
    if trunc is None:
        return {}
    if int(np.prod(kernel)) != trunc["area"]:
        raise node_error(node, f"the QONNX Trunc after it divides by {trunc['area']}, its window holds "
                               f"{int(np.prod(kernel))} taps; edgec takes a Trunc back to the pooled input's grid")
    return {"rounding": trunc["rounding"]}


def import_max_pool(cx, node):
    _local_pool(cx, node, "max_pool")


def import_average_pool(cx, node):
    _local_pool(cx, node, "avg_pool")


def _local_pool(cx, node, kind):
    if len(node.output) > 1 and node.output[1]:
        raise node_error(node, "the indices output of MaxPool is not supported")
    kernel = list(cx.attr(node, "kernel_shape"))
    nsp = len(kernel)
    strides = list(cx.attr(node, "strides", [1] * nsp))
    dil = list(cx.attr(node, "dilations", [1] * nsp))
    if any(d != 1 for d in dil):
        raise node_error(node, "dilated pooling is not supported yet")
    in_shape = cx.shape(node.input[0], node)
    pad = window(cx, node, in_shape, cx.shape(node.output[0], node), kernel, strides, dil)
    if kind == "avg_pool" and cx.attr(node, "count_include_pad", 0) and any(pad):
        return _pool_padded(cx, node, kind, kernel, strides, list(pad[2 - nsp:]))
    pool(cx, node, kind, kernel, strides, pad)


def _pool_padded(cx, node, kind, kernel, strides, begins):
    """AveragePool with count_include_pad=1: pad explicitly (with zeros), then pool unpadded."""
    x, y = node.input[0], node.output[0]
    shape = cx.shape(x, node)
    nsp = len(shape) - 2
    pads = list(cx.attr(node, "pads", [0] * (2 * nsp)))
    ends = [pads[nsp + i] if len(pads) == 2 * nsp else 0 for i in range(nsp)]
    auto = cx.attr(node, "auto_pad", b"NOTSET")
    if (auto.decode() if isinstance(auto, bytes) else auto) != "NOTSET":
        yshape = cx.shape(y, node)
        ends = [max((yshape[2 + i] - 1) * strides[i] + kernel[i] - shape[2 + i], 0) - begins[i]
                for i in range(nsp)]
    mid = y + "__padded"
    cx.shapes[mid] = tuple(shape[:2]) + tuple(shape[2 + i] + begins[i] + ends[i] for i in range(nsp))
    fns = [lambda m: np.arange(m), lambda m: np.arange(m)]
    for i in range(nsp):
        fns.append(lambda m, i=i: np.where((np.arange(m) - begins[i] >= 0) & (np.arange(m) - begins[i] < shape[2 + i]),
                                           np.arange(m) - begins[i], -1))
    movement.remap_axes(cx, node, x, mid, fns)
    cx.graph.retensor(cx.values[mid][0], source=x)
    fake = onnx.helper.make_node("AveragePool", [mid], [y], name=node.name, kernel_shape=kernel,
                                 strides=strides)
    pool(cx, fake, kind, kernel, strides, (0, 0))


def import_global_average_pool(cx, node):
    in_shape = cx.shape(node.input[0], node)
    pool(cx, node, "avg_pool", list(in_shape[2:]), [1] * (len(in_shape) - 2), (0, 0))


def import_global_max_pool(cx, node):
    in_shape = cx.shape(node.input[0], node)
    pool(cx, node, "max_pool", list(in_shape[2:]), [1] * (len(in_shape) - 2), (0, 0))


def import_reduce_mean(cx, node):
    """A mean over the spatial axes of an NCHW / NCW tensor is a global average pool; any other a reduce."""
    in_shape = cx.shape(node.input[0], node)
    axes = cx.attr(node, "axes")
    if axes is None and len(node.input) > 1 and node.input[1] in cx.consts:
        axes = cx.consts[node.input[1]].tolist()
    axes = sorted(a % len(in_shape) for a in (axes or range(len(in_shape))))
    if len(in_shape) not in (3, 4) or axes != list(range(2, len(in_shape))):
        return reduce(cx, node, "mean")
    if cx.attr(node, "keepdims", 1):
        pool(cx, node, "avg_pool", list(in_shape[2:]), [1] * (len(in_shape) - 2), (0, 0))
        return
    # keepdims=0: pool to [1,1,(1,)C] then view as [1, C]
    pooled = SYNTHETIC + node.output[0] + "__pooled"    # edgec's own tensor: not an ONNX value
    cx.shapes[pooled] = tuple(in_shape[:2]) + (1,) * (len(in_shape) - 2)
    fake = onnx.helper.make_node("GlobalAveragePool", [node.input[0]], [pooled], name=node.name)
    import_global_average_pool(cx, fake)
    movement.view(cx, node, pooled, node.output[0])


ONNX = {"MaxPool": import_max_pool, "AveragePool": import_average_pool,
        "GlobalAveragePool": import_global_average_pool, "GlobalMaxPool": import_global_max_pool,
        "ReduceMean": import_reduce_mean}


# ---- TFLite import (edgec/frontend/tflite.py)
def import_tflite_pool(tx, op):
    """AVERAGE_POOL_2D / MAX_POOL_2D (input and output share one quantization, as TFLite requires)."""
    o, (x, out) = tx.options(op), activations(tx, op)          # int8, or int16 (16x8)
    (_, ih, iw, c), (_, oh, ow, _) = tx.tensor(x).shape, tx.shape(op.Outputs(0))
    tx.same_qparams(x, out, tx.op_name(op))
    win = tx.window(o, (ih, iw), (oh, ow), (o.FilterHeight(), o.FilterWidth()))
    kind = "avg_pool" if tx.op_name(op) == "AVERAGE_POOL_2D" else "max_pool"
    tx.emit(kind, op, [x], out, None, tx.act_range(op, out, o.FusedActivationFunction()), in_hwc=(ih, iw, c),
            out_hwc=(oh, ow, c), kernel=win["kernel"], stride=win["stride"], pad=win["pad"])


TFLITE = {"AVERAGE_POOL_2D": import_tflite_pool, "MAX_POOL_2D": import_tflite_pool}
