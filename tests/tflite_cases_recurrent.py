"""Random .tflite cases of TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM for the TFLite Micro oracle
(tests/tflite_oracle.py): int8 input (time major or batch major, batch 1-3, 1-7 steps), int8 weights per tensor,
int32 gate biases, an int8 hidden state with a zero point and an int16 cell state of a power-of-two scale
(2^-10 to 2^-15), with and without a cell clip; edge cases saturate the gates (large weight scales) or the
input (zero points at the int8 limits).
"""
from __future__ import annotations

import numpy as np

from tflite_oracle import INT32, Case, Node, T, _act

INT16 = 7


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


MAKERS = {"lstm": lstm_case}
