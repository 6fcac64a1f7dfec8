"""Random single-operator .tflite cases of TFLite's data-movement and resize operators (TRANSPOSE, TILE,
BROADCAST_TO, SLICE, STRIDED_SLICE, GATHER, DEPTH_TO_SPACE, SPACE_TO_DEPTH, MIRROR_PAD, SPLIT, SPLIT_V, UNPACK,
PACK, RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR) for the TFLite Micro oracle (tests/tflite_oracle.py): random
ranks and shapes, negative and masked slice bounds, repeated gather indices, every resize mode TFLite Micro's
own kernel tests use (align_corners, half_pixel_centers, up- and downscaling).
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import INT32, Case, Node, T, _act


def _shape(rng, rank, lo=1, hi=5):
    return tuple(int(d) for d in rng.integers(lo, hi + 1, rank))


def _one(rng, name, extreme, op, shape, out_shape, consts=(), options=None):
    """x -> op(x, constant int32 inputs...) -> y, one quantization."""
    s, z = _act(rng, extreme)
    tensors = [T(shape, [s], [z])] + [T(np.shape(c), [1.0], [0], INT32, np.asarray(c, np.int32)) for c in consts]
    tensors.append(T(tuple(out_shape), [s], [z]))
    n = len(tensors) - 1
    return Case(name, tensors, [Node(op, list(range(n)), n, options)], 0, n), True


def transpose_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 6))            # TFLite Micro's TRANSPOSE: 1-D to 5-D
    shape = _shape(rng, rank, 1, 4 if rank > 3 else 6)
    perm = rng.permutation(rank)
    return _one(rng, name, extreme, "TRANSPOSE", shape, [shape[p] for p in perm], [perm],
                ("TransposeOptions", {}))


def tile_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    shape, mult = _shape(rng, rank, 1, 4), rng.integers(1, 4, rank)
    return _one(rng, name, extreme, "TILE", shape, [n * m for n, m in zip(shape, mult)], [mult], ("TileOptions", {}))


def broadcast_to_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    want = _shape(rng, rank, 1, 5)
    k = int(rng.integers(0, rank + 1))
    shape = tuple(1 if rng.random() < 0.5 else n for n in want[k:]) or (1,)
    return _one(rng, name, extreme, "BROADCAST_TO", shape, want, [np.array(want)], ("BroadcastToOptions", {}))


def slice_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    shape = _shape(rng, rank, 1, 7)
    begin = [int(rng.integers(0, n)) for n in shape]
    size = [int(rng.integers(1, n - b + 1)) if rng.random() < 0.7 else -1 for n, b in zip(shape, begin)]
    out = [n - b if s == -1 else s for n, b, s in zip(shape, begin, size)]
    return _one(rng, name, extreme, "SLICE", shape, out, [begin, size], ("SliceOptions", {}))


def strided_slice_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    shape = _shape(rng, rank, 1, 8)
    begin, end, stride, bmask, emask, shrink, out = [], [], [], 0, 0, 0, []
    for a, n in enumerate(shape):
        st = int(rng.choice([1, 1, 2, 3, -1, -2]))
        b, e = int(rng.integers(-n, n)), int(rng.integers(-n - 1, n + 2))
        if rng.random() < 0.2:
            bmask |= 1 << a
        if rng.random() < 0.2:
            emask |= 1 << a
        if rng.random() < 0.15:
            shrink |= 1 << a
            st = 1
            e = b + 1
        begin.append(b), end.append(e), stride.append(st)
        if shrink >> a & 1:
            continue
        m = len(range(n)[slice(None if bmask >> a & 1 else b, None if emask >> a & 1 else e, st)])
        if m == 0:
            return None, False
        out.append(m)
    opts = ("StridedSliceOptions", dict(BeginMask=bmask, EndMask=emask, ShrinkAxisMask=shrink))
    return _one(rng, name, extreme, "STRIDED_SLICE", shape, out, [begin, end, stride], opts)


def gather_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    shape = _shape(rng, rank, 1, 6)
    axis = int(rng.integers(0, rank))
    idx = rng.integers(0, shape[axis], tuple(rng.integers(1, 4, int(rng.integers(1, 3)))))
    out = shape[:axis] + idx.shape + shape[axis + 1:]
    if len(out) > 6:
        return None, False
    return _one(rng, name, extreme, "GATHER", shape, out, [idx], ("GatherOptions", dict(Axis=axis)))


def depth_space_case(rng, name, extreme=False):
    bs = int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    if rng.random() < 0.5:
        c = int(rng.integers(1, 4)) * bs * bs
        return _one(rng, name, extreme, "DEPTH_TO_SPACE", (1, h, w, c), (1, h * bs, w * bs, c // (bs * bs)), [],
                    ("DepthToSpaceOptions", dict(BlockSize=bs)))
    c = int(rng.integers(1, 6))
    return _one(rng, name, extreme, "SPACE_TO_DEPTH", (1, h * bs, w * bs, c), (1, h, w, c * bs * bs), [],
                ("SpaceToDepthOptions", dict(BlockSize=bs)))


def mirror_pad_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    shape = _shape(rng, rank, 1, 6)
    mode = int(rng.integers(0, 2))          # REFLECT, SYMMETRIC
    pads = np.array([[int(rng.integers(0, n - 1 + mode + 1)) for _ in range(2)] for n in shape], np.int32)
    out = [n + a + b for n, (a, b) in zip(shape, pads)]
    return _one(rng, name, extreme, "MIRROR_PAD", shape, out, [pads], ("MirrorPadOptions", dict(Mode=mode)))


def _resize(rng, name, extreme, op):
    h, w, c = int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 6))
    oh, ow = int(rng.integers(1, 17)), int(rng.integers(1, 17))
    if rng.random() < 0.3:
        oh, ow = 2 * h, 2 * w
    mode = int(rng.integers(0, 3))          # plain, align_corners, half_pixel_centers
    opts = dict(AlignCorners=mode == 1, HalfPixelCenters=mode == 2)
    kind = "ResizeBilinearOptions" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    return _one(rng, name, extreme, op, (1, h, w, c), (1, oh, ow, c), [np.array([oh, ow])], (kind, opts))


def split_case(rng, name, extreme=False):
    """SPLIT / SPLIT_V / UNPACK of x along a random axis, the parts put back in reverse order by CONCATENATION
    (PACK after UNPACK)."""
    rank = int(rng.integers(1, 5))
    shape = list(_shape(rng, rank, 1, 6))
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    op = str(rng.choice(["SPLIT", "SPLIT_V", "UNPACK"]))
    s, z = _act(rng, extreme)
    if op == "SPLIT":
        parts = int(rng.choice([d for d in range(1, 5) if shape[a] * d <= 12]))
        shape[a] *= parts
        sizes = [shape[a] // parts] * parts
    elif op == "SPLIT_V":
        cuts = np.sort(rng.integers(0, shape[a] + 1, int(rng.integers(0, 3))))
        sizes = np.diff(np.concatenate([[0], cuts, [shape[a]]])).tolist()
        if rng.random() < 0.5:
            sizes[int(rng.integers(0, len(sizes)))] = -1
    else:
        sizes = [1] * shape[a]
    real = [shape[a] - sum(v for v in sizes if v != -1) if v == -1 else v for v in sizes]
    part_shapes = [tuple(shape[:a] + ([] if op == "UNPACK" else [n]) + shape[a + 1:]) for n in real]
    tensors = [T(tuple(shape), [s], [z])]
    if op == "SPLIT":
        tensors.append(T((1,), [1.0], [0], INT32, np.array([axis], np.int32)))
        node_in, opts = [1, 0], ("SplitOptions", dict(NumSplits=len(sizes)))
    elif op == "SPLIT_V":
        tensors += [T((len(sizes),), [1.0], [0], INT32, np.array(sizes, np.int32)),
                    T((1,), [1.0], [0], INT32, np.array([axis], np.int32))]
        node_in, opts = [0, 1, 2], ("SplitVOptions", dict(NumSplits=len(sizes)))
    else:
        node_in, opts = [0], ("UnpackOptions", dict(Num=len(sizes), Axis=axis))
    first = len(tensors)
    tensors += [T(ps, [s], [z]) for ps in part_shapes]
    outs = list(range(first, len(tensors)))
    tensors.append(T(tuple(shape), [s], [z]))
    back = Node("PACK", outs[::-1], len(tensors) - 1, ("PackOptions", dict(ValuesCount=len(outs), Axis=axis))) \
        if op == "UNPACK" else Node("CONCATENATION", outs[::-1], len(tensors) - 1, ("ConcatenationOptions", dict(Axis=axis)))
    if op != "UNPACK":
        return Case(name, tensors, [Node(op, node_in, outs, opts), back], 0, len(tensors) - 1), all(real)
    return Case(name, tensors, [Node(op, node_in, outs, opts), back], 0, len(tensors) - 1), True


def concat_const_case(rng, name, extreme=False):
    """A ViT's class token: CONCATENATION of a constant [1, k, D] and the activation [1, N, D] (either order)."""
    n, d, k = int(rng.integers(1, 10)), int(rng.integers(1, 20)), int(rng.integers(1, 3))
    s, z = _act(rng, extreme)
    token = rng.integers(-128, 128, (1, k, d)).astype(np.int8)
    tensors = [T((1, n, d), [s], [z]), T((1, k, d), [s], [z], data=token), T((1, n + k, d), [s], [z])]
    ins = [1, 0] if rng.random() < 0.7 else [0, 1]
    return Case(name, tensors, [Node("CONCATENATION", ins, 2, ("ConcatenationOptions", dict(Axis=1)))], 0, 2), True


def reverse_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    shape = _shape(rng, rank, 1, 6)
    lo = int(rng.integers(0, rank))
    axes = np.arange(lo, int(rng.integers(lo, rank)) + 1, dtype=np.int32)    # TFLite Micro: a contiguous run
    return _one(rng, name, extreme, "REVERSE_V2", shape, shape, [axes], ("ReverseV2Options", {}))


def gather_nd_case(rng, name, extreme=False):
    rank = int(rng.integers(1, 5))
    shape = _shape(rng, rank, 1, 5)
    k = int(rng.integers(1, rank + 1))
    lead = tuple(int(d) for d in rng.integers(1, 4, int(rng.integers(1, 3))))
    idx = np.stack([rng.integers(0, shape[j], lead) for j in range(k)], axis=-1).astype(np.int32)
    return _one(rng, name, extreme, "GATHER_ND", shape, lead + shape[k:], [idx], ("GatherNdOptions", {}))


def zeros_like_case(rng, name, extreme=False):
    shape = _shape(rng, int(rng.integers(1, 4)), 1, 6)
    return _one(rng, name, extreme, "ZEROS_LIKE", shape, shape, [], ("ZerosLikeOptions", {}))


def tile_expected(case: Case) -> np.ndarray:
    """TILE's result (TFLite Micro does not register TILE; TF Lite's kernel is numpy.tile of the bytes)."""
    mult = case.tensors[1].data
    return np.stack([np.tile(x, mult).reshape(-1) for x in case.x])


NUMPY_MAKERS = {"tile": (tile_case, tile_expected)}      # checked against numpy, not TFLite Micro
MAKERS = {"transpose": transpose_case, "broadcast_to": broadcast_to_case, "slice": slice_case,
          "strided_slice": strided_slice_case, "gather": gather_case, "depth_space": depth_space_case,
          "mirror_pad": mirror_pad_case, "split": split_case, "concat_const": concat_const_case,
          "reverse": reverse_case, "gather_nd": gather_nd_case, "zeros_like": zeros_like_case,
          "resize_nearest": lambda r, n, e: _resize(r, n, e, "RESIZE_NEAREST_NEIGHBOR"),
          "resize_bilinear": lambda r, n, e: _resize(r, n, e, "RESIZE_BILINEAR")}
