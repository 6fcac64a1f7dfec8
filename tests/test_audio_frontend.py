"""The fixed-point streaming log-mel front end (runtime_c/harness/edgec_audio_frontend.c) against its NumPy twin
(edgec/targets/audio_frontend.py), bit for bit over streams of hops with state carried between them (random
audio, silence, full scale, clipping square waves, one-sample clicks), compiled with gcc -Wall -Wextra -Werror
under ASan/UBSan; and the twin's precision against the reference submission's float features."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import require
from edgec.targets import audio_frontend as af

HARNESS = Path(__file__).resolve().parent.parent / "runtime_c" / "harness"
SCALE = 0.003701042616739869          # the sww01 reference model's input scale
DRIVER = r"""
#include <stdio.h>
#include "edgec_audio_frontend.h"
static edgec_afe_state s;
int main(void) {
    int16_t hop[EDGEC_AFE_HOP]; int8_t out[EDGEC_AFE_MELS];
    edgec_afe_reset(&s);
    while (fread(hop, sizeof hop, 1, stdin) == 1) {
        edgec_afe_hop(&s, hop, out);
        fwrite(out, 1, sizeof out, stdout);
    }
    return 0;
}
"""


def streams() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(35)
    n = af.HOP * 6
    t = np.arange(n)
    square = np.where((t // 9) % 2, 32767, -32768)
    click = np.zeros(n, np.int64)
    click[700] = -32768
    return {
        "noise": rng.normal(0, 2500, n), "quiet": rng.normal(0, 3, n), "silence": np.zeros(n),
        "full_scale_sine": 32767 * np.sin(2 * np.pi * 1000 * t / af.RATE), "clipping_square": square,
        "click": click, "random_int16": rng.integers(-32768, 32768, n),
        "chirp": 20000 * np.sin(2 * np.pi * (100 + 3.0 * t) * t / af.RATE),
    }


def as_int16(x) -> np.ndarray:
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


@pytest.fixture(scope="module")
def frontend_exe(tmp_path_factory) -> Path:
    cc = shutil.which("gcc")
    require(cc is not None, "gcc", "install gcc (apt install gcc)")
    d = tmp_path_factory.mktemp("afe")
    (d / "tables.c").write_text(af.c_tables(af.Tables(SCALE)))
    (d / "main.c").write_text(DRIVER)
    exe = d / "afe"
    subprocess.run([cc, "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", f"-I{HARNESS}", str(HARNESS / "edgec_audio_frontend.c"),
                    str(d / "tables.c"), str(d / "main.c"), "-o", str(exe)], check=True)
    return exe


@pytest.mark.parametrize("name", list(streams()))
def test_c_front_end_equals_numpy_twin(name, frontend_exe):
    x = as_int16(streams()[name])
    out = subprocess.run([str(frontend_exe)], input=x.tobytes(), capture_output=True, check=True).stdout
    got = np.frombuffer(out, np.int8).reshape(-1, af.MELS)
    fe = af.FrontEnd(SCALE)
    want = np.stack([fe.hop(h) for h in x.reshape(-1, af.HOP)])
    assert got.shape == (6, af.MELS)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


def test_silence_and_full_scale_hit_the_feature_range_ends():
    fe = af.FrontEnd(SCALE)
    assert (fe.hop(np.zeros(af.HOP, np.int16)) == -128).all()     # silence: f = 0 -> -128
    fe = af.FrontEnd(SCALE)
    loud = as_int16(streams()["clipping_square"])
    q = [fe.hop(h) for h in loud.reshape(-1, af.HOP)][-1]
    assert q.max() == 127                                         # f / scale - 128 > 127 saturates


def test_twin_precision_against_the_float_reference():
    """SQNR of the integer front end before its int8 truncation, and of its int8 features, against the
    reference's float features; and how often its int8 codes equal the reference's truncation."""
    x = as_int16(streams()["noise"] + streams()["chirp"] * 0.2)
    fe = af.FrontEnd(SCALE)
    ref, fixed, codes, ref_codes = [], [], [], []
    prev = 0
    for h in range(x.size // af.HOP):
        q = fe.hop(x[h * af.HOP:(h + 1) * af.HOP])
        if h == 0:
            continue
        window = x[(h - 1) * af.HOP:(h + 1) * af.HOP]
        prev = int(x[(h - 1) * af.HOP - 1]) if h > 1 else 0
        f = af.float_features(window, prev)
        ref.append(f)
        fixed.append(fe.last_y_q16 / 65536.0 * SCALE)
        codes.append(q)
        ref_codes.append(af.reference_int8(f, SCALE))
    ref, fixed = np.concatenate(ref), np.concatenate(fixed)
    deq = (np.concatenate(codes).astype(np.float64) + 128) * SCALE

    def sqnr(a):
        return 10 * np.log10(np.sum(ref ** 2) / np.sum((a - ref) ** 2))
    assert sqnr(fixed) > 60, sqnr(fixed)
    assert sqnr(deq) > 40, sqnr(deq)
    agree = np.mean(np.concatenate(codes) == np.concatenate(ref_codes))
    assert agree > 0.95, agree
