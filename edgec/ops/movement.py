"""Data movement: reshape (a view: no code), transpose (rank <= 4) and remap (any separable index map over
up to 6 dimensions); kernels in runtime_c/edgec_movement.c. They keep their input's quantization.

Every ONNX value is held by a canonical tensor plus a permutation from its ONNX layout to the physical
one (see edgec/frontend/canonicalize.py). Identity, Dropout and Transpose only relabel that layout;
Flatten/Reshape/Squeeze/Unsqueeze are views (`reshape`, no code on the device) when the bytes allow it.
Anything that really moves data becomes a `transpose`, a `concat` (edgec/ops/concat.py) or a `remap`: a
separable index map,
one offset table per physical output axis (layout changes of more than 4 axes here; Slice, Split, Pad,
Gather, Tile, Expand, DepthToSpace and SpaceToDepth in edgec/ops/rearrange.py; nearest Resize and
ConvTranspose's zero insertion). Chains of remaps are merged into one after the graph is built.
"""
from __future__ import annotations

import dataclasses
import itertools
import numpy as np

from edgec.errors import EdgecError, node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.ops.tflite16 import ACTIVATIONS, check_zero_points


RANK = 6                  # remap / binary work on up to 6 dimensions (EDGEC_RANK)


INVALID = -(1 << 27)      # remap offset marking "padding": any sum containing it stays negative


def offsets(dims, strides):
    """Flat offsets of every element of an array of shape dims walked with the given strides."""
    off = np.zeros(dims, np.int64)
    for k, (d, s) in enumerate(zip(dims, strides)):
        shape = [1] * len(dims)
        shape[k] = d
        off = off + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return off.reshape(-1)


# ---- quantize ---------------------------------------------------------------------------------


def _nothing(op: Op, ins: list[Tensor], out: Tensor) -> None:
    pass


def quantize_transpose(op: Op, ins: list[Tensor], out: Tensor) -> None:
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
    op.params.update(dims=[1] * lead + dims, perm=list(range(lead)) + [p + lead for p in perm])


def quantize_remap(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    dims = [1] * (RANK - len(a["dims"])) + [int(d) for d in a["dims"]]
    tables = [np.zeros(1, np.int64)] * (RANK - len(a["tables"])) + list(a["tables"])
    start = np.cumsum([0] + [len(t) for t in tables[:-1]]).tolist()
    pad = int(np.clip(round(a["pad"] / x.scale) + x.zero_point, -128, 127))
    op.params.update(dims=dims, start=[int(s) for s in start], pad_value=pad)
    op.arrays["offsets"] = np.concatenate(tables).astype(np.int32)


def quantize_remap16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """A remap between two int16 layers (edgec/quant/int16.py): its pad value on the input's int16 grid."""
    op.params["pad_value"] = int(np.clip(round(op.attrs["pad"] / ins[0].scale), -32768, 32767))


# ---- NumPy integer twins ------------------------------------------------------------------------


def transpose_s8(x, perm, dtype=np.int8) -> np.ndarray:
    """TFLite reference_ops::Transpose (== numpy.transpose) for rank <= 4; int16 with dtype."""
    return np.ascontiguousarray(np.transpose(np.asarray(x, dtype), [int(i) for i in perm]))


def remap_s8(p: dict, offsets, x, dtype=np.int8) -> np.ndarray:
    """out[i0..i5] = x[sum_k offsets[start[k] + i_k]], or pad_value if any term is INVALID."""
    dims = [int(d) for d in p["dims"]]
    offsets = np.asarray(offsets, np.int64)
    total = np.zeros(dims, np.int64)
    for k, d in enumerate(dims):
        shape = [1] * RANK
        shape[k] = d
        total = total + offsets[int(p["start"][k]):int(p["start"][k]) + d].reshape(shape)
    total = total.reshape(-1)
    x = np.asarray(x, dtype).reshape(-1)
    return np.where(total >= 0, x[np.maximum(total, 0)], dtype(p["pad_value"])).astype(dtype)


def run_transpose(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return transpose_s8(inputs[0].reshape(p["dims"]), p["perm"])


def run_transpose16(op: Op, inputs: list) -> np.ndarray:
    return transpose_s8(inputs[0].reshape(op.params["dims"]), op.params["perm"], np.int16)


# ---- float --------------------------------------------------------------------------------------


def remap_indices(op: Op) -> np.ndarray:
    """The input index each output element of a remap reads (flat, output order; negative: the pad value): the
    sum of its per-axis tables."""
    dims = [int(d) for d in op.attrs["dims"]]
    total = np.zeros(dims, np.int64)
    for k, t in enumerate(op.attrs["tables"]):
        shape = [1] * len(dims)
        shape[k] = dims[k]
        total = total + np.asarray(t, np.int64).reshape(shape)
    return total.reshape(-1)


def float_remap(op: Op, inputs: list):
    total = remap_indices(op)
    return np.where(total >= 0, inputs[0].reshape(-1)[np.maximum(total, 0)], op.attrs["pad"])


# ---- C ------------------------------------------------------------------------------------------


def c_transpose(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_transpose_params", op.params, call, only_fields=True)


def c_remap(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {site.inputs[0]}, {site.arrays['offsets']}, {site.output});"
    return cemit.with_params("edgec_remap_params", op.params, call)


def c_transpose16(op: Op, low, site: CallSite) -> str:
    call = f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {cemit.i16(site.output)});"
    return cemit.with_params("edgec_transpose_params", op.params, call, only_fields=True)


def c_remap16(op: Op, low, site: CallSite) -> str:
    call = (f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {site.arrays['offsets']}, "
            f"{cemit.i16(site.output)});")
    return cemit.with_params("edgec_remap_params", op.params, call)


OPS = [     # (a reshape is a view: no kernel, its output the input's bytes, int8 or int16)
    OpDef("reshape", "movement", _nothing, lambda op, inputs: inputs[0], alias=True, qparams="input",
          sensitivity=False),
    OpDef("transpose", "movement", quantize_transpose, lambda op, inputs: np.transpose(inputs[0], op.attrs["perm"]),
          qparams="input", sensitivity=False, int16=Int16(_nothing, qdq=always)),
    OpDef("remap", "movement", quantize_remap, float_remap, qparams="input",
          int16=Int16(quantize_remap16, qdq=always)),
]
KERNELS = [
    Kernel("edgec_transpose_s8", ("transpose",), REFERENCE, c_transpose, run=run_transpose, code_bytes=400),
    Kernel("edgec_remap_s8", ("remap",), REFERENCE, c_remap,
           run=lambda op, inputs: remap_s8(op.params, op.arrays["offsets"], inputs[0])),
    # int16: only between two int16 layers (edgec/quant/int16.py passes an int16 chain through them)
    Kernel("edgec_transpose_s16", ("transpose",), REFERENCE, c_transpose16, precision=INT16, run=run_transpose16),
    Kernel("edgec_remap_s16", ("remap",), REFERENCE, c_remap16, precision=INT16,
           run=lambda op, inputs: remap_s8(op.params, op.arrays["offsets"], inputs[0], np.int16)),
]


# ---- ONNX import


def identity(rank: int) -> tuple[int, ...]:
    return tuple(range(rank))


def channels_last(rank: int) -> tuple[int, ...]:
    return (0,) + tuple(range(2, rank)) + (1,)


def same_order(shape, p, q) -> bool:
    """True if laying out `shape` by p or by q gives the same bytes."""
    return [a for a in p if shape[a] != 1] == [a for a in q if shape[a] != 1]


def contiguous_strides(shape) -> list[int]:
    strides, acc = [], 1
    for d in reversed(list(shape)):
        strides.append(acc)
        acc *= int(d)
    return strides[::-1]


def axis_strides(cx, value, node):
    """(tensor, perm, stride of each ONNX axis in the tensor's physical layout)."""
    tensor, perm = cx.activation(value, node)
    shape = cx.shape(value, node)
    phys = contiguous_strides([shape[a] for a in perm])
    strides = [0] * len(shape)
    for k, a in enumerate(perm):
        strides[a] = phys[k]
    return tensor, perm, strides


def emit_remap(cx, node, tensor, y, dims, tables, pad=0.0, source=None) -> str:
    """Emit a remap writing a new tensor of physical shape dims (tables per physical axis)."""
    dims, tables = list(dims), [np.asarray(t, np.int64) for t in tables]
    shape = tuple(int(d) for d in dims) or (1,)
    while len(dims) > RANK:     # fold a size-1 axis into another axis' offsets
        if 1 not in dims:
            raise node_error(node, f"data movement over {len(dims)} non-unit dimensions (at most {RANK})")
        k = dims.index(1)
        base = int(tables[k][0])
        del dims[k], tables[k]
        tables[0] = np.where((tables[0] >= 0) & (base >= 0), tables[0] + base, INVALID)
    out = cx.new_tensor(y, shape, source or y)
    cx.emit("remap", node, [tensor], out, dims=tuple(dims), tables=tables, pad=float(pad))
    return out


def remap_axes(cx, node, x, y, index_fns, pad=0.0) -> None:
    """y[j] = x[idx_a(j_a) for each axis a] (same rank, -1 = padding); y keeps x's layout."""
    tensor, perm, strides = axis_strides(cx, x, node)
    yshape = cx.shape(y, node)
    tables = []
    for a in perm:
        idx = np.asarray(index_fns[a](yshape[a]), np.int64)
        tables.append(np.where(idx >= 0, idx * strides[a], INVALID))
    out = emit_remap(cx, node, tensor, y, [yshape[a] for a in perm], tables, pad)
    cx.values[y] = (out, perm)


def relayout(cx, value, tensor, perm, want, node) -> str:
    """A new tensor holding ONNX value `value` (now `tensor`, laid out by `perm`) laid out by `want`."""
    onnx_shape = cx.shape(value, node)
    phys = tuple(onnx_shape[a] for a in want)
    src = cx.graph.tensors[tensor].source
    if sum(d != 1 for d in onnx_shape) > 4 and not same_order(onnx_shape, perm, want):
        # the transpose kernel moves at most 4 non-unit axes; an index map moves up to 6
        _, _, strides = axis_strides(cx, value, node)
        return emit_remap(cx, node, tensor, f"{tensor}__layout", phys,
                          [np.arange(onnx_shape[a]) * strides[a] for a in want], source=src)
    out = cx.new_tensor(f"{tensor}__layout", phys, src)
    if same_order(onnx_shape, perm, want):
        cx.emit("reshape", node, [tensor], out)
    else:
        q = tuple(int(i) for i in np.argsort(perm)[list(want)])
        cx.emit("transpose", node, [tensor], out, perm=q)
    return out


def in_layout(cx, value, rank, perm, node):
    """A tensor holding `value` (rank <= `rank`, leading 1s added) laid out in the order `perm`."""
    shape = cx.shape(value, node)
    k = rank - len(shape)
    padded = (1,) * k + tuple(shape)
    tensor, own = cx.activation(value, node)
    own_ext = tuple(range(k)) + tuple(p + k for p in own)
    if same_order(padded, own_ext, perm):
        return tensor
    ident = cx.as_layout(value, tuple(range(len(shape))), node)
    if same_order(padded, tuple(range(rank)), perm):
        return ident
    strides = contiguous_strides(padded)
    tables = [np.arange(padded[a]) * strides[a] for a in perm]
    return emit_remap(cx, node, ident, f"{value}__perm", [padded[a] for a in perm], tables,
                      source=cx.graph.tensors[tensor].source)


def ensure_kernel(cx) -> None:
    """A graph of views only (a Reshape model) still needs one kernel call: copy the bytes."""
    if all(op.kind == "reshape" for op in cx.graph.ops):
        node = cx.model.graph.node[-1]
        src = cx.graph.tensors[cx.graph.output]
        out = emit_remap(cx, node, cx.graph.output, src.name + "__copy", [src.size], [np.arange(src.size)],
                         source=src.source)
        cx.graph.output = out


def source_index(op: Op, size: int) -> np.ndarray | None:
    """For an op that only moves bytes (a view, or a remap without padding): the flat index in its input of
    each of its `size` output elements, else None (a kernel may then read the input in place)."""
    if op.kind == "reshape":
        return np.arange(size, dtype=np.int64)
    if op.kind != "remap":
        return None
    total = remap_indices(op)
    return total if total.size == size and total.min() >= 0 else None


def merge_remaps(g) -> None:
    """A remap reading only another remap's output becomes one remap (Slice -> Slice -> Resize, Pad ->
    Slice, ... as exporters write them): one pass over the data instead of several (g: the canonicalizer's
    ir.GraphBuilder)."""
    merged = True
    while merged:
        merged = False
        for op2 in g.ops:
            src = op2.inputs[0] if op2.kind == "remap" else None
            op1 = g.producer(src) if src else None
            if op1 is None or op1.kind != "remap" or src in g.outputs or len(g.consumers(src)) != 1:
                continue
            both = compose_remaps(op1.attrs, op2.attrs)
            if both is None:
                continue
            op2.attrs["tables"], op2.attrs["pad"] = both
            g.replace_op(op2, dataclasses.replace(op2, inputs=op1.inputs))
            g.ops.remove(op1)
            del g.tensors[src]
            merged = True
            break


def compose_remaps(first: dict, second: dict) -> tuple[list[np.ndarray], float] | None:
    """Tables and pad value of `second` applied to the output of `first` as one remap, or None when the
    second's offsets along an axis do not stay on the same axis of the first's output (or both pad with
    different values)."""
    d1, d2 = [int(d) for d in first["dims"]], [int(d) for d in second["dims"]]
    if len(d1) != len(d2):
        return None
    s1 = contiguous_strides(d1)
    tables, pads_first, pads_second = [], False, False
    for k in range(len(d1)):
        t1, t2 = np.asarray(first["tables"][k], np.int64), np.asarray(second["tables"][k], np.int64)
        valid = t2 >= 0
        j = np.where(valid, t2 // s1[k], 0)
        if np.any(valid & ((t2 % s1[k] != 0) | (j >= d1[k]))):
            return None
        t = np.where(valid, t1[j], INVALID)
        pads_first |= bool(np.any(valid & (t1[j] < 0)))
        pads_second |= bool(np.any(~valid))
        tables.append(np.where(t < 0, INVALID, t))
    if pads_first and pads_second and float(first["pad"]) != float(second["pad"]):
        return None
    return tables, float(first["pad"] if pads_first else second["pad"])


def view_layout(xshape, perm, yshape, max_elements: int = 1 << 20) -> tuple[int, ...] | None:
    """A physical axis order q of y = reshape(x) that keeps x's bytes where they are (x laid out by perm),
    or None. E.g. [1, C, H, W] channels-last viewed as [1, C, H*W] is [1, H*W, C]: q = (0, 2, 1)."""
    n = int(np.prod(xshape, dtype=np.int64))
    if n > max_elements or len(yshape) > 5:
        return None
    want = np.arange(n).reshape(xshape).transpose(perm).reshape(-1)
    rank = len(yshape)
    first = [tuple([0] + list(range(2, rank)) + [1])] if rank >= 3 else []
    for q in first + list(itertools.permutations(range(rank))):
        if np.array_equal(np.arange(n).reshape(yshape).transpose(q).reshape(-1), want):
            return tuple(q)
    return None


def alias(cx, node):
    """The output is the input (Identity, eval-mode Dropout, a float Cast...): no op."""
    if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2] and (
            node.input[2] not in cx.consts or bool(cx.consts[node.input[2]])):
        raise node_error(node, "training-mode Dropout is not supported (export the model in eval mode)")
    cx.values[node.output[0]] = cx.activation(node.input[0], node)


def import_transpose(cx, node):
    tensor, perm = cx.activation(node.input[0], node)
    t = cx.attr(node, "perm", list(range(len(perm)))[::-1])
    cx.values[node.output[0]] = (tensor, tuple(int(i) for i in np.argsort(t)[list(perm)]))


def view(cx, node, x, y):
    """y = x viewed with another shape (Flatten, Reshape, Squeeze, Unsqueeze); a bool mask's view is a bool mask
    (a Where's condition: TF1's row mask reshaped, edgec/frontend/tflite_float_ops.py)."""
    _view(cx, node, x, y)
    src, out = cx.graph.tensors[cx.activation(x, node)[0]], cx.values[y][0]
    if src.dtype == "bool" and out != src.name:
        cx.graph.retensor(out, dtype="bool", scale=1.0, zero_point=0)


def _view(cx, node, x, y):
    xshape, yshape = cx.shape(x, node), cx.shape(y, node)
    tensor, perm = cx.activation(x, node)
    if not same_order(xshape, perm, identity(len(xshape))):
        feeds_dense = all(u in ("Gemm", "MatMul") for u in cx.real_uses(y)) and \
            len(yshape) == 2 and yshape[0] == 1
        if feeds_dense:
            idx = np.arange(int(np.prod(xshape))).reshape(xshape).transpose(perm).reshape(-1)
            out = cx.new_tensor(y, yshape, y)
            cx.emit("reshape", node, [tensor], out)
            cx.feature_perm[out] = idx
            cx.values[y] = (out, identity(2))
            return
        q = view_layout(xshape, perm, yshape)     # the same bytes, read as y in another axis order?
        if q is not None:
            out = cx.new_tensor(y, tuple(yshape[a] for a in q), y)
            cx.emit("reshape", node, [tensor], out)
            cx.values[y] = (out, q)
            return
        tensor = cx.as_layout(x, identity(len(xshape)), node)
    out = cx.new_tensor(y, yshape, y)
    cx.emit("reshape", node, [tensor], out)
    cx.values[y] = (out, identity(len(yshape)))


def import_view(cx, node):
    view(cx, node, node.input[0], node.output[0])


ONNX = {
    "Identity": alias, "Dropout": alias, "Transpose": import_transpose,
    "Flatten": import_view, "Reshape": import_view, "Squeeze": import_view, "Unsqueeze": import_view,
}


# ---- TFLite import (edgec/frontend/tflite.py)
def dynamic_shape(tx, op) -> bool:
    """Whether the file leaves the operator's output shape to run time (a -1 in its shape signature: a Keras
    batch of None), so the shape edgec computes stands for the placeholder the converter wrote."""
    t = tx.sg.Tensors(op.Outputs(0))
    return bool(t.ShapeSignatureLength()) and -1 in t.ShapeSignatureAsNumpy()


def import_tflite_reshape(tx, op):
    """RESHAPE / SQUEEZE / EXPAND_DIMS: a view of the same bytes (same quantization)."""
    x, dims = tx.input(op, 0, ACTIVATIONS), None
    if tx.op_name(op) == "RESHAPE" and op.InputsLength() > 1 and op.Inputs(1) >= 0 and op.Inputs(1) in tx.static:
        dims = [int(d) for d in np.ravel(tx.static[op.Inputs(1)])]       # a shape computed (folded) at import
        n = int(np.prod(tx.tensor(x).shape))
        if -1 in dims and dims.count(-1) == 1 and int(np.prod([d for d in dims if d != -1])) > 0:
            dims[dims.index(-1)] = n // int(np.prod([d for d in dims if d != -1]))
    out = tx.output(op, tuple(dims) if dims is not None and dynamic_shape(tx, op) else None,   # batch None: ours
                    (tx.tensor(x).dtype,))      # int16 (16x8) too
    tx.same_qparams(x, out, tx.op_name(op))
    if dims is not None:
        given = tx.tensor(out).shape
        if int(np.prod(dims)) != int(np.prod(given)):
            raise tx.unsupported(f"the shape computed for its output, {dims}, is not the file's {list(given)} (a "
                                 "run-time shape the converter left unresolved); export with a fixed batch size")
    tx.emit("reshape", op, [x], out)


def import_tflite_pad(tx, op):
    """PAD / PADV2 with constant paddings: a remap, the padding filled with the output zero point (PAD) or the
    given int8 constant (PADV2); input and output share one quantization, as TFLite requires; int16 (16x8) too."""
    x, pads = tx.input(op, 0, ACTIVATIONS), tx.const(op, 1)
    out = tx.output(op, dtypes=(tx.tensor(x).dtype,))
    tx.same_qparams(x, out, tx.op_name(op))
    check_zero_points(tx, op, [x])
    value = tx.const(op, 2)
    fill = tx.tensor(out).zero_point if value is None else int(np.asarray(value).reshape(-1)[0])
    shape = tx.tensor(x).shape
    if pads is None or pads.shape != (len(shape), 2) or np.any(pads < 0) or len(shape) > RANK:
        raise tx.unsupported("paddings must be a constant [rank][2] of non-negative values (rank <= 6)")
    strides = np.cumprod((1,) + shape[::-1])[-2::-1]
    tables = []
    for n, (before, after), s in zip(shape, pads.tolist(), strides):
        j = np.arange(n + before + after) - before
        tables.append(np.where((j >= 0) & (j < n), j * s, INVALID))
    dims = tuple(int(n + b + a) for n, (b, a) in zip(shape, pads.tolist()))
    tx.emit("remap", op, [x], out, None, {"pad_value": fill}, dims=dims, tables=tables, pad=0.0)


def emit_tflite_remap(tx, op, x: str, out: str, params: dict | None, **attrs) -> None:
    """A remap of x into out made from TFLite operator op (the data-movement importers, edgec/ops/rearrange.py)."""
    tx.emit("remap", op, [x], out, None, params, **attrs)


def tflite_permute(tx, op, x: str, perm: list[int]) -> str:
    """A new tensor holding x with its axes in the order perm (a remap), for an importer that needs another
    layout first (TFLite's MEAN over axes that are not contiguous)."""
    shape = tx.tensor(x).shape
    if len(shape) > RANK:
        raise tx.unsupported(f"a rank-{len(shape)} tensor in another axis order (edgec moves up to rank {RANK})")
    strides = np.cumprod((1,) + shape[::-1])[-2::-1]
    dims = tuple(shape[a] for a in perm)
    mid = tx.intermediate(x, dims, "__permuted")
    tx.emit("remap", op, [x], mid, None, {"pad_value": 0}, part=":permute", dims=dims, pad=0.0,
            tables=[np.arange(shape[a]) * int(strides[a]) for a in perm])
    return mid


TFLITE = {"RESHAPE": import_tflite_reshape, "SQUEEZE": import_tflite_reshape, "EXPAND_DIMS": import_tflite_reshape,
          "PAD": import_tflite_pad, "PADV2": import_tflite_pad}
