"""The streaming wake-word bench (edgec/bench/stream.py) on a `--protocol mlperf --mlperf-model sww01` firmware
of MLCommons' streaming wake-word model (tests/corpus/tiny_streaming_wakeword): a WAV streamed hop by hop
through the device's fixed-point front end and model and through the host reference, bit for bit, with
detections scored as the MLPerf runner scores them; and the official runner's UART streaming path
(../shared/mlperf-runner/stream_wav_uart.py, called by tests/mlperf_stream_driver.py) against the firmware.
The WAVs are synthesized here (the official test WAVs are not shipped): words spoken by espeak-ng in noise,
the wake word "marvin" among others, labelled where "marvin" is; or tones and chirps."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from conftest import MLPERF, edgec, require
from edgec import api
from edgec.bench import stream
from edgec.errors import EdgecError
from edgec.quant import artifact
from mlperf_stream_driver import run_stream

MODEL = Path(__file__).resolve().parent / "corpus" / "tiny_streaming_wakeword" / "model.tflite"
RUNNER = MLPERF.parent.parent / "mlperf-runner"


def synth_wav(path: Path, seconds: float, events: list[list[float]], channels: int = 1, rate: int = 16000) -> Path:
    """Noise with a chirp burst in each event window, 16-bit PCM."""
    rng = np.random.default_rng(int(seconds * 10))
    n = int(seconds * rate)
    t = np.arange(n) / rate
    x = rng.normal(0, 300, n) + 1500 * np.sin(2 * np.pi * 220 * t)
    for start, stop in events:
        m = (t >= start) & (t < stop)
        x[m] += 12000 * np.sin(2 * np.pi * (300 + 900 * (t[m] - start)) * (t[m] - start))
    pcm = np.clip(np.round(x), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.repeat(pcm[:, None], channels, 1).tobytes())
    return path


def spoken_wav(path: Path, seconds: float, words: list[tuple[str, float, str]]) -> tuple[Path, list[list[float]]]:
    """Noise with each (word, start_s, espeak-ng voice) spoken into it; the wake word's windows."""
    require(shutil.which("espeak-ng") is not None, "espeak-ng", "install espeak-ng (apt install espeak-ng; "
            "scripts/setup.sh does)")
    rng = np.random.default_rng(len(words))
    x = rng.normal(0, 120, int(seconds * 16000))
    windows = []
    for i, (word, start, voice) in enumerate(words):
        spoken = path.with_name(f"{path.stem}-{i}.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-s", "140", "-w", str(spoken), word], check=True, capture_output=True)
        with wave.open(str(spoken), "rb") as w:
            rate = w.getframerate()
            y = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)
        y = np.interp(np.arange(int(len(y) * 16000 / rate)) * rate / 16000, np.arange(len(y)), y)   # to 16 kHz
        begin = int(start * 16000)
        x[begin:begin + len(y)] += y[:len(x) - begin]
        if word == "marvin":
            windows.append([start, start + len(y) / 16000])
    pcm = np.clip(np.round(x), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())
    return path, windows


def truth(path: Path, wav: Path, windows: list[list[float]], seconds: float) -> Path:
    path.write_text(json.dumps([{"wav_file": wav.name, "sample_rate": 16000, "length_sec": seconds,
                                 "detection_windows": windows}]))
    return path


def require_runner() -> None:
    require((RUNNER / "stream_wav_uart.py").is_file(), str(RUNNER), "put ../shared/mlperf-runner (the MLCommons "
            "Tiny runner) beside the clone")


def runner_stream(tmp_path: Path, build: Path, wav: Path, windows: Path, seconds: float) -> dict:
    """The official runner's UART streaming path against the build's firmware: its spectrogram, activations
    and its own TP/FN/FP."""
    from edgec.device.device import open_serial
    from edgec.device.mlperf import wait_for_banner

    _, board, firmware = api.load_build(build)
    samples = stream.read_wav(wav)[:int(seconds * 16000)]      # the runner sends a short last hop as it is
    ser, process = open_serial(board, firmware)
    cwd = os.getcwd()
    try:
        wait_for_banner(ser)
        os.chdir(tmp_path)
        return run_stream(RUNNER, ser, samples, stream.read_windows(windows, wav))
    finally:
        os.chdir(cwd)
        ser.close()
        if process is not None:
            process.kill()


@pytest.fixture(scope="module")
def host_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sww") / "sww-host"
    api.build(MODEL, None, "host", out, protocol="mlperf", mlperf_model="sww01")
    return out


def test_read_windows_takes_the_runners_truth_format(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps([{"wav_file": "a.wav", "detection_windows": [[1, 2]]},
                             {"wav_file": "b.wav", "detection_windows": [[3.5, 4]]}]))
    assert stream.read_windows(f, "dir/b.wav") == [[3.5, 4.0]]
    f.write_text(json.dumps({"detection_windows": [[0.5, 1.25]]}))
    assert stream.read_windows(f) == [[0.5, 1.25]]
    f.write_text(json.dumps([{"wav_file": "a.wav"}]))
    with pytest.raises(EdgecError, match="detection_windows"):
        stream.read_windows(f, "a.wav")


def test_read_wav_takes_the_first_channel_and_refuses_other_rates(tmp_path):
    stereo = synth_wav(tmp_path / "s.wav", 0.1, [], channels=2)
    mono = synth_wav(tmp_path / "m.wav", 0.1, [])
    assert np.array_equal(stream.read_wav(stereo), stream.read_wav(mono))
    with pytest.raises(EdgecError, match="16 kHz"):
        stream.read_wav(synth_wav(tmp_path / "8k.wav", 0.1, [], rate=8000))


def test_score_counts_as_the_runner_does():
    """TP/FN/FP of random detection times against random windows equal the runner's calc_detection_stats."""
    require_runner()
    sys.path.insert(0, str(RUNNER))
    try:
        import streaming_ww_utils
    finally:
        sys.path.remove(str(RUNNER))
    rng = np.random.default_rng(3)
    for _ in range(30):
        starts = np.sort(rng.choice(np.arange(1, 60, 4.0), 5, replace=False))
        windows = [[float(s), float(s + rng.uniform(0.3, 0.9))] for s in starts]
        times = [0] + sorted(int(v) for v in rng.integers(32, 64000, rng.integers(0, 25)))
        tp, fn, fp = streaming_ww_utils.calc_detection_stats(times, [list(w) for w in windows])
        got = stream.score(times, windows)
        assert (got["true_positives"], got["false_negatives"], got["false_positives"]) == (len(tp), len(fn), len(fp))


def test_stream_on_the_host_board_equals_the_reference(host_build, tmp_path):
    """A spoken wake word and another word: device = host reference, and the wake word is found."""
    wav, events = spoken_wav(tmp_path / "spoken.wav", 4.0, [("marvin", 0.5, "en-us"), ("backward", 2.4, "en")])
    r = api.stream_bench(host_build, wav, truth(tmp_path / "t.json", wav, events, 4.0))
    assert r["bit_exact"] and r["host"]["hops"] == 4.0 * 16000 // 512
    assert r["device"] == r["host"]
    assert r["device"]["true_positives"] == len(events) == 1, r["device"]
    ticks = r["hop_ticks"]
    assert ticks["front_end"] > 0 and ticks["model"] > 0


def test_stream_scores_a_missed_window_on_the_host_board(host_build, tmp_path):
    """Chirps in noise labelled as wake words: whatever the model does, device and host score alike."""
    events = [[0.4, 0.9]]
    wav = synth_wav(tmp_path / "short.wav", 1.5, events)
    r = api.stream_bench(host_build, wav, truth(tmp_path / "t.json", wav, events, 1.5))
    assert r["bit_exact"] and r["device"] == r["host"]
    assert r["device"]["true_positives"] + r["device"]["false_negatives"] == 1


def test_official_runner_streaming_path_on_the_host_board(host_build, tmp_path):
    require_runner()
    wav, events = spoken_wav(tmp_path / "spoken.wav", 2.5, [("marvin", 0.3, "en")])
    windows = truth(tmp_path / "t.json", wav, events, 2.5)
    got = runner_stream(tmp_path, host_build, wav, windows, 2.5)
    host = stream.host_stream(artifact.load_graph(host_build), stream.hops_of(stream.read_wav(wav), 2.5, partial=True))
    assert len(host["features"]) == 79              # 78 hops and the WAV's last 64 samples
    assert np.array_equal(got["specgram"], host["features"])
    assert np.array_equal(got["activations"], host["activations"])
    mine = stream.summary(host, stream.read_windows(windows, wav))
    assert (int(got["tp"]), int(got["fn"]), int(got["fp"])) == \
        (mine["true_positives"], mine["false_negatives"], mine["false_positives"]) and mine["true_positives"] == 1


def test_bench_stream_command_and_errors(host_build, tmp_path):
    wav = synth_wav(tmp_path / "w.wav", 0.5, [])
    p = edgec("bench", host_build, "--stream", wav, "--json", tmp_path / "r.json")
    assert p.returncode == 0, p.stderr
    assert "device = host reference bit for bit" in p.stdout
    assert json.loads((tmp_path / "r.json").read_text())["bit_exact"] is True
    p = edgec("bench", host_build)
    assert p.returncode != 0 and "--data" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.sweep
def test_official_runner_streaming_on_qemu_cortex_m4_within_the_hop_budget(tmp_path):
    """The runner's streaming path on qemu-cortex-m4 over 8 s of spoken words (the wake word twice, in two voices,
    among three others), bit-exact with the host reference, its TP/FN/FP equal to edgec's; and the per-hop cycle
    estimate within the NUCLEO-L4R5ZI's 32 ms."""
    require_runner()
    build = tmp_path / "sww-m4"
    api.build(MODEL, None, "qemu-cortex-m4", build, protocol="mlperf", mlperf_model="sww01")
    wav, events = spoken_wav(tmp_path / "long.wav", 8.0, [
        ("seven", 0.3, "en"), ("marvin", 1.5, "en-gb"), ("forward", 3.2, "en-us"), ("marvin", 5.0, "en+f3"),
        ("house", 6.8, "en")])
    windows = truth(tmp_path / "t.json", wav, events, 8.0)
    got = runner_stream(tmp_path, build, wav, windows, 8.0)
    r = api.stream_bench(build, wav, windows, seconds=1.0)
    host = stream.host_stream(artifact.load_graph(build), stream.hops_of(stream.read_wav(wav), 8.0, partial=True))
    assert np.array_equal(got["specgram"], host["features"]) and np.array_equal(got["activations"], host["activations"])
    mine = stream.summary(host, stream.read_windows(windows, wav))
    assert (int(got["tp"]), int(got["fn"]), int(got["fp"])) == \
        (mine["true_positives"], mine["false_negatives"], mine["false_positives"])
    print(f"sww01 on qemu-cortex-m4, 8 s spoken: {mine['true_positives']} TP, {mine['false_negatives']} FN, "
          f"{mine['false_positives']} FP (the official runner's count = edgec's)")
    c = r["cycles_estimate"]
    assert r["bit_exact"] and c["budget_board"] == "nucleo-l4r5zi" and c["front_end"] > 0
    assert c["total"] < c["budget"], c


def test_sww01_refuses_a_model_without_the_feature_window(tmp_path):
    from conftest import EXAMPLES
    digits = EXAMPLES / "digits_cnn"
    with pytest.raises(EdgecError, match="streams 30 frames of 40 log-mel features"):
        api.build(digits / "model.onnx", digits / "calib.npz", "host", tmp_path / "b", protocol="mlperf",
                  mlperf_model="sww01", firmware=False)
