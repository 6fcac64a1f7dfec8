"""Data movement: views (reshape), transposes, index maps (remap) and concatenation.

Every ONNX value is held by a canonical tensor plus a permutation from its ONNX layout to the physical
one (see edgec/frontend/canonicalize.py). Identity, Dropout and Transpose only relabel that layout;
Flatten/Reshape/Squeeze/Unsqueeze are views (`reshape`, no code on the device) when the bytes allow it.
Anything that really moves data becomes a `transpose`, a `concat`, or a `remap`: a separable index map,
one offset table per physical output axis (Slice, Split, Pad, Gather, Tile, Expand, DepthToSpace,
SpaceToDepth, layout changes of more than 4 axes; other families use it for nearest Resize and
ConvTranspose's zero insertion). Chains of remaps are merged into one after the graph is built.
"""
from __future__ import annotations

import itertools

import numpy as np

from edgec.errors import node_error
from edgec.ops.kernels_ext import INVALID, RANK


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


def merge_remaps(g) -> None:
    """A remap reading only another remap's output becomes one remap (Slice -> Slice -> Resize, Pad ->
    Slice, ... as exporters write them): one pass over the data instead of several."""
    merged = True
    while merged:
        merged = False
        for op2 in g.ops:
            src = op2.inputs[0] if op2.kind == "remap" else None
            op1 = g.producer(src) if src else None
            if op1 is None or op1.kind != "remap" or src == g.output or len(g.consumers(src)) != 1:
                continue
            both = compose_remaps(op1.attrs, op2.attrs)
            if both is None:
                continue
            op2.attrs["tables"], op2.attrs["pad"] = both
            op2.inputs = list(op1.inputs)
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
    """y = x viewed with another shape (Flatten, Reshape, Squeeze, Unsqueeze)."""
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
    tensors = [in_layout(cx, i, r, perm, node) for i in inputs]
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
            remap_axes(cx, node, x, y, fns)
        start += n


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
    remap_axes(cx, node, x, node.output[0], fns)


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
    remap_axes(cx, node, x, node.output[0], [fn(a) for a in range(r)], pad=value)


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
        return remap_axes(cx, node, x, y, fns)
    mid = y + "__gathered"
    cx.shapes[mid] = tuple(shape[:axis]) + (idx.size,) + tuple(shape[axis + 1:])
    flat = idx.reshape(-1)
    fns = [(lambda m: np.arange(m)) for _ in shape]
    fns[axis] = lambda m: flat
    remap_axes(cx, node, x, mid, fns)
    view(cx, node, mid, y)


def import_tile(cx, node):
    x = node.input[0]
    shape = cx.shape(x, node)
    remap_axes(cx, node, x, node.output[0], [(lambda m, n=n: np.arange(m) % n) for n in shape])


def import_expand(cx, node):
    x, y = node.input[0], node.output[0]
    shape, yshape = cx.shape(x, node), cx.shape(y, node)
    r = len(yshape)
    k = r - len(shape)
    padded = (1,) * k + tuple(shape)
    tensor, own = cx.activation(x, node)
    perm = tuple(range(k)) + tuple(p + k for p in own)
    phys = contiguous_strides([padded[a] for a in perm])
    strides = [0] * r
    for i, a in enumerate(perm):
        strides[a] = phys[i] if padded[a] > 1 else 0
    tables = [np.arange(yshape[a]) * strides[a] for a in perm]
    out = emit_remap(cx, node, tensor, y, [yshape[a] for a in perm], tables)
    cx.values[y] = (out, perm)


def _space_depth(cx, node, to_space):
    x, y = node.input[0], node.output[0]
    b = int(cx.attr(node, "blocksize"))
    mode = cx.attr(node, "mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    tensor, perm, st = axis_strides(cx, x, node)
    if perm not in ((0, 1, 2, 3), (0, 2, 3, 1)):
        tensor, perm = cx.as_layout(x, (0, 1, 2, 3), node), (0, 1, 2, 3)
        st = contiguous_strides(cx.shape(x, node))
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
    out = emit_remap(cx, node, tensor, y, [axes[k][0] for k in order], [axes[k][1](axes[k][0]) for k in order])
    cx.graph.tensors[out].shape = tuple(cx.shape(y, node)[p] for p in perm)
    cx.graph.ops[-1].attrs["dims"] = tuple(axes[k][0] for k in order)
    cx.values[y] = (out, perm)


def import_depth_to_space(cx, node):
    _space_depth(cx, node, True)


def import_space_to_depth(cx, node):
    _space_depth(cx, node, False)


ONNX = {
    "Identity": alias, "Dropout": alias, "Transpose": import_transpose,
    "Flatten": import_view, "Reshape": import_view, "Squeeze": import_view, "Unsqueeze": import_view,
    "Concat": import_concat, "Split": import_split, "Slice": import_slice, "Pad": import_pad,
    "Gather": import_gather, "Tile": import_tile, "Expand": import_expand,
    "DepthToSpace": import_depth_to_space, "SpaceToDepth": import_space_to_depth,
}
