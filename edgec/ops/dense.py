"""Matrix products: `fully_connected` (one row x a constant weight matrix), `fully_connected_rows`
(many rows x constant weights) and `matmul` (two activations, batched). A Flatten of a channels-last
tensor feeding a Gemm/MatMul permutes the weight columns instead of moving the data.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import NO_ACT
from edgec.ops import movement


# ---- ONNX import
def _dense(cx, node, x, w_out_in, bias):
    xshape = cx.shape(x, node)
    if int(np.prod(xshape[:-1])) != 1:
        return _dense_rows(cx, node, x, w_out_in, bias)
    tensor, perm = cx.activation(x, node)
    if tensor in cx.feature_perm:
        w_out_in = w_out_in[:, cx.feature_perm[tensor]]
    elif not movement.same_order(xshape, perm, movement.identity(len(xshape))):
        tensor = cx.as_layout(x, movement.identity(len(xshape)), node)
    oshape = cx.shape(node.output[0], node)
    out = cx.new_tensor(node.output[0], oshape, node.output[0])
    cx.emit("fully_connected", node, [tensor], out, weights=np.ascontiguousarray(w_out_in, np.float32),
            bias=np.asarray(bias, np.float32).reshape(-1), act=NO_ACT)
    cx.values[node.output[0]] = (out, movement.identity(len(oshape)))


def _dense_rows(cx, node, x, w_out_in, bias):
    xshape = cx.shape(x, node)
    tensor = cx.as_layout(x, tuple(range(len(xshape))), node)
    oshape = cx.shape(node.output[0], node)
    out = cx.new_tensor(node.output[0], oshape, node.output[0])
    cx.emit("fully_connected_rows", node, [tensor], out, weights=np.ascontiguousarray(w_out_in, np.float32),
            bias=np.asarray(bias, np.float32).reshape(-1), act=NO_ACT,
            rows=int(np.prod(xshape[:-1], dtype=np.int64)))
    cx.values[node.output[0]] = (out, tuple(range(len(oshape))))


def import_gemm(cx, node):
    a, b = node.input[0], node.input[1]
    if b not in cx.consts:
        raise node_error(node, "the second operand (B) must be a constant weight matrix")
    if cx.attr(node, "transA", 0):
        a = _transposed(cx, node, a)
    w = cx.consts[b].astype(np.float32)
    w = w if cx.attr(node, "transB", 0) else w.T
    w = w * float(cx.attr(node, "alpha", 1.0))
    n = w.shape[0]
    bias = np.zeros(n, np.float32)
    if len(node.input) > 2 and node.input[2]:
        if node.input[2] not in cx.consts:
            raise node_error(node, "the bias (C) must be constant")
        c = cx.consts[node.input[2]].astype(np.float32)
        if c.size != 1 and c.shape[-1] == n and int(np.prod(c.shape[:-1])) != 1:
            raise node_error(node, f"a bias C of shape {list(c.shape)} that varies per row is not supported")
        bias = np.broadcast_to(c.reshape(-1)[-n:] if c.size > 1 else c.reshape(1), (n,)).copy()
        bias = bias * float(cx.attr(node, "beta", 1.0))
    _dense(cx, node, a, w, bias)


def _transposed(cx, node, x):
    """ONNX value x [K, M] as a new value [M, K] (Gemm transA)."""
    shape = cx.shape(x, node)
    t = x + "__T"
    cx.shapes[t] = tuple(shape[::-1])
    tensor, perm = cx.activation(x, node)
    cx.values[t] = (tensor, tuple(int(i) for i in np.argsort((1, 0))[list(perm)]))
    return t


def import_matmul(cx, node):
    a, b = node.input
    if a not in cx.consts and b not in cx.consts:
        return _matmul(cx, node, a, b, node.output[0])
    if b not in cx.consts or cx.consts[b].ndim < 2 or int(np.prod(cx.consts[b].shape[:-2])) != 1:
        raise node_error(node, "MatMul is supported as activation x constant 2-D matrix, or of two activations")
    w = cx.consts[b].astype(np.float32).reshape(cx.consts[b].shape[-2:]).T
    _dense(cx, node, a, w, np.zeros(w.shape[0], np.float32))


def _matmul(cx, node, a, b, y):
    """Two activations: [.., m, k] x [.., k, n]."""
    sa, sb, sy = cx.shape(a, node), cx.shape(b, node), cx.shape(y, node)
    sa = (1,) + tuple(sa) if len(sa) == 1 else sa                   # a vector is a 1-row / 1-column matrix
    sb = tuple(sb) + (1,) if len(sb) == 1 else sb
    sy = tuple(sa[:-1]) + (sb[-1],) if len(sa) == 2 and len(sb) == 2 else sy
    if len(sy) < 2:
        sy = (1,) * (2 - len(sy)) + tuple(sy)
    ba, bb = int(np.prod(sa[:-2], dtype=np.int64)), int(np.prod(sb[:-2], dtype=np.int64))
    batch = int(np.prod(sy[:-2], dtype=np.int64))
    if (ba != batch and ba != 1) or (bb != batch and bb != 1) or \
            (ba == batch and bb == batch and tuple(sa[:-2]) != tuple(sb[:-2]) and len(sa) == len(sb)):
        raise node_error(node, f"MatMul batch broadcasting {list(sa)} x {list(sb)} is not supported")
    ta = cx.as_layout(a, tuple(range(len(cx.shape(a, node)))), node)
    tb = cx.as_layout(b, tuple(range(len(cx.shape(b, node)))), node)
    m, k, n = sa[-2], sa[-1], sb[-1]
    sy = cx.shape(y, node)
    out = cx.new_tensor(y, tuple(sy) or (1,), y)
    cx.emit("matmul", node, [ta, tb], out, batch=batch, m=m, k=k, n=n,
            a_batch_stride=m * k if ba > 1 else 0, b_batch_stride=k * n if bb > 1 else 0, act=NO_ACT)
    cx.values[y] = (out, tuple(range(len(sy))))


ONNX = {"Gemm": import_gemm, "MatMul": import_matmul}
