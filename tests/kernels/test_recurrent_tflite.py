"""TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM (edgec/ops/recurrent_tflite.py, runtime_c/edgec_recurrent_tflite.c)
and SVDF (edgec/ops/svdf.py, runtime_c/edgec_svdf.c): the C kernels against their NumPy twins bit for bit on random
parameters, the int16 sigmoid and tanh against their float functions, and random single-operator .tflite files
(tests/tflite_cases_recurrent.py) against TFLite Micro's interpreter, through edgec's NumPy reference and its
generated C: several consecutive invokes with the state carried (TFLite Micro's variable tensors), and reset."""
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
from edgec.ir import Op
from edgec.ops import recurrent_tflite as lstm
from edgec.ops import select, svdf
from edgec.quant import reference


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
        c, h = np.zeros(batch * hid, np.int16), np.full(batch * hid, p["hidden_zp"], np.int8)   # after reset
        carried = {"c": c.copy(), "h": h.copy()}
        for _ in range(3):      # consecutive calls: the state carried by both
            x = r.integers(-128, 128, steps * batch * n_in).astype(np.int8)
            out = np.full(steps * batch * hid, 99, np.int8)
            scratch = np.zeros(8 * batch * hid + 16, np.int8)
            ck.lib.edgec_lstm_tflite_s8(ctypes.byref(make("edgec_lstm_tflite_params", p)), ptr(x),
                                        *(ptr(a[k]) for k in lstm.ARRAYS), ptr(c), ptr(h), ptr(scratch), ptr(out))
            np.testing.assert_array_equal(out, lstm.lstm_tflite_s8(p, a, x, carried))
            np.testing.assert_array_equal(c, carried["c"])
            np.testing.assert_array_equal(h, carried["h"])


@pytest.mark.parametrize("path", ["portable", "dsp-emulated"])
def test_fast_kernel_matches_twin(ck, ck_dsp, path):
    """edgec_lstm_tflite_fast_s8 (recurrent_tflite.lower_lstm_tflite: int16 weights interleaved per hidden unit,
    the zero points in the biases, no gate buffer, requantization by records and shifts) on both inner-loop paths
    against the twin, the state carried over consecutive calls: odd sizes (part-full groups of 4, an odd count of
    groups), batches, multipliers over 1, guard bytes after scratch and output; an LSTM whose accumulators could
    reach 2^30 is left to the reference kernel."""
    lib = (ck if path == "portable" else ck_dsp).lib
    r = np.random.default_rng(31)
    ran = 0
    for case in range(60):
        batch, steps, n_in, hid = int(r.integers(1, 4)), int(r.integers(1, 6)), int(r.integers(1, 30)), \
            int(r.integers(1, 22))
        p = _params(r, batch, steps, n_in, hid, bool(r.random() < 0.5))
        a = _arrays(r, hid, n_in)
        if case % 10 == 9:       # accumulators that could pass 2^30: no records, the reference kernel
            a["bias"][0] = 1 << 30
        op = Op("lstm_tflite", "lstm", ("x",), "y", params=p, arrays=a)
        low = select.fast(op)
        if case % 10 == 9:
            assert low is None
            continue
        assert low.kernel.name == "edgec_lstm_tflite_fast_s8"
        ran += 1
        packed = {k: np.ascontiguousarray(v) for k, v in low.arrays.items()}
        c, h = np.zeros(batch * hid, np.int16), np.full(batch * hid, p["hidden_zp"], np.int8)   # after reset
        carried = {"c": c.copy(), "h": h.copy()}
        guard = 64
        raw = np.full(low.scratch_bytes + guard + 16, 0x5A, np.int8)
        scratch = raw[(-raw.ctypes.data) % 16:]                  # 16-byte aligned, as the planner places it
        for _ in range(3):      # consecutive calls: the state carried by both
            x = r.integers(-128, 128, steps * batch * n_in).astype(np.int8)
            want = lstm.lstm_tflite_s8(p, a, x, carried)
            out = np.full(want.size + guard, 99, np.int8)
            lib.edgec_lstm_tflite_fast_s8(ctypes.byref(make("edgec_lstm_tflite_params", p)), ptr(x),
                                          *(ptr(packed[k]) for k in lstm.FAST_ARRAYS), ptr(c), ptr(h),
                                          ptr(scratch), ptr(out))
            np.testing.assert_array_equal(out[:want.size], want)
            np.testing.assert_array_equal(c, carried["c"])
            np.testing.assert_array_equal(h, carried["h"])
            assert np.all(out[want.size:] == 99) and np.all(scratch[low.scratch_bytes:low.scratch_bytes + guard] == 0x5A)
    assert ran == 54


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


@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
def test_fast_kernel_files_match_tflite_micro(tmp_path):
    """Random single-LSTM .tflite files through edgec's generated C on the fast kernel (edgec_lstm_tflite_fast_s8,
    its emulated-DSP path: the Cortex-M4's; the portable path against the twin above) give TFLite Micro's outputs bit for bit, the samples one stream with the
    state carried between invokes (oracle.check: TFLite Micro with carry_state=True)."""
    cases = [c for c in oracle.cases(seed=15, n=16, makers=recurrent_cases.MAKERS)
             if c.nodes[0].op == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert len(cases) >= 6
    for c in cases:
        f = tmp_path / f"{c.name}.tflite"
        f.write_bytes(oracle.write(c))
        graph = oracle.importer.load(f, c.name)
        assert oracle.keeps_state(graph)
        op = next(op for op in graph.ops if op.kind == "lstm_tflite")
        assert select.fast(op).kernel.name == "edgec_lstm_tflite_fast_s8", c.name
    bad = oracle.check(cases, tmp_path, paths=("dsp-emulated",))
    assert not bad, bad


@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
def test_reset_between_invokes_matches_tflite_micro_reset(tmp_path):
    """NAME_reset() before every invoke (the C on the host, ASan + UBSan) and `reference.run_sequence(reset_each)`
    give TFLite Micro's outputs with reset() before every Invoke; and carrying the state differs from that (the
    state is really carried)."""
    cases = oracle.cases(seed=6, n=6, makers=recurrent_cases.MAKERS)
    graphs, carried_differs = [], 0
    for c in cases:
        f = tmp_path / f"{c.name}.tflite"
        f.write_bytes(oracle.write(c))
        graphs.append(oracle.importer.load(f, c.name))
        want = oracle.tflm(f.read_bytes(), c.x, carry_state=False)
        np.testing.assert_array_equal(reference.run_sequence(graphs[-1], list(c.x), reset_each=True), want)
        carried_differs += not np.array_equal(oracle.tflm(f.read_bytes(), c.x, carry_state=True), want)
    assert carried_differs >= len(cases) // 2
    outs = oracle.run_c(graphs, [c.x for c in cases], tmp_path / "c", "sanitized", reset_each=True)
    for c, got in zip(cases, outs):
        np.testing.assert_array_equal(got, oracle.tflm(oracle.write(c), c.x, carry_state=False), err_msg=c.name)


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
        state = np.full(batch * units * rank * memory, p["state_zp"], np.int8 if hi == 127 else np.int16)  # reset
        carried = state.copy()
        for _ in range(3):      # consecutive calls: the state carried by both
            x = r.integers(-128, 128, batch * n_in).astype(np.int8)
            out = np.full(batch * units, 99, np.int8)
            ck.lib.edgec_svdf_s8(ctypes.byref(make("edgec_svdf_params", p)), ptr(x), ptr(a["w_feature"]),
                                 ptr(a["w_time"]), ptr(a["bias"]), ptr(state), ptr(out))
            np.testing.assert_array_equal(out, svdf.svdf_s8(p, a, x, carried))
            np.testing.assert_array_equal(state, carried)


def _lstm16_cases(n: int) -> list:
    rng = np.random.default_rng(1608)
    return [recurrent_cases.lstm16_case(rng, f"q{k}", k % 3 == 2) for k in range(n)]


@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
def test_16x8_files_match_tflite_micro(tmp_path):
    """The 16x8 LSTM (int16 input, hidden state and output, int64 biases; edgec_lstm_tflite_s16): random
    single-operator files, batch major and time major, the samples one stream with the state carried, inputs at
    the int16 limits, through the reference and the generated C: TFLite Micro's outputs bit for bit."""
    cases = _lstm16_cases(2)
    assert {c.nodes[0].options[1]["TimeMajor"] for c in cases} == {False, True}
    f = tmp_path / f"{cases[0].name}.tflite"
    f.write_bytes(oracle.write(cases[0]))
    op = next(op for op in oracle.importer.load(f, cases[0].name).ops if op.kind == "lstm_tflite")
    assert select.reference(op, "int16").name == "edgec_lstm_tflite_s16" and select.fast(op) is None
    bad = oracle.check(cases, tmp_path, paths=("reference",))
    assert not bad, bad


@pytest.mark.sweep
@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
def test_16x8_sweep_matches_tflite_micro_also_sanitized(tmp_path):
    """24 random 16x8 files (every third saturating its gates, a cell clip or none), the C also under ASan/UBSan."""
    bad = oracle.check(_lstm16_cases(24), tmp_path, paths=("reference", "sanitized"))
    assert not bad, bad
