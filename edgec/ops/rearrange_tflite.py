"""TFLite operators that rearrange elements without computing (TRANSPOSE, TILE, BROADCAST_TO, SLICE,
STRIDED_SLICE, GATHER, GATHER_ND, DEPTH_TO_SPACE, SPACE_TO_DEPTH, MIRROR_PAD, REVERSE_V2, ZEROS_LIKE,
SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND): each a remap (edgec/ops/movement.py), and the helpers other families'
TFLite importers emit remaps with (tflite_remap, tflite_scratch, tflite_remap_flat; edgec/ops/rearrange.py, the
ONNX side, exports them and this TFLITE table)."""
from __future__ import annotations

import numpy as np

from edgec.ir import SYNTHETIC, Tensor
from edgec.ops import movement
from edgec.ops.tflite16 import ACTIVATIONS, like, moved


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
