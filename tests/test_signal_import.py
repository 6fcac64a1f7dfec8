"""TFLM's micro_speech audio preprocessor (tests/audio/audio_preprocessor_int8.tflite) imported whole by
edgec/ops/signal (its Signal* operators and the builtin operators on their plain integers, edgec/ops/signal/
integer.py): the NumPy reference of the imported graph and its generated C on the host, frame after frame over
the example's real audio, against TFLM's interpreter running the file (one interpreter: the noise estimate
carries over from frame to frame); a freshly loaded graph starts from a zero noise estimate as TFLM does; the
same on qemu-cortex-m4 through edgec build and bench; what edgec refuses, in one clear line."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

import hostrun
import tflite_oracle
from conftest import require
from edgec import api, cheader
from edgec.codegen import cmodel
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.plan import planner
from edgec.quant import reference

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

AUDIO = Path(__file__).resolve().parent / "audio"
MODEL = AUDIO / "audio_preprocessor_int8.tflite"
WAVS = ["yes_1000ms.wav", "no_1000ms.wav", "silence_1000ms.wav", "noise_1000ms.wav"]


def frames_of(name: str) -> np.ndarray:
    """30 ms windows every 20 ms of one of the example's 16 kHz .wav files (as micro_speech feeds them)."""
    with wave.open(str(AUDIO / name)) as f:
        a = np.frombuffer(f.readframes(f.getnframes()), np.int16)
    return np.stack([a[i:i + 480] for i in range(0, a.size - 480 + 1, 320)])


def tflm(frames: np.ndarray) -> np.ndarray:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(MODEL.read_bytes(), arena_size=1 << 20)
    out = []
    for f in frames:
        interp.set_input(f.reshape(1, 480), 0)
        interp.invoke()
        out.append(np.asarray(interp.get_output(0)).copy())
    return np.stack(out)


@pytest.fixture(scope="module")
def audio_frames():
    frames = np.concatenate([frames_of(w) for w in WAVS])
    return frames, tflm(frames)


def test_the_whole_preprocessor_is_imported():
    g = importer.load(MODEL, "pre")
    assert g.tensors[g.input].dtype == "int16" and g.tensors[g.output].dtype == "int8"
    kinds = [op.kind for op in g.ops]
    assert kinds[:4] == ["signal_window", "signal_fft_auto_scale", "signal_rfft", "signal_energy"]
    assert {"signal_spectral_subtraction", "signal_pcan", "signal_filter_bank_log", "signal_arith"} <= set(kinds)


def test_reference_matches_tflm_on_real_audio(audio_frames):
    frames, want = audio_frames
    g = importer.load(MODEL, "pre")
    got = reference.run_sequence(g, [f.reshape(1, 480) for f in frames])      # the noise estimate carried
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20


def test_the_state_is_the_callers_and_reset_starts_it_afresh(audio_frames):
    """The reference keeps no state of its own: a State the caller holds carries the noise estimate, reset() (the
    generated NAME_reset()) starts it afresh, and a call without one starts from reset."""
    frames, want = audio_frames
    g = importer.load(MODEL, "pre")
    state = reference.State(g)
    for _ in range(2):
        got = np.stack([reference.run(g, f.reshape(1, 480), state=state).reshape(-1) for f in frames[:5]])
        np.testing.assert_array_equal(got, want[:5])
        state.reset()
    alone = np.stack([reference.run(g, f.reshape(1, 480)).reshape(-1) for f in frames[:5]])
    np.testing.assert_array_equal(alone[0], want[0])
    assert not np.array_equal(alone[1:], want[1:5])      # each from reset: the estimate not carried


def test_generated_c_on_host_matches_tflm(audio_frames, tmp_path):
    frames, want = audio_frames
    g = importer.load(MODEL, "pre")
    (got,) = tflite_oracle.run_c([g], [frames.astype(np.int16).view(np.int8)], tmp_path, "reference")
    np.testing.assert_array_equal(got, want)


# gcc with the sweeps: edgec_signal.c's gcc warnings are checked in the default run with every runtime file
# (tests/test_cmodel_sanitizers.py)
@pytest.mark.parametrize("cc", [pytest.param("gcc", marks=pytest.mark.sweep), "clang"])
def test_generated_c_is_warning_free_and_sanitizer_clean(audio_frames, tmp_path, cc):
    """The preprocessor's library and the runtime under -Wall -Wextra -Werror and ASan/UBSan (gcc and clang),
    over every window of the four clips: still TFLM's features."""
    require(shutil.which(cc) is not None, cc, "apt-get install " + cc)
    frames, want = audio_frames
    g = importer.load(MODEL, "pre")
    g = g.replace_ops(planner.schedule(g))
    cmodel.generate(g, planner.plan(g), tmp_path / "pre", "pre", runtime=False)
    runtime = [cheader.runtime_dir() / f for f in cheader.runtime_files() if f.endswith(".c")]
    flags = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
             f"-I{cheader.runtime_dir()}"]
    model = hostrun.HostModel("pre", tmp_path / "pre", 40)
    if cc == "gcc":
        (got,) = hostrun.run_models([model], [frames.view(np.int8)], tmp_path, flags, runtime)
        np.testing.assert_array_equal(got, want)
    else:     # clang: the model and the signal runtime compiled warning-free (every runtime file's clang warnings:
        # tests/test_cmodel_sanitizers.py)
        for src in [tmp_path / "pre" / "pre.c", *[f for f in runtime if f.name == "edgec_signal.c"]]:
            subprocess.run(["clang", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", *flags,
                            f"-I{tmp_path}", str(src), "-o", str(tmp_path / (Path(src).stem + ".o"))],
                           check=True, capture_output=True, text=True)


def test_unsupported_rfft_length_is_one_clear_line(tmp_path):
    from flatbuffers import flexbuffers

    from tflite_oracle import Case, Node, T

    case = Case("rfft", [T((1, 48), [1.0], [0], 7), T((1, 50), [1.0], [0], 7)],
                [Node("CUSTOM:SignalRfft", [0], 1, custom=flexbuffers.Dumps({"T": 7, "fft_length": 48}))], 0, 1)
    f = tmp_path / "rfft.tflite"
    f.write_bytes(tflite_oracle.write(case))
    with pytest.raises(EdgecError) as e:
        importer.load(f, "rfft")
    assert "power-of-two" in str(e.value) and "\n" not in str(e.value)


def test_on_qemu_cortex_m4(audio_frames, tmp_path):
    require(importlib.util.find_spec("serial") is not None, "pyserial", "bash scripts/setup.sh")
    frames, _ = audio_frames
    np.savez(tmp_path / "frames.npz", x=frames[:49].astype(np.float32))
    api.build(MODEL, None, "qemu-cortex-m4", tmp_path / "build")
    r = api.bench(tmp_path / "build", tmp_path / "frames.npz")
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["tflite"]["reference_vs_interpreter"] == 1.0
