"""Random .tflite cases of TFLite's elementwise operators for the TFLite Micro oracle (tests/tflite_oracle.py):
ADD, SUB, MUL, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE of an activation and a constant tensor (its own
quantization, broadcast along random axes, either operand order: a BatchNorm left as MUL + ADD is a per-channel
one) and of two activations broadcast against each other (the second a SLICE of the first); REDUCE_MAX,
REDUCE_MIN and SUM over random axes; ABS, LEAKY_RELU, ELU and PRELU (constant alphas of several shapes).
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import INT32, Case, Node, T, _act

OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "MAXIMUM": "MaximumMinimumOptions",
           "MINIMUM": "MaximumMinimumOptions", "SQUARED_DIFFERENCE": "SquaredDifferenceOptions"}


def _options(rng, op):
    if op in ("MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"):
        return (OPTIONS[op], {})
    return (OPTIONS[op], dict(FusedActivationFunction=int(rng.choice([0, 0, 1, 3]))))


def _broadcast_shape(rng, shape):
    """A shape broadcasting to `shape`: some axes 1, maybe fewer leading axes."""
    b = tuple(1 if rng.random() < 0.5 else n for n in shape)
    k = int(rng.integers(0, len(shape)))
    return b[k:] if rng.random() < 0.3 else b


def const_operand_case(rng, name, extreme=False, op=None):
    op = op or str(rng.choice(list(OPTIONS)))
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 6, rank))
    if rng.random() < 0.4:                    # a BatchNorm's per-channel constant of an NHWC tensor
        shape = (1, int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 17)))
        cshape = (shape[-1],)
    else:
        cshape = _broadcast_shape(rng, shape)
    (xs, xz), (cs, cz), (ys, yz) = (_act(rng, extreme) for _ in range(3))
    if op in ("MAXIMUM", "MINIMUM"):
        (cs, cz), (ys, yz) = (xs, xz), (xs, xz)
    c = rng.integers(-128, 128, cshape).astype(np.int8)
    first = rng.random() < 0.3
    tensors = [T(shape, [xs], [xz]), T(cshape, [cs], [cz], data=c), T(shape, [ys], [yz])]
    node = Node(op, [1, 0] if first else [0, 1], 2, _options(rng, op))
    return Case(name, tensors, [node], 0, 2), True


def broadcast_case(rng, name, extreme=False, op=None):
    """op(x, SLICE(x)) or op(SLICE(x), x), the slice of size 1 along random axes."""
    op = op or str(rng.choice(list(OPTIONS)))
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 6, rank))
    size = [1 if rng.random() < 0.5 else n for n in shape]
    begin = [int(rng.integers(0, n - s + 1)) for n, s in zip(shape, size)]
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    if op in ("MAXIMUM", "MINIMUM"):
        ys, yz = xs, xz
    tensors = [T(shape, [xs], [xz]), T((rank,), [1.0], [0], INT32, np.array(begin, np.int32)),
               T((rank,), [1.0], [0], INT32, np.array(size, np.int32)), T(tuple(size), [xs], [xz]),
               T(shape, [ys], [yz])]
    sl = Node("SLICE", [0, 1, 2], 3, ("SliceOptions", {}))
    node = Node(op, [3, 0] if rng.random() < 0.5 else [0, 3], 4, _options(rng, op))
    return Case(name, tensors, [sl, node], 0, 4), True


MAKERS = {"const_operand": const_operand_case, "broadcast": broadcast_case,
          "squared_difference": lambda r, n, e: (const_operand_case if r.random() < 0.5 else broadcast_case)(
              r, n, e, "SQUARED_DIFFERENCE"),
          "max_const": lambda r, n, e: const_operand_case(r, n, e, str(r.choice(["MAXIMUM", "MINIMUM"]))),
          "max_broadcast": lambda r, n, e: broadcast_case(r, n, e, str(r.choice(["MAXIMUM", "MINIMUM"])))}


def reduce_case(rng, name, extreme=False):
    """REDUCE_MAX / REDUCE_MIN / SUM over random (negative, repeated, non-adjacent) axes, keep_dims or not."""
    op = str(rng.choice(["REDUCE_MAX", "REDUCE_MIN", "SUM"]))
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 7, rank))
    axes = rng.choice(np.arange(-rank, rank), int(rng.integers(1, rank + 1)))
    keep = bool(rng.random() < 0.5)
    red = {int(a) % rank for a in axes}
    out = [1 if a in red else n for a, n in enumerate(shape)] if keep else [n for a, n in enumerate(shape) if a not in red]
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    if op != "SUM":
        ys, yz = xs, xz
    tensors = [T(shape, [xs], [xz]), T((len(axes),), [1.0], [0], INT32, axes.astype(np.int32)),
               T(tuple(out) or (1,), [ys], [yz])]
    return Case(name, tensors, [Node(op, [0, 1], 2, ("ReducerOptions", dict(KeepDims=keep)))], 0, 2), True


MAKERS["reduce"] = reduce_case


def unary_case(rng, name, extreme=False):
    """ABS, LEAKY_RELU (alphas of either sign), ELU: input and output quantized apart (or alike)."""
    op = str(rng.choice(["ABS", "LEAKY_RELU", "ELU"]))
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(1, 5))))
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    if rng.random() < 0.3:
        ys, yz = xs, xz
    opts = ("LeakyReluOptions", dict(Alpha=float(np.float32(rng.choice([0.01, 0.1, 0.2, 0.3, 1.5, -0.25]))))) \
        if op == "LEAKY_RELU" else None
    tensors = [T(shape, [xs], [xz]), T(shape, [ys], [yz])]
    return Case(name, tensors, [Node(op, [0], 1, opts)], 0, 1), True


def prelu_case(rng, name, extreme=False):
    """PRELU with a constant alpha: per channel (Keras shared_axes=[1, 2]), per pixel and channel, or one."""
    h, w, c = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 17))
    ashape = [(c,), (1, 1, c), (h, w, c), (1,), (w, 1)][int(rng.integers(0, 5))]
    if int(np.prod(ashape)) > 256:             # edgec's table limit (tests/test_tflite.py checks the refusal)
        ashape = (c,)
    (xs, xz), (a_s, az), (ys, yz) = (_act(rng, extreme) for _ in range(3))
    alpha = rng.integers(-128, 128, ashape).astype(np.int8)
    tensors = [T((1, h, w, c), [xs], [xz]), T(ashape, [a_s], [az], data=alpha), T((1, h, w, c), [ys], [yz])]
    return Case(name, tensors, [Node("PRELU", [0, 1], 2)], 0, 2), True


MAKERS["unary"] = unary_case
MAKERS["prelu"] = prelu_case


def rsqrt_case(rng, name, extreme=False):
    """RSQRT of non-negative inputs (TFLite Micro refuses values below the zero point): input zero point -128."""
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(1, 4))))
    xs = float(np.float32(10 ** rng.uniform(-3, 0)))
    ys, yz = _act(rng, extreme)
    tensors = [T(shape, [xs], [-128]), T(shape, [ys], [yz])]
    return Case(name, tensors, [Node("RSQRT", [0], 1)], 0, 1), True


MAKERS["rsqrt"] = rsqrt_case
