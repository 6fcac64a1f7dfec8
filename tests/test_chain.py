"""edgec/chain.py and edgec/codegen/chain.py: an audio front end and a classifier built as one model library (raw
audio in, scores out). TFLM's micro_speech preprocessor and its KWS model (tests/audio, tests/corpus/
tflm_micro_speech) chained by `api.build(..., frontend=...)`, the library compiled on the host with a main that
feeds it clips (ASan + UBSan): its scores identical with edgec's chained NumPy reference and with the same chain in TFLite
Micro's interpreter (the clips in order, the preprocessor's noise estimate carried as on the device). The whole
`edgec build --frontend` + `edgec bench` on the host and on qemu-cortex-m4: tests/test_chained.py."""
from __future__ import annotations

import importlib.util
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

import hostcc
from conftest import SANITIZE, WARN, library_sources
from edgec import api, chain
from edgec.errors import EdgecError
from edgec.quant import chained

TESTS = Path(__file__).resolve().parent
PRE, KWS = TESTS / "audio" / "audio_preprocessor_int8.tflite", TESTS / "corpus" / "tflm_micro_speech" / "model.tflite"
CLIPS = ["yes_1000ms.wav", "no_1000ms.wav"]

MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "kws.h"

int main(void)
{
    static int16_t clip[KWS_SAMPLES];
    unsigned k;
    while (fread(clip, 2, KWS_SAMPLES, stdin) == KWS_SAMPLES) {
        memcpy(kws_input(), clip, KWS_INPUT_BYTES);
        if (kws_invoke() != 0) return 3;
        for (k = 0; k < KWS_OUTPUT_BYTES; k++) printf("%02x", (unsigned)(uint8_t)kws_output()[k]);
        printf("\n");
    }
    return 0;
}
"""


def clips() -> np.ndarray:
    out = []
    for name in CLIPS:
        with wave.open(str(TESTS / "audio" / name)) as f:
            out.append(np.frombuffer(f.readframes(f.getnframes()), np.int16)[:16000])
    return np.stack(out)


def tflm_scores(x: np.ndarray) -> np.ndarray | None:
    if importlib.util.find_spec("tflite_micro") is None:
        return None
    from tflite_micro.python.tflite_micro import runtime

    pre = runtime.Interpreter.from_bytes(PRE.read_bytes(), arena_size=1 << 20)
    kws = runtime.Interpreter.from_bytes(KWS.read_bytes(), arena_size=1 << 20)
    out = []
    for a in x:
        rows = []
        for f in range(49):
            pre.set_input(a[320 * f:320 * f + 480].reshape(1, 480), 0)
            pre.invoke()
            rows.append(np.asarray(pre.get_output(0)).copy())
        kws.set_input(np.concatenate(rows).reshape(1, 1960), 0)
        kws.invoke()
        out.append(np.asarray(kws.get_output(0)).reshape(-1).copy())
    return np.stack(out)


def test_chained_library_on_the_host_matches_the_reference_and_tflm(tmp_path):
    x = clips()
    report = api.build(KWS, {"x": x}, "host", tmp_path / "b", firmware=False, frontend=PRE, frontend_hop=320)
    c = report["chain"]
    assert (c["window"], c["hop"], c["frames"], c["features"], c["samples"]) == (480, 320, 49, 40, 16000)
    assert report["input"]["bytes"] == 32000 and report["ops"] == c["model"]["ops"] + 1
    lib = tmp_path / "b" / "model"
    (lib / "main.c").write_text(MAIN.replace("kws", "tflm_micro_speech").replace("KWS", "TFLM_MICRO_SPEECH"))
    exe = hostcc.build(library_sources(lib), lib, tmp_path / "app", "gcc", [*WARN, *SANITIZE, "-I", str(lib)])
    out = subprocess.run([str(exe)], input=x.astype("<i2").tobytes(), capture_output=True, check=True).stdout
    device = np.stack([np.frombuffer(bytes.fromhex(line), np.int8) for line in out.decode().split()])
    frontend, net, shape = chain.load(tmp_path / "b")
    _, ref = chained.run(frontend, net, shape, x)
    np.testing.assert_array_equal(device, ref)
    want = tflm_scores(x)
    if want is not None:
        np.testing.assert_array_equal(device, want)
    assert list(device.argmax(1)) == [2, 3]          # micro_speech's labels: silence, unknown, yes, no


def test_errors_are_one_line(tmp_path):
    x = clips()
    with pytest.raises(EdgecError, match="give --frontend-hop"):       # 49 windows do not spread evenly over 1 s
        api.build(KWS, {"x": x}, "host", tmp_path / "a", firmware=False, frontend=PRE)
    with pytest.raises(EdgecError, match="do not fit in clips of 8000 samples"):
        api.build(KWS, {"x": x[:, :8000]}, "host", tmp_path / "b", firmware=False, frontend=PRE, frontend_hop=320)
    with pytest.raises(EdgecError, match="a front end is a quantized .tflite"):
        api.build(KWS, {"x": x}, "host", tmp_path / "c", firmware=False,
                  frontend=TESTS.parent / "examples" / "digits_cnn" / "model.onnx", frontend_hop=320)
    with pytest.raises(EdgecError, match="drop --protocol"):
        api.build(KWS, {"x": x}, "host", tmp_path / "d", firmware=False, frontend=PRE, protocol="mlperf")
    with pytest.raises(EdgecError, match="int16 sample values"):
        api.build(KWS, {"x": x / 32768.0 * 1e6}, "host", tmp_path / "e", firmware=False, frontend=PRE,
                  frontend_hop=320)
