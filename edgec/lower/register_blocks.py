"""Weight packing of the speed variants that keep more outputs in registers (edgec/lower/specialize.py lists
them): the convolution with 2 pixels x 4 channels (runtime_c/fast/edgec_conv2d_blocked4.c; offered for 1x1
convolutions and single-channel inputs, edgec/lower/specialize.py) and the fully
connected layer with 8 rows a pass (fast/edgec_fully_connected_rows8.c).

Both double the int16 weights and the biases at build time (|acc| < 2^30, edgec/ops/fast.py, so 2 * acc fits
an int32): the accumulators then hold the doubled sum the requantization's SMMLAR takes. Both pad the last
block of outputs with copies of the last output, its requantization record included (the kernels never store
the copies)."""
from __future__ import annotations

import numpy as np

from edgec import cheader
from edgec.ops import fast


def pointwise_or_single_channel(lowered: dict) -> bool:
    """An im2col convolution lowering that is a 1x1, stride-1, unpadded convolution or reads a single channel
    (where blocked4 was measured faster than the blocked kernel: MLPerf Tiny KWS)."""
    p = lowered["params"]
    pointwise = (p["k_h"], p["k_w"], p["stride_h"], p["stride_w"], p["pad_top"], p["pad_left"]) == (1, 1, 1, 1, 0, 0)
    return pointwise or p["in_c"] == 1


def _padded(a: np.ndarray, n: int) -> np.ndarray:
    """a with its last row repeated up to n rows."""
    return np.concatenate([a, np.repeat(a[-1:], n - len(a), axis=0)]) if n > len(a) else a


def _doubled_words(v: np.ndarray) -> np.ndarray:
    """int16 values (doubled int8 weights) as little-endian words, C order."""
    return fast.words(np.ascontiguousarray(2 * v.astype(np.int16)))


def _blocks(w: np.ndarray, rq: np.ndarray, block: int, pair_order) -> tuple[np.ndarray, np.ndarray]:
    """The word stream of `block`-output blocks: per block the doubled biases, then per group of 4 inputs the
    doubled int16 weights in `pair_order` (an index array over [group][output][4] -> the kernel's order)."""
    n = (len(w) + block - 1) // block * block
    w, rq = _padded(w, n), _padded(rq, n)
    groups = w.shape[1] // 4
    bias = (2 * rq[:, 0].astype(np.int64)).astype(np.int32).reshape(-1, block).view(np.uint32)
    g = w.reshape(-1, block, groups, 4).transpose(0, 2, 1, 3)               # [block][group][output][4]
    body = _doubled_words(pair_order(g)).reshape(n // block, -1)
    return np.concatenate([bias, body], axis=1).reshape(-1), np.ascontiguousarray(rq)


def blocked4_conv(lowered: dict) -> dict:
    """edgec_conv2d_blocked4_s8: blocks of 4 output channels; per group of 4 input channels (groups padded with
    zero weights to an even count) the words (w0, w2) of channels 0..3, then (w1, w3) of channels 0..3."""
    p = lowered["params"]
    k4, out_c = p["k4"], p["out_c"]
    k8 = (k4 + 7) // 8 * 8
    w = np.zeros((out_c, k8), np.int16)
    w[:, :k4] = lowered["arrays"]["fw"].view(np.int8).reshape(out_c, k4)
    words, rq = _blocks(w, lowered["arrays"]["rq"], 4, lambda g: g[..., [0, 2, 1, 3]].reshape(
        *g.shape[:2], 4, 2, 2).transpose(0, 1, 3, 2, 4))
    return {**lowered, "kernel": "edgec_conv2d_blocked4_s8",
            "scratch_bytes": cheader.buffer_size("edgec_conv2d_blocked4_s8", p),
            "arrays": {**lowered["arrays"], "fw": words, "rq": rq}}


def fc_rows(lowered: dict) -> np.ndarray:
    """The [out_features][k4] int8 weights of a packed fully connected lowering (edgec/ops/dense.py lower_fc)."""
    p = lowered["params"]
    n_out, k4 = p["out_features"], p["k4"]
    raw = lowered["arrays"]["fw"].view(np.int8)
    blocks = n_out // 4 * 4
    head = raw[:blocks * k4].reshape(-1, k4 // 4, 4, 4).transpose(0, 2, 1, 3).reshape(blocks, k4)
    return np.concatenate([head, raw[blocks * k4:].reshape(-1, k4)])


def rows8_fc(lowered: dict) -> dict:
    """edgec_fully_connected_rows8_s8: blocks of 8 rows; per group of 4 inputs the words (w0, w2) (w1, w3) of
    rows 0..7."""
    words, rq = _blocks(fc_rows(lowered).astype(np.int16), lowered["arrays"]["rq"], 8,
                        lambda g: g[..., [0, 2, 1, 3]])
    return {**lowered, "kernel": "edgec_fully_connected_rows8_s8",
            "arrays": {**lowered["arrays"], "fw": words, "rq": rq},
            "scratch_bytes": cheader.buffer_size("edgec_fully_connected_rows8_s8", lowered["params"])}
