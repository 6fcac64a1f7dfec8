"""Random 16x8 .tflite cases for the TFLite Micro oracle (tests/tflite_oracle.py): int16 activations of zero point
0, int8 weights (per channel, or one scale), int64 biases, as TFLiteConverter's
`EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8` writes them: CONV_2D, DEPTHWISE_CONV_2D,
FULLY_CONNECTED (one row after a RESHAPE, or several), the pools, ADD / SUB / MUL / MAXIMUM / MINIMUM /
SQUARED_DIFFERENCE (broadcasting, int16 constants), the activations, SOFTMAX, MEAN / SUM, QUANTIZE and the data
movement (MAKERS); int16 inputs at the int16 limits.
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import Case, Node, T

INT16, INT64 = 7, 4


def _scale(rng, lo=-5.0, hi=-2.0) -> float:
    return float(np.float32(10 ** rng.uniform(lo, hi)))


def _weights(rng, shape, axis, per_channel=True):
    w = rng.integers(-127, 128, shape).astype(np.int8)
    n = shape[axis] if per_channel else 1
    return w, [float(np.float32(v)) for v in 10 ** rng.uniform(-3, -1, n)]


def _bias(rng, n, extreme):
    lim = 1 << (39 if extreme and rng.random() < 0.5 else 24)
    return rng.integers(-lim, lim, n, dtype=np.int64)


def _bias_tensor(rng, n, scales, extreme, int32=True):
    """The bias: int64 (TFLiteConverter's 16x8 default) or, a third of the time where TFLite Micro takes it (CONV_2D,
    FULLY_CONNECTED), int32 (its int32 accumulator; the extreme cases near the int32 limits, where the sum wraps)."""
    if int32 and rng.random() < 0.35:
        lim = (1 << 31) - 1 if extreme and rng.random() < 0.5 else 1 << 24
        return T((n,), scales, [0] * len(scales), 2, rng.integers(-lim, lim, n).astype(np.int32))
    return T((n,), scales, [0] * len(scales), INT64, _bias(rng, n, extreme))


def _out_scale(rng, xs, extreme):
    """An output scale keeping TFLite's requantization multiplier within what its 16x8 kernels take."""
    return float(np.float32(xs * 10 ** rng.uniform(-3, 0.5 if extreme else -1)))


def conv_case(rng, name, extreme=False, depthwise=False):
    h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
    c = int(rng.choice([1, 2, 3, 5, 8, 16]))
    kh, kw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
    sh, sw, padding = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(0, 2))
    mult = int(rng.choice([1, 2])) if depthwise else 1
    oc = c * mult if depthwise else int(rng.choice([1, 3, 8, 13]))

    def out(n, k, s):
        return (n + s - 1) // s if padding == 0 else (n - k) // s + 1
    oh, ow = out(h, kh, sh), out(w, kw, sw)
    xs = _scale(rng)
    ys = _out_scale(rng, xs, extreme)
    wshape = (1, kh, kw, oc) if depthwise else (oc, kh, kw, c)
    wq, ws = _weights(rng, wshape, 3 if depthwise else 0, rng.random() < 0.8)
    ws = ws * oc if len(ws) == 1 else ws
    tensors = [T((1, h, w, c), [xs], [0], INT16), T(wshape, ws, [0] * len(ws), data=wq, axis=3 if depthwise else 0),
               _bias_tensor(rng, oc, [xs * s for s in ws], extreme, not depthwise),
               T((1, oh, ow, oc), [ys], [0], INT16)]
    fields = dict(Padding=padding, StrideW=sw, StrideH=sh, FusedActivationFunction=int(rng.choice([0, 1, 3])),
                  DilationWFactor=1, DilationHFactor=1)
    if depthwise:
        fields["DepthMultiplier"] = mult
    kind, op = ("DepthwiseConv2DOptions", "DEPTHWISE_CONV_2D") if depthwise else ("Conv2DOptions", "CONV_2D")
    return Case(name, tensors, [Node(op, [0, 1, 2], 3, (kind, fields))], 0, 3), min(oh, ow) > 0


def fc_case(rng, name, extreme=False):
    """A RESHAPE of an image into one row, then FULLY_CONNECTED (bias or none, one weight scale or one per row)."""
    h, w, c, n_out = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 9)), int(rng.integers(1, 40))
    n_in = h * w * c
    xs = _scale(rng)
    ys = _out_scale(rng, xs, extreme)
    wq, ws = _weights(rng, (n_out, n_in), 0, rng.random() < 0.5)
    bias = rng.random() < 0.8
    tensors = [T((1, h, w, c), [xs], [0], INT16), T((2,), [1.0], [0], 2, np.array([1, n_in], np.int32)),
               T((1, n_in), [xs], [0], INT16), T((n_out, n_in), ws, [0] * len(ws), data=wq),
               _bias_tensor(rng, n_out, [xs * s for s in ws], extreme),
               T((1, n_out), [ys], [0], INT16)]
    nodes = [Node("RESHAPE", [0, 1], 2, ("ReshapeOptions", {})),
             Node("FULLY_CONNECTED", [2, 3, 4 if bias else -1], 5,
                  ("FullyConnectedOptions", dict(FusedActivationFunction=int(rng.choice([0, 1, 3])))))]
    return Case(name, tensors, nodes, 0, 5), True


def fc_rows_case(rng, name, extreme=False):
    """FULLY_CONNECTED of several int16 rows [rows, n_in] (TFLite's 16x8 kernel over its batches)."""
    rows, n_in, n_out = int(rng.integers(2, 6)), int(rng.integers(1, 40)), int(rng.integers(1, 30))
    xs = _scale(rng)
    ys = _out_scale(rng, xs, extreme)
    wq, ws = _weights(rng, (n_out, n_in), 0, rng.random() < 0.5)
    bias = rng.random() < 0.8
    tensors = [T((rows, n_in), [xs], [0], INT16), T((n_out, n_in), ws, [0] * len(ws), data=wq),
               _bias_tensor(rng, n_out, [xs * s for s in ws], extreme),
               T((rows, n_out), [ys], [0], INT16)]
    opts = ("FullyConnectedOptions", dict(FusedActivationFunction=int(rng.choice([0, 1, 3]))))
    return Case(name, tensors, [Node("FULLY_CONNECTED", [0, 1, 2 if bias else -1], 3, opts)], 0, 3), True


def pool_case(rng, name, extreme=False, average=True):
    h, w, c = int(rng.integers(1, 14)), int(rng.integers(1, 14)), int(rng.integers(1, 20))
    kh, kw = int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))
    sh, sw, padding = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(0, 2))

    def out(n, k, s):
        return (n + s - 1) // s if padding == 0 else (n - k) // s + 1
    s = _scale(rng, -5, 0)
    tensors = [T((1, h, w, c), [s], [0], INT16), T((1, out(h, kh, sh), out(w, kw, sw), c), [s], [0], INT16)]
    opts = ("Pool2DOptions", dict(Padding=padding, StrideW=sw, StrideH=sh, FilterWidth=kw, FilterHeight=kh,
                                  FusedActivationFunction=int(rng.choice([0, 1, 3]))))
    return Case(name, tensors, [Node("AVERAGE_POOL_2D" if average else "MAX_POOL_2D", [0], 1, opts)], 0, 1), True


def add_case(rng, name, extreme=False):
    """ADD of the input and a 1x1 depthwise convolution of it (a residual: two int16 scales)."""
    h, w, c = int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 12))
    xs = _scale(rng)
    bs, ys = _out_scale(rng, xs, extreme), _scale(rng, np.log10(xs) - 0.5, np.log10(xs) + 1.5)
    wq, ws = _weights(rng, (1, 1, 1, c), 3)
    tensors = [T((1, h, w, c), [xs], [0], INT16), T((1, 1, 1, c), ws, [0] * c, data=wq, axis=3),
               T((c,), [xs * v for v in ws], [0] * c, INT64, _bias(rng, c, False)),
               T((1, h, w, c), [bs], [0], INT16), T((1, h, w, c), [ys], [0], INT16)]
    dw = Node("DEPTHWISE_CONV_2D", [0, 1, 2], 3, ("DepthwiseConv2DOptions", dict(
        Padding=1, StrideW=1, StrideH=1, DepthMultiplier=1, DilationWFactor=1, DilationHFactor=1)))
    add = Node("ADD", [0, 3] if rng.random() < 0.5 else [3, 0], 4,
               ("AddOptions", dict(FusedActivationFunction=int(rng.choice([0, 1, 3])))))
    return Case(name, tensors, [dw, add], 0, 4), True


def concat_case(rng, name, extreme=False):
    """CONCATENATION of the input and a 1x1 depthwise convolution of it requantized to the input's scale, on a
    random axis (TFLite Micro's int16 concatenation copies: inputs and output share one quantization)."""
    h, w, c = int(rng.integers(1, 8)), int(rng.integers(1, 8)), int(rng.integers(1, 10))
    axis = int(rng.integers(0, 4))
    xs = _scale(rng)
    wq, ws = _weights(rng, (1, 1, 1, c), 3)
    shape = [1, h, w, c]
    shape[axis] *= 2
    tensors = [T((1, h, w, c), [xs], [0], INT16), T((1, 1, 1, c), ws, [0] * c, data=wq, axis=3),
               T((c,), [xs * v for v in ws], [0] * c, INT64, _bias(rng, c, extreme)),
               T((1, h, w, c), [xs], [0], INT16), T(tuple(shape), [xs], [0], INT16)]
    dw = Node("DEPTHWISE_CONV_2D", [0, 1, 2], 3, ("DepthwiseConv2DOptions", dict(
        Padding=1, StrideW=1, StrideH=1, DepthMultiplier=1, DilationWFactor=1, DilationHFactor=1)))
    cat = Node("CONCATENATION", [0, 3] if rng.random() < 0.5 else [3, 0], 4, ("ConcatenationOptions", dict(Axis=axis)))
    return Case(name, tensors, [dw, cat], 0, 4), True



def pad_case(rng, name, extreme=False):
    """PAD (zeros) or PADV2 (an int16 constant) of an image, random paddings."""
    h, w, c = int(rng.integers(1, 8)), int(rng.integers(1, 8)), int(rng.integers(1, 6))
    pads = rng.integers(0, 3, (4, 2)).astype(np.int32)
    pads[0] = 0
    xs = _scale(rng)
    out = tuple(int(n + a + b) for n, (a, b) in zip((1, h, w, c), pads))
    tensors = [T((1, h, w, c), [xs], [0], INT16), T((4, 2), [1.0], [0], 2, pads), T(out, [xs], [0], INT16),
               T((1,), [xs], [0], INT16, np.array([rng.integers(-32768, 32768)], np.int16))]
    v2 = rng.random() < 0.5
    node = Node("PADV2", [0, 1, 3], 2, ("PadV2Options", {})) if v2 else Node("PAD", [0, 1], 2, ("PadOptions", {}))
    return Case(name, tensors, [node], 0, 2), True


def mean_case(rng, name, extreme=False, op="MEAN"):
    """MEAN (or SUM) over axes (Keras GlobalAveragePooling: 1, 2; some not next to each other), keep_dims or not;
    the output scale the input's (a third of the cases) or its own."""
    h, w, c = (int(v) for v in rng.integers(1, 9, 3))
    axes = [[1, 2], [1, 2], [1], [2], [3], [1, 2, 3], [1, 3], [0, 2]][int(rng.integers(0, 8))]
    keep = bool(rng.random() < 0.5)
    xs = _scale(rng)
    ys = xs if rng.random() < 0.3 else float(np.float32(xs * 10 ** rng.uniform(-1, 0.5)))
    dims = [1, h, w, c]
    out = tuple(1 if a in axes else d for a, d in enumerate(dims)) if keep else \
        tuple(d for a, d in enumerate(dims) if a not in axes)
    tensors = [T(tuple(dims), [xs], [0], INT16), T((len(axes),), [1.0], [0], 2, np.array(axes, np.int32)),
               T(out, [ys], [0], INT16)]
    return Case(name, tensors, [Node(op, [0, 1], 2, ("ReducerOptions", {"KeepDims": keep}))], 0, 2), True


def transpose_case(rng, name, extreme=False):
    """TRANSPOSE of a rank-2 to rank-5 tensor, a random permutation."""
    rank = int(rng.integers(2, 6))
    dims = tuple(int(d) for d in rng.integers(1, 6, rank))
    perm = [int(a) for a in rng.permutation(rank)]
    xs = _scale(rng)
    tensors = [T(dims, [xs], [0], INT16), T((rank,), [1.0], [0], 2, np.array(perm, np.int32)),
               T(tuple(dims[a] for a in perm), [xs], [0], INT16)]
    return Case(name, tensors, [Node("TRANSPOSE", [0, 1], 2, ("TransposeOptions", {}))], 0, 2), True

BINARY_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "MAXIMUM": None, "MINIMUM": None,
                  "SQUARED_DIFFERENCE": None}


def binary_case(rng, name, extreme=False, op="SUB"):
    """op(x, y) of an int16 image x [1,h,w,c] and y: a 1x1 depthwise convolution of x (one shape, its own scale),
    a global average pool of x ([1,1,1,c]: broadcast) or an int16 constant of a broadcastable shape (TFLite's 16x8
    constants: zero point 0), in either order; MAXIMUM / MINIMUM (nothing rescaled) with one scale throughout."""
    h, w, c = int(rng.integers(1, 8)), int(rng.integers(1, 8)), int(rng.integers(1, 10))
    raw = op in ("MAXIMUM", "MINIMUM")
    xs = _scale(rng)
    ys = xs if raw else float(np.float32(xs * 10 ** rng.uniform(-1.5, 1.5 if op != "MUL" else 0.5)))
    if op == "MUL":
        ys = float(np.float32(xs * xs * 10 ** rng.uniform(1.5, 4.5)))
    shape = (1, h, w, c)
    tensors = [T(shape, [xs], [0], INT16)]
    nodes, how = [], rng.choice(["depthwise" if not raw else "pool", "broadcast", "constant"])
    if how == "depthwise":
        wq, ws = _weights(rng, (1, 1, 1, c), 3)
        bs = float(np.float32(xs * 10 ** rng.uniform(-1, 1)))
        tensors += [T((1, 1, 1, c), ws, [0] * c, data=wq, axis=3),
                    T((c,), [xs * v for v in ws], [0] * c, INT64, _bias(rng, c, False)), T(shape, [bs], [0], INT16)]
        nodes.append(Node("DEPTHWISE_CONV_2D", [0, 1, 2], 3, ("DepthwiseConv2DOptions", dict(
            Padding=1, StrideW=1, StrideH=1, DepthMultiplier=1, DilationWFactor=1, DilationHFactor=1))))
    elif how in ("pool", "broadcast"):
        k = (h, w) if how == "broadcast" else (1, 1)
        tensors.append(T((1, 1, 1, c) if how == "broadcast" else shape, [xs], [0], INT16))
        nodes.append(Node("AVERAGE_POOL_2D", [0], 1, ("Pool2DOptions", dict(
            Padding=1, StrideW=1, StrideH=1, FilterWidth=k[1], FilterHeight=k[0]))))
    else:
        cshape = tuple(int(d) if rng.random() < 0.5 else 1 for d in shape)[int(rng.integers(0, 4)):] or (1,)
        data = rng.integers(-32768, 32768, cshape).astype(np.int16)
        if extreme:
            data.reshape(-1)[0] = rng.choice([-32768, 32767])
        cs = xs if raw else _scale(rng)
        tensors.append(T(cshape, [cs], [0], INT16, data))
    y = len(tensors) - 1
    tensors.append(T(shape, [ys], [0], INT16))
    opts = BINARY_OPTIONS[op]
    fields = ((opts, dict(FusedActivationFunction=int(rng.choice([0, 1, 3])))) if opts else None)
    nodes.append(Node(op, [0, y] if rng.random() < 0.5 else [y, 0], len(tensors) - 1, fields))
    return Case(name, tensors, nodes, 0, len(tensors) - 1), True


def movement_case(rng, name, extreme=False, op="SLICE"):
    """A data-movement operator on an int16 tensor of rank 1-4 (TFLite Micro copies the int16 values): SLICE,
    STRIDED_SLICE (masks, negative strides, a shrunk axis), SPLIT / SPLIT_V / UNPACK (several graph outputs),
    PACK (of the input and a 1x1 pool of it), REVERSE_V2, BROADCAST_TO and EXPAND_DIMS."""
    rank = int(rng.integers(1, 5))
    dims = tuple(int(d) for d in rng.integers(1, 6, rank))
    xs = _scale(rng)
    tensors, a = [T(dims, [xs], [0], INT16)], int(rng.integers(0, rank))

    def const(v):
        tensors.append(T((len(v),), [1.0], [0], 2, np.array(v, np.int32)))
        return len(tensors) - 1

    def out(shape):
        tensors.append(T(tuple(shape), [xs], [0], INT16))
        return len(tensors) - 1
    if op == "SLICE":
        begin = [int(rng.integers(0, d)) for d in dims]
        size = [int(rng.integers(1, d - b + 1)) if rng.random() < 0.8 else -1 for d, b in zip(dims, begin)]
        shape = [d - b if s == -1 else s for d, b, s in zip(dims, begin, size)]
        node = Node(op, [0, const(begin), const(size)], None, ("SliceOptions", {}))
    elif op == "STRIDED_SLICE":
        stride = [int(rng.choice([1, 1, 2, -1])) for _ in dims]
        begin = [int(rng.integers(0, d)) if s > 0 else int(rng.integers(0, d)) for d, s in zip(dims, stride)]
        end = [int(rng.integers(b + 1, d + 1)) if s > 0 else int(rng.integers(-1, b)) for d, b, s in
               zip(dims, begin, stride)]
        end = [e if e >= 0 else -d - 1 for e, d in zip(end, dims)]     # a negative stride down to index 0
        bm, em = int(rng.integers(0, 1 << rank)), int(rng.integers(0, 1 << rank))
        shrink = (1 << a) if rng.random() < 0.3 else 0
        if shrink:              # (a shrunk axis of stride -1: TFLite Micro's loop writes nothing there)
            stride[a], end[a] = 1, begin[a] + 1
        shape = []
        for k, d in enumerate(dims):
            if shrink >> k & 1:
                continue
            b = None if bm >> k & 1 else begin[k]
            e = None if em >> k & 1 else end[k]
            shape.append(len(range(d)[slice(b, e, stride[k])]))
        if 0 in shape or not shape:
            return None, False
        node = Node(op, [0, const(begin), const(end), const(stride)], None, ("StridedSliceOptions", dict(
            BeginMask=bm, EndMask=em, ShrinkAxisMask=shrink)))
    elif op in ("SPLIT", "SPLIT_V", "UNPACK"):
        parts = dims[a] if op == "UNPACK" else int(rng.choice([p for p in range(1, dims[a] + 1) if dims[a] % p == 0]))
        sizes = [dims[a] // parts] * parts
        if op == "SPLIT_V":
            cuts = sorted(int(c) for c in rng.choice(np.arange(1, dims[a]), min(dims[a] - 1, 2), replace=False)) \
                if dims[a] > 1 else []
            sizes = [e - b for b, e in zip([0] + cuts, cuts + [dims[a]])]
        shapes = [tuple(d for k, d in enumerate(dims) if k != a) if op == "UNPACK" else
                  tuple(n if k == a else d for k, d in enumerate(dims)) for n in sizes]
        if op == "SPLIT":
            node = Node(op, [const([a]), 0], None, ("SplitOptions", dict(NumSplits=parts)))
        elif op == "SPLIT_V":
            node = Node(op, [0, const([-1 if i == 0 and len(sizes) > 1 else n for i, n in enumerate(sizes)]),
                             const([a])], None, ("SplitVOptions", dict(NumSplits=len(sizes))))
        else:
            node = Node(op, [0], None, ("UnpackOptions", dict(Num=parts, Axis=a)))
        node.output = [out(sh or (1,)) for sh in shapes]
        # the parts joined back in reverse order (edgec takes int16 ports in a model of one output)
        back = Node("PACK", node.output[::-1], out(tuple(d for d in dims)), ("PackOptions", dict(
            ValuesCount=parts, Axis=a))) if op == "UNPACK" else \
            Node("CONCATENATION", node.output[::-1], out(dims), ("ConcatenationOptions", dict(Axis=a)))
        return Case(name, tensors, [node, back], 0, back.output), True
    elif op == "PACK":
        dims = (1, int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        tensors[0] = T(dims, [xs], [0], INT16)
        tensors.append(T(dims, [xs], [0], INT16))
        pool = Node("AVERAGE_POOL_2D", [0], 1, ("Pool2DOptions", dict(Padding=1, StrideW=1, StrideH=1,
                                                                       FilterWidth=1, FilterHeight=1)))
        axis = int(rng.integers(0, 5))
        shape = list(dims)
        shape.insert(axis, 2)
        node = Node(op, [0, 1] if rng.random() < 0.5 else [1, 0], out(shape), ("PackOptions", dict(
            ValuesCount=2, Axis=axis)))
        return Case(name, tensors, [pool, node], 0, node.output), True
    elif op == "REVERSE_V2":
        lo = int(rng.integers(0, rank))
        axes = list(range(lo, int(rng.integers(lo + 1, rank + 1))))      # TFLite Micro takes a contiguous run
        shape = dims
        node = Node(op, [0, const(axes)], None, ("ReverseV2Options", {}))
    elif op == "EXPAND_DIMS":
        axis = int(rng.integers(-rank - 1, rank + 1))
        shape = list(dims)
        shape.insert(axis % (rank + 1), 1)
        node = Node(op, [0, const([axis])], None, ("ExpandDimsOptions", {}))
    else:                                   # BROADCAST_TO
        shape = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 2)))] + \
            [d if d > 1 or rng.random() < 0.5 else int(rng.integers(2, 4)) for d in dims]
        node = Node(op, [0, const(shape)], None, ("BroadcastToOptions", {}))
    node.output = out(shape or (1,))
    return Case(name, tensors, [node], 0, node.output), True


def activation_case(rng, name, extreme=False, op="LOGISTIC"):
    """LOGISTIC / TANH (output 2^-15; input scales random or powers of two, TFLite's POT path), RELU (its own
    output scale), RELU6 (one scale), LEAKY_RELU (alpha of either sign), ABS (one scale or two) of an int16
    tensor."""
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(1, 5))))
    xs = float(np.float32(2.0 ** -int(rng.integers(10, 15)))) if rng.random() < 0.3 else _scale(rng, -5, -2.5)
    ys = {"LOGISTIC": 2.0 ** -15, "TANH": 2.0 ** -15, "RELU6": xs}.get(op) or (xs if op == "ABS" and
                                                                               rng.random() < 0.3 else None) or \
        float(np.float32(xs * 10 ** rng.uniform(-1, 1)))
    opts = ("LeakyReluOptions", dict(Alpha=float(np.float32(rng.choice([0.1, 0.2, -0.3, 1.5, 0.01]))))) \
        if op == "LEAKY_RELU" else None
    tensors = [T(shape, [xs], [0], INT16), T(shape, [ys], [0], INT16)]
    return Case(name, tensors, [Node(op, [0], 1, opts)], 0, 1), True


def requantize_case(rng, name, extreme=False):
    """QUANTIZE of an int16 tensor into int16 of another scale (TFLite Micro's Requantize) or into int8 (a zero
    point of its own), then back to int16 where it went to int8 (edgec takes int16 ports in a 16x8 model)."""
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(1, 5))))
    xs = _scale(rng)
    if rng.random() < 0.5:
        tensors = [T(shape, [xs], [0], INT16), T(shape, [float(np.float32(xs * 10 ** rng.uniform(-1.5, 1.5)))], [0],
                                                INT16)]
        return Case(name, tensors, [Node("QUANTIZE", [0], 1)], 0, 1), True
    s8 = float(np.float32(xs * 10 ** rng.uniform(1.5, 3)))
    tensors = [T(shape, [xs], [0], INT16), T(shape, [s8], [int(rng.integers(-128, 128))]), T(shape, [xs], [0], INT16)]
    return Case(name, tensors, [Node("QUANTIZE", [0], 1), Node("QUANTIZE", [1], 2)], 0, 2), True


def resize_case(rng, name, extreme=False):
    """RESIZE_NEAREST_NEIGHBOR of an int16 image (align_corners / half_pixel_centers)."""
    h, w, c = (int(v) for v in rng.integers(1, 7, 3))
    oh, ow = (int(v) for v in rng.integers(1, 13, 2))
    align = bool(rng.random() < 0.3)
    half = bool(not align and rng.random() < 0.5)
    xs = _scale(rng)
    tensors = [T((1, h, w, c), [xs], [0], INT16), T((2,), [1.0], [0], 2, np.array([oh, ow], np.int32)),
               T((1, oh, ow, c), [xs], [0], INT16)]
    opts = ("ResizeNearestNeighborOptions", dict(AlignCorners=align, HalfPixelCenters=half))
    return Case(name, tensors, [Node("RESIZE_NEAREST_NEIGHBOR", [0, 1], 2, opts)], 0, 2), True


def softmax_case(rng, name, extreme=False):
    """SOFTMAX of int16 scores into int16 probabilities (1/32768, 0), beta 1 or not, rows of 1 to 300 classes."""
    rows, cols = int(rng.integers(1, 4)), int(rng.choice([1, 2, 3, 10, 33, 100, 300]))
    xs = _scale(rng, -5, -2.5)
    beta = float(np.float32(rng.choice([1.0, 1.0, 0.5, 2.0])))
    tensors = [T((rows, cols), [xs], [0], INT16), T((rows, cols), [1 / 32768], [0], INT16)]
    return Case(name, tensors, [Node("SOFTMAX", [0], 1, ("SoftmaxOptions", dict(Beta=beta)))], 0, 1), True


def select_case(rng, name, extreme=False, op="SELECT_V2"):
    """SELECT_V2 (a bool condition from the int8 side) between an int16 image and a pool of it (broadcast), or
    DYNAMIC_UPDATE_SLICE of the image by a pooled window of it at constant (clamped) start indices."""
    h, w, c = (int(v) for v in rng.integers(1, 6, 3))
    xs = _scale(rng)
    shape = (1, h, w, c)
    if op == "SELECT_V2":           # the condition: GREATER of the image requantized to int8 and a constant
        s8 = float(np.float32(min(xs * 300, 0.5)))
        broadcast = rng.random() < 0.4
        tensors = [T(shape, [xs], [0], INT16), T(shape, [s8], [0]),
                   T((1,), [s8], [0], data=rng.integers(-60, 60, 1).astype(np.int8)), T(shape, [1.0], [0], 6),
                   T((1, 1, 1, c) if broadcast else shape, [xs], [0], INT16), T(shape, [xs], [0], INT16)]
        k = (h, w) if broadcast else (1, 1)
        nodes = [Node("QUANTIZE", [0], 1), Node("GREATER", [1, 2], 3),
                 Node("AVERAGE_POOL_2D", [0], 4, ("Pool2DOptions", dict(Padding=1, StrideW=1, StrideH=1,
                                                                         FilterWidth=k[1], FilterHeight=k[0]))),
                 Node(op, [3] + ([0, 4] if rng.random() < 0.5 else [4, 0]), 5, ("SelectV2Options", {}))]
        return Case(name, tensors, nodes, 0, 5), True
    kh, kw = int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))
    start = np.array([0, rng.integers(-1, h + 1), rng.integers(-1, w + 1), 0], np.int32)
    tensors = [T(shape, [xs], [0], INT16), T((1, h - kh + 1, w - kw + 1, c), [xs], [0], INT16),
               T((4,), [1.0], [0], 2, start), T(shape, [xs], [0], INT16)]
    pool = Node("MAX_POOL_2D", [0], 1, ("Pool2DOptions", dict(Padding=1, StrideW=1, StrideH=1, FilterWidth=kw,
                                                               FilterHeight=kh)))
    return Case(name, tensors, [pool, Node(op, [0, 1, 2], 3)], 0, 3), True


def prelu_case(rng, name, extreme=False):
    """PRELU of an int16 image with a constant int8 alpha (per channel, shared, or per pixel; its own zero point)."""
    h, w, c = (int(v) for v in rng.integers(1, 6, 3))
    xs = _scale(rng)
    ashape = [(c,), (1, 1, c), (1,), (h, w, c)][int(rng.integers(0, 4))]
    alpha = rng.integers(-128, 128, ashape).astype(np.int8)
    tensors = [T((1, h, w, c), [xs], [0], INT16),
               T(ashape, [float(np.float32(10 ** rng.uniform(-3, -1)))], [int(rng.integers(-20, 20))], data=alpha),
               T((1, h, w, c), [float(np.float32(xs * 10 ** rng.uniform(-1, 1)))], [0], INT16)]
    return Case(name, tensors, [Node("PRELU", [0, 1], 2)], 0, 2), True


def transpose_conv_case(rng, name, extreme=False):
    """TRANSPOSE_CONV 16x8: random strides, kernels, SAME / VALID, per-channel or per-tensor weights, an int64 or
    int16 bias (TFLite Micro widens an int16 one) or none."""
    ih, iw, ic = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.choice([1, 2, 3, 8]))
    kh, kw, oc = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.choice([1, 2, 5]))
    sh, sw, padding = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(0, 2))
    oh, ow = (ih * sh, iw * sw) if padding == 0 else ((ih - 1) * sh + kh, (iw - 1) * sw + kw)
    xs = _scale(rng)
    ys = _out_scale(rng, xs, extreme)
    wq, ws = _weights(rng, (oc, kh, kw, ic), 0, rng.random() < 0.7)
    ws = ws * oc if len(ws) == 1 else ws
    tensors = [T((4,), [1.0], [0], 2, np.array([1, oh, ow, oc], np.int32)),
               T((oc, kh, kw, ic), ws, [0] * oc, data=wq), T((1, ih, iw, ic), [xs], [0], INT16)]
    ins = [0, 1, 2]
    if rng.random() < 0.8:
        b16 = rng.random() < 0.3
        bias = rng.integers(-32768, 32768, oc).astype(np.int16) if b16 else _bias(rng, oc, extreme)
        tensors.append(T((oc,), [xs * s for s in ws], [0] * oc, INT16 if b16 else INT64, bias))
        ins.append(3)
    tensors.append(T((1, oh, ow, oc), [ys], [0], INT16))
    opts = ("TransposeConvOptions", dict(Padding=padding, StrideH=sh, StrideW=sw,
                                         FusedActivationFunction=int(rng.choice([0, 1, 3]))))
    return Case(name, tensors, [Node("TRANSPOSE_CONV", ins, len(tensors) - 1, opts)], 2, len(tensors) - 1), True


def batch_matmul_case(rng, name, extreme=False):
    """BATCH_MATMUL 16x8 of x [b, m, k] (the input) and its transpose [b, k, m] (a TRANSPOSE), or of x and x read
    transposed (adj_y)."""
    b, m, k = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 9))
    adj_y = bool(rng.random() < 0.5)
    xs = _scale(rng, -4, -2.5)
    ys = float(np.float32(xs * xs * 10 ** rng.uniform(0.5, 2.5) * k ** 0.5))
    tensors = [T((b, m, k), [xs], [0], INT16), T((3,), [1.0], [0], 2, np.array([0, 2, 1], np.int32)),
               T((b, k, m), [xs], [0], INT16), T((b, m, m), [ys], [0], INT16)]
    nodes = [Node("TRANSPOSE", [0, 1], 2, ("TransposeOptions", {}))]
    # x [b, m, k] times (x^T) [b, k, m], or with adj_y x itself read transposed
    rhs = 0 if adj_y else 2
    nodes.append(Node("BATCH_MATMUL", [0, rhs], 3, ("BatchMatMulOptions", dict(AdjX=False, AdjY=adj_y))))
    return Case(name, tensors, nodes, 0, 3), True


def batch_matmul_adj_case(rng, name, extreme=False):
    """BATCH_MATMUL 16x8 of x with itself, x square per batch ([b, s, s], or heads [1, h, s, s]), each side read
    as it lies or transposed (AdjX / AdjY): every operand layout of the fast 16x8 kernel's loops (kk, kn, the
    transposed product, any), odd and even sizes."""
    s = int(rng.integers(1, 10))
    shape = (int(rng.integers(1, 4)), s, s) if rng.random() < 0.5 else (1, int(rng.integers(1, 4)), s, s)
    xs = _scale(rng, -4, -2.5)
    ys = float(np.float32(xs * xs * 10 ** rng.uniform(0.5, 2.5) * s ** 0.5))
    tensors = [T(shape, [xs], [0], INT16), T(shape, [ys], [0], INT16)]
    opts = dict(AdjX=bool(rng.random() < 0.5), AdjY=bool(rng.random() < 0.5))
    return Case(name, tensors, [Node("BATCH_MATMUL", [0, 0], 1, ("BatchMatMulOptions", opts))], 0, 1), True


def concat_const_case(rng, name, extreme=False):
    """CONCATENATION of an int16 image and an int16 constant quantized like it (a ViT's class token), on a random
    axis, the constant first or last."""
    h, w, c = (int(v) for v in rng.integers(1, 6, 3))
    axis = int(rng.integers(1, 4))
    xs = _scale(rng)
    cshape = [1, h, w, c]
    cshape[axis] = int(rng.integers(1, 3))
    oshape = [1, h, w, c]
    oshape[axis] += cshape[axis]
    data = rng.integers(-32768, 32768, cshape).astype(np.int16)
    tensors = [T((1, h, w, c), [xs], [0], INT16), T(tuple(cshape), [xs], [0], INT16, data),
               T(tuple(oshape), [xs], [0], INT16)]
    order = [1, 0] if rng.random() < 0.5 else [0, 1]
    return Case(name, tensors, [Node("CONCATENATION", order, 2, ("ConcatenationOptions", dict(Axis=axis)))], 0,
                2), True


ACTIVATIONS = ("LOGISTIC", "TANH", "RELU", "RELU6", "LEAKY_RELU", "ABS")
MOVEMENT = ("SLICE", "STRIDED_SLICE", "SPLIT", "SPLIT_V", "UNPACK", "PACK", "REVERSE_V2", "BROADCAST_TO", "EXPAND_DIMS")


MAKERS = {"conv": conv_case, "depthwise": lambda r, n, e: conv_case(r, n, e, True), "fc": fc_case,
          "fc_rows": fc_rows_case, "avg_pool": pool_case, "max_pool": lambda r, n, e: pool_case(r, n, e, False),
          "add": add_case, "concat": concat_case, "pad": pad_case, "mean": mean_case, "concat_const": concat_const_case, "batch_matmul": batch_matmul_case,
          "batch_matmul_adj": batch_matmul_adj_case, "transpose_conv": transpose_conv_case, "prelu": prelu_case, "select_v2": select_case,
          "dynamic_update_slice": lambda r, n, e: select_case(r, n, e, "DYNAMIC_UPDATE_SLICE"), "softmax": softmax_case,
          "resize_nearest": resize_case, "quantize": requantize_case, "sum": lambda r, n, e: mean_case(r, n, e, "SUM"),
          "transpose": transpose_case,
          **{("add_broadcast" if op == "ADD" else op.lower()): (lambda o: lambda r, n, e: binary_case(r, n, e, o))(op)
             for op in BINARY_OPTIONS},
          **{op.lower(): (lambda o: lambda r, n, e: movement_case(r, n, e, o))(op) for op in MOVEMENT},
          **{op.lower(): (lambda o: lambda r, n, e: activation_case(r, n, e, o))(op) for op in ACTIVATIONS}}


def cases(seed: int, n: int, makers: dict = MAKERS) -> list[Case]:
    """n valid random cases, the makers in turn, every third one with edge values; 4 int16 inputs each (zeros,
    the int16 limits, random)."""
    rng = np.random.default_rng(seed)
    out, kinds, i = [], list(makers), 0
    while len(out) < n:
        kind = kinds[i % len(kinds)]
        case, ok = makers[kind](rng, f"s{seed}_{i}_{kind}", i % 3 == 2)
        i += 1
        if not ok:
            continue
        shape = case.tensors[case.input].shape
        x = rng.integers(-32768, 32768, (4,) + tuple(shape)).astype(np.int16)
        x[0] = 0
        x[1] = rng.choice([-32768, 32767], shape)
        case.x = x
        out.append(case)
    return out
