"""Random .tflite cases of TFLite's BATCH_MATMUL and TRANSPOSE_CONV for the TFLite Micro oracle
(tests/tflite_oracle.py). BATCH_MATMUL: the input
x [batch..., m, k] against y, a LEAKY_RELU of x quantized apart from it (so the two operands have different scales
and zero points), with adj_x / adj_y, or y transposed explicitly (TRANSPOSE), or a batch-1 operand broadcast
(a SLICE of y). TRANSPOSE_CONV: random strides, kernels, SAME/VALID padding, per-tensor and per-channel weights,
with and without a bias, fused activations.
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import INT32, Case, Node, T, _act, _bias, _weights


def batch_matmul_case(rng, name, extreme=False):
    lead = tuple(int(d) for d in rng.integers(1, 4, int(rng.integers(0, 3))))
    m, k = int(rng.integers(1, 9)), int(rng.integers(1, 17))
    shape = lead + (m, k)
    (xs, xz), (ys, yz), (os_, oz) = (_act(rng, extreme) for _ in range(3))
    os_ = float(np.float32(xs * ys * k ** 0.5 * 60 * 10 ** rng.uniform(-0.5, 0.5)))     # outputs not all saturated
    tensors = [T(shape, [xs], [xz]), T(shape, [ys], [yz])]
    nodes = [Node("LEAKY_RELU", [0], 1, ("LeakyReluOptions", dict(Alpha=0.5)))]
    variant = int(rng.integers(0, 4))
    swap = (*range(len(lead)), len(lead) + 1, len(lead))
    if variant == 0:            # x @ y^T by adj_y
        adj, ins, out = (False, True), [0, 1], lead + (m, m)
    elif variant == 1:          # x^T @ y by adj_x
        adj, ins, out = (True, False), [0, 1], lead + (k, k)
    elif variant == 2:          # x @ TRANSPOSE(y)
        tensors += [T((len(swap),), [1.0], [0], INT32, np.array(swap, np.int32)), T(lead + (k, m), [ys], [yz])]
        nodes.append(Node("TRANSPOSE", [1, 2], 3, ("TransposeOptions", {})))
        adj, ins, out = (False, False), [0, 3], lead + (m, m)
    else:                       # x @ (the first batch of y)^T, broadcast over x's batch
        r = len(shape)
        tensors += [T((r,), [1.0], [0], INT32, np.zeros(r, np.int32)),
                    T((r,), [1.0], [0], INT32, np.array((1,) * len(lead) + (m, k), np.int32)),
                    T((1,) * len(lead) + (m, k), [ys], [yz])]
        nodes.append(Node("SLICE", [1, 2, 3], 4, ("SliceOptions", {})))
        adj, ins, out = (False, True), [0, 4], lead + (m, m)
    tensors.append(T(out, [os_], [oz]))
    nodes.append(Node("BATCH_MATMUL", ins, len(tensors) - 1, ("BatchMatMulOptions", dict(AdjX=adj[0], AdjY=adj[1]))))
    return Case(name, tensors, nodes, 0, len(tensors) - 1), True


def transpose_conv_case(rng, name, extreme=False):
    ih, iw, ic = int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.choice([1, 2, 3, 8, 16]))
    kh, kw, oc = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.choice([1, 2, 5, 8]))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    padding = int(rng.integers(0, 2))                      # SAME, VALID
    oh, ow = (ih * sh, iw * sw) if padding == 0 else ((ih - 1) * sh + kh, (iw - 1) * sw + kw)
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    wq, ws = _weights(rng, (oc, kh, kw, ic), 0, extreme)
    if not extreme:                                        # outputs spread over the int8 range
        ys = float(np.float32(xs * max(ws) * (kh * kw * ic) ** 0.5 * 40 * 10 ** rng.uniform(-0.5, 0.5)))
    tensors = [T((4,), [1.0], [0], INT32, np.array([1, oh, ow, oc], np.int32)),
               T((oc, kh, kw, ic), ws, [0] * len(ws), data=wq), T((1, ih, iw, ic), [xs], [xz])]
    ins = [0, 1, 2]
    if rng.random() < 0.7:
        tensors.append(T((oc,), [xs * s for s in ws], [0] * len(ws), INT32, _bias(rng, oc, extreme, ws)))
        ins.append(3)
    tensors.append(T((1, oh, ow, oc), [ys], [yz]))
    opts = ("TransposeConvOptions", dict(Padding=padding, StrideH=sh, StrideW=sw,
                                         FusedActivationFunction=int(rng.choice([0, 1, 3]))))
    return Case(name, tensors, [Node("TRANSPOSE_CONV", ins, len(tensors) - 1, opts)], 2, len(tensors) - 1), True


def grouped_conv_case(rng, name, extreme=False):
    """A grouped CONV_2D (Keras Conv2D(groups=g)): filters [oc, kh, kw, ic / g], TFLite Micro's ConvPerChannel
    taking output channels oc / g at a time from input channels ic / g at a time; up to 8 groups edgec runs it as
    a conv2d over block-diagonal weights, 12 as group_conv2d (edgec/ops/conv/importers.py BLOCK_DIAGONAL_GROUPS)."""
    g = int(rng.choice([2, 3, 4, 12]))
    icg, ocg = int(rng.choice([1, 2, 5, 8])), int(rng.choice([1, 3, 4]))
    h, w, kh, kw = int(rng.integers(2, 9)), int(rng.integers(2, 9)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    s, padding = int(rng.integers(1, 3)), int(rng.integers(0, 2))      # SAME, VALID
    oh, ow = ((h + s - 1) // s, (w + s - 1) // s) if padding == 0 else ((h - kh) // s + 1, (w - kw) // s + 1)
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    ic, oc = g * icg, g * ocg
    wq, ws = _weights(rng, (oc, kh, kw, icg), 0, extreme)
    if not extreme:                                        # outputs spread over the int8 range
        ys = float(np.float32(xs * max(ws) * (kh * kw * icg) ** 0.5 * 40 * 10 ** rng.uniform(-0.5, 0.5)))
    tensors = [T((1, h, w, ic), [xs], [xz]), T((oc, kh, kw, icg), ws, [0] * len(ws), data=wq),
               T((oc,), [xs * v for v in ws], [0] * len(ws), INT32, _bias(rng, oc, extreme, ws)),
               T((1, oh, ow, oc), [ys], [yz])]
    opts = ("Conv2DOptions", dict(Padding=padding, StrideW=s, StrideH=s, DilationWFactor=1, DilationHFactor=1,
                                  FusedActivationFunction=int(rng.choice([0, 1, 3]))))
    return Case(name, tensors, [Node("CONV_2D", [0, 1, 2], 3, opts)], 0, 3), min(oh, ow) > 0


MAKERS = {"batch_matmul": batch_matmul_case, "transpose_conv": transpose_conv_case}
