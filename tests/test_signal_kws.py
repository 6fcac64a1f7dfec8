"""From audio to keyword in one application: TFLM's micro_speech audio preprocessor and its keyword-spotting
model (tests/audio/audio_preprocessor_int8.tflite, tests/corpus/tflm_micro_speech/model.tflite), exported by
edgec as two libraries linked into one program, which runs the preprocessor on each 30 ms window (every 20 ms)
of a one-second clip, stacks its 49 feature rows as the KWS model's input and runs it: features and scores
bit-identical with the same chain run by TFLM's interpreter (one preprocessor interpreter over the clips in
order, its noise estimate carried over as the generated code's static state carries it), on the host and on
the emulated Cortex-M4."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from edgec import api
from edgec.settings import Settings
from edgec.targets.boards import load_board
from edgec.targets.firmware import board_options, platform_spec
from edgec.targets.pio import run_pio
from qemurun import run_qemu

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

TESTS = Path(__file__).resolve().parent
PRE, KWS = TESTS / "audio" / "audio_preprocessor_int8.tflite", TESTS / "corpus" / "tflm_micro_speech" / "model.tflite"
CLIPS = ["yes_1000ms.wav", "no_1000ms.wav", "silence_1000ms.wav", "noise_1000ms.wav"]
LABELS = ["silence", "unknown", "yes", "no"]
M4 = "qemu-cortex-m4"

MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "preprocessor.h"
#include "micro_speech.h"
#include "clips.h"

static void dump(const char *what, int i, const int8_t *p, unsigned n)
{
    unsigned k;
    printf("%s %d ", what, i);
    for (k = 0; k < n; k++) printf("%02x", (unsigned)(uint8_t)p[k]);
    printf("\n");
}

int main(void)
{
    int c, f;
    for (c = 0; c < N_CLIPS; c++) {
        int8_t *features = micro_speech_input();
        for (f = 0; f < 49; f++) {          /* a 30 ms window every 20 ms; the noise estimate carries over */
            memcpy(preprocessor_input(), &clips[c][320 * f], PREPROCESSOR_INPUT_BYTES);
            if (preprocessor_invoke() != 0) return 3;
            memcpy(features + 40 * f, preprocessor_output(), 40);
        }
        dump("features", c, features, 49 * 40);
        if (micro_speech_invoke() != 0) return 4;
        dump("scores", c, micro_speech_output(), MICRO_SPEECH_OUTPUT_BYTES);
    }
    return 0;
}
"""


def clip(name: str) -> np.ndarray:
    with wave.open(str(TESTS / "audio" / name)) as f:
        return np.frombuffer(f.readframes(f.getnframes()), np.int16)


def tflm_chain() -> tuple[np.ndarray, np.ndarray]:
    """TFLM's features [clips, 1960] and scores [clips, 4] for the clips in order."""
    from tflite_micro.python.tflite_micro import runtime

    pre = runtime.Interpreter.from_bytes(PRE.read_bytes(), arena_size=1 << 20)
    kws = runtime.Interpreter.from_bytes(KWS.read_bytes(), arena_size=1 << 20)
    feats, scores = [], []
    for name in CLIPS:
        a = clip(name)
        rows = []
        for f in range(49):
            pre.set_input(a[320 * f:320 * f + 480].reshape(1, 480), 0)
            pre.invoke()
            rows.append(np.asarray(pre.get_output(0)).copy())
        feats.append(np.concatenate(rows))
        kws.set_input(feats[-1].reshape(1, 1960), 0)
        kws.invoke()
        scores.append(np.asarray(kws.get_output(0)).reshape(-1).copy())
    return np.stack(feats), np.stack(scores)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """Both models exported as PlatformIO libraries into one project, its main and the clips beside them."""
    project = tmp_path_factory.mktemp("audio_to_keyword")
    api.export(PRE, None, M4, "platformio", project / "lib" / "preprocessor", name="preprocessor")
    api.export(KWS, None, M4, "platformio", project / "lib" / "micro_speech", name="micro_speech")
    src = project / "src"
    src.mkdir()
    rows = ",\n".join("{" + ", ".join(str(int(v)) for v in clip(c)[:16000]) + "}" for c in CLIPS)
    (src / "clips.h").write_text(f"#include <stdint.h>\n#define N_CLIPS {len(CLIPS)}\n"
                                 f"static const int16_t clips[N_CLIPS][16000] = {{\n{rows}\n}};\n")
    (src / "main.c").write_text(MAIN)
    return project, tflm_chain()


def parse(out: str) -> tuple[np.ndarray, np.ndarray]:
    got = {}
    for line in out.splitlines():
        what, i, hexs = line.split()
        got[what, int(i)] = np.frombuffer(bytes.fromhex(hexs), np.int8)
    n = len(CLIPS)
    return np.stack([got["features", i] for i in range(n)]), np.stack([got["scores", i] for i in range(n)])


def check(out: str, want) -> None:
    feats, scores = parse(out)
    np.testing.assert_array_equal(feats, want[0])
    np.testing.assert_array_equal(scores, want[1])
    assert [LABELS[int(np.argmax(s))] for s in scores[:2]] == ["yes", "no"]


def test_audio_to_keyword_on_the_host(app, tmp_path):
    project, want = app
    runtime = project / "lib" / "preprocessor" / "src"
    models = [runtime / "preprocessor.c", project / "lib" / "micro_speech" / "src" / "micro_speech.c"]
    shared = {}          # one runtime for both: each library ships the files its model calls (the union, once)
    for lib in (m.parent for m in models):
        for f in sorted(lib.rglob("*.c")):
            if f not in models:
                shared.setdefault(f.relative_to(lib).as_posix(), f)
    sources = [project / "src" / "main.c", *models, *shared.values()]
    exe = tmp_path / "app"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{runtime}",
                    f"-I{project / 'lib' / 'micro_speech' / 'src'}", f"-I{project / 'src'}", *map(str, sources),
                    "-o", str(exe), "-lm"], check=True, capture_output=True, text=True)
    check(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout, want)


def test_audio_to_keyword_on_qemu_cortex_m4(app):
    project, want = app
    board = load_board(M4)
    options = "\n".join(f"{k} = {v}" for k, v in board_options(board))
    (project / "platformio.ini").write_text(
        f"[env:m4]\nplatform = {platform_spec(board)}\nboard = {board.pio_board}\n{options}\n"
        "build_src_flags = -std=c99 -Wall -Wextra -Werror\n")
    env = Settings.from_environment()
    run_pio(["run", "-e", "m4"], project, project / "build.log", env.platformio_home, env.build_timeout, log=None)
    elf = project / ".pio" / "build" / "m4" / "firmware.elf"
    code, out = run_qemu(M4, elf, timeout=300)
    assert code == 0, out[-2000:]
    check(out, want)
    shutil.rmtree(project / ".pio", ignore_errors=True)
