"""The fully connected speed variant for weights read from flash, edgec_fully_connected_pairs_s8
(runtime_c/fast/edgec_fully_connected_pairs.c; its record is edgec/ops/dense.py's PAIRS): int8 weights, one byte a
weight, 4 rows a block in pairs of rows, each word [w_e[i] + 128, w_o[i], w_e[j] + 128, w_o[j]] against the widened
input pair (x_i, x_j); one SMLAD of the word, one of its UXTB16: 3 instructions for 4 MACs, the odd row's sum
recovered modulo 2^32 (exact while |dot_o| < 2^23, checked here on the weights: `applies`). A header word names
the output stage; each block's 4 doubled biases follow its weights (one sequential run of flash), and a layer with
one weight scale (a .tflite's) keeps a single requantization record, read once a call (the uniform stage, the
Arm build's assembly).
"""
from __future__ import annotations

import numpy as np

from edgec.ops import fast

ODD_DOT_LIMIT = 1 << 23    # |dot_o| * 256 must stay an int32: (f - l) >> 8 is exact below it
MAX_GROUPS = 256           # EDGEC_FC_WIDEN_GROUPS: the input widened in one pass (2 * k4 bytes of scratch)
WIDEN_ORDER = [0, 2, 1, 3]  # edgec_widen's words: (x0, x2), (x1, x3)
FULL, RELU, CLAMP, UNIFORM = 0, 1, 2, 3   # the output stages (EDGEC_FCP_*)


def stage(rq: np.ndarray, lo: int, hi: int) -> int:
    """The output stage of a layer: the full int8 range or a ReLU (a range up to 127) where every record's neg is -1
    (the sign correction is then the accumulator's sign), else the generic clamp; the full range with one
    requantization for every row (a .tflite's per-tensor weight scale) is the uniform stage."""
    rq = np.asarray(rq)
    if hi != 127 or np.any(rq[:, 3] != -1):
        return CLAMP
    if lo != -128:
        return RELU
    return UNIFORM if np.all(rq[:, 1:] == rq[:1, 1:]) else FULL


def packed_rows(base) -> np.ndarray:
    """The [out_features][k4] int8 weights of the packed fully connected lowering (`lower_fc`)."""
    p = base.params
    n_out, k4 = p["out_features"], p["k4"]
    raw = base.arrays["fw"].view(np.int8)
    blocks = n_out // 4 * 4
    head = raw[:blocks * k4].reshape(-1, k4 // 4, 4, 4).transpose(0, 2, 1, 3).reshape(blocks, k4)
    return np.concatenate([head, raw[blocks * k4:].reshape(-1, k4)])


def applies(base) -> bool:
    """The packed lowering (`base`) of a layer this kernel computes exactly: an input widened in one pass, and on
    every odd row of a pair 128 (the largest |x|) times its sum of |w| below ODD_DOT_LIMIT."""
    p = base.params
    if p["k4"] // 4 > MAX_GROUPS:
        return False
    w = padded_rows(packed_rows(base))
    return int(np.abs(w[1::2].astype(np.int64)).sum(axis=1).max(initial=0)) * 128 < ODD_DOT_LIMIT


def padded_rows(w: np.ndarray) -> np.ndarray:
    """[out_features][k4] rows padded to a multiple of 4 with copies of the last row."""
    return fast.padded(w, -(-len(w) // 4) * 4)


def lower(op, base):
    """The packing of fast/edgec_fully_connected_pairs.c: a header word (the output stage, `stage`), then per block
    of 4 rows [group][pair][word (x0, x2), word (x1, x3)] and the block's 4 doubled biases; the requantization
    records padded like the rows, or the uniform stage's one record."""
    p = base.params
    w = padded_rows(packed_rows(base)).astype(np.int16)
    n, k4 = w.shape
    g = w.reshape(n // 4, 2, 2, k4 // 4, 4)[..., WIDEN_ORDER]     # [block][pair][even/odd][group][x0 x2 x1 x3]
    g = g.reshape(n // 4, 2, 2, k4 // 4, 2, 2).transpose(0, 3, 1, 4, 5, 2)   # [block][group][pair][word][i/j][e/o]
    b = np.empty(g.shape, np.uint8)
    b[..., 0] = (g[..., 0] + 128).astype(np.uint8)
    b[..., 1] = g[..., 1].astype(np.int8).view(np.uint8)
    rq = fast.padded(base.arrays["rq"], n)
    bias = (2 * rq[:, 0].astype(np.int64)).astype(np.int32).view(np.uint32).reshape(n // 4, 4)
    body = np.concatenate([fast.words(np.ascontiguousarray(b)).reshape(n // 4, -1), bias], axis=1).reshape(-1)
    st = stage(rq, int(p["act_min"]), int(p["act_max"]))
    return p, {**base.arrays, "fw": np.concatenate([np.array([st], np.uint32), body]),
               "rq": np.ascontiguousarray(rq[:1] if st == UNIFORM else rq)}


def reference_rows(params, arrays) -> np.ndarray:
    """The [rows padded to 4][k4] int8 weights a pairs packing holds (its inverse: the tests' check)."""
    k4 = params["k4"]
    blocks = arrays["fw"][1:].reshape(-1, k4 + 4)[:, :k4]           # a block's k4 words, then its 4 biases
    b = blocks.view(np.uint8).reshape(-1, k4 // 4, 2, 2, 2, 2).astype(np.int16)   # [block][group][pair][word][i/j][e/o]
    even, odd = b[..., 0] - 128, b[..., 1].astype(np.uint8).view(np.int8).astype(np.int16)
    rows = np.stack([even, odd], axis=-1).transpose(0, 2, 5, 1, 3, 4)   # [block][pair][e/o][group][word][i/j]
    rows = rows.reshape(*rows.shape[:4], 4)[..., np.argsort(WIDEN_ORDER)]
    return rows.reshape(-1, k4).astype(np.int8)
