"""Random .tflite cases for the TFLite Micro oracle (tests/tflite_oracle.py) of the float tail
(edgec/ops/float_tail): an int8 input, a DEQUANTIZE into float32, then one of TFLite Micro's float32 kernels
(NEG, FLOOR, CEIL, ROUND, SQUARE, SQRT, EXP, LOG, SIN, COS, FLOOR_DIV and FLOOR_MOD broadcasting a constant or a
dequantized SLICE of the input, SOFTMAX with its beta, LOG_SOFTMAX, L2_POOL_2D with SAME / VALID padding and
fused activations), its float32 output the graph's, or a QUANTIZE back into int8, int16 or uint8; and
EMBEDDING_LOOKUP of int32 ids into a constant int8 table (int8 rows, or TFLM's hybrid float32 rows).
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import INT32, Case, Node, T, _act

FLOAT32 = 0
UNARY = ("NEG", "FLOOR", "CEIL", "ROUND", "SQUARE", "SQRT", "EXP", "LOG", "SIN", "COS")
EXACT = {"NEG", "FLOOR", "CEIL", "ROUND", "SQUARE", "SQRT", "FLOOR_DIV", "FLOOR_MOD", "EMBEDDING_LOOKUP"}


def _shape(rng, lo=1, hi=4):
    return tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(lo, hi + 1))))


def _scale(rng, op):
    """Input scales that reach each function's interesting range (ROUND: halves; EXP: overflow; SIN: far)."""
    if op == "ROUND":
        return float(rng.choice([0.5, 0.25, 0.125]))
    return float(np.float32(10 ** rng.uniform(-2.5, 0.5 if op != "EXP" else 0)))


def unary_case(rng, name, extreme=False, op=None):
    op = op or str(rng.choice(UNARY))
    shape = _shape(rng)
    s, z = _act(rng, extreme)
    s = _scale(rng, op)
    tensors = [T(shape, [s], [z]), T(shape, [], [], FLOAT32), T(shape, [], [], FLOAT32)]
    case = Case(name, tensors, [Node("DEQUANTIZE", [0], 1), Node(op, [1], 2)], 0, 2)
    case.op = op
    return case, True


def floor_binary_case(rng, name, extreme=False):
    """FLOOR_DIV or FLOOR_MOD of the dequantized input by a broadcast float32 constant (no zero), or by a
    dequantized SLICE of the input (broadcast; its values never at the zero point: `avoid`)."""
    op = str(rng.choice(["FLOOR_DIV", "FLOOR_MOD"]))
    shape = _shape(rng, 1, 5)
    s, z = _act(rng, extreme)
    size = tuple(1 if rng.random() < 0.5 else n for n in shape)
    if rng.random() < 0.5:
        size = size[int(rng.integers(0, len(size))):]             # a lower rank broadcasts too
        c = (rng.uniform(-4, 4, size) * (rng.random() < 0.5 and 1 or 0.25)).astype(np.float32)
        c[c == 0] = 0.5
        tensors = [T(shape, [s], [z]), T(shape, [], [], FLOAT32), T(size, [], [], FLOAT32, c),
                   T(shape, [], [], FLOAT32)]
        case = Case(name, tensors, [Node("DEQUANTIZE", [0], 1), Node(op, [1, 2], 3)], 0, 3)
    else:
        rank = len(shape)
        begin = [int(rng.integers(0, n - k + 1)) for n, k in zip(shape, size)]
        tensors = [T(shape, [s], [z]), T((rank,), [1.0], [0], INT32, np.array(begin, np.int32)),
                   T((rank,), [1.0], [0], INT32, np.array(size, np.int32)), T(size, [s], [z]),
                   T(shape, [], [], FLOAT32), T(size, [], [], FLOAT32), T(shape, [], [], FLOAT32)]
        nodes = [Node("SLICE", [0, 1, 2], 3, ("SliceOptions", {})), Node("DEQUANTIZE", [0], 4),
                 Node("DEQUANTIZE", [3], 5), Node(op, [4, 5], 6)]
        case = Case(name, tensors, nodes, 0, 6)
        case.avoid = z
    case.op = op
    return case, True


def softmax_case(rng, name, extreme=False):
    op = str(rng.choice(["SOFTMAX", "LOG_SOFTMAX"]))
    shape = _shape(rng, 1, 3)
    s, z = _act(rng, extreme)
    opts = ("SoftmaxOptions", dict(Beta=float(np.float32(rng.choice([1.0, 0.5, 2.0, 0.1]))))) \
        if op == "SOFTMAX" else ("LogSoftmaxOptions", {})
    tensors = [T(shape, [s], [z]), T(shape, [], [], FLOAT32), T(shape, [], [], FLOAT32)]
    case = Case(name, tensors, [Node("DEQUANTIZE", [0], 1), Node(op, [1], 2, opts)], 0, 2)
    case.op = op
    return case, True


def l2_pool_case(rng, name, extreme=False):
    h, w, c = (int(v) for v in rng.integers(1, 9, 3))
    kh, kw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    same = bool(rng.integers(0, 2))
    oh, ow = ((h + sh - 1) // sh, (w + sw - 1) // sw) if same else ((h - kh + sh) // sh, (w - kw + sw) // sw)
    s, z = _act(rng, extreme)
    act = int(rng.choice([0, 0, 1, 2, 3]))
    tensors = [T((1, h, w, c), [s], [z]), T((1, h, w, c), [], [], FLOAT32), T((1, oh, ow, c), [], [], FLOAT32)]
    opts = ("Pool2DOptions", dict(Padding=0 if same else 1, StrideW=sw, StrideH=sh, FilterWidth=kw,
                                  FilterHeight=kh, FusedActivationFunction=act))
    case = Case(name, tensors, [Node("DEQUANTIZE", [0], 1), Node("L2_POOL_2D", [1], 2, opts)], 0, 2)
    case.op = "L2_POOL_2D"
    return case, True


def quantize_case(rng, name, extreme=False):
    """A float tail inside an int8 model: DEQUANTIZE, NEG or SQUARE or FLOOR (keras's layer norm: a NEG between
    them), QUANTIZE into int8 (int16, uint8) of its own scale and zero point, which saturates at its ends."""
    op = str(rng.choice(["NEG", "SQUARE", "FLOOR", "EXP"]))
    shape = _shape(rng)
    s, z = _act(rng, extreme)
    out_type = int(rng.choice([9, 9, 7, 3]))
    ys, yz = _act(rng, extreme)
    yz = {9: yz, 7: 0, 3: yz + 128}[out_type]
    tensors = [T(shape, [s], [z]), T(shape, [], [], FLOAT32), T(shape, [], [], FLOAT32),
               T(shape, [ys], [yz], out_type)]
    case = Case(name, tensors, [Node("DEQUANTIZE", [0], 1), Node(op, [1], 2), Node("QUANTIZE", [2], 3)], 0, 3)
    case.op = "QUANTIZE"
    return case, True


def embedding_case(rng, name, extreme=False, hybrid=None):
    """EMBEDDING_LOOKUP of n int32 ids (the graph's input) into a [rows, cols(, more)] int8 table; the output
    int8 rows, or float32 (the table's scale, zero point 0). x: the ids, every row id included."""
    rows, n = int(rng.integers(1, 12)), int(rng.integers(1, 9))
    cols = _shape(rng, 1, 2)
    table = rng.integers(-128, 128, (rows, *cols)).astype(np.int8)
    s, z = _act(rng, extreme)
    hybrid = rng.random() < 0.5 if hybrid is None else hybrid
    out = T((n, *cols), [], [], FLOAT32) if hybrid else T((n, *cols), [s], [z])
    tensors = [T((n,), [], [], INT32), T(table.shape, [s], [0 if hybrid else z], data=table), out]
    case = Case(name, tensors, [Node("EMBEDDING_LOOKUP", [0, 1], 2)], 0, 2)
    case.x = rng.integers(0, rows, (4, n)).astype(np.int32)
    case.x[0] = np.arange(n) % rows
    case.op = "EMBEDDING_LOOKUP"
    return case, True


MAKERS = {"unary": unary_case, "floor_binary": floor_binary_case, "softmax": softmax_case, "l2_pool": l2_pool_case,
          "quantize": quantize_case}


def split_case(rng, name, extreme=False, v=False):
    """An int8 input, DEQUANTIZE, a float32 SPLIT (or SPLIT_V) along a random axis into 2 or 3 parts, each QUANTIZEd
    (an unrolled Keras LSTM's gate projections): several int8 outputs."""
    shape = _shape(rng, 2, 3)
    axis = int(rng.integers(0, len(shape)))
    parts = int(rng.integers(2, 4))
    shape = tuple(d * parts if a == axis else d for a, d in enumerate(shape))
    s, z = _act(rng, extreme)
    sizes = [shape[axis] // parts] * parts
    if v:
        sizes = [1] * (parts - 1) + [shape[axis] - (parts - 1)]
    tensors = [T(shape, [s], [z]), T(shape, [], [], FLOAT32), T((1,), [], [], INT32, data=np.array([axis], np.int32))]
    if v:
        tensors.append(T((parts,), [], [], INT32, data=np.array(sizes[:-1] + [-1], np.int32)))
    nodes = [Node("DEQUANTIZE", [0], 1)]
    outs, parts_at = [], len(tensors)
    for k, n in enumerate(sizes):
        part = tuple(n if a == axis else d for a, d in enumerate(shape))
        tensors += [T(part, [], [], FLOAT32), T(part, [s], [z])]
    nodes.append(Node("SPLIT_V" if v else "SPLIT", [1, 3, 2] if v else [2, 1],
                      [parts_at + 2 * k for k in range(parts)],
                      ("SplitVOptions", {"NumSplits": parts}) if v else ("SplitOptions", {"NumSplits": parts})))
    for k in range(parts):
        nodes.append(Node("QUANTIZE", [parts_at + 2 * k], parts_at + 2 * k + 1))
        outs.append(parts_at + 2 * k + 1)
    case = Case(name, tensors, nodes, 0, outs)
    case.op = "SPLIT_V" if v else "SPLIT"
    return case, True
