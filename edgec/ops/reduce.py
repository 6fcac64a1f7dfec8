"""`reduce`: sum, mean, max, min, argmax, argmin over the middle axis of [outer][n][inner] (any ONNX axes, brought to
one run of contiguous axes by a layout change when needed); kernel in runtime_c/edgec_reduce.c. Argmax/argmin
output indices (scale 1, zero point 0). ReduceL1 and ReduceSumSquare are a table (abs, square) and a sum. TFLite's
MEAN is a sum with TFLite Micro's own requantization (`mean_requantization`).
"""
from __future__ import annotations

import numpy as np
import onnx

from edgec.errors import node_error
from edgec.ir import Op, SYNTHETIC, Tensor
from edgec.ops import cemit, movement
from edgec.ops.lut import emit_lut
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.tflite16 import ACTIVATIONS, check_zero_points
from edgec.ops.opdef import CallSite, Int16, OpDef
from edgec.fixedpoint.scheme import quantize_multiplier, quantize_multiplier_one_rounding, requantize


# an int16 mean, max or min an int16 chain may pass through between two int16 layers (edgec/quant/int16.py: an
# int16 LSTM's sequence averaged over time, then a 16x8 Gemm): n int16 values summed in the int32 accumulator
MAX_N16 = 1 << 15
REDUCE_KINDS = {"sum": 0, "max": 1, "min": 2, "argmax": 3, "argmin": 4}


def fixed_qparams(op: Op) -> tuple[float, int] | None:
    return (1.0, 0) if op.attrs["how"] in ("argmax", "argmin") else None


def index_classes(graph) -> int | None:
    """For a graph whose output is a class index (it ends in ArgMax/ArgMin): the number of classes the
    index chooses from; else None."""
    last = next((op for op in reversed(graph.ops) if op.output == graph.output), None)
    if last is None or last.kind != "reduce" or not last.params:
        return None
    index_kinds = (REDUCE_KINDS["argmax"], REDUCE_KINDS["argmin"])
    return int(last.params["n"]) if last.params.get("kind") in index_kinds else None


def quantize_reduce(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    kind = a["how"]
    n = a["n"]
    real = x.scale / out.scale / (n if kind == "mean" else 1)
    # rounded once (shift 0 where TFLite's form rounds, then shifts right by 1..10 bits and rounds again): a mean's
    # multiplier is often 0.1-0.5 (a right shift of 1-3 bits), where two roundings put up to a quarter of the outputs
    # a level off the nearest; a .tflite file's reduce keeps the file's own multiplier (its importer's params)
    one = x.dtype == out.dtype == "int8"
    mult, shift = (quantize_multiplier_one_rounding if one else quantize_multiplier)(real)
    code = REDUCE_KINDS["sum" if kind == "mean" else kind]
    op.params.update(outer=a["outer"], n=n, inner=a["inner"], kind=code, select_last=a["select_last"],
                     input_zp=x.zero_point, mult=mult, shift=shift, output_zp=out.zero_point,
                     act_min=-32768 if out.dtype == "int16" else -128,       # an int16 mean (16x8): int16's range
                     act_max=32767 if out.dtype == "int16" else 127)


def mean_of(name: str, x: str, out: str, outer: int, n: int, inner: int) -> Op:
    """A mean over the middle axis of [outer][n][inner] with its own output scale (a global average pool
    whose output range is much narrower than its input's: edgec/ops/pool.py `own_scale`)."""
    return Op("reduce", name, (x,), out, attrs={"how": "mean", "outer": outer, "n": n, "inner": inner,
                                                "select_last": 0})


def reduce_s8(p: dict, x, dtype=np.int8) -> np.ndarray:
    """Reduce [outer][n][inner] over n: sum (then requantize: mean is a sum with 1/n in the
    multiplier), max/min (then requantize), argmax/argmin (first or last index, clamped to int8); int16 values
    with dtype (edgec_reduce_s16)."""
    x = np.asarray(x, dtype).reshape(int(p["outer"]), int(p["n"]), int(p["inner"])).astype(np.int64)
    kind = int(p["kind"])
    if kind >= REDUCE_KINDS["argmax"]:
        v = x if kind == REDUCE_KINDS["argmax"] else -x
        if int(p["select_last"]):
            idx = int(p["n"]) - 1 - np.argmax(v[:, ::-1, :], axis=1)
        else:
            idx = np.argmax(v, axis=1)
        return np.clip(idx, int(p["act_min"]), int(p["act_max"])).astype(dtype).reshape(-1)
    if kind == REDUCE_KINDS["sum"]:
        acc = (x - int(p["input_zp"])).sum(axis=1)
    elif kind == REDUCE_KINDS["max"]:
        acc = x.max(axis=1) - int(p["input_zp"])
    else:
        acc = x.min(axis=1) - int(p["input_zp"])
    out = requantize(acc.astype(np.int32), p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(dtype).reshape(-1)


def float_reduce(op: Op, inputs: list):
    a = op.attrs
    x = inputs[0].reshape(a["outer"], a["n"], a["inner"])
    kind = a["how"]
    if kind in ("argmax", "argmin"):
        v = x if kind == "argmax" else -x
        if a["select_last"]:
            return a["n"] - 1 - np.argmax(v[:, ::-1], axis=1)
        return np.argmax(v, axis=1)
    return {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[kind](x, axis=1)


def c_reduce(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_reduce_params", op.params, call)


def index32_s8(p: dict, x) -> np.ndarray:
    """TFLite's ArgMinMax of int8 values: the first index of the largest (argmax) or smallest, as int32."""
    x = np.asarray(x, np.int8).reshape(int(p["outer"]), int(p["n"]), int(p["inner"])).astype(np.int64)
    v = x if int(p["kind"]) == REDUCE_KINDS["argmax"] else -x
    return np.argmax(v, axis=1).astype(np.int32).reshape(-1)


def c_reduce16(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {cemit.i16(site.output)});"
    return cemit.with_params("edgec_reduce_params", op.params, call)


def c_index32(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, (int32_t *)(void *)({site.output}));"
    return cemit.with_params("edgec_reduce_params", op.params, call)


def _index32(op: Op) -> bool:
    return bool(op.params.get("_index32"))


OPS = [OpDef("reduce", "reduce", quantize_reduce, float_reduce, qparams="fixed", fixed_qparams=fixed_qparams,
             # a QDQ file's int16 sum / mean / max / min, and an ArgMax / ArgMin over int16 values (an int16 index:
             # quantize_reduce gives int16's range; edgec_reduce_s16); a mean / max / min between two int16 layers
             int16=Int16(lambda op, ins, out: None, qdq=lambda op: op.attrs["how"] in REDUCE_KINDS | {"mean": 0},
                         between=lambda op: op.attrs["how"] in ("mean", "max", "min") and op.attrs["n"] <= MAX_N16))]
KERNELS = [Kernel("edgec_reduce_s8", ("reduce",), REFERENCE, c_reduce, applies=lambda op: not _index32(op),
                  run=lambda op, inputs: reduce_s8(op.params, inputs[0])),
           Kernel("edgec_reduce_index32_s8", ("reduce",), REFERENCE, c_index32, applies=_index32,
                  run=lambda op, inputs: index32_s8(op.params, inputs[0]), code_bytes=200),
           Kernel("edgec_reduce_s16", ("reduce",), REFERENCE, c_reduce16, precision=INT16,   # TFLite's 16x8 MEAN
                  run=lambda op, inputs: reduce_s8(op.params, inputs[0], np.int16))]


# ---- ONNX import
def _reduce_axes(cx, node, rank):
    axes = cx.attr(node, "axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        axes = cx.const_input(node, 1).tolist()
    if not axes:
        if cx.attr(node, "noop_with_empty_axes", 0):
            return []
        axes = list(range(rank))
    return sorted({int(a) % rank for a in axes})


def reduce(cx, node, kind, axes=None, select_last=0):
    x, y = node.input[0], node.output[0]
    shape = cx.shape(x, node)
    r = len(shape)
    if axes is None:
        axes = _reduce_axes(cx, node, r)
    if not axes:
        return movement.alias(cx, node)
    tensor, perm = cx.activation(x, node)
    order = [a for a in perm if shape[a] > 1]
    red = [a for a in order if a in axes]
    kept = [a for a in order if a not in axes]
    pos = [i for i, a in enumerate(order) if a in axes]
    if pos and pos != list(range(pos[0], pos[0] + len(pos))):
        want = tuple([a for a in perm if a not in axes] + [a for a in perm if a in axes])
        tensor = cx.as_layout(x, want, node)
        order = kept + red
        perm = want
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    first = order.index(red[0]) if red else len(order)
    outer = int(np.prod([shape[a] for a in order[:first]], dtype=np.int64))
    inner = int(np.prod([shape[a] for a in order[first + len(red):]], dtype=np.int64))
    yshape = cx.shape(y, node)
    keep = len(yshape) == r
    yperm = perm if keep else tuple(a - sum(1 for b in axes if b < a) for a in perm if a not in axes)
    out = cx.new_tensor(y, tuple(yshape[a] for a in yperm) or (1,), y)
    if kind in ("argmax", "argmin") and n > 128:
        raise node_error(node, f"{node.op_type} over {n} values: int8 indices reach 127 at most")
    cx.emit("reduce", node, [tensor], out, how=kind, outer=outer, n=n, inner=inner,
            select_last=int(select_last))
    cx.values[y] = (out, tuple(yperm))


def import_reduce_sum(cx, node):
    reduce(cx, node, "sum")


def import_reduce_max(cx, node):
    reduce(cx, node, "max")


def import_reduce_min(cx, node):
    reduce(cx, node, "min")


def _table_then_sum(cx, node, suffix, fn, consts=None):
    """ReduceL1 / ReduceSumSquare: a table (abs, square) into edgec's own tensor, then a ReduceSum."""
    mid = node.output[0] + suffix
    cx.shapes[mid] = cx.shape(node.input[0], node)
    emit_lut(cx, node, node.input[0], mid, fn, consts=consts)
    cx.graph.retensor(cx.values[mid][0], source=SYNTHETIC + mid)
    fake = onnx.helper.make_node("ReduceSum", [mid] + list(node.input[1:]), list(node.output), name=node.name)
    fake.attribute.extend(node.attribute)
    reduce(cx, fake, "sum", _reduce_axes(cx, node, len(cx.shapes[mid])))


def import_reduce_l1(cx, node):
    _table_then_sum(cx, node, "__abs", "abs")


def import_reduce_sum_square(cx, node):
    _table_then_sum(cx, node, "__square", "pow_c", np.array([2.0]))


def _arg(cx, node, kind):
    shape = cx.shape(node.input[0], node)
    axis = int(cx.attr(node, "axis", 0)) % len(shape)
    reduce(cx, node, kind, [axis], cx.attr(node, "select_last_index", 0))


def import_arg_max(cx, node):
    _arg(cx, node, "argmax")


def import_arg_min(cx, node):
    _arg(cx, node, "argmin")


ONNX = {"ReduceSum": import_reduce_sum, "ReduceMax": import_reduce_max, "ReduceMin": import_reduce_min,
        "ReduceL1": import_reduce_l1, "ReduceSumSquare": import_reduce_sum_square,
        "ArgMax": import_arg_max, "ArgMin": import_arg_min}


# ---- TFLite import (edgec/frontend/tflite.py)
def mean_requantization(in_scale: float, out_scale: float, n: int) -> tuple[int, int]:
    """(multiplier, shift) of TFLite's int8 MEAN over n values (QuantizedMeanOrSum): the Q31 multiplier of
    in_scale / out_scale (in double, as TFLM's Prepare), then 1/n folded in by integer division after shifting it
    left by floor(log2 n) (at most 31, and at most 31 + its shift)."""
    mult, shift = quantize_multiplier(float(np.float64(np.float32(in_scale)) / np.float64(np.float32(out_scale))))
    left = min(n.bit_length() - 1, 31, 31 + shift)
    return int((mult << left) // n), shift - left


def import_tflite_mean(tx, op):
    """MEAN (Keras GlobalAveragePooling, any axes, keep_dims or not) as TFLite Micro computes it for int8: the
    sum of (x - input zero point) over the axes, requantized by `mean_requantization`, plus the output zero point;
    a reduce over [outer][n][inner] (axes not contiguous: a transpose first, kept axes before reduced ones)."""
    x, axes = tx.input(op, 0, ACTIVATIONS), tx.const(op, 1)
    shape, wide = tx.tensor(x).shape, tx.tensor(x).dtype == "int16"       # int16: TFLite's 16x8 MEAN
    if axes is None or axes.dtype != np.int32:
        raise tx.unsupported("the axes must be a constant int32 tensor")
    red = sorted({int(a) % len(shape) for a in axes.reshape(-1)})
    out = tx.output(op, dtypes=(tx.tensor(x).dtype,))
    check_zero_points(tx, op, [x, out])
    moved = [a for a in range(len(shape)) if shape[a] > 1]
    pos = [i for i, a in enumerate(moved) if a in red]
    if pos and pos != list(range(pos[0], pos[0] + len(pos))):       # kept axes first, then the reduced ones
        order = [a for a in range(len(shape)) if a not in red] + red
        if wide:                 # (an int16 tensor of its own: 16x8)
            from edgec.ops.rearrange import tflite_remap, tflite_scratch

            mid = tflite_scratch(tx, x, [shape[a] for a in order], "together")
            tflite_remap(tx, op, x, mid, [(np.arange(shape[a]), a) for a in order])
            x = mid
        else:
            x = movement.tflite_permute(tx, op, x, order)
        shape, red = tx.tensor(x).shape, list(range(len(shape) - len(red), len(shape)))
    n = int(np.prod([shape[a] for a in red], dtype=np.int64))
    span = [a for a in red if shape[a] > 1] or [len(shape)]       # (the size-1 axes among them move nothing)
    outer = int(np.prod(shape[:span[0]], dtype=np.int64))
    inner = int(np.prod(shape[span[-1] + 1:], dtype=np.int64))
    mult, shift = mean_requantization(tx.tensor(x).scale, tx.tensor(out).scale, n)
    clamp = {"act_min": -32768, "act_max": 32767} if wide else {}
    tx.emit("reduce", op, [x], out, None, {"mult": mult, "shift": shift, **clamp}, how="mean", outer=outer, n=n,
            inner=inner, select_last=0)


def import_tflite_reduce(tx, op):
    """REDUCE_MAX / REDUCE_MIN (TFLite Micro: the int8 values themselves, input and output quantized alike; REDUCE_ALL
    of bool bytes is their minimum) and SUM
    (the sum less n times the zero point, requantized by the double scale ratio) over constant axes; axes not
    next to each other are first brought together by a remap."""
    from edgec.ops.rearrange import tflite_remap, tflite_scratch

    from edgec.ops.binary.tflite import bool_output

    name = tx.op_name(op)
    x = tx.input(op, 0, dtypes=("bool",) if name == "REDUCE_ALL" else ACTIVATIONS if name == "SUM" else ("int8",))
    shape, wide = tx.tensor(x).shape, tx.tensor(x).dtype == "int16"       # int16: TFLite's 16x8 SUM
    r = len(shape)
    axes_in = tx.const(op, 1)
    if axes_in is None or axes_in.dtype.kind not in "iu":
        raise tx.unsupported("the axes (input 1) must be a constant integer tensor")
    axes = sorted({int(a) % r for a in np.asarray(axes_in).reshape(-1)})
    out = bool_output(tx, op) if name == "REDUCE_ALL" else tx.output(op, dtypes=(tx.tensor(x).dtype,))
    xt, ot = tx.tensor(x), tx.tensor(out)
    how = {"REDUCE_MAX": "max", "REDUCE_MIN": "min", "SUM": "sum", "REDUCE_ALL": "min"}[name]
    if how == "sum":
        mult, shift = quantize_multiplier(float(xt.scale) / float(ot.scale))
        params = dict(input_zp=xt.zero_point, mult=mult, shift=shift, output_zp=ot.zero_point)
        if wide:
            params.update(act_min=-32768, act_max=32767)
    else:
        tx.same_qparams(x, out, name)                  # as TFLite Micro requires
        params = dict(input_zp=0, mult=1 << 30, shift=1, output_zp=0)     # the int8 values as they are
    live = [a for a in range(r) if shape[a] > 1]
    red = [a for a in live if a in axes]
    if red and red != live[live.index(red[0]):live.index(red[0]) + len(red)]:
        order = [a for a in range(r) if a not in axes] + axes
        mid = tflite_scratch(tx, x, [shape[a] for a in order], "together")
        tflite_remap(tx, op, x, mid, [(np.arange(shape[a]), a) for a in order])
        x, shape, axes = mid, tuple(shape[a] for a in order), list(range(r - len(axes), r))
        live = [a for a in range(r) if shape[a] > 1]
        red = [a for a in live if a in axes]
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    first = red[0] if red else r
    outer = int(np.prod(shape[:first], dtype=np.int64))
    inner = int(np.prod(shape[first:], dtype=np.int64)) // n
    tx.emit("reduce", op, [x], out, None, params, how=how, outer=outer, n=n, inner=inner, select_last=0)


def import_tflite_arg(tx, op):
    """ARG_MAX / ARG_MIN of int8 values along a constant axis, int32 indices (the first of equal values, as
    TFLite's ArgMinMax): a graph output of its own (edgec's int32 tensors are indices the host reads)."""
    name, x = tx.op_name(op), tx.input(op, 0)
    shape = tx.tensor(x).shape
    axis = tx.const(op, 1)
    o = tx.options(op)
    if axis is None or axis.size != 1 or axis.dtype.kind not in "iu":
        raise tx.unsupported("its axis (input 1) must be one constant integer")
    if o is not None and o.OutputType() != 2:
        raise tx.unsupported("int64 indices (TFLite Micro's ARG_MAX / ARG_MIN output int32 only; export with "
                             "output_type int32)")
    a = int(axis.reshape(-1)[0])
    if not -len(shape) <= a < len(shape):
        raise tx.unsupported(f"axis {a} of a rank-{len(shape)} tensor")
    a %= len(shape)
    outer, n = int(np.prod(shape[:a], dtype=np.int64)), int(shape[a])
    inner = int(np.prod(shape[a + 1:], dtype=np.int64))
    out = tx.packed_outputs(op, outer * inner, "int32")
    tx.emit("reduce", op, [x], out, None, {"_index32": 1}, how="argmax" if name == "ARG_MAX" else "argmin",
            outer=outer, n=n, inner=inner, select_last=0)


TFLITE = {"ARG_MAX": import_tflite_arg, "ARG_MIN": import_tflite_arg, "MEAN": import_tflite_mean, "REDUCE_MAX": import_tflite_reduce, "REDUCE_MIN": import_tflite_reduce, "SUM": import_tflite_reduce,
          "REDUCE_ALL": import_tflite_reduce}
