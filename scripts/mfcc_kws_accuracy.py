"""How close edgec's fixed-point MFCC front end (edgec/ops/signal/mfcc.py) is to the float front end a training
pipeline exported (tests/audio/frontends/), on spoken words, and what that does to a keyword model:

  .venv/bin/python scripts/mfcc_kws_accuracy.py [--out build/mfcc_kws.json]

Data: 10 keywords spoken by espeak-ng (apt install espeak-ng) in 36 voices (accents x voice variants), speed and
pitch varied, placed at a random offset in one second of 16 kHz audio, with noise at a random SNR and a random
gain (from -50 dB to clipped); voices split 24 for training, 12 for testing (no test voice is heard in training).
Per front end: the features of every clip by onnxruntime running the exported float graph, and by the integer
front end (the NumPy twin, bit-identical with the C kernel); the feature SQNR over the test set (and per kind:
speech, digital silence, full-scale, clipped); a small keyword classifier (scikit-learn MLP on standardized
features) trained on the float features, its test accuracy on the float features and on the integer ones.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from scipy.signal import resample_poly
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from edgec.ops.signal import mfcc, mfcc_onnx

ROOT = Path(__file__).resolve().parent.parent
WORDS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go"]
ACCENTS = ["en-us", "en-gb", "en-gb-scotland", "en-029"]
VARIANTS = ["m1", "m2", "m3", "m4", "m5", "f1", "f2", "f3", "f4"]


def speak(word: str, voice: str, speed: int, pitch: int, folder: Path) -> np.ndarray:
    path = folder / "w.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", str(path), word], check=True)
    with wave.open(str(path)) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float64) / 32768
        rate = w.getframerate()
    return resample_poly(x, 16000, rate)[:16000]


def clip(rng, word_audio: np.ndarray) -> np.ndarray:
    """One second: the word at a random offset, noise at 5-40 dB SNR, a gain from -50 dB to clipping."""
    out = np.zeros(16000)
    at = int(rng.integers(0, 16000 - word_audio.size + 1))
    out[at:at + word_audio.size] = word_audio
    out /= max(np.abs(out).max(), 1e-9)
    snr = rng.uniform(5, 40)
    out += rng.normal(0, np.sqrt(np.mean(out ** 2)) * 10 ** (-snr / 20), out.size)
    gain = 10 ** (rng.uniform(-50, 6) / 20)
    return np.clip(np.round(out * gain * 0.5 * 32768), -32768, 32767).astype(np.int16)


def dataset(rng, folder: Path):
    voices = [f"{a}+{v}" for a in ACCENTS for v in VARIANTS]
    order = rng.permutation(len(voices))
    test_voices = {voices[i] for i in order[:12]}
    xs, ys, test = [], [], []
    for voice in voices:
        for k, word in enumerate(WORDS):
            for _ in range(3):
                audio = speak(word, voice, int(rng.integers(130, 220)), int(rng.integers(20, 80)), folder)
                xs.append(clip(rng, audio))
                ys.append(k)
                test.append(voice in test_voices)
    return np.stack(xs), np.array(ys), np.array(test)


def sqnr(ref, x) -> float:
    return float(10 * np.log10((ref ** 2).sum() / max(((ref - x) ** 2).sum(), 1e-300)))


def edges() -> dict[str, np.ndarray]:
    t = np.arange(16000)
    return {"digital silence": np.zeros(16000, np.int16),
            "full-scale square": np.where(t // 20 % 2, 32767, -32768).astype(np.int16),
            "clipped sine": np.clip(np.round(200000 * np.sin(t * 0.07)), -32768, 32767).astype(np.int16),
            "quiet noise (+-3 LSB)": np.random.default_rng(1).integers(-3, 4, 16000).astype(np.int16)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "build" / "mfcc_kws.json"))
    args = ap.parse_args()
    rng = np.random.default_rng(35)
    with tempfile.TemporaryDirectory() as tmp:
        x, y, test = dataset(rng, Path(tmp))
    results = {"clips": int(len(x)), "test clips": int(test.sum()), "words": WORDS}
    for name in ("tf_signal_mfcc", "torchaudio_mfcc"):
        path = ROOT / "tests" / "audio" / "frontends" / f"{name}.onnx"
        spec = mfcc_onnx.recognise(onnx.load(str(path)))
        p, a = mfcc.constants(spec)
        session = ort.InferenceSession(str(path))
        float_f = np.stack([session.run(None, {"audio": (c.astype(np.float32) / 32768)[None]})[0].reshape(-1)
                            for c in x])
        int_f = np.stack([mfcc.features(c, p, a) / 65536 for c in x[test]])
        scaler = StandardScaler().fit(float_f[~test])
        model = MLPClassifier((64,), max_iter=600, random_state=0).fit(scaler.transform(float_f[~test]), y[~test])
        acc_float = float(model.score(scaler.transform(float_f[test]), y[test]))
        acc_int = float(model.score(scaler.transform(int_f), y[test]))
        per_clip = [sqnr(r, q) for r, q in zip(float_f[test], int_f)]
        edge = {k: sqnr(session.run(None, {"audio": (v.astype(np.float32) / 32768)[None]})[0].reshape(-1),
                        mfcc.features(v, p, a) / 65536) for k, v in edges().items()}
        results[name] = {"feature SQNR over the test set (dB)": sqnr(float_f[test], int_f),
                         "worst clip SQNR (dB)": min(per_clip), "median clip SQNR (dB)": float(np.median(per_clip)),
                         "edge cases SQNR (dB)": edge, "accuracy on float features": acc_float,
                         "accuracy on integer features": acc_int,
                         "predictions that differ": int((model.predict(scaler.transform(float_f[test]))
                                                         != model.predict(scaler.transform(int_f))).sum())}
        print(name, json.dumps(results[name], indent=1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
