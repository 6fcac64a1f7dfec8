"""NumPy integer reference of the extended kernels, bit-exact with runtime_c/ (edgec_nn.h).

These serve the operator coverage beyond first light (docs/conformance.md):
- `lut_s8`: any elementwise int8 -> int8 function as 256-entry tables computed at build
  time (one table, or one per index of an axis: per-channel constants, PRelu);
- `binary_s8`: broadcasting add/sub/max/min (TFLite add scheme), mul, div;
- `remap_s8`: pure data movement as a separable index map (slice, pad, gather,
  transpose, depth/space, nearest resize, tile, expand, ConvTranspose zero insertion);
- `concat_part_s8`: one input of a concatenation, optionally requantized by a table;
- `reduce_s8`: sum/mean, max, min, argmax, argmin over the middle axis of [outer][n][inner];
- `group_conv2d_s8`, `fully_connected_rows_s8`, `matmul_s8`, `log_softmax_s8`, `resize_linear_s8`.
Parameters are dicts keyed by the C struct field names; list-valued fields are C arrays.
"""
from __future__ import annotations

import numpy as np

from .kernels_ref import conv2d_s8, fully_connected_s8, requantize

RANK = 6                  # remap / binary work on up to 6 dimensions
INVALID = -(1 << 27)      # remap offset marking "padding": any sum containing it stays negative
BINARY_OPS = {"add": 0, "sub": 1, "max": 2, "min": 3, "mul": 4, "div": 5}
REDUCE_KINDS = {"sum": 0, "max": 1, "min": 2, "argmax": 3, "argmin": 4}
DIV_SHIFT = 16


def lut_s8(p: dict, table, x) -> np.ndarray:
    """y[i] = table[((i / inner) % count) * 256 + x[i] + 128]."""
    x = np.asarray(x, np.int8).reshape(-1, int(p["count"]), int(p["inner"])).astype(np.int64)
    t = np.asarray(table, np.int8).reshape(int(p["count"]), 256)
    ch = np.arange(int(p["count"])).reshape(1, -1, 1)
    return t[ch, x + 128].reshape(-1)


def _offsets(dims, strides):
    """Flat offsets of every element of an array of shape dims walked with the given strides."""
    off = np.zeros(dims, np.int64)
    for k, (d, s) in enumerate(zip(dims, strides)):
        shape = [1] * len(dims)
        shape[k] = d
        off = off + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return off.reshape(-1)


def binary_s8(p: dict, a, b) -> np.ndarray:
    """Broadcasting elementwise op on [dims] (6-D, strides 0 where an input is broadcast)."""
    dims = [int(d) for d in p["dims"]]
    va = np.asarray(a, np.int8).reshape(-1)[_offsets(dims, p["a_stride"])].astype(np.int64) - int(p["a_zp"])
    vb = np.asarray(b, np.int8).reshape(-1)[_offsets(dims, p["b_stride"])].astype(np.int64) - int(p["b_zp"])
    op = int(p["op"])
    if op <= BINARY_OPS["min"]:
        ls = 1 << int(p["left_shift"])
        sa = requantize(va * ls, p["a_mult"], p["a_shift"]).astype(np.int64)
        sb = requantize(vb * ls, p["b_mult"], p["b_shift"]).astype(np.int64)
        raw = [sa + sb, sa - sb, np.maximum(sa, sb), np.minimum(sa, sb)][op]
    elif op == BINARY_OPS["mul"]:
        raw = va * vb
    else:
        num = va << DIV_SHIFT
        den = vb
        q = (np.abs(num) + np.abs(den) // 2) // np.maximum(np.abs(den), 1)   # round half away from zero
        q = np.where((num < 0) != (den < 0), -q, q)
        big = np.int64((1 << 31) - 1)
        raw = np.where(den == 0, np.where(num < 0, -big, np.where(num > 0, big, 0)), q)
    out = requantize(raw.astype(np.int32), p["out_mult"], p["out_shift"]).astype(np.int64) + int(p["out_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8)


def remap_s8(p: dict, offsets, x) -> np.ndarray:
    """out[i0..i5] = x[sum_k offsets[start[k] + i_k]], or pad_value if any term is INVALID."""
    dims = [int(d) for d in p["dims"]]
    offsets = np.asarray(offsets, np.int64)
    total = np.zeros(dims, np.int64)
    for k, d in enumerate(dims):
        shape = [1] * RANK
        shape[k] = d
        total = total + offsets[int(p["start"][k]):int(p["start"][k]) + d].reshape(shape)
    total = total.reshape(-1)
    x = np.asarray(x, np.int8).reshape(-1)
    return np.where(total >= 0, x[np.maximum(total, 0)], np.int8(p["pad_value"])).astype(np.int8)


def concat_part_s8(p: dict, table, x, out: np.ndarray) -> None:
    """Write input x [outer][chunk] into out at [o * out_stride + out_offset + j] (through table if any)."""
    x = np.asarray(x, np.int8).reshape(int(p["outer"]), int(p["chunk"]))
    if table is not None:
        x = np.asarray(table, np.int8)[x.astype(np.int64) + 128]
    view = out.reshape(int(p["outer"]), int(p["out_stride"]))
    view[:, int(p["out_offset"]):int(p["out_offset"]) + int(p["chunk"])] = x


def reduce_s8(p: dict, x) -> np.ndarray:
    """Reduce [outer][n][inner] over n: sum (then requantize: mean is a sum with 1/n in the
    multiplier), max/min (then requantize), argmax/argmin (first or last index, clamped to int8)."""
    x = np.asarray(x, np.int8).reshape(int(p["outer"]), int(p["n"]), int(p["inner"])).astype(np.int64)
    kind = int(p["kind"])
    if kind >= REDUCE_KINDS["argmax"]:
        v = x if kind == REDUCE_KINDS["argmax"] else -x
        if int(p["select_last"]):
            idx = int(p["n"]) - 1 - np.argmax(v[:, ::-1, :], axis=1)
        else:
            idx = np.argmax(v, axis=1)
        return np.clip(idx, int(p["act_min"]), int(p["act_max"])).astype(np.int8).reshape(-1)
    if kind == REDUCE_KINDS["sum"]:
        acc = (x - int(p["input_zp"])).sum(axis=1)
    elif kind == REDUCE_KINDS["max"]:
        acc = x.max(axis=1) - int(p["input_zp"])
    else:
        acc = x.min(axis=1) - int(p["input_zp"])
    out = requantize(acc.astype(np.int32), p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(out, int(p["act_min"]), int(p["act_max"])).astype(np.int8).reshape(-1)


def group_conv2d_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """Grouped convolution: group g reads input channels [g*in_c/groups, ...) with weights
    [out_c][k_h][k_w][in_c/groups]; output channels of group g are [g*out_c/groups, ...)."""
    g = int(p["groups"])
    ic, oc = int(p["in_c"]) // g, int(p["out_c"]) // g
    x = np.asarray(x, np.int8).reshape(p["in_h"], p["in_w"], p["in_c"])
    w = np.asarray(w, np.int8).reshape(p["out_c"], p["k_h"], p["k_w"], ic)
    outs = []
    for k in range(g):
        q = dict(p, in_c=ic, out_c=oc)
        sl = slice(k * oc, (k + 1) * oc)
        outs.append(conv2d_s8(q, x[:, :, k * ic:(k + 1) * ic], w[sl], np.asarray(bias)[sl],
                              np.asarray(mult)[sl], np.asarray(shift)[sl]))
    return np.concatenate(outs, axis=2)


def fully_connected_rows_s8(p: dict, rows: int, x, w, bias, mult, shift) -> np.ndarray:
    """`rows` independent rows through the same fully connected layer."""
    x = np.asarray(x, np.int8).reshape(rows, int(p["in_features"]))
    return np.stack([fully_connected_s8(p, r, w, bias, mult, shift) for r in x])


def matmul_s8(p: dict, a, b) -> np.ndarray:
    """[batch][m][k] x [batch][k][n] (a batch stride of 0 broadcasts), one multiplier."""
    bt, m, k, n = (int(p[f]) for f in ("batch", "m", "k", "n"))
    a = np.asarray(a, np.int8).reshape(-1)
    b = np.asarray(b, np.int8).reshape(-1)
    out = []
    for i in range(bt):
        am = a[i * int(p["a_batch_stride"]):][:m * k].reshape(m, k).astype(np.int64) - int(p["a_zp"])
        bm = b[i * int(p["b_batch_stride"]):][:k * n].reshape(k, n).astype(np.int64) - int(p["b_zp"])
        out.append((am @ bm).astype(np.int32))
    acc = np.stack(out)
    y = requantize(acc, p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(y, int(p["act_min"]), int(p["act_max"])).astype(np.int8).reshape(-1)


LOG_Q = 16


def log2_table() -> np.ndarray:
    """log2(1 + (i + 0.5) / 256) in Q16 for the 8 mantissa bits after the leading one."""
    return np.round(np.log2(1 + (np.arange(256) + 0.5) / 256) * (1 << LOG_Q)).astype(np.int32)


LN2_Q16 = 45426  # round(ln 2 * 2**16)


def _round_div_pot(v, bits):
    """Round half away from zero of v / 2**bits (int64)."""
    half = np.int64(1) << (bits - 1)
    return np.where(v >= 0, (v + half) >> bits, -((-v + half) >> bits))


def log_softmax_s8(p: dict, exp_table, log_table, x) -> np.ndarray:
    """y = (x - max) * s_in - ln(sum exp) over the last axis; exp_table as softmax's (Q24),
    ln from an integer log2 (leading bit + 8 mantissa bits through log_table)."""
    x = np.asarray(x, np.int8).reshape(int(p["rows"]), int(p["cols"])).astype(np.int64)
    m = x.max(axis=1, keepdims=True)
    s = np.asarray(exp_table, np.int64)[m - x].sum(axis=1, keepdims=True)   # >= 2**24
    e = np.floor(np.log2(s.astype(np.float64))).astype(np.int64)
    e = np.where((np.int64(1) << (e + 1)) <= s, e + 1, np.where((np.int64(1) << e) > s, e - 1, e))
    idx = (s >> (e - 8)) - 256
    l2 = (e - 24) * (1 << LOG_Q) + np.asarray(log_table, np.int64)[idx]
    ln = (l2 * LN2_Q16) >> LOG_Q                                             # ln(sum) in Q16, >= 0
    y16 = (x - m) * int(p["k_in"]) - ((ln * int(p["k_ln"])) >> LOG_Q)      # y / s_out in Q16
    out = _round_div_pot(y16, LOG_Q) + int(p["output_zp"])
    return np.clip(out, -128, 127).astype(np.int8).reshape(-1)


def resize_linear_s8(p: dict, idx, frac, x) -> np.ndarray:
    """Separable linear resize of [h][w][c] (channels last): per output row/column two source
    indices and a Q10 weight of the second; result rounded half away from zero."""
    h, w, c = int(p["in_h"]), int(p["in_w"]), int(p["c"])
    oh, ow = int(p["out_h"]), int(p["out_w"])
    x = np.asarray(x, np.int8).reshape(h, w, c).astype(np.int64)
    idx = np.asarray(idx, np.int64)
    frac = np.asarray(frac, np.int64)
    y0, y1, x0, x1 = idx[:oh], idx[oh:2 * oh], idx[2 * oh:2 * oh + ow], idx[2 * oh + ow:]
    fy, fx = frac[:oh].reshape(-1, 1, 1), frac[oh:].reshape(1, -1, 1)
    one = 1 << 10
    top = x[y0][:, x0] * (one - fx) + x[y0][:, x1] * fx
    bot = x[y1][:, x0] * (one - fx) + x[y1][:, x1] * fx
    v = top * (one - fy) + bot * fy
    return np.clip(_round_div_pot(v, 20), -128, 127).astype(np.int8).reshape(-1)
