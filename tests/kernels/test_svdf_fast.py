"""The fast SVDF kernel (runtime_c/fast/edgec_svdf_fast.c, edgec/ops/svdf.py lower_svdf_fast) against the NumPy twin
of the reference kernel (svdf.svdf_s8), bit for bit: random shapes (rank > 1, several batches, odd sizes), int8 and
int16 states, biases over the whole int32 range (the sums wrap), consecutive calls with the state carried (the
fast kernel's ring of state entries wrapping around, its order against the twin's shifted state); with
the portable path and the Arm DSP path (intrinsics emulated in C); and TFLite Micro's keyword benchmark streamed
through its generated C against TFLite Micro."""
from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import tflite_oracle as oracle
from ckernels import make, ptr
from edgec.fixedpoint import scheme
from edgec.ir import Op
from edgec.ops import svdf

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _case(r):
    batch, n_in, units, rank, memory = (int(r.integers(1, 4)), int(r.integers(1, 40)), int(r.integers(1, 11)),
                                        int(r.integers(1, 4)), int(r.integers(1, 35)))
    sixteen = bool(r.random() < 0.4)
    whole = 2 if sixteen else 4                 # state rows on words: int16 an even memory, int8 a multiple of 4
    if memory % whole and r.random() < 0.85:    # else the fast kernel declines it (reference)
        memory += whole - memory % whole
    lo, hi = (-32768, 32767) if sixteen else (-128, 127)
    (m1, s1), (m2, s2) = (scheme.quantize_multiplier(float(10 ** r.uniform(-5, -0.35))) for _ in range(2))
    if r.random() < 0.35:       # a feature multiplier of 1 or more (a left shift) or in [0.5, 1) (no shift at all):
        m1, s1 = scheme.quantize_multiplier(float(10 ** r.uniform(-0.3, 1.3)))   # an int16 state's small scale
    p = dict(batch=batch, input_size=n_in, rank=rank, units=units, memory=memory,
             input_zp=int(r.integers(-128, 128)), state_zp=int(r.integers(-100, 100)) if not sixteen else 0,
             state_min=lo, state_max=hi, mult1=m1, shift1=s1, mult2=m2, shift2=s2, output_zp=int(r.integers(-128, 128)))
    big = bool(r.random() < 0.5)       # TFLite Micro's keyword benchmark: random biases near +-2^31
    bias = r.integers(-(1 << 31), 1 << 31, units) if big else r.integers(-(1 << 16), 1 << 16, units)
    a = dict(w_feature=r.integers(-127, 128, units * rank * n_in).astype(np.int8),
             w_time=r.integers(lo + 1, hi + 1, units * rank * memory).astype(np.int16), bias=bias.astype(np.int32))
    return p, a


@pytest.mark.parametrize("lib", ["ck", "ck_dsp"])
def test_fast_svdf_matches_twin(lib, request):
    ck = request.getfixturevalue(lib)
    r = np.random.default_rng(31)
    declined = any_shift = 0
    for _ in range(120):
        p, a = _case(r)
        op = Op("svdf", "svdf", ("x",), "y", params=p, arrays=a)
        lowered = svdf.lower_svdf_fast(op)
        if lowered is None:         # an odd run, or a right shift past what edgec_rq_any's saturation keeps exact
            declined += 1
            continue
        params, arrays = lowered
        any_shift += params["left1"] > 0 or params["right1"] == 0
        n = p["batch"] * p["units"] * p["rank"] * p["memory"]
        state_type = np.int8 if p["state_max"] == 127 else np.int16      # held as its type
        state, pos = np.full(n, p["state_zp"], state_type), np.zeros(1, np.int32)    # after reset
        carried = state.copy()
        for call in range(min(p["memory"], 8) + 2):    # consecutive calls, the state carried: small rings wrap
            x = r.integers(-128, 128, p["batch"] * p["input_size"]).astype(np.int8)
            out = np.full(p["batch"] * p["units"], 99, np.int8)
            ck.lib.edgec_svdf_fast_s8(ctypes.byref(make("edgec_svdf_fast_params", params)), ptr(x),
                                      ptr(arrays["w_feature"]), ptr(arrays["fbias"]), ptr(arrays["w_time"]),
                                      ptr(arrays["tbias"]), ptr(state), ptr(pos), ptr(out))
            np.testing.assert_array_equal(out, svdf.svdf_s8(p, a, x, carried), err_msg=str(p))
            assert pos[0] == (call + 1) % p["memory"]
            np.testing.assert_array_equal(svdf.ring_order(state.reshape(-1, p["memory"]), pos[0]).reshape(-1),
                                          carried, err_msg=str(p))
    assert declined < 40
    assert any_shift >= 20          # feature sums requantized with a left shift or none (edgec_rq_any)


@pytest.mark.sweep          # ~25 s (a sanitized host build of the whole model); the kernel tests above are its fast part
@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
@pytest.mark.parametrize("name", ["tflm_keyword_scrambled_8bit", "tflm_keyword_scrambled"])
def test_keyword_benchmark_streams_as_tflite_micro(tmp_path, name):
    """TFLite Micro's keyword benchmark (tests/corpus/tflm_keyword_scrambled_8bit: seven SVDFs, four fully connected
    layers with random biases over the whole int32 range; tflm_keyword_scrambled: the same with int16 states, whose
    feature multipliers are 1 or more): its generated C on the host (the Arm DSP path, intrinsics emulated, ASan +
    UBSan), on the fast SVDF kernel, over a stream of inputs with the state carried, gives TFLite Micro's
    outputs with its state carried between invokes."""
    path = CORPUS / name / "model.tflite"
    graph = oracle.importer.load(path, "kws_scrambled")
    lowered, _ = oracle.schedule_and_plan(graph)
    kernels = {op.lowering.kernel.name for op in lowered.ops if op.lowering is not None}
    assert "edgec_svdf_fast_s8" in kernels     # (its FULLY_CONNECTED layers: constant-channel records, fast.py)
    x = np.random.default_rng(7).integers(-3000, 3000, (10, 1, 96)).astype(np.int16)
    want = oracle.tflm(path.read_bytes(), x, carry_state=True)
    got = oracle.run_c([graph], [x], tmp_path, "sanitized")[0]
    np.testing.assert_array_equal(got.view(want.dtype).reshape(want.shape), want)   # (bytes: TFLM's dtype)


@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
def test_fast_svdf_files_stream_as_tflite_micro(tmp_path):
    """Random single-SVDF .tflite files (int8 and int16 states, memory 2-8) on the fast kernel, through edgec's
    generated C (the Arm DSP path, intrinsics emulated) and its NAME_reset() at start, one stream of 2 * memory + 3
    inputs with the state carried: the ring of every state row wraps around twice, and every output is TFLite
    Micro's with its state carried between invokes."""
    import tflite_cases_recurrent as recurrent_cases
    from edgec.ops import select

    rng = np.random.default_rng(39)
    cases = []
    for c in oracle.cases(seed=39, n=24, kinds=["svdf"], makers=recurrent_cases.MAKERS):
        f = tmp_path / f"{c.name}.tflite"
        f.write_bytes(oracle.write(c))
        op = next(op for op in oracle.importer.load(f, c.name).ops if op.kind == "svdf")
        low = select.fast(op)
        if low is None or low.kernel.name != "edgec_svdf_fast_s8":
            continue
        shape = c.x.shape[1:]
        c.x = rng.integers(-128, 128, (2 * int(op.params["memory"]) + 3,) + shape).astype(np.int8)
        cases.append(c)
    picked = [c for c in cases if c.tensors[2].dtype == 9][:2] + [c for c in cases if c.tensors[2].dtype == 7][:2]
    assert len(picked) == 4                 # two with an int8 state, two with an int16 one
    bad = oracle.check(picked, tmp_path / "run", paths=("dsp-emulated",))
    assert not bad, bad
