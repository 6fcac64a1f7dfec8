"""Random .tflite cases for the TFLite Micro oracle (tests/tflite_oracle.py) of the operators added for issue 29:
SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND (3-D and 4-D, paddings and crops), ADD_N, CUMSUM (any axis, exclusive,
reverse), DIV (broadcasting), L2_NORMALIZATION and LOG_SOFTMAX.
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import INT32, Case, Node, T, _act


def _dims(rng, rank, hi=6):
    return tuple(int(d) for d in rng.integers(1, hi + 1, rank))


def space_batch_case(rng, name, extreme=False, padded=False):
    """SPACE_TO_BATCH_ND or BATCH_TO_SPACE_ND of a [N,H,W,C] or [N,H,C] input, random blocks and crops; no
    paddings (TFLite Micro pads with an offset it never sets: padded cases are checked against NumPy)."""
    four = rng.random() < 0.7
    k = 2 if four else 1
    block = [int(b) for b in rng.integers(1, 4, k)]
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 6))
    s, z = _act(rng, extreme)
    if rng.random() < 0.5:                               # SPACE_TO_BATCH_ND
        pads = [int(p) if padded else 0 for p in rng.integers(0, 3, 2 * k)]
        sizes = [int(rng.integers(1, 4)) * b - pads[2 * i] - pads[2 * i + 1] for i, b in enumerate(block)]
        sizes = [v if v > 0 else v + b * (1 + (-v) // b) for v, b in zip(sizes, block)]
        full = [v + pads[2 * i] + pads[2 * i + 1] for i, v in enumerate(sizes)]
        ins, outs = (n, *sizes, c), (n * int(np.prod(block)), *[f // b for f, b in zip(full, block)], c)
        op, opts = "SPACE_TO_BATCH_ND", ("SpaceToBatchNDOptions", {})
    else:
        sizes = [int(d) for d in rng.integers(1, 5, k)]
        crops = []
        for v, b in zip(sizes, block):
            total = int(rng.integers(0, v * b))          # keep at least one row
            top = int(rng.integers(0, total + 1))
            crops += [top, total - top]
        ins = (n * int(np.prod(block)), *sizes, c)
        outs = (n, *[v * b - crops[2 * i] - crops[2 * i + 1] for i, (v, b) in enumerate(zip(sizes, block))], c)
        pads = crops
        op, opts = "BATCH_TO_SPACE_ND", ("BatchToSpaceNDOptions", {})
    tensors = [T(ins, [s], [z]), T((k,), [1.0], [0], INT32, np.array(block, np.int32)),
               T((k, 2), [1.0], [0], INT32, np.array(pads, np.int32).reshape(k, 2)), T(outs, [s], [z])]
    return Case(name, tensors, [Node(op, [0, 1, 2], 3, opts)], 0, 3), True


def space_to_batch_numpy(case) -> np.ndarray:
    """SPACE_TO_BATCH_ND's definition: pad with the zero point, split the blocks off into the batch."""
    x = case.x
    block = case.tensors[1].data.reshape(-1).tolist()
    pads = case.tensors[2].data.reshape(-1, 2).tolist()
    four = x.ndim == 5
    v = x if four else x[:, :, :, None, :]
    bh, bw = (block + [1])[:2]
    (t, b), (l, r) = (pads + [[0, 0]])[:2]
    v = np.pad(v, ((0, 0), (0, 0), (t, b), (l, r), (0, 0)), constant_values=case.tensors[0].zp[0])
    k, n, hp, wp, c = v.shape
    v = v.reshape(k, n, hp // bh, bh, wp // bw, bw, c).transpose(0, 3, 5, 1, 2, 4, 6)
    return v.reshape(k, -1)


def add_n_case(rng, name, extreme=False):
    """ADD_N of 2 to 5 tensors: the input and its REVERSE_V2 along axis 0 in a random mix (TFLite Micro requires
    one shape and one quantization of them all)."""
    shape = _dims(rng, int(rng.integers(1, 5)))
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    if rng.random() < 0.3:
        ys, yz = xs, xz
    count = int(rng.integers(2, 6))
    tensors = [T(shape, [xs], [xz]), T((1,), [1.0], [0], INT32, np.array([0], np.int32)), T(shape, [xs], [xz]),
               T(shape, [ys], [yz])]
    rev = Node("REVERSE_V2", [0, 1], 2, ("ReverseV2Options", {}))
    return Case(name, tensors, [rev, Node("ADD_N", [int(rng.choice([0, 2])) for _ in range(count)], 3,
                                          ("AddNOptions", {}))], 0, 3), True


def cumsum_case(rng, name, extreme=False):
    """CUMSUM along a random (maybe negative) axis, exclusive and reverse at random."""
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank, 7 if rank < 3 else 5)
    if extreme and rng.random() < 0.5:              # long sums: TFLite's int32 accumulator wraps
        rank, shape = 1, (int(rng.integers(20, 40)),)
    axis = int(rng.integers(-rank, rank))
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    tensors = [T(shape, [xs], [xz]), T((1,), [1.0], [0], INT32, np.array([axis], np.int32)), T(shape, [ys], [yz])]
    opts = ("CumsumOptions", dict(Exclusive=bool(rng.random() < 0.5), Reverse=bool(rng.random() < 0.5)))
    return Case(name, tensors, [Node("CUMSUM", [0, 1], 2, opts)], 0, 2), True


def div_case(rng, name, extreme=False):
    """DIV of the input by a constant (its own quantization, broadcast; no value at its zero point), or of the
    input by a SLICE of it (broadcast; the case's inputs never equal the zero point there: `avoid`)."""
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank, 5)
    (xs, xz), (cs, cz), (ys, yz) = (_act(rng, extreme) for _ in range(3))
    opts = ("DivOptions", dict(FusedActivationFunction=int(rng.choice([0, 0, 1, 3]))))
    const = rng.random() < 0.5
    if not const or rng.random() < 0.5:
        cs = xs
    # TFLite's final shift, output_shift - (up to 7) - (up to 30), must stay within 31 bits (beyond, its C++ is
    # undefined): an output scale at most the input scales' ratio / 64
    ys = float(np.float32(xs / (cs * 64 * 10 ** rng.uniform(0, 1.5))))
    size = [1 if rng.random() < 0.5 else n for n in shape]
    if const:
        c = rng.integers(-128, 128, size).astype(np.int8)
        c[c == cz] = cz + 1 if cz < 127 else cz - 1
        tensors = [T(shape, [xs], [xz]), T(tuple(size), [cs], [cz], data=c), T(shape, [ys], [yz])]
        return Case(name, tensors, [Node("DIV", [0, 1], 2, opts)], 0, 2), True
    begin = [int(rng.integers(0, n - s + 1)) for n, s in zip(shape, size)]
    tensors = [T(shape, [xs], [xz]), T((rank,), [1.0], [0], INT32, np.array(begin, np.int32)),
               T((rank,), [1.0], [0], INT32, np.array(size, np.int32)), T(tuple(size), [xs], [xz]),
               T(shape, [ys], [yz])]
    sl = Node("SLICE", [0, 1, 2], 3, ("SliceOptions", {}))
    case = Case(name, tensors, [sl, Node("DIV", [0, 3], 4, opts)], 0, 4)
    case.avoid = xz                                   # DIV by the zero point: undefined in TFLite
    return case, True


def l2_norm_case(rng, name, extreme=False):
    """L2_NORMALIZATION over the last axis of a 1-D to 4-D input (rows of one value, and long rows, too);
    output quantized (1/128, 0) as TFLite requires."""
    shape = _dims(rng, int(rng.integers(1, 5)))
    if extreme and rng.random() < 0.5:
        shape = shape[:-1] + (int(rng.choice([1, 200, 1000])),)
    xs, xz = _act(rng, extreme)
    tensors = [T(shape, [xs], [xz]), T(shape, [1 / 128], [0])]
    return Case(name, tensors, [Node("L2_NORMALIZATION", [0], 1, ("L2NormOptions", {}))], 0, 1), True


def log_softmax_case(rng, name, extreme=False):
    """LOG_SOFTMAX over the last axis (1 to 300 classes, tiny and large input scales); output (16/256, 127)."""
    shape = _dims(rng, int(rng.integers(0, 3))) + (int(rng.choice([1, 2, 3, 10, 33, 100, 300])),)
    xs, xz = _act(rng, extreme)
    if extreme and rng.random() < 0.5:
        xs = float(np.float32(rng.choice([0.001, 0.5, 3.0])))
    tensors = [T(shape, [xs], [xz]), T(shape, [16 / 256], [127])]
    return Case(name, tensors, [Node("LOG_SOFTMAX", [0], 1, ("LogSoftmaxOptions", {}))], 0, 1), True


def arg_case(rng, name, extreme=False):
    """ARG_MAX / ARG_MIN along a random (maybe negative) axis, int32 indices; ties (few distinct values) too."""
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank)
    axis = int(rng.integers(-rank, rank))
    out = tuple(d for k, d in enumerate(shape) if k != axis % rank) or (1,)
    s, z = _act(rng, extreme)
    op = str(rng.choice(["ARG_MAX", "ARG_MIN"]))
    tensors = [T(shape, [s], [z]), T((1,), [1.0], [0], INT32, np.array([axis], np.int32)),
               T(out, [1.0], [0], INT32)]
    opts = (f"{op.title().replace('_', '')}Options", dict(OutputType=INT32))
    return Case(name, tensors, [Node(op, [0, 1], 2, opts)], 0, 2), True


BOOL = 6           # tflite.TensorType
COMPARISONS = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]


def _small_act(rng, extreme):
    s, z = _act(rng, extreme)
    return min(s, float(np.float32(0.9))), z                # TFLite's comparisons rescale by scales below 1


def compare_case(rng, name, extreme=False):
    """A comparison of the input and a constant (its own quantization, broadcast) or a SLICE of the input
    (broadcast), then maybe LOGICAL_NOT, or LOGICAL_AND / LOGICAL_OR with a second comparison: bool outputs."""
    op = str(rng.choice(COMPARISONS))
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank, 5)
    size = [1 if rng.random() < 0.5 else n for n in shape]
    (xs, xz), (cs, cz) = _small_act(rng, extreme), _small_act(rng, extreme)
    if rng.random() < 0.2:
        cs = xs
    c = rng.integers(-128, 128, size).astype(np.int8)
    begin = [int(rng.integers(0, n - s + 1)) for n, s in zip(shape, size)]
    tensors = [T(shape, [xs], [xz]), T(tuple(size), [cs], [cz], data=c),
               T((rank,), [1.0], [0], INT32, np.array(begin, np.int32)),
               T((rank,), [1.0], [0], INT32, np.array(size, np.int32)), T(tuple(size), [xs], [xz]),
               T(shape, [1.0], [0], BOOL), T(shape, [1.0], [0], BOOL), T(shape, [1.0], [0], BOOL)]
    first = rng.random() < 0.3
    nodes = [Node(op, [1, 0] if first else [0, 1], 5)]
    if rng.random() < 0.5:
        op2 = str(rng.choice(COMPARISONS))
        nodes += [Node("SLICE", [0, 2, 3], 4, ("SliceOptions", {})), Node(op2, [4, 0] if first else [0, 4], 6)]
        logical = str(rng.choice(["LOGICAL_AND", "LOGICAL_OR"]))
        nodes.append(Node(logical, [5, 6], 7))
    elif rng.random() < 0.5:
        nodes.append(Node("LOGICAL_NOT", [5], 7))
    else:
        nodes.append(Node("LOGICAL_NOT", [5], 6))
        nodes.append(Node("LOGICAL_NOT", [6], 7))
    return Case(name, tensors, nodes, 0, 7), True


def select_case(rng, name, extreme=False):
    """SELECT_V2(x > c or a SLICE-broadcast comparison, x, SLICE(x) or x reversed): condition, x and y broadcast
    against each other."""
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank, 5)
    size = [1 if rng.random() < 0.5 else n for n in shape]
    csize = [1 if rng.random() < 0.5 else n for n in shape]
    (xs, xz), (cs, cz) = _small_act(rng, extreme), _small_act(rng, extreme)
    begin = [int(rng.integers(0, n - s + 1)) for n, s in zip(shape, size)]
    tensors = [T(shape, [xs], [xz]), T(tuple(csize), [cs], [cz], data=rng.integers(-128, 128, csize).astype(np.int8)),
               T((rank,), [1.0], [0], INT32, np.array(begin, np.int32)),
               T((rank,), [1.0], [0], INT32, np.array(size, np.int32)), T(tuple(size), [xs], [xz]),
               T(tuple(np.broadcast_shapes(shape, csize)), [1.0], [0], BOOL), T(shape, [xs], [xz])]
    nodes = [Node(str(rng.choice(COMPARISONS)), [0, 1], 5), Node("SLICE", [0, 2, 3], 4, ("SliceOptions", {}))]
    nodes.append(Node("SELECT_V2", [5, 0, 4] if rng.random() < 0.5 else [5, 4, 0], 6, ("SelectV2Options", {})))
    return Case(name, tensors, nodes, 0, 6), True


def bool_case(rng, name, extreme=False):
    """CAST int8 -> bool (x != 0 of the raw values) then REDUCE_ALL over random axes, keep_dims or not, then CAST
    bool -> int8 (unquantized, as converters write it) or not."""
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank, 4)
    axes = rng.choice(np.arange(-rank, rank), int(rng.integers(1, rank + 1)))
    keep = bool(rng.random() < 0.5)
    red = {int(a) % rank for a in axes}
    out = tuple(1 if a in red else n for a, n in enumerate(shape)) if keep else \
        tuple(n for a, n in enumerate(shape) if a not in red)
    s, z = _act(rng, extreme)
    cast_back = rng.random() < 0.5
    tensors = [T(shape, [s], [z]), T(shape, [1.0], [0], BOOL), T((len(axes),), [1.0], [0], INT32,
               axes.astype(np.int32)), T(out or (1,), [1.0], [0], BOOL), T(out or (1,), [], [])]
    nodes = [Node("CAST", [0], 1), Node("REDUCE_ALL", [1, 2], 3, ("ReducerOptions", dict(KeepDims=keep)))]
    if cast_back:
        nodes.append(Node("CAST", [3], 4))
    return Case(name, tensors, nodes, 0, 4 if cast_back else 3), True


def fill_case(rng, name, extreme=False):
    """MUL / ADD / SUB / MAXIMUM of the input and a FILL (constant dims, a constant int8 value, broadcast)."""
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank)
    fshape = [1 if rng.random() < 0.5 else n for n in shape]
    op = str(rng.choice(["ADD", "MUL", "SUB", "MAXIMUM"]))
    (xs, xz), (fs, fz), (ys, yz) = (_act(rng, extreme) for _ in range(3))
    if op == "MAXIMUM":
        (fs, fz), (ys, yz) = (xs, xz), (xs, xz)
    tensors = [T(shape, [xs], [xz]), T((rank,), [1.0], [0], INT32, np.array(fshape, np.int32)),
               T((), [fs], [fz], data=np.array(int(rng.integers(-128, 128)), np.int8)), T(tuple(fshape), [fs], [fz]),
               T(shape, [ys], [yz])]
    opts = {"ADD": "AddOptions", "MUL": "MulOptions", "SUB": "SubOptions", "MAXIMUM": "MaximumMinimumOptions"}[op]
    return Case(name, tensors, [Node("FILL", [1, 2], 3), Node(op, [0, 3], 4, (opts, {}))], 0, 4), True


def dynamic_update_case(rng, name, extreme=False):
    """DYNAMIC_UPDATE_SLICE of the input by a SLICE of its REVERSE_V2 at constant start indices (some beyond the
    end or negative: TFLite clamps them)."""
    rank = int(rng.integers(1, 5))
    shape = _dims(rng, rank)
    size = [int(rng.integers(1, n + 1)) for n in shape]
    start = [int(rng.integers(-1, n - s + 2)) for n, s in zip(shape, size)]
    s, z = _act(rng, extreme)
    tensors = [T(shape, [s], [z]), T((1,), [1.0], [0], INT32, np.array([0], np.int32)), T(shape, [s], [z]),
               T((rank,), [1.0], [0], INT32, np.zeros(rank, np.int32)),
               T((rank,), [1.0], [0], INT32, np.array(size, np.int32)), T(tuple(size), [s], [z]),
               T((rank,), [1.0], [0], INT32, np.array(start, np.int32)), T(shape, [s], [z])]
    nodes = [Node("REVERSE_V2", [0, 1], 2, ("ReverseV2Options", {})), Node("SLICE", [2, 3, 4], 5, ("SliceOptions", {})),
             Node("DYNAMIC_UPDATE_SLICE", [0, 5, 6], 7)]
    return Case(name, tensors, nodes, 0, 7), True


def broadcast_args_case(rng, name, extreme=False):
    """RESHAPE of the input to the shape BROADCAST_ARGS computes from its SHAPE (folded) and a constant shape of
    ones and equal sizes, with leading ones (TFLite Micro's BROADCAST_TO takes only a constant shape), then a
    REVERSE_V2 (a model of views alone has no kernel to run)."""
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 5, rank))
    other = (1,) * int(rng.integers(0, 3)) + \
        tuple(n if rng.random() < 0.5 else 1 for n in shape)
    out = tuple(np.broadcast_shapes(shape, other))
    s, z = _act(rng, extreme)
    tensors = [T(shape, [s], [z]), T((rank,), [], [], INT32), T((len(other),), [], [], INT32,
               np.array(other, np.int32)), T((len(out),), [], [], INT32), T(out, [s], [z]),
               T((1,), [1.0], [0], INT32, np.array([-1], np.int32)), T(out, [s], [z])]
    nodes = [Node("SHAPE", [0], 1, ("ShapeOptions", dict(OutType=INT32))), Node("BROADCAST_ARGS", [1, 2], 3),
             Node("RESHAPE", [0, 3], 4), Node("REVERSE_V2", [4, 5], 6, ("ReverseV2Options", {}))]
    return Case(name, tensors, nodes, 0, 6), True


MAKERS = {"broadcast_args": broadcast_args_case, "dynamic_update": dynamic_update_case, "fill": fill_case, "bool": bool_case, "select": select_case, "compare": compare_case, "arg": arg_case, "space_batch": space_batch_case, "add_n": add_n_case, "cumsum": cumsum_case, "div": div_case,
          "l2_norm": l2_norm_case, "log_softmax": log_softmax_case}
NUMPY_MAKERS = {"space_to_batch_padded": (lambda r, n, e: _space_to_batch_padded(r, n, e), space_to_batch_numpy)}


def _space_to_batch_padded(rng, name, extreme):
    while True:
        case, ok = space_batch_case(rng, name, extreme, padded=True)
        if case.nodes[0].op == "SPACE_TO_BATCH_ND":
            return case, ok
