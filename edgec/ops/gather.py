"""gather_ids: TFLite's GATHER at int32 indices the model computes or takes as an input, of an activation (both
known only at run time) or of a constant int8 table with batch_dims or along an inner axis (stored with the op),
as TFLite Micro's gather.cc runs it: int8 values (TFLM's Gather<int8_t, int32_t>; it
takes no int16 or int32 values and no int16 ids), any axis, batch_dims (negative counted from the indices' rank),
each slice copied byte for byte (the output's quantization is not applied: TFLM copies the bytes). An index
outside [0, axis size) fails the inference as TFLite Micro's Invoke fails (the device's invoke returns
EDGEC_ERROR_INDEX, -5; the reference raises naming the operator and the index). GATHER at constant indices is a
remap (edgec/ops/rearrange.py); at computed indices into a constant table a lookup (edgec/ops/float_tail);
edgec/ops/registry.py picks. C kernel: runtime_c/edgec_gather.c.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import Op, Tensor
from edgec.ops.float_tail import IndexOutside
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef


# ---- NumPy integer twin (bit-exact with the C) ----------------------------------------------------
def gather(p: dict, x, ids, name: str = "GATHER") -> np.ndarray:
    """out[b, o, c, :] = x[b, o, ids[b, c], :] with x read as [batch, outer, axis, inner], ids as [batch, coords];
    an index outside the axis raises IndexOutside."""
    batch, outer, axis, coords, inner = (int(p[k]) for k in ("batch", "outer", "axis_size", "coords", "inner"))
    ids = np.asarray(ids, np.int64).reshape(batch, coords)
    bad = ids[(ids < 0) | (ids >= axis)]
    if bad.size:
        raise IndexOutside(f"{name}: index {int(bad.reshape(-1)[0])} outside the axis of {axis} (TFLite Micro's "
                           "Invoke fails there too; the device's invoke returns EDGEC_ERROR_INDEX, -5)")
    xs = np.asarray(x).reshape(batch, outer, axis, inner)
    return xs[np.arange(batch)[:, None, None], np.arange(outer)[None, :, None], ids[:, None, :]].reshape(-1)


def _values(op: Op, ins: list):
    """The values gathered from: a constant table stored with the op, or the op's first input."""
    return op.arrays["table"] if "table" in op.arrays else ins[0]


def run_gather(op: Op, ins: list) -> np.ndarray:
    return gather(op.params, np.asarray(_values(op, ins), np.int8), ins[-1], op.name)


def float_gather(op: Op, ins: list):
    return gather(op.params, np.asarray(_values(op, ins), np.float32), ins[-1], op.name)


def _quantize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """Nothing to compute: the bytes are copied (the importer's parameters are the op's)."""


# ---- C ------------------------------------------------------------------------------------------
def c_gather(op: Op, low, s: CallSite) -> str:
    p = op.params
    return (f"if ({low.kernel.name}({p['batch']}, {p['outer']}, {p['axis_size']}, {p['coords']}, {p['inner']}, "
            f"{s.arrays['table'] if 'table' in s.arrays else s.inputs[0]}, "
            f"(const int32_t *)(const void *)({s.inputs[-1]}), {s.output}) != 0) "
            "return EDGEC_ERROR_INDEX;   /* an index outside the axis, as TFLM fails */")


# ---- ONNX: nn.Embedding's Gather of a float table at the model's integer token ids ------------------
def table_qparams(op: Op) -> tuple[float, int]:
    """An ONNX embedding table's per-tensor int8 grid, as a constant's: its range (0 included) over 255 steps;
    the lookup's output keeps it (the bytes are copied)."""
    t = np.asarray(op.attrs["float_table"], np.float64)
    lo, hi = min(float(t.min()), 0.0), max(float(t.max()), 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    return float(np.float32(scale)), int(np.clip(np.round(-128 - lo / scale), -128, 127))


def _quantize_table(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The float table rounded to the output's grid (table_qparams), stored with the op."""
    t = np.asarray(op.attrs["float_table"], np.float64)
    op.params.update(op.attrs["lookup"])
    op.arrays["table"] = np.clip(np.round(t / out.scale) + out.zero_point, -128, 127).astype(np.int8).reshape(-1)


def float_embedding(op: Op, ins: list):
    return gather(op.attrs["lookup"], np.asarray(op.attrs["float_table"], np.float32), ins[-1], op.name)


def import_onnx_embedding(cx, node, ids: str) -> None:
    """Gather of a constant float table (axis 0) at token ids the model takes as input (torch's nn.Embedding):
    the ids an int32 port (edgec/frontend/canonicalize.py), the table quantized per tensor (table_qparams), an id
    outside [0, rows) fails the inference as a .tflite's GATHER does (no wrapping of negative ids). Along another
    axis a (a table stored transposed, [D, V] gathered on axis 1: `W[:, ids]`): the table is moved at build time so
    that axis comes first, and the output, ONNX's table.shape[:a] + ids' shape + table.shape[a + 1:], is held with
    the ids' axes first (its layout permutation says so: no data moved on the device)."""
    table = np.asarray(cx.consts[node.input[0]], np.float32)
    if table.ndim < 1:
        raise node_error(node, "token ids into a scalar table")
    a = int(cx.attr(node, "axis", 0)) % table.ndim
    table = np.moveaxis(table, a, 0)
    t, _ = cx.values[ids]
    ishape = cx.shape(ids, node)
    k, rest = len(ishape), table.ndim - 1
    out = cx.new_tensor(node.output[0], (*ishape, *table.shape[1:]), node.output[0])
    cx.values[node.output[0]] = (out, (*range(a, a + k), *range(a), *range(a + k, k + rest)))
    rows, inner = int(table.shape[0]), int(np.prod(table.shape[1:], dtype=np.int64))
    cx.emit("embedding_gather", node, [t], out, float_table=table.reshape(rows, inner), lookup=dict(
        batch=1, outer=1, axis_size=rows, coords=int(np.prod(ishape, dtype=np.int64)), inner=inner))


OPS = [OpDef("gather_ids", "gather", _quantize, float_gather, qparams="input", sensitivity=False),
       OpDef("embedding_gather", "gather", _quantize_table, float_embedding, qparams="fixed",
             fixed_qparams=table_qparams, sensitivity=False)]
KERNELS = [Kernel("edgec_gather_s8", ("gather_ids", "embedding_gather"), REFERENCE, c_gather, run=run_gather,
                  code_bytes=200)]
ONNX: dict = {}


# ---- TFLite import
def takes(tx, op) -> bool:
    """Whether a GATHER is this family's: indices read at run time from an activation's values, or from a constant
    table along an axis after one of size > 1 or with batch_dims (the table lookup of edgec/ops/float_tail takes
    the others); constant indices are a remap."""
    if op.InputsLength() < 2 or op.Inputs(1) not in tx.values:
        return False
    if op.Inputs(0) in tx.values:
        return True
    o, shape = tx.options(op), tx.shape(op.Inputs(0))
    axis = (o.Axis() if o is not None else 0) % max(len(shape), 1)
    return bool(o is not None and o.BatchDims()) or int(np.prod(shape[:axis], dtype=np.int64)) != 1


def import_tflite_gather(tx, op):
    """GATHER of an int8 activation at int32 indices computed at run time: TFLite Micro's Prepare checks (axis and
    batch_dims in range, batch_dims <= axis, the batch dimensions alike) and its output shape."""
    o, ids, table = tx.options(op), tx.values[op.Inputs(1)], None
    if op.Inputs(0) in tx.values:
        x = tx.input(op, 0)
    else:
        table = tx.const(op, 0)
        if table is None or table.dtype != np.int8:
            raise tx.unsupported("values other than int8 (TFLite Micro's GATHER takes int8 and float32 ones)")
    if tx.tensor(ids).dtype != "int32":
        raise tx.unsupported(f"{tx.tensor(ids).dtype} indices (TFLite Micro's GATHER takes int32 only)")
    shape, ishape = tx.tensor(x).shape if table is None else tuple(table.shape), tx.shape(op.Inputs(1))
    axis, bd = (o.Axis(), o.BatchDims()) if o is not None else (0, 0)
    axis, bd = axis + len(shape) if axis < 0 else axis, bd + len(ishape) if bd < 0 else bd
    if not (0 <= axis < len(shape) and 0 <= bd <= axis and bd < len(shape) and bd <= len(ishape)) or \
            tuple(shape[:bd]) != tuple(ishape[:bd]):
        raise tx.unsupported(f"axis {axis} and batch_dims {bd} of a rank-{len(shape)} input and rank-{len(ishape)} "
                             "indices (TFLite Micro's Prepare refuses them)")

    def prod(d):
        return int(np.prod(d, dtype=np.int64))
    out = tx.output(op, (*shape[:axis], *ishape[bd:], *shape[axis + 1:]))
    tx.emit("gather_ids", op, [ids] if table is not None else [x, ids], out,
            arrays=None if table is None else {"table": np.ascontiguousarray(table).reshape(-1)}, params=dict(
        batch=prod(shape[:bd]), outer=prod(shape[bd:axis]), axis_size=int(shape[axis]), coords=prod(ishape[bd:]),
        inner=prod(shape[axis + 1:])))


TFLITE: dict = {}     # GATHER's importer is chosen in edgec/ops/registry.py (`takes`)
