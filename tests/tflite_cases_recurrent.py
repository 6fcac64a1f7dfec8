"""Random .tflite cases of TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM for the TFLite Micro oracle
(tests/tflite_oracle.py): int8 input (time major or batch major, batch 1-3, 1-7 steps), int8 weights per tensor,
int32 gate biases, an int8 hidden state with a zero point and an int16 cell state of a power-of-two scale
(2^-10 to 2^-15), with and without a cell clip; edge cases saturate the gates (large weight scales) or the
input (zero points at the int8 limits).
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import INT32, Case, Node, T, _act

INT16, INT64 = 7, 4


def lstm_case(rng, name, extreme=False):
    batch, steps, n_in, hid = int(rng.integers(1, 4)), int(rng.integers(1, 8)), int(rng.integers(1, 21)), \
        int(rng.integers(1, 17))
    time_major = bool(rng.random() < 0.4)
    xs, xz = _act(rng, extreme)
    hs, hz = float(np.float32(2 / 255 * 10 ** rng.uniform(-0.3, 0.3))), int(rng.integers(-20, 20))
    cell = float(2.0 ** -int(rng.integers(10, 16)))
    big = 10 ** (1.5 if extreme else 0.0)
    shape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    tensors = [T(shape, [xs], [xz])]
    ins = [0]
    for k in range(8):                        # input-to-gate weights (4), recurrent weights (4)
        cols = n_in if k < 4 else hid
        s = float(np.float32(big * 10 ** rng.uniform(-0.5, 0.5) / (127 * (cols ** 0.5) * (xs if k < 4 else hs))))
        tensors.append(T((hid, cols), [s], [0], data=rng.integers(-127, 128, (hid, cols)).astype(np.int8)))
        ins.append(len(tensors) - 1)
    ins += [-1, -1, -1]                       # no peephole weights
    for k in range(4):                        # gate biases
        s = float(np.float32(xs * tensors[1 + k].scale[0]))
        tensors.append(T((hid,), [s], [0], INT32, rng.integers(-(1 << 12), 1 << 12, hid).astype(np.int32)))
        ins.append(len(tensors) - 1)
    ins += [-1, -1]                           # no projection
    tensors.append(T((batch, hid), [hs], [hz], variable=True))
    tensors.append(T((batch, hid), [cell], [0], INT16, variable=True))
    ins += [len(tensors) - 2, len(tensors) - 1, -1, -1, -1, -1]
    out_shape = (steps, batch, hid) if time_major else (batch, steps, hid)
    tensors.append(T(out_shape, [hs], [hz]))
    clip = float(rng.choice([0.0, 0.0, 1.5, 3.0]))
    opts = dict(FusedActivationFunction=4, CellClip=clip, TimeMajor=time_major)
    nodes = [Node("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, len(tensors) - 1,
                  ("UnidirectionalSequenceLSTMOptions", opts))]
    return Case(name, tensors, nodes, 0, len(tensors) - 1), True


def lstm16_case(rng, name, extreme=False):
    """The 16x8 LSTM (TFLiteConverter's int16 activations, int8 weights): int16 input and hidden state of zero point
    0 (the hidden state's scale about 2^-15: values in [-1, 1]), int64 gate biases; edge cases saturate the gates."""
    batch, steps, n_in, hid = int(rng.integers(1, 4)), int(rng.integers(1, 8)), int(rng.integers(1, 21)), \
        int(rng.integers(1, 17))
    time_major = bool(rng.random() < 0.4)
    xs = float(np.float32(10 ** rng.uniform(-4.5, -3)))
    hs = float(np.float32(2.0 ** -15 * 10 ** rng.uniform(-0.2, 0.2)))
    cell = float(2.0 ** -int(rng.integers(10, 16)))
    big = 10 ** (1.5 if extreme else 0.0)
    shape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    tensors, ins = [T(shape, [xs], [0], INT16)], [0]
    for k in range(8):                        # input-to-gate weights (4), recurrent weights (4)
        cols = n_in if k < 4 else hid
        s = float(np.float32(big * 8 * 10 ** rng.uniform(-0.5, 0.5) / (32767 * cols ** 0.5 * (xs if k < 4 else hs))))
        tensors.append(T((hid, cols), [s], [0], data=rng.integers(-127, 128, (hid, cols)).astype(np.int8)))
        ins.append(len(tensors) - 1)
    ins += [-1, -1, -1]                       # no peephole weights
    for k in range(4):                        # gate biases, int64
        s = float(np.float32(xs * tensors[1 + k].scale[0]))
        lim = 1 << (36 if extreme else 20)
        tensors.append(T((hid,), [s], [0], INT64, rng.integers(-lim, lim, hid).astype(np.int64)))
        ins.append(len(tensors) - 1)
    ins += [-1, -1]                           # no projection
    tensors.append(T((batch, hid), [hs], [0], INT16, variable=True))
    tensors.append(T((batch, hid), [cell], [0], INT16, variable=True))
    ins += [len(tensors) - 2, len(tensors) - 1, -1, -1, -1, -1]
    tensors.append(T((steps, batch, hid) if time_major else (batch, steps, hid), [hs], [0], INT16))
    opts = dict(FusedActivationFunction=4, CellClip=float(rng.choice([0.0, 0.0, 1.5, 3.0])), TimeMajor=time_major)
    case = Case(name, tensors, [Node("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, len(tensors) - 1,
                                     ("UnidirectionalSequenceLSTMOptions", opts))], 0, len(tensors) - 1)
    case.x = rng.integers(-32768, 32768, (4, *shape)).astype(np.int16)
    case.x[1] = rng.choice([-32768, 32767], shape)       # the int16 limits
    return case


MAKERS = {"lstm": lstm_case}


def svdf_case(rng, name, extreme=False):
    """SVDF: int8 input [batch, n], int8 feature weights, int8 or int16 time weights and state (of one type), a
    bias (zero or not), rank 1-3."""
    batch, n_in, units, rank, memory = (int(rng.integers(1, 3)), int(rng.integers(1, 25)), int(rng.integers(1, 12)),
                                        int(rng.integers(1, 4)), int(rng.integers(1, 10)))
    filters = units * rank
    sixteen = bool(rng.random() < 0.4)
    xs, xz = _act(rng, extreme)
    wfs = float(np.float32(10 ** rng.uniform(-3, -1.5)))
    feat = 3000 if sixteen else 40             # the typical size of a new state entry
    ss = float(np.float32(xs * wfs * n_in ** 0.5 * 5400 / feat * 10 ** rng.uniform(-0.3, 0.3)))
    sz = 0 if sixteen else int(rng.integers(-60, 60))
    wts = float(np.float32(10 ** rng.uniform(-3, -1.5)))
    # (the state reset before each inference: only its newest column is not its zero point)
    wt_std = 18000 if sixteen else 73
    ys = float(np.float32(ss * wts * rank ** 0.5 * wt_std * feat / 40 * 10 ** rng.uniform(-0.3, 0.3)))
    yz = int(rng.integers(-30, 30))
    if extreme:
        ys /= 30
    state_type = INT16 if sixteen else 9
    tdata = rng.integers(-32767 if sixteen else -127, 32768 if sixteen else 128, (filters, memory))
    tensors = [T((batch, n_in), [xs], [xz]),
               T((filters, n_in), [wfs], [0], data=rng.integers(-127, 128, (filters, n_in)).astype(np.int8)),
               T((filters, memory), [wts], [0], state_type, tdata.astype(np.int16 if sixteen else np.int8))]
    bias = rng.integers(-(1 << 14), 1 << 14, units) if rng.random() < 0.7 else np.zeros(units)
    tensors.append(T((units,), [float(np.float32(ss * wts))], [0], INT32, bias.astype(np.int32)))
    ins = [0, 1, 2, 3]         # (TFLite Micro's Prepare reads the bias's scale: a file without one crashes it)
    tensors.append(T((batch, filters * memory), [ss], [sz], state_type, variable=True))
    ins.append(len(tensors) - 1)
    tensors.append(T((batch, units), [ys], [yz]))
    nodes = [Node("SVDF", ins, len(tensors) - 1, ("SVDFOptions", dict(Rank=rank, FusedActivationFunction=0)))]
    return Case(name, tensors, nodes, 0, len(tensors) - 1), True


MAKERS["svdf"] = svdf_case
