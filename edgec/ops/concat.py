"""concat: the inputs side by side along one axis, [outer][chunk_i] each into [outer][sum of chunks]; an input
whose quantization differs from the output's is requantized by a table on the way; kernel in
runtime_c/edgec_movement.c.

ONNX Concat becomes one concat (its inputs laid out alike); Split becomes one remap per output.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit, movement, tflite16
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.fixedpoint.scheme import quantize_multiplier, requant_table, requantize


def _parts(op: Op, inputs: list) -> list:
    """The concatenated values in order: the op's inputs, with its constant parts (attrs or arrays `const<i>`)
    in their places."""
    consts = op.attrs.get("consts") or {}
    it = iter(inputs)
    return [consts[i] if i in consts else next(it) for i in range(len(op.attrs["chunks"]))]


def quantize_concat(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    total = sum(a["chunks"])
    parts, off = [], 0
    for i, (t, chunk) in enumerate(zip(_parts(op, ins), a["chunks"])):
        if not isinstance(t, Tensor):        # a constant part: stored in the output's quantization
            q = np.round(np.asarray(t, np.float64) / out.scale) + out.zero_point
            op.arrays[f"const{i}"] = np.clip(q, -128, 127).astype(np.int8).reshape(-1)
        elif (t.scale, t.zero_point) != (out.scale, out.zero_point):
            op.arrays[f"table{i}"] = requant_table(t.scale, t.zero_point, out.scale, out.zero_point)
        parts.append(dict(outer=a["outer"], chunk=chunk, out_stride=total, out_offset=off))
        off += chunk
    op.params.update(parts=parts)


def concat_part_s8(p: dict, table, x, out: np.ndarray) -> None:
    """Write input x [outer][chunk] into out at [o * out_stride + out_offset + j] (through table if any)."""
    x = np.asarray(x, np.int8).reshape(int(p["outer"]), int(p["chunk"]))
    if table is not None:
        x = np.asarray(table, np.int8)[x.astype(np.int64) + 128]
    view = out.reshape(int(p["outer"]), int(p["out_stride"]))
    view[:, int(p["out_offset"]):int(p["out_offset"]) + int(p["chunk"])] = x


def _stored(op: Op, arrays, inputs: list) -> list:
    """The parts in order: the inputs, with the stored constants (`const<i>` of arrays) in their places."""
    it = iter(inputs)
    return [arrays[f"const{i}"] if f"const{i}" in arrays else next(it) for i in range(len(op.params["parts"]))]


def run_concat(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    out = np.zeros(p["parts"][0]["outer"] * p["parts"][0]["out_stride"], np.int8)
    for i, (part, t) in enumerate(zip(p["parts"], _stored(op, op.arrays, inputs))):
        concat_part_s8(part, op.arrays.get(f"table{i}"), t, out)
    return out


def float_concat(op: Op, inputs: list):
    outer = op.attrs["outer"]
    return np.concatenate([np.asarray(i, np.float32).reshape(outer, -1) for i in _parts(op, inputs)], axis=1)


def c_concat(op: Op, low, site: CallSite) -> str:
    lines = []
    for i, (part, t) in enumerate(zip(op.params["parts"], _stored(op, site.arrays, site.inputs))):
        table = site.arrays.get(f"table{i}", "0")
        lines.append(f"{{ static const edgec_concat_params p = {cemit.struct_init(part)}; "
                     f"{low.kernel.name}(&p, {t}, {table}, {site.output}); }}")
    return "\n    ".join(lines)


# ---- int16 (between two int16 layers, edgec/quant/int16.py): each part requantized to the output's symmetric grid
# by a multiplier and shift (0: copied), as the int16 layers requantize; a .tflite's int16 constant parts (16x8,
# quantized like the output) stored and copied
def quantize_concat16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The 16x8 parameters (after the int8 quantizer, whose tables they drop): each part's mult and shift."""
    for k in [k for k in op.arrays if k.startswith("table")]:
        del op.arrays[k]
    for i, (part, t) in enumerate(zip(op.params["parts"], _parts(op, ins))):
        if not isinstance(t, Tensor) and op.arrays[f"const{i}"].dtype != np.int16:   # an ONNX constant part (a ViT's
            q = np.round(np.asarray(t, np.float64) / out.scale)   # class token in a QDQ file): on the output's grid
            op.arrays[f"const{i}"] = np.clip(q, -32768, 32767).astype(np.int16).reshape(-1)
        copied = not isinstance(t, Tensor) or t.scale == out.scale
        part["mult"], part["shift"] = (0, 0) if copied else quantize_multiplier(t.scale / out.scale)


def concat_part_s16(p: dict, mult: int, shift: int, x, out: np.ndarray) -> None:
    """Write int16 input x [outer][chunk] into out at [o * out_stride + out_offset + j], requantized by mult and
    shift unless mult is 0."""
    x = np.asarray(x, np.int16).reshape(int(p["outer"]), int(p["chunk"]))
    if mult:
        x = np.clip(requantize(x.astype(np.int32), mult, shift), -32768, 32767).astype(np.int16)
    view = out.reshape(int(p["outer"]), int(p["out_stride"]))
    view[:, int(p["out_offset"]):int(p["out_offset"]) + int(p["chunk"])] = x


def run_concat16(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    out = np.zeros(p["parts"][0]["outer"] * p["parts"][0]["out_stride"], np.int16)
    for part, t in zip(p["parts"], _stored(op, op.arrays, inputs)):
        concat_part_s16(part, part["mult"], part["shift"], t, out)
    return out


def c_concat16(op: Op, low, site: CallSite) -> str:
    lines = []
    for part, t in zip(op.params["parts"], _stored(op, site.arrays, site.inputs)):
        fields = {k: part[k] for k in ("outer", "chunk", "out_stride", "out_offset")}
        lines.append(f"{{ static const edgec_concat_params p = {cemit.struct_init(fields)}; "
                     f"{low.kernel.name}(&p, {cemit.i16(t, const=True)}, {int(part['mult'])}, {int(part['shift'])}, "
                     f"{cemit.i16(site.output)}); }}")
    return "\n    ".join(lines)


OPS = [OpDef("concat", "movement", quantize_concat, float_concat,
             int16=Int16(quantize_concat16, between=lambda op: not op.attrs.get("consts"),
                         qdq=always))]
KERNELS = [Kernel("edgec_concat_part_s8", ("concat",), REFERENCE, c_concat, run=run_concat),
           Kernel("edgec_concat_part_s16", ("concat",), REFERENCE, c_concat16, precision=INT16, run=run_concat16)]


# ---- ONNX import
def emit_concat(cx, node, tensors: list[str], out: str, outer: int, chunks: list[int]) -> Op:
    """A concat of canonical tensors [outer][chunk_i] into `out` (for importers that build one, e.g. LSTM's
    two directions)."""
    return cx.emit("concat", node, tensors, out, outer=outer, chunks=chunks)


def import_concat(cx, node):
    y = node.output[0]
    yshape = cx.shape(y, node)
    r = len(yshape)
    axis = int(cx.attr(node, "axis")) % r
    inputs = [i for i in node.input if i and int(np.prod(cx.shape(i, node))) > 0]
    acts = [i for i in inputs if i not in cx.consts]
    if not acts:
        raise node_error(node, "every input is a constant (nothing computed at run time)")
    if len(inputs) == 1:
        cx.values[y] = cx.activation(inputs[0], node)
        return
    perm = cx.activation(acts[0], node)[1]
    tensors = [movement.in_layout(cx, i, r, perm, node) for i in acts]
    # a constant part (a ViT's class token): its float values in the output's layout, quantized with the output
    consts = {j: np.transpose(np.asarray(cx.consts[i], np.float32).reshape(cx.shape(i, node)), perm).reshape(-1)
              for j, i in enumerate(inputs) if i in cx.consts}
    k = perm.index(axis)
    phys = [yshape[p] for p in perm]
    outer = int(np.prod(phys[:k], dtype=np.int64))
    chunks = [int(np.prod([cx.shape(i, node)[p] for p in perm][k:], dtype=np.int64)) for i in inputs]
    out = cx.new_tensor(y, tuple(phys), y)
    cx.emit("concat", node, tensors, out, outer=outer, chunks=chunks, **({"consts": consts} if consts else {}))
    cx.values[y] = (out, perm)


def import_split(cx, node):
    x = node.input[0]
    shape = cx.shape(x, node)
    axis = int(cx.attr(node, "axis", 0)) % len(shape)
    start = 0
    for y in node.output:
        n = cx.shape(y, node)[axis] if y else 0
        if y:
            s = start
            fns = [(lambda m: np.arange(m)) for _ in shape]
            fns[axis] = lambda m, s=s: s + np.arange(m)
            movement.remap_axes(cx, node, x, y, fns)
        start += n


ONNX = {"Concat": import_concat, "Split": import_split}


# ---- TFLite import (edgec/frontend/tflite.py)
def import_tflite_concatenation(tx, op):
    """CONCATENATION of int8 activations and constants (a ViT's class token) quantized like the output (as
    TFLite Micro requires): a copy, the constants' int8 values stored; in 16x8, of int16 activations and
    constants."""
    o = tx.options(op)
    first = next((op.Inputs(k) for k in range(op.InputsLength()) if op.Inputs(k) in tx.values), None)
    dtypes = ("int16",) if first is not None and tx.tensor(tx.values[first]).dtype == "int16" else ("int8",)
    out = tx.output(op, dtypes=dtypes)
    ins, consts, real = [], {}, {}
    for k in range(op.InputsLength()):
        if op.Inputs(k) in tx.values:
            ins.append(tx.input(op, k, dtypes))
            tx.same_qparams(ins[-1], out, "CONCATENATION")
            continue
        data = tx.const(op, k)
        scales, zps, _ = tx.qparams(op.Inputs(k))
        t = tx.tensor(out)
        if data is None or data.dtype != np.dtype(dtypes[0]) or scales.size != 1 or (float(scales[0]), int(zps[0])) != \
                (t.scale, t.zero_point):
            raise tx.unsupported(f"input {k} is a constant not quantized like the output")
        consts[k] = np.ascontiguousarray(data).reshape(-1)
        real[k] = ((data.astype(np.float64) - t.zero_point) * t.scale).astype(np.float32)
    if not ins:
        raise tx.unsupported("every input is a constant (nothing computed at run time)")
    if o.FusedActivationFunction() != 0:
        raise tx.unsupported("a fused activation on CONCATENATION")
    shape = tx.tensor(out).shape
    axis = o.Axis() % len(shape)
    shapes = [tx.shape(op.Inputs(k)) for k in range(op.InputsLength())]
    chunks = [int(np.prod(s[axis:], dtype=np.int64)) for s in shapes]
    tx.emit("concat", op, ins, out, {f"const{k}": v for k, v in consts.items()}, None,
            outer=int(np.prod(shape[:axis], dtype=np.int64)), chunks=chunks, consts=real)


def import_tflite_pack(tx, op):
    """PACK of activations quantized like the output: a concatenation along a new axis."""
    o = tx.options(op)
    ins = [tflite16.moved(tx, op, k) for k in range(op.InputsLength())]
    out = tx.output(op, dtypes=tflite16.like(tx, ins[0]) if ins else ("int8",))
    for x in ins:
        if tx.tensor(x).dtype != tx.tensor(out).dtype:
            raise tx.unsupported(f"PACK of {tx.tensor(x).dtype} and {tx.tensor(out).dtype} inputs")
        tx.same_qparams(x, out, "PACK")
    shape = tx.tensor(out).shape
    axis = o.Axis() % len(shape)
    chunk = int(np.prod(tx.tensor(ins[0]).shape[axis:], dtype=np.int64)) if ins else 0
    tx.emit("concat", op, ins, out, outer=int(np.prod(shape[:axis], dtype=np.int64)), chunks=[chunk] * len(ins))


def _split(tx, op, x: str, axis: int, sizes: list[int]):
    """One remap per output: the run of `sizes[i]` elements along `axis` (each output in its file shape: UNPACK
    drops the axis)."""
    from edgec.ops.rearrange import tflite_remap

    shape = tx.tensor(x).shape
    axis %= len(shape)
    if sum(sizes) != shape[axis] or len(sizes) != op.OutputsLength() or min(sizes, default=0) < 0:
        raise tx.unsupported(f"sizes {sizes} do not split axis {axis} of size {shape[axis]}")
    start = 0
    for k, n in enumerate(sizes):
        axes = [(np.arange(d), a) for a, d in enumerate(shape)]
        axes[axis] = (start + np.arange(n), axis)
        tflite_remap(tx, op, x, tx.output(op, k=k, dtypes=tflite16.like(tx, x)), axes)
        start += n


def import_tflite_split(tx, op):
    """SPLIT (axis, input): equal parts."""
    axis, x, parts = tx.const(op, 0), tflite16.moved(tx, op, 1), op.OutputsLength()
    if axis is None:
        raise tx.unsupported("a constant axis")
    shape = tx.tensor(x).shape
    a = int(np.asarray(axis).reshape(-1)[0]) % len(shape)
    if shape[a] % parts:
        raise tx.unsupported(f"axis {a} of size {shape[a]} does not split into {parts} equal parts")
    _split(tx, op, x, a, [shape[a] // parts] * parts)


def import_tflite_split_v(tx, op):
    """SPLIT_V (input, size_splits, axis): the given sizes, one of them -1 (the rest)."""
    x, sizes, axis = tflite16.moved(tx, op), tx.const(op, 1), tx.const(op, 2)
    if sizes is None or axis is None:
        raise tx.unsupported("constant size_splits and axis")
    shape = tx.tensor(x).shape
    a = int(np.asarray(axis).reshape(-1)[0]) % len(shape)
    sizes = [int(v) for v in np.asarray(sizes).reshape(-1)]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = shape[a] - sum(v for v in sizes if v != -1)
    _split(tx, op, x, a, sizes)


def import_tflite_unpack(tx, op):
    """UNPACK: every slice along the axis, the axis dropped (the output's shape)."""
    x, o = tflite16.moved(tx, op), tx.options(op)
    shape = tx.tensor(x).shape
    _split(tx, op, x, o.Axis(), [1] * shape[o.Axis() % len(shape)])


TFLITE = {"CONCATENATION": import_tflite_concatenation, "PACK": import_tflite_pack, "SPLIT": import_tflite_split,
          "SPLIT_V": import_tflite_split_v, "UNPACK": import_tflite_unpack}
