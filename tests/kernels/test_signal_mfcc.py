"""The fixed-point MFCC / log-mel front end (edgec/ops/signal/mfcc.py, its C kernel edgec_signal_mfcc_s16 in
runtime_c/edgec_signal.c) and the front ends read from ONNX (mfcc_onnx.py): the C kernel against its NumPy twin bit
for bit on random front ends and the scaling edge cases (silence, full scale, clipping); the two exported
training pipelines (tests/audio/frontends: tf.signal through tf2onnx, torchaudio through torch.onnx) read,
their float reference against onnxruntime, and the integer features against onnxruntime's on TFLM's example
audio (feature SQNR >= 40 dB, the acceptance line of issue 35)."""
from __future__ import annotations

import ctypes
import wave
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ckernels import make, ptr
from edgec import cheader
from edgec.errors import EdgecError
from edgec.ops.signal import mfcc, mfcc_onnx

AUDIO = Path(__file__).resolve().parent.parent / "audio"
FRONTENDS = ("tf_signal_mfcc", "torchaudio_mfcc")
CLIPS = ("yes", "no", "noise", "silence")
EDGES = ("random", "silence", "full_scale", "clipping", "quiet")


def sqnr(ref, x) -> float:
    ref, x = np.asarray(ref, np.float64).reshape(-1), np.asarray(x, np.float64).reshape(-1)
    return float(10 * np.log10((ref ** 2).sum() / max(((ref - x) ** 2).sum(), 1e-300)))


def random_spec(rng) -> dict:
    """A random front end: FFT length, frame, hop, window, a non-negative banded mel matrix, power or magnitude,
    the epsilon added or clamped to, ln or dB, top_db or not, a random DCT, either output layout."""
    n = int(rng.choice([16, 64, 128, 256]))
    length = int(rng.integers(n // 2, n + 1))
    hop = int(rng.integers(max(1, length // 4), length + 1))
    bins, mels = n // 2 + 1, int(rng.integers(2, 12))
    mel = np.zeros((bins, mels))
    for m in range(mels):
        lo = int(rng.integers(0, bins))
        band = slice(lo, min(bins, lo + int(rng.integers(1, 6))))
        mel[band, m] = rng.uniform(0, 1, band.stop - band.start)
    window = np.hanning(length) if rng.random() < 0.5 else rng.uniform(-1, 1, length)
    return dict(samples=length + hop * int(rng.integers(0, 5)), hop=hop, frame_length=length, fft_length=n,
                window=window, mel=mel, power=int(rng.choice([1, 2])), eps=float(rng.choice([0.0, 1e-10, 1e-6, 1e-2])),
                eps_mode=str(rng.choice(["added", "clamped"])), log_scale=float(rng.choice([1.0, 10 / np.log(10)])),
                top_db=None if rng.random() < 0.5 else float(rng.uniform(10, 100)),
                dct=rng.normal(0, 0.4, (mels, int(rng.integers(1, mels + 1)))), transposed=bool(rng.random() < 0.5))


def audio(rng, kind: str, n: int) -> np.ndarray:
    """int16 audio: speech-like random levels, silence, a full-scale square wave, a clipped loud sine, or a
    signal of a few LSB."""
    if kind == "silence":
        return np.zeros(n, np.int16)
    if kind == "full_scale":
        return np.where(np.arange(n) // 7 % 2, 32767, -32768).astype(np.int16)
    if kind == "clipping":
        return np.clip(np.round(90000 * np.sin(np.arange(n) * 0.05)), -32768, 32767).astype(np.int16)
    if kind == "quiet":
        return rng.integers(-3, 4, n).astype(np.int16)
    level = 10 ** rng.uniform(1, 4.5)
    return np.clip(np.round(rng.normal(0, level, n)), -32768, 32767).astype(np.int16)


def run_c(ck, x, p: dict, a: dict) -> np.ndarray:
    cp = make("edgec_signal_mfcc_params", p)
    scratch = np.zeros(cheader.buffer_size("edgec_signal_mfcc_s16", p) // 4, np.int32)
    y = np.zeros(p["frames"] * p["coeffs"], np.int32)
    arrays = [np.ascontiguousarray(a[k]) for k in ("window", "mel", "mel_lo", "mel_hi", "eps", "log2_unit", "dct",
                                                    "cos", "sin")]
    ck.lib.edgec_signal_mfcc_s16(ctypes.byref(cp), ptr(np.ascontiguousarray(x, np.int16)), *map(ptr, arrays),
                                 ptr(scratch), ptr(y))
    return y


@pytest.mark.parametrize("edge", EDGES)
def test_c_kernel_matches_twin_on_random_front_ends(ck, edge):
    rng = np.random.default_rng(EDGES.index(edge))
    for _ in range(4):
        spec = random_spec(rng)
        p, a = mfcc.constants(spec)
        x = audio(rng, edge, spec["samples"])
        np.testing.assert_array_equal(run_c(ck, x, p, a), mfcc.features(x, p, a))


def clip(name: str) -> np.ndarray:
    with wave.open(str(AUDIO / f"{name}_1000ms.wav")) as w:
        return np.frombuffer(w.readframes(16000), np.int16)


@pytest.mark.parametrize("name", FRONTENDS)
def test_exported_front_end_features_against_onnxruntime(ck, name):
    path = AUDIO / "frontends" / f"{name}.onnx"
    spec = mfcc_onnx.recognise(onnx.load(str(path)))
    p, a = mfcc.constants(spec)
    session = ort.InferenceSession(str(path))
    for k, c in enumerate(CLIPS):
        x = clip(c)
        ref = session.run(None, {"audio": (x.astype(np.float32) / 32768)[None]})[0].reshape(-1)
        assert sqnr(ref, mfcc_onnx.float_features(x / 32768, spec)) > 100      # the spec is the graph
        q = mfcc.features(x, p, a)
        assert sqnr(ref, q / 65536) >= 40, (name, c)
        if k == 0:                                                            # the C kernel on real audio
            np.testing.assert_array_equal(run_c(ck, x, p, a), q)


def test_a_graph_without_a_log_mel_is_refused():
    model = onnx.load(str(AUDIO / "frontends" / "tf_signal_mfcc.onnx"))
    for node in model.graph.node:
        if node.op_type == "Log":
            node.op_type = "Exp"
    with pytest.raises(EdgecError, match="0 Log nodes"):
        mfcc_onnx.recognise(model)


def test_constants_refuse_what_the_kernel_cannot_hold():
    spec = random_spec(np.random.default_rng(7))
    with pytest.raises(EdgecError, match="powers of two"):
        mfcc.constants(dict(spec, fft_length=100))
    with pytest.raises(EdgecError, match="window"):
        mfcc.constants(dict(spec, window=2 * np.ones(spec["frame_length"])))


MAIN = r"""
#include <stdio.h>
#include "edgec_nn.h"
#include "mfcc_data.h"

static int32_t scratch[SCRATCH_WORDS], features[FEATURES];

int main(void)
{
    int c, i;
    for (c = 0; c < N_CLIPS; c++) {
        edgec_signal_mfcc_s16(&params, clips[c], window, mel, mel_lo, mel_hi, eps, log2_unit, dct, cos_q30,
                              sin_q30, scratch, features);
        printf("clip %d ", c);
        for (i = 0; i < FEATURES; i++) printf("%08lx", (unsigned long)(uint32_t)features[i]);
        printf("\n");
    }
    return 0;
}
"""


def c_array(ctype: str, name: str, values) -> str:
    return f"static const {ctype} {name}[] = {{{', '.join(str(int(v)) for v in np.asarray(values).reshape(-1))}}};\n"


@pytest.mark.sweep
def test_exported_front_end_on_qemu_cortex_m4(tmp_path):
    """The torchaudio front end (top_db, power, dB: the most parameters) in a firmware of its own on the emulated
    Cortex-M4, on the four clips: the device's features are the twin's, bit for bit."""
    import shutil
    from edgec.settings import Settings
    from edgec.targets.boards import load_board
    from edgec.targets.firmware import board_options, platform_spec
    from edgec.targets.pio import run_pio
    from qemurun import run_qemu

    p, a = mfcc.constants(mfcc_onnx.recognise(onnx.load(str(AUDIO / "frontends" / "torchaudio_mfcc.onnx"))))
    src = tmp_path / "src"
    src.mkdir()
    for f in ("edgec_signal.c", "edgec_nn.h", "edgec_nn_support.h"):
        shutil.copy(cheader.runtime_dir() / f, src / f)
    fields = ", ".join(str(p[k]) for k, _ in cheader.struct_fields("edgec_signal_mfcc_params"))
    rows = ",\n".join("{" + ", ".join(str(int(v)) for v in clip(c)) + "}" for c in CLIPS)
    (src / "mfcc_data.h").write_text(
        "#include <stdint.h>\n#include \"edgec_nn.h\"\n"
        f"#define N_CLIPS {len(CLIPS)}\n#define FEATURES {p['frames'] * p['coeffs']}\n"
        f"#define SCRATCH_WORDS {cheader.buffer_size('edgec_signal_mfcc_s16', p) // 4}\n"
        f"static const edgec_signal_mfcc_params params = {{{fields}}};\n"
        f"static const int16_t clips[N_CLIPS][{p['samples']}] = {{\n{rows}\n}};\n"
        + c_array("int16_t", "window", a["window"]) + c_array("int16_t", "mel", a["mel"])
        + c_array("int16_t", "mel_lo", a["mel_lo"]) + c_array("int16_t", "mel_hi", a["mel_hi"])
        + c_array("int64_t", "eps", a["eps"]) + c_array("int32_t", "log2_unit", a["log2_unit"])
        + c_array("int16_t", "dct", a["dct"]) + c_array("int32_t", "cos_q30", a["cos"])
        + c_array("int32_t", "sin_q30", a["sin"]))
    (src / "main.c").write_text(MAIN)
    board = load_board("qemu-cortex-m4")
    options = "\n".join(f"{k} = {v}" for k, v in board_options(board))
    (tmp_path / "platformio.ini").write_text(
        f"[env:m4]\nplatform = {platform_spec(board)}\nboard = {board.pio_board}\n{options}\n"
        "build_src_flags = -std=c99 -Wall -Wextra -Werror\n")
    env = Settings.from_environment()
    run_pio(["run", "-e", "m4"], tmp_path, tmp_path / "build.log", env.platformio_home, env.build_timeout, log=None)
    code, out = run_qemu("qemu-cortex-m4", tmp_path / ".pio" / "build" / "m4" / "firmware.elf", timeout=300)
    assert code == 0, out[-2000:]
    got = {int(line.split()[1]): np.frombuffer(bytes.fromhex(line.split()[2]), ">u4").astype(np.uint32).view(np.int32)
           for line in out.splitlines() if line.startswith("clip ")}
    for k, c in enumerate(CLIPS):
        np.testing.assert_array_equal(got[k], mfcc.features(clip(c), p, a))
