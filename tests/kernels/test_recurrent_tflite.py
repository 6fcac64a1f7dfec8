"""TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM (edgec/ops/recurrent_tflite.py, runtime_c/edgec_recurrent_tflite.c)
and SVDF (edgec/ops/svdf.py, runtime_c/edgec_svdf.c): the C kernels against their NumPy twins bit for bit on random
parameters, the int16 sigmoid and tanh against their float functions, and random single-operator .tflite files
(tests/tflite_cases_recurrent.py) against TFLite Micro's interpreter, through edgec's NumPy reference and its
generated C."""
from __future__ import annotations

import ctypes
import importlib.util
import os

import numpy as np
import pytest

import tflite_cases_recurrent as recurrent_cases
import tflite_oracle as oracle
from ckernels import make, ptr
from edgec.fixedpoint import scheme
from edgec.ops import recurrent_tflite as lstm
from edgec.ops import svdf


def _params(r, batch, steps, n_in, hid, time_major):
    mults = {}
    for name, real in (("fc", 2.0 ** -15), ("ig", 2.0 ** -30 / 2.0 ** -int(r.integers(10, 16))),
                       ("oh", 2.0 ** -30 / float(r.uniform(0.002, 0.05)))):
        mults[f"{name}_mult"], mults[f"{name}_shift"] = scheme.quantize_multiplier(real)
    power = -int(r.integers(9, 16))
    return dict(steps=steps, batch=batch, input_size=n_in, hidden=hid, time_major=int(time_major),
                input_zp=int(r.integers(-128, 128)), hidden_zp=int(r.integers(-128, 128)), cell_sigmoid=0,
                cell_power=power, cell_clip=int(r.choice([0, 0, int(r.integers(1, 32768))])), **mults)


def _arrays(r, hid, n_in):
    def mults(n):
        ms = [scheme.quantize_multiplier(float(10 ** r.uniform(-3, 1.5))) for _ in range(n)]
        return np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)
    mx, sx = mults(4)
    mh, sh = mults(4)
    return dict(w_x=r.integers(-127, 128, 4 * hid * n_in).astype(np.int8),
                w_h=r.integers(-127, 128, 4 * hid * hid).astype(np.int8),
                bias=r.integers(-(1 << 20), 1 << 20, 4 * hid).astype(np.int32),
                mult_x=mx, shift_x=sx, mult_h=mh, shift_h=sh)


def test_kernel_matches_twin(ck):
    r = np.random.default_rng(12)
    for _ in range(150):
        batch, steps, n_in, hid = int(r.integers(1, 4)), int(r.integers(1, 7)), int(r.integers(1, 24)), \
            int(r.integers(1, 20))
        p = _params(r, batch, steps, n_in, hid, bool(r.random() < 0.5))
        a = _arrays(r, hid, n_in)
        x = r.integers(-128, 128, steps * batch * n_in).astype(np.int8)
        out = np.full(steps * batch * hid, 99, np.int8)
        scratch = np.zeros(11 * batch * hid + 16, np.int8)
        ck.lib.edgec_lstm_tflite_s8(ctypes.byref(make("edgec_lstm_tflite_params", p)), ptr(x),
                                    *(ptr(a[k]) for k in lstm.ARRAYS), ptr(scratch), ptr(out))
        np.testing.assert_array_equal(out, lstm.lstm_tflite_s8(p, a, x))


def test_activations_track_float():
    """TFLite's int16 sigmoid (Q3.12 in) and tanh (2^power in) are their float functions within 2^-13."""
    v = np.arange(-32768, 32768)
    np.testing.assert_allclose(lstm.sigmoid16(v) / 32768, 1 / (1 + np.exp(-v / 4096)), atol=2 ** -13)
    for power in (-10, -11, -12, -15):
        np.testing.assert_allclose(lstm.tanh16(v, power) / 32768, np.tanh(v * 2.0 ** power), atol=2 ** -13)


@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
def test_single_operator_files_match_tflite_micro(tmp_path):
    cases = oracle.cases(seed=5, n=24, makers=recurrent_cases.MAKERS)
    lstms = [c for c in cases if c.nodes[0].op == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert {c.nodes[0].options[1]["TimeMajor"] for c in lstms} == {False, True}
    assert {c.tensors[2].dtype for c in cases if c.nodes[0].op == "SVDF"} == {9, 7}     # int8 and int16 state
    bad = oracle.check(cases, tmp_path, paths=("reference",))
    assert not bad, bad


def test_svdf_kernel_matches_twin(ck):
    """Random SVDFs, int8 and int16 states, zero points that make the new state entry wrap as TFLM's cast does."""
    r = np.random.default_rng(3)
    for _ in range(200):
        batch, n_in, units, rank, memory = (int(r.integers(1, 3)), int(r.integers(1, 30)), int(r.integers(1, 10)),
                                            int(r.integers(1, 4)), int(r.integers(1, 12)))
        sixteen = bool(r.random() < 0.5)
        lo, hi = (-32768, 32767) if sixteen else (-128, 127)
        (m1, s1), (m2, s2) = (scheme.quantize_multiplier(float(10 ** r.uniform(-4, 0))) for _ in range(2))
        p = dict(batch=batch, input_size=n_in, rank=rank, units=units, memory=memory,
                 input_zp=int(r.integers(-128, 128)), state_zp=int(r.integers(-100, 100)) if not sixteen else 0,
                 state_min=lo, state_max=hi, mult1=m1, shift1=s1, mult2=m2, shift2=s2,
                 output_zp=int(r.integers(-128, 128)))
        a = dict(w_feature=r.integers(-127, 128, units * rank * n_in).astype(np.int8),
                 w_time=r.integers(lo + 1, hi + 1, units * rank * memory).astype(np.int16),
                 bias=r.integers(-(1 << 16), 1 << 16, units).astype(np.int32))
        x = r.integers(-128, 128, batch * n_in).astype(np.int8)
        out = np.full(batch * units, 99, np.int8)
        scratch = np.zeros(2 * units * rank * memory + 16, np.int8)
        ck.lib.edgec_svdf_s8(ctypes.byref(make("edgec_svdf_params", p)), ptr(x), ptr(a["w_feature"]),
                             ptr(a["w_time"]), ptr(a["bias"]), ptr(scratch), ptr(out))
        np.testing.assert_array_equal(out, svdf.svdf_s8(p, a, x))
