"""ONNX operators that rearrange elements without computing: Slice, Pad, Gather, Tile, Expand, DepthToSpace
and SpaceToDepth. Each becomes one `remap` (an index map, edgec/ops/movement.py), or a view when its bytes
allow; a zero Pad read only by convolutions becomes their padding.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import SYNTHETIC, Tensor
from edgec.ops import gather, movement
from edgec.ops.tflite16 import ACTIVATIONS, like, moved


# ---- ONNX import
def import_slice(cx, node):
    x = node.input[0]
    shape = cx.shape(x, node)
    r = len(shape)
    if cx.opset < 10:
        starts, ends = cx.attr(node, "starts"), cx.attr(node, "ends")
        axes, steps = cx.attr(node, "axes", list(range(len(starts)))), [1] * len(starts)
    else:
        starts, ends = cx.const_input(node, 1).tolist(), cx.const_input(node, 2).tolist()
        axes = cx.const_input(node, 3, np.arange(len(starts))).tolist()
        steps = cx.const_input(node, 4, np.ones(len(starts), np.int64)).tolist()
    first = [0] * r
    step = [1] * r
    for s, e, a, t in zip(starts, ends, axes, steps):
        a %= r
        n = shape[a]
        if t > 0:
            first[a] = min(max(s + n if s < 0 else s, 0), n)
        else:
            first[a] = min(max(s + n if s < 0 else s, 0), n - 1)
        step[a] = t
    fns = [(lambda m, a=a: first[a] + step[a] * np.arange(m)) for a in range(r)]
    movement.remap_axes(cx, node, x, node.output[0], fns)


def import_pad(cx, node):
    x = node.input[0]
    shape = cx.shape(x, node)
    r = len(shape)
    mode = cx.attr(node, "mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if cx.opset < 11:
        pads, value = list(cx.attr(node, "pads")), float(cx.attr(node, "value", 0.0))
        axes = list(range(r))
    else:
        pads = cx.const_input(node, 1).tolist()
        value = cx.const_input(node, 2, np.array(0.0))
        value = float(np.asarray(value).reshape(-1)[0]) if np.asarray(value).size else 0.0
        axes = [a % r for a in cx.const_input(node, 3, np.arange(len(pads) // 2)).tolist()]
    begin, end = [0] * r, [0] * r
    for i, a in enumerate(axes):
        begin[a], end[a] = int(pads[i]), int(pads[i + len(axes)])
    if _pad_folds_into_conv(cx, node, mode, value, begin, end):
        return

    def fn(a):
        n = shape[a]

        def idx(m):
            i = np.arange(m) - begin[a]
            if mode == "constant":
                return np.where((i >= 0) & (i < n), i, -1)
            if mode == "edge":
                return np.clip(i, 0, n - 1)
            if mode == "wrap":
                return np.mod(i, n)
            if mode == "reflect":
                if n == 1:
                    return np.zeros_like(i)
                period = 2 * (n - 1)
                i = np.mod(i, period)
                return np.where(i < n, i, period - i)
            raise node_error(node, f"pad mode '{mode}' is not supported")
        return idx
    movement.remap_axes(cx, node, x, node.output[0], [fn(a) for a in range(r)], pad=value)


def _pad_folds_into_conv(cx, node, mode, value, begin, end) -> bool:
    """Zero padding of the spatial axes read only by convolutions becomes their padding (tf2onnx writes
    Pad + Conv for TensorFlow's SAME padding; PyTorch for F.pad before a conv). The Conv importer
    (ops/conv.py) reads it from cx.padded_for_conv."""
    x, y = node.input[0], node.output[0]
    readers = cx.readers.get(y, [])
    r = len(begin)
    if mode != "constant" or value != 0.0 or r not in (3, 4) or any(begin[:2]) or any(end[:2]) or \
            min(begin + end) < 0 or not readers or y in {o.name for o in cx.model.graph.output}:
        return False
    for conv in readers:
        auto = cx.attr(conv, "auto_pad", b"NOTSET")
        if conv.op_type != "Conv" or conv.input[0] != y or (auto.decode() if isinstance(auto, bytes) else auto) \
                != "NOTSET":
            return False
    cx.activation(x, node)
    cx.padded_for_conv[y] = (x, (0, begin[2]) if r == 3 else (begin[2], begin[3]))
    return True


def import_gather(cx, node):
    x, ind = node.input
    if ind not in cx.consts and x in cx.consts and ind in cx.token_ids:   # nn.Embedding at the model's token ids
        return gather.import_onnx_embedding(cx, node, ind)
    if ind not in cx.consts:
        raise node_error(node, "only Gather with constant indices is supported")
    if x in cx.consts:
        raise node_error(node, "Gather from a constant table with computed indices is not supported")
    shape = cx.shape(x, node)
    axis = int(cx.attr(node, "axis", 0)) % len(shape)
    idx = np.asarray(cx.consts[ind], np.int64)
    idx = np.where(idx < 0, idx + shape[axis], idx)
    y = node.output[0]
    if idx.ndim == 1:
        fns = [(lambda m: np.arange(m)) for _ in shape]
        fns[axis] = lambda m: idx
        return movement.remap_axes(cx, node, x, y, fns)
    mid = SYNTHETIC + y + "__gathered"     # edgec's own tensor (a scalar index's axis kept): not an ONNX value
    cx.shapes[mid] = tuple(shape[:axis]) + (idx.size,) + tuple(shape[axis + 1:])
    flat = idx.reshape(-1)
    fns = [(lambda m: np.arange(m)) for _ in shape]
    fns[axis] = lambda m: flat
    movement.remap_axes(cx, node, x, mid, fns)
    movement.view(cx, node, mid, y)


def import_tile(cx, node):
    x = node.input[0]
    shape = cx.shape(x, node)
    movement.remap_axes(cx, node, x, node.output[0], [(lambda m, n=n: np.arange(m) % n) for n in shape])


def import_expand(cx, node):
    x, y = node.input[0], node.output[0]
    shape, yshape = cx.shape(x, node), cx.shape(y, node)
    r = len(yshape)
    k = r - len(shape)
    padded = (1,) * k + tuple(shape)
    tensor, own = cx.activation(x, node)
    perm = tuple(range(k)) + tuple(p + k for p in own)
    phys = movement.contiguous_strides([padded[a] for a in perm])
    strides = [0] * r
    for i, a in enumerate(perm):
        strides[a] = phys[i] if padded[a] > 1 else 0
    tables = [np.arange(yshape[a]) * strides[a] for a in perm]
    out = movement.emit_remap(cx, node, tensor, y, [yshape[a] for a in perm], tables)
    cx.values[y] = (out, perm)


def _space_depth(cx, node, to_space):
    x, y = node.input[0], node.output[0]
    b = int(cx.attr(node, "blocksize"))
    mode = cx.attr(node, "mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    tensor, perm, st = movement.axis_strides(cx, x, node)
    if perm not in ((0, 1, 2, 3), (0, 2, 3, 1)):
        tensor, perm = cx.as_layout(x, (0, 1, 2, 3), node), (0, 1, 2, 3)
        st = movement.contiguous_strides(cx.shape(x, node))
    n, c, h, w = cx.shape(x, node)
    if n != 1:
        raise node_error(node, f"batch {n}: {node.op_type} runs on a batch of 1")
    ar = np.arange
    if to_space:   # out[c', h*b+i, w*b+j] = in[ch(i, j, c'), h, w]
        c2 = c // (b * b)
        chan = {"i": (lambda m: ar(m) * (b * c2 if mode == "DCR" else b) * st[1]),
                "j": (lambda m: ar(m) * (c2 if mode == "DCR" else 1) * st[1]),
                "c": (lambda m: ar(m) * (1 if mode == "DCR" else b * b) * st[1])}
        axes = {"c": (c2, chan["c"]), "h": (h, lambda m: ar(m) * st[2]), "i": (b, chan["i"]),
                "w": (w, lambda m: ar(m) * st[3]), "j": (b, chan["j"])}
        order = ["c", "h", "i", "w", "j"] if perm == (0, 1, 2, 3) else ["h", "i", "w", "j", "c"]
    else:          # out[ch(i, j, c), h, w] = in[c, h*b+i, w*b+j]
        if mode == "CRD":    # channel c*b*b + i*b + j instead of (i*b + j)*C + c
            order = ["c", "i", "j", "h", "w"] if perm == (0, 1, 2, 3) else ["h", "w", "c", "i", "j"]
        axes = {"i": (b, lambda m: ar(m) * st[2]), "j": (b, lambda m: ar(m) * st[3]),
                "c": (c, lambda m: ar(m) * st[1]), "h": (h // b, lambda m: ar(m) * b * st[2]),
                "w": (w // b, lambda m: ar(m) * b * st[3])}
        if mode != "CRD":
            order = ["i", "j", "c", "h", "w"] if perm == (0, 1, 2, 3) else ["h", "w", "i", "j", "c"]
    out = movement.emit_remap(cx, node, tensor, y, [axes[k][0] for k in order], [axes[k][1](axes[k][0]) for k in order])
    cx.graph.retensor(out, shape=tuple(cx.shape(y, node)[p] for p in perm))
    cx.graph.ops[-1].attrs["dims"] = tuple(axes[k][0] for k in order)
    cx.values[y] = (out, perm)


def import_depth_to_space(cx, node):
    _space_depth(cx, node, True)


def import_space_to_depth(cx, node):
    _space_depth(cx, node, False)


OPS: list = []      # no kind of its own: what it imports becomes remaps and views
def import_reverse_sequence(cx, node):
    """ReverseSequence (tf2onnx's tf.reverse in a Keras Bidirectional): the first L steps along time_axis reversed,
    one constant L for every batch row (always so with a batch of 1): one remap; other lengths are named."""
    x, shape = node.input[0], cx.shape(node.input[0], node)
    time, batch = int(cx.attr(node, "time_axis", 0)), int(cx.attr(node, "batch_axis", 1))
    lens = np.asarray(cx.const_input(node, 1), np.int64).reshape(-1)
    if lens.size != shape[batch] or np.any(lens != lens[0]) or not 0 <= lens[0] <= shape[time] or time == batch:
        raise node_error(node, f"ReverseSequence with sequence_lens {lens.tolist()[:8]}: only one length for every "
                               f"batch row (0 to {shape[time]}) is supported (export with a batch of 1)")
    fns = [(lambda m: np.arange(m)) for _ in shape]
    fns[time] = lambda m, n=int(lens[0]): np.where(np.arange(m) < n, n - 1 - np.arange(m), np.arange(m))
    movement.remap_axes(cx, node, x, node.output[0], fns)


ONNX = {
    "Slice": import_slice, "Pad": import_pad, "Gather": import_gather, "Tile": import_tile, "Expand": import_expand,
    "DepthToSpace": import_depth_to_space, "SpaceToDepth": import_space_to_depth,
    "ReverseSequence": import_reverse_sequence,
}



# ---- TFLite import (edgec/frontend/tflite.py): every one a remap copying the input's bytes, as TFLite Micro's
# kernels copy them (its int8 TRANSPOSE, TILE, SLICE, ... never requantize), input and output quantized alike
def tflite_remap(tx, op, x: str, out: str, axes: list, fill: int | None = None) -> None:
    """Emit a remap of activation x (a TFLite tensor: row-major, its file shape) into `out`: axes, one per output
    axis, are (index array, input axis) pairs, out[j] = x[index_0[j_0], ...] summed over the axes they name
    (-1: `fill`, an int8 value)."""
    shape = tx.tensor(x).shape
    strides = movement.contiguous_strides(shape)
    dims = [len(idx) for idx, _ in axes]
    tables = [np.where(np.asarray(idx) >= 0, np.asarray(idx, np.int64) * strides[a], movement.INVALID)
              for idx, a in axes]
    while len(dims) > movement.RANK:      # fold a size-1 axis into the first's offsets
        if 1 not in dims:
            raise tx.unsupported(f"data movement over {len(dims)} non-unit dimensions (at most {movement.RANK})")
        k = dims.index(1)
        base = int(tables[k][0])
        del dims[k], tables[k]
        tables[0] = np.where((tables[0] >= 0) & (base >= 0), tables[0] + base, movement.INVALID)
    if int(np.prod(dims, dtype=np.int64)) != tx.tensor(out).size:
        raise tx.unsupported(f"output shape {list(tx.tensor(out).shape)} does not match the operator's {dims}")
    tx.same_qparams(x, out, tx.op_name(op))
    movement.emit_tflite_remap(tx, op, x, out, None if fill is None else {"pad_value": int(fill)},
                               dims=tuple(dims), tables=tables, pad=0.0)


def tflite_scratch(tx, like: str, shape, suffix: str) -> str:
    """A new tensor of edgec's own between two ops made from one TFLite operator, quantized like `like`."""
    t = tx.tensor(like)
    name = f"{like}__{suffix}"
    while name in tx.graph.tensors:
        name += "_"
    wide = {"dtype": "int16"} if t.dtype == "int16" else {}       # (16x8)
    tx.graph.tensors[name] = Tensor(name=name, shape=tuple(int(d) for d in shape) or (1,), source=f"{SYNTHETIC}{name}",
                                    scale=t.scale, zero_point=t.zero_point, **wide)
    return name


def _ints(tx, op, k: int, what: str) -> list[int]:
    v = tx.const(op, k)
    if v is None or v.dtype.kind not in "iu":
        raise tx.unsupported(f"{what} (input {k}) must be a constant integer tensor")
    return [int(i) for i in np.asarray(v).reshape(-1)]


def import_tflite_transpose(tx, op):
    """TRANSPOSE of int8, or int16 (16x8) activations: a remap."""
    x = tx.input(op, 0, ACTIVATIONS)
    shape, perm = tx.tensor(x).shape, _ints(tx, op, 1, "the permutation")
    if sorted(perm) != list(range(len(shape))):
        raise tx.unsupported(f"permutation {perm} of a rank-{len(shape)} tensor")
    tflite_remap(tx, op, x, tx.output(op, dtypes=(tx.tensor(x).dtype,)), [(np.arange(shape[a]), a) for a in perm])


def import_tflite_tile(tx, op):
    x = tx.input(op, 0)
    shape, mult = tx.tensor(x).shape, _ints(tx, op, 1, "the multiples")
    if len(mult) != len(shape) or min(mult, default=1) < 1:
        raise tx.unsupported(f"multiples {mult} of a rank-{len(shape)} tensor")
    tflite_remap(tx, op, x, tx.output(op), [(np.arange(n * m) % n, a) for a, (n, m) in enumerate(zip(shape, mult))])


def import_tflite_broadcast_to(tx, op):
    x = moved(tx, op)
    shape, want = tx.tensor(x).shape, _ints(tx, op, 1, "the shape")
    k = len(want) - len(shape)
    padded = (1,) * k + tuple(shape)
    if k < 0 or any(n not in (1, m) for n, m in zip(padded, want)):
        raise tx.unsupported(f"shape {list(shape)} cannot be broadcast to {want}")
    axes = [(np.arange(m) if n == m else np.zeros(m, np.int64), a - k) for a, (n, m) in enumerate(zip(padded, want))]
    lead = [(np.zeros(m, np.int64), 0) for m in want[:k]]      # new leading axes read offset 0
    tflite_remap(tx, op, x, tx.output(op, dtypes=like(tx, x)), lead + axes[k:])


def import_tflite_slice(tx, op):
    x = moved(tx, op)
    shape = tx.tensor(x).shape
    begin, size = _ints(tx, op, 1, "begin"), _ints(tx, op, 2, "size")
    if len(begin) != len(shape) or len(size) != len(shape):
        raise tx.unsupported(f"begin {begin} and size {size} of a rank-{len(shape)} tensor")
    size = [n - b if s == -1 else s for n, b, s in zip(shape, begin, size)]
    if any(b < 0 or s < 0 or b + s > n for n, b, s in zip(shape, begin, size)):
        raise tx.unsupported(f"slice begin {begin} size {size} outside the input shape {list(shape)}")
    tflite_remap(tx, op, x, tx.output(op, dtypes=like(tx, x)),
                 [(b + np.arange(s), a) for a, (b, s) in enumerate(zip(begin, size))])


def import_tflite_strided_slice(tx, op):
    """STRIDED_SLICE of an activation with constant begin/end/strides (TFLite Micro's StartForAxis/StopForAxis:
    masked ends run to the axis' end, a shrunk axis keeps its start element, the first one under a begin
    mask)."""
    x, o = moved(tx, op), tx.options(op)
    shape = tx.tensor(x).shape
    begin, end, stride = (_ints(tx, op, k, w) for k, w in ((1, "begin"), (2, "end"), (3, "strides")))
    if o.EllipsisMask() or o.NewAxisMask() or o.Offset() or len(begin) != len(shape) or 0 in stride:
        raise tx.unsupported("an ellipsis, a new axis, offset=true, a zero stride or fewer indices than axes")
    axes = []
    for a, n in enumerate(shape):
        if o.ShrinkAxisMask() >> a & 1:          # the start element (a begin mask: the axis' first one)
            i = (0 if stride[a] > 0 else n - 1) if o.BeginMask() >> a & 1 else begin[a] + n if begin[a] < 0 \
                else begin[a]
            if not 0 <= i < n:
                raise tx.unsupported(f"index {begin[a]} outside axis {a} of size {n}")
            axes.append((np.array([i]), a))
            continue
        b = None if o.BeginMask() >> a & 1 else begin[a]
        e = None if o.EndMask() >> a & 1 else end[a]
        axes.append((np.arange(n)[slice(b, e, stride[a])], a))
    tflite_remap(tx, op, x, tx.output(op, dtypes=like(tx, x)), axes)


def import_tflite_gather(tx, op):
    """GATHER of an activation at constant indices (batch_dims 0)."""
    x, o = tx.input(op, 0), tx.options(op)
    shape = tx.tensor(x).shape
    idx = np.asarray(_ints(tx, op, 1, "the indices"), np.int64)
    axis = (o.Axis() if o is not None else 0) % len(shape)
    if o is not None and o.BatchDims():
        raise tx.unsupported("GATHER with batch_dims")
    if idx.size and (idx.min() < 0 or idx.max() >= shape[axis]):
        raise tx.unsupported(f"indices outside axis {axis} of size {shape[axis]}")
    axes = [(np.arange(n), a) for a, n in enumerate(shape)]
    axes[axis] = (idx, axis)
    tflite_remap(tx, op, x, tx.output(op), axes)


def _space_depth_tflite(tx, op, to_space: bool):
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH of an NHWC tensor (TFLite's order: channel (i * block + j) * C + c)."""
    x = tx.input(op, 0)
    bs = tx.options(op).BlockSize()
    shape = tx.tensor(x).shape
    if len(shape) != 4 or bs < 1:
        raise tx.unsupported("a 4-D NHWC input and a positive block size")
    n, h, w, c = shape
    ar = np.arange
    if to_space:       # out[b, y*bs+i, x*bs+j, k] = in[b, y, x, (i*bs + j) * C' + k]
        c2 = c // (bs * bs)
        axes = [(ar(n), 0), (ar(h), 1), (ar(bs) * bs * c2, 3), (ar(w), 2), (ar(bs) * c2, 3), (ar(c2), 3)]
    else:              # out[b, y, x, (i*bs + j) * C + k] = in[b, y*bs+i, x*bs+j, k]
        axes = [(ar(n), 0), (ar(h // bs) * bs, 1), (ar(w // bs) * bs, 2), (ar(bs), 1), (ar(bs), 2), (ar(c), 3)]
    tflite_remap(tx, op, x, tx.output(op), axes)


def import_tflite_depth_to_space(tx, op):
    _space_depth_tflite(tx, op, True)


def import_tflite_space_to_depth(tx, op):
    _space_depth_tflite(tx, op, False)


def import_tflite_mirror_pad(tx, op):
    """MIRROR_PAD: REFLECT (the edge not repeated) or SYMMETRIC (repeated), constant paddings."""
    x = tx.input(op, 0)
    shape = tx.tensor(x).shape
    pads = tx.const(op, 1)
    symmetric = tx.options(op).Mode() == 1
    if pads is None or pads.shape != (len(shape), 2) or np.any(pads < 0):
        raise tx.unsupported("paddings must be a constant [rank][2] of non-negative values")
    axes = []
    for a, (n, (before, after)) in enumerate(zip(shape, pads.tolist())):
        if max(before, after) > (n if symmetric else n - 1):
            raise tx.unsupported(f"padding {before, after} of axis {a} (size {n}) is more than the mode allows")
        i = np.arange(n + before + after) - before
        i = np.where(i < 0, -i - symmetric, np.where(i >= n, 2 * n - 2 + symmetric - i, i))
        axes.append((i, a))
    tflite_remap(tx, op, x, tx.output(op), axes)


def import_tflite_reverse(tx, op):
    """REVERSE_V2 along constant axes."""
    x = moved(tx, op)
    shape = tx.tensor(x).shape
    axes = {a % len(shape) for a in _ints(tx, op, 1, "the axes")}
    tflite_remap(tx, op, x, tx.output(op, dtypes=like(tx, x)), [(np.arange(n)[::-1] if a in axes else np.arange(n), a)
                                            for a, n in enumerate(shape)])


def import_tflite_gather_nd(tx, op):
    """GATHER_ND of an activation at constant indices [..., k]: each index picks a slice of the last rank - k
    axes."""
    x = tx.input(op, 0)
    shape = tx.tensor(x).shape
    idx = tx.const(op, 1)
    if idx is None or idx.dtype.kind not in "iu" or idx.ndim < 1 or not 1 <= idx.shape[-1] <= len(shape):
        raise tx.unsupported("the indices (input 1) must be a constant integer tensor [..., k], k <= rank")
    k = idx.shape[-1]
    flat = idx.reshape(-1, k).astype(np.int64)
    if np.any(flat < 0) or np.any(flat >= np.asarray(shape[:k])):
        raise tx.unsupported(f"indices outside the input shape {list(shape)}")
    strides = movement.contiguous_strides(shape)
    inner = int(np.prod(shape[k:], dtype=np.int64))
    rows = (flat * np.asarray(strides[:k])).sum(axis=1) // max(inner, 1)
    tflite_remap_flat(tx, op, x, tx.output(op), rows, inner)


def tflite_remap_flat(tx, op, x: str, out: str, rows, inner: int) -> None:
    """out[i][j] = x[rows[i] * inner + j] (x read as [size / inner][inner])."""
    tables = [np.asarray(rows, np.int64) * inner, np.arange(inner, dtype=np.int64)]
    if int(len(rows) * inner) != tx.tensor(out).size:
        raise tx.unsupported(f"output shape {list(tx.tensor(out).shape)} does not match the operator's")
    tx.same_qparams(x, out, tx.op_name(op))
    movement.emit_tflite_remap(tx, op, x, out, None, dims=(len(rows), inner), tables=tables, pad=0.0)


def import_tflite_zeros_like(tx, op):
    """ZEROS_LIKE: int8 zeros (the value 0, whatever the zero point), an index map reading nothing."""
    x, out = tx.input(op, 0), tx.output(op)
    n = tx.tensor(out).size
    movement.emit_tflite_remap(tx, op, x, out, {"pad_value": 0}, dims=(n,), tables=[np.full(n, movement.INVALID)],
                               pad=0.0)


def _block_args(tx, op, rank: int, what: str) -> tuple[list[int], list[int]]:
    """The block shape and the [spatial][2] paddings (crops) of a BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND of a 3-D
    [N,H,C] or 4-D [N,H,W,C] input, as lists for H and W (W: block 1, no padding for a 3-D input)."""
    if rank not in (3, 4):
        raise tx.unsupported(f"a rank-{rank} input (TFLite Micro takes 3-D and 4-D ones)")
    block, pads = _ints(tx, op, 1, "the block shape"), _ints(tx, op, 2, what)
    if len(block) != rank - 2 or len(pads) != 2 * (rank - 2) or min(block) < 1 or min(pads) < 0:
        raise tx.unsupported(f"block shape {block} and {what} {pads} of a rank-{rank} input")
    return block + [1] * (4 - rank), pads + [0, 0] * (4 - rank)


def import_tflite_space_to_batch(tx, op):
    """SPACE_TO_BATCH_ND: the input padded with its zero point (the real 0; TFLite Micro pads with an offset it
    never sets, whatever its arena held: only unpadded results are comparable; a first remap), then out[(i * bw + j) * N + n,
    y, x] = padded[n, y * bh + i, x * bw + j] (a second)."""
    x = tx.input(op, 0)
    shape = tx.tensor(x).shape
    (bh, bw), (top, bottom, left, right) = _block_args(tx, op, len(shape), "paddings")
    four = len(shape) == 4
    n, h, w, c = shape if four else (shape[0], shape[1], 1, shape[2])
    hp, wp = h + top + bottom, w + left + right
    if hp % bh or wp % bw:
        raise tx.unsupported(f"padded size {hp}x{wp} is not a multiple of the block {bh}x{bw}")
    ran = (n * bh * bw, hp // bh, wp // bw, c) if four else (n * bh, hp // bh, c)
    out = tx.output(op, ran if movement.dynamic_shape(tx, op) else None)     # a batch of None: [1, ...] in the file
    ar = np.arange
    padded = x
    if top or bottom or left or right:
        padded = tflite_scratch(tx, x, (n, hp, wp, c) if four else (n, hp, c), "padded")
        i, j = ar(hp) - top, ar(wp) - left
        grow = [(ar(n), 0), (np.where((i >= 0) & (i < h), i, -1), 1)]
        grow += [(np.where((j >= 0) & (j < w), j, -1), 2), (ar(c), 3)] if four else [(ar(c), 2)]
        tflite_remap(tx, op, x, padded, grow, fill=tx.tensor(x).zero_point)
    if four:
        axes = [(ar(bh), 1), (ar(bw), 2), (ar(n), 0), (ar(hp // bh) * bh, 1), (ar(wp // bw) * bw, 2), (ar(c), 3)]
    else:
        axes = [(ar(bh), 1), (ar(n), 0), (ar(hp // bh) * bh, 1), (ar(c), 2)]
    tflite_remap(tx, op, padded, out, axes)


def import_tflite_batch_to_space(tx, op):
    """BATCH_TO_SPACE_ND: out[n, y, x] = in[(i * bw + j) * N + n, (y + top) // bh, (x + left) // bw] with i, j
    the remainders; each output axis' offsets carry their part of the batch index (in units of its own
    stride)."""
    x = tx.input(op, 0)
    shape = tx.tensor(x).shape
    (bh, bw), (top, bottom, left, right) = _block_args(tx, op, len(shape), "crops")
    b, h, c = shape[0], shape[1], shape[-1]
    w = shape[2] if len(shape) == 4 else 1
    if b % (bh * bw):
        raise tx.unsupported(f"batch {b} is not a multiple of the block {bh}x{bw}")
    n, oh, ow = b // (bh * bw), h * bh - top - bottom, w * bw - left - right
    if oh < 0 or ow < 0:
        raise tx.unsupported(f"crops {[top, bottom, left, right]} larger than the output")
    ran = (n, oh, ow, c) if len(shape) == 4 else (n, oh, c)
    out = tx.output(op, ran if movement.dynamic_shape(tx, op) else None)     # a batch of None: [1, ...] in the file
    y, xs = np.arange(oh) + top, np.arange(ow) + left
    rows = (y % bh) * bw * n * h + y // bh                 # in units of the H stride (W * C)
    cols = (xs % bw) * n * h * w + xs // bw                # in units of the W stride (C)
    axes = [(np.arange(n) * h, 1), (rows, 1)]              # the batch index in units of the H stride, too
    axes += [(cols, 2), (np.arange(c), 3)] if len(shape) == 4 else [(np.arange(c), 2)]
    tflite_remap(tx, op, x, out, axes)


TFLITE = {"TRANSPOSE": import_tflite_transpose, "TILE": import_tflite_tile, "BROADCAST_TO": import_tflite_broadcast_to,
          "SLICE": import_tflite_slice, "STRIDED_SLICE": import_tflite_strided_slice, "GATHER": import_tflite_gather,
          "DEPTH_TO_SPACE": import_tflite_depth_to_space, "SPACE_TO_DEPTH": import_tflite_space_to_depth,
          "MIRROR_PAD": import_tflite_mirror_pad, "REVERSE_V2": import_tflite_reverse, "GATHER_ND": import_tflite_gather_nd,
          "ZEROS_LIKE": import_tflite_zeros_like, "SPACE_TO_BATCH_ND": import_tflite_space_to_batch,
          "BATCH_TO_SPACE_ND": import_tflite_batch_to_space}
