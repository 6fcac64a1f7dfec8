"""TensorFlow Lite Micro's streaming signal operators (SignalFramer, SignalStacker, SignalDelay,
SignalOverlapAdd) and its inverse real FFT (SignalIrfft), int16: single-operator .tflite files (tests/
tflite_oracle.py) run for several invocations in a row by TFLM's interpreter, by edgec's NumPy reference of the
imported graph and by its generated C on the host under ASan and UBSan (one program: the C's static state
carries over like TFLM's persistent buffers), bit for bit; random audio, silence, full scale and clipping.
Framer and stacker frames are compared where TFLM marks them valid (it leaves the others as its arena held
them; edgec writes zeros)."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from flatbuffers import flexbuffers

import hostrun
import tflite_oracle
from edgec import cheader
from edgec.codegen import cmodel
from edgec.frontend import tflite as importer
from edgec.ops.signal import kissfft
from edgec.plan import planner
from edgec.quant import reference
from tflite_oracle import Case, Node, T

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

I16, BOOL = 7, 6
EDGES = ("random", "silence", "full_scale", "clipping")


def audio(rng, kind: str, shape) -> np.ndarray:
    n = int(np.prod(shape))
    if kind == "silence":
        x = np.zeros(n)
    elif kind == "full_scale":
        x = np.where(np.arange(n) // int(rng.integers(1, 9)) % 2 == 0, 32767, -32768)
    elif kind == "clipping":
        x = np.clip(np.rint(3.0 * 32767 * np.sin(np.arange(n) * rng.uniform(0.01, 1.5))), -32768, 32767)
    else:
        x = rng.normal(0, 10 ** rng.uniform(1, 4), n).clip(-32768, 32767)
    return x.astype(np.int16).reshape(shape)


def run_all(name, cases, tmp_path):
    """For each case (in shape, [(out shape, TFLite type)], options, inputs [invocations, ...]): (TFLM's outputs,
    edgec's reference outputs, edgec's host C outputs), each [invocations, ...] packed; the C of every case in
    one program."""
    results, graphs, files = [], [], []
    for k, (in_shape, outs, options, xs) in enumerate(cases):
        tensors = [T(tuple(in_shape), [1.0], [0], I16)] + [T(tuple(sh), [1.0], [0], d) for sh, d in outs]
        ys = list(range(1, len(outs) + 1)) if len(outs) > 1 else 1
        model = tflite_oracle.write(Case(name, tensors, [Node(f"CUSTOM:{name}", [0], ys,
                                                              custom=flexbuffers.Dumps(options))], 0, ys))
        f = tmp_path / f"{name.lower()}{k}.tflite"
        f.write_bytes(model)
        g = importer.load(f, f.stem)
        ref = reference.run_sequence(g, list(xs)).astype(np.int16)       # the state carried, as TFLM's
        results.append([tflite_oracle.tflm(model, xs, carry_state=True).astype(np.int16), ref])
        graphs.append(importer.load(f, f.stem))
        files.append(f)
    models = []
    for g in graphs:                        # the C under ASan and UBSan, all cases in one program
        g = g.replace_ops(planner.schedule(g))
        cmodel.generate(g, planner.plan(g), tmp_path / "c" / g.name, g.name, runtime=False)
        models.append(hostrun.HostModel(g.name, tmp_path / "c" / g.name, g.tensors[g.output].nbytes))
    runtime = [cheader.runtime_dir() / f for f in ("edgec_signal.c", "edgec_runtime.c")]    # what these models call
    cs = hostrun.run_models(models, [c[3].reshape(len(c[3]), -1).view(np.int8) for c in cases], tmp_path / "c",
                            ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                             f"-I{cheader.runtime_dir()}"], runtime)
    return [(w, r, c.view(np.int16).reshape(len(w), -1)) for (w, r), c in zip(results, cs)]


def assert_valid_equal(want, got):
    """Packed [frames | valid]: the flags equal, the frames equal where valid."""
    np.testing.assert_array_equal(got[:, -1], want[:, -1])
    for w, g in zip(want, got):
        if w[-1]:
            np.testing.assert_array_equal(g[:-1], w[:-1])


def test_framer(tmp_path):
    rng, cases = np.random.default_rng(1), []
    for kind in EDGES:
        for size, step, prefill in [(400, 160, True), (400, 160, False), (48, 16, True), (30, 30, False)]:
            opts = {"frame_size": size, "frame_step": step, "prefill": prefill}
            cases.append(((2, 2 * step), [((2, 2, size), I16), ((), BOOL)], opts, audio(rng, kind, (6, 2, 2 * step))))
    for want, ref, c in run_all("SignalFramer", cases, tmp_path):
        assert_valid_equal(want, ref)
        np.testing.assert_array_equal(c, ref)
        assert want[:, -1].any()


def test_stacker(tmp_path):
    rng, cases, ch = np.random.default_rng(2), [], 40
    for kind in EDGES:
        for left, right, step in [(3, 0, 1), (2, 2, 2), (0, 0, 1), (1, 3, 3)]:
            opts = {"num_channels": ch, "stacker_left_context": left, "stacker_right_context": right,
                    "stacker_step": step}
            cases.append(((ch,), [((ch * (left + right + 1),), I16), ((), BOOL)], opts, audio(rng, kind, (8, ch))))
    for want, ref, c in run_all("SignalStacker", cases, tmp_path):
        assert_valid_equal(want, ref)
        np.testing.assert_array_equal(c, ref)
        assert want[:, -1].any()


def test_delay(tmp_path):
    rng, cases = np.random.default_rng(3), []
    for kind in EDGES:
        for frame, delay in [(160, 64), (16, 40), (10, 0), (7, 7)]:
            cases.append(((2, frame), [((2, frame), I16)], {"delay_length": delay}, audio(rng, kind, (5, 2, frame))))
    for want, ref, c in run_all("SignalDelay", cases, tmp_path):
        np.testing.assert_array_equal(ref, want)
        np.testing.assert_array_equal(c, want)


def test_overlap_add(tmp_path):
    rng, cases = np.random.default_rng(4), []
    for kind in EDGES:
        for size, step in [(512, 256), (64, 16), (8, 8)]:
            cases.append(((2, 3, size), [((2, 3 * step), I16)], {"T": I16, "frame_step": step},
                          audio(rng, kind, (4, 2, 3, size))))
    for want, ref, c in run_all("SignalOverlapAdd", cases, tmp_path):
        np.testing.assert_array_equal(ref, want)
        np.testing.assert_array_equal(c, want)


def test_irfft(tmp_path):
    rng, cases = np.random.default_rng(5), []
    for kind in EDGES:
        for n in [512, 256, 32, 8]:
            cases.append(((2, n + 2), [((2, n), I16)], {"T": I16, "fft_length": n}, audio(rng, kind, (3, 2, n + 2))))
    for (_, _, _, xs), (want, ref, c) in zip(cases, run_all("SignalIrfft", cases, tmp_path)):
        np.testing.assert_array_equal(ref, want)
        np.testing.assert_array_equal(c, want)
        n = want.shape[1] // 2
        np.testing.assert_array_equal(kissfft.irfft(xs[0, 0], n), want[0, :n])
