"""ONNX operators that rearrange elements without computing: Slice, Pad, Gather, Tile, Expand, DepthToSpace
and SpaceToDepth. Each becomes one `remap` (an index map, edgec/ops/movement.py), or a view when its bytes
allow; a zero Pad read only by convolutions becomes their padding. The TFLite data-movement operators are
edgec/ops/rearrange_tflite.py's (their TFLITE table and tflite_remap/tflite_scratch helpers exported here).
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import SYNTHETIC
from edgec.ops import gather, movement
from edgec.ops.rearrange_tflite import TFLITE, tflite_remap, tflite_remap_flat, tflite_scratch  # noqa: F401


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
