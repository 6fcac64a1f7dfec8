"""concat: the inputs side by side along one axis, [outer][chunk_i] each into [outer][sum of chunks]; an input
whose quantization differs from the output's is requantized by a table on the way; kernel in
runtime_c/edgec_movement.c.

ONNX Concat becomes one concat (its inputs laid out alike); Split becomes one remap per output.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit, movement
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.fixedpoint.scheme import requant_table


def quantize_concat(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    total = sum(a["chunks"])
    parts, off = [], 0
    for i, (t, chunk) in enumerate(zip(ins, a["chunks"])):
        same = (t.scale, t.zero_point) == (out.scale, out.zero_point)
        if not same:
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


def run_concat(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    out = np.zeros(p["parts"][0]["outer"] * p["parts"][0]["out_stride"], np.int8)
    for i, (part, t) in enumerate(zip(p["parts"], inputs)):
        concat_part_s8(part, op.arrays.get(f"table{i}"), t, out)
    return out


def float_concat(op: Op, inputs: list):
    outer = op.attrs["outer"]
    return np.concatenate([i.reshape(outer, -1) for i in inputs], axis=1)


def c_concat(op: Op, low, site: CallSite) -> str:
    lines = []
    for i, (part, t) in enumerate(zip(op.params["parts"], site.inputs)):
        table = site.arrays.get(f"table{i}", "0")
        lines.append(f"{{ static const edgec_concat_params p = {cemit.struct_init(part)}; "
                     f"{low.kernel.name}(&p, {t}, {table}, {site.output}); }}")
    return "\n    ".join(lines)


OPS = [OpDef("concat", "movement", quantize_concat, float_concat)]
KERNELS = [Kernel("edgec_concat_part_s8", ("concat",), REFERENCE, c_concat, run=run_concat)]


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
    for i in inputs:
        if i in cx.consts:
            raise node_error(node, f"concatenating the constant '{i}' is not supported")
    if len(inputs) == 1:
        cx.values[y] = cx.activation(inputs[0], node)
        return
    perm = cx.activation(inputs[0], node)[1]
    tensors = [movement.in_layout(cx, i, r, perm, node) for i in inputs]
    k = perm.index(axis)
    phys = [yshape[p] for p in perm]
    outer = int(np.prod(phys[:k], dtype=np.int64))
    chunks = [int(np.prod([cx.shape(i, node)[p] for p in perm][k:], dtype=np.int64)) for i in inputs]
    out = cx.new_tensor(y, tuple(phys), y)
    cx.emit("concat", node, tensors, out, outer=outer, chunks=chunks)
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
    """CONCATENATION of int8 activations quantized like the output (as TFLite Micro requires): a copy."""
    o = tx.options(op)
    ins = [tx.input(op, k) for k in range(op.InputsLength())]
    out = tx.output(op)
    for x in ins:
        tx.same_qparams(x, out, "CONCATENATION")
    if o.FusedActivationFunction() != 0:
        raise tx.unsupported("a fused activation on CONCATENATION")
    shape = tx.tensor(out).shape
    axis = o.Axis() % len(shape)
    chunks = [int(np.prod(tx.tensor(x).shape[axis:], dtype=np.int64)) for x in ins]
    tx.emit("concat", op, ins, out, outer=int(np.prod(shape[:axis], dtype=np.int64)), chunks=chunks)


TFLITE = {"CONCATENATION": import_tflite_concatenation}
