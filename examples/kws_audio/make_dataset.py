"""Make the keyword-spotting example's labelled audio: one-second 16 kHz int16 clips of ten English words
spoken by espeak-ng (https://github.com/espeak-ng/espeak-ng, GPL-3.0; the audio it writes is made here, by this
script, and carries no licence of the voices' authors) with many voices, speeds and pitches, placed at a random
offset, scaled, and mixed with noise (white, pink, brown, mains hum) at a random SNR; an eleventh class,
"silence", is noise alone. Train and test are split by voice: the test clips are spoken by espeak-ng voice
variants that no training clip uses, so the test set measures words from unseen voices.

    python examples/kws_audio/make_dataset.py            # -> examples/kws_audio/data/{train,test}.npz

Needs espeak-ng (apt-get install espeak-ng), NumPy and SciPy (resampling 22,050 Hz -> 16 kHz). Writes x int16
[N, 16000] and y int labels (CLASSES); the data folder is not committed (about 50 MB); the committed
calib.npz and test_small.npz are subsets of it (--small).
"""
from __future__ import annotations

import argparse
import io
import subprocess
import wave
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

CLASSES = ["silence", "yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go"]
RATE, SAMPLES = 16000, 16000
ACCENTS = ["en", "en-us", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-us-nyc"]
HERE = Path(__file__).resolve().parent


def variants() -> list[str]:
    """espeak-ng's voice variants (the timbres), sorted: the unit the train/test split is made over."""
    out = subprocess.run(["espeak-ng", "--voices=variant"], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[3] for line in out.splitlines()[1:] if len(line.split()) > 3})


def speak(word: str, voice: str, speed: int, pitch: int) -> np.ndarray:
    """espeak-ng's 22,050 Hz output resampled to 16 kHz, float64 in [-1, 1], leading/trailing silence cut."""
    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", word],
                         capture_output=True, check=True).stdout
    with wave.open(io.BytesIO(wav)) as f:
        a = np.frombuffer(f.readframes(f.getnframes()), np.int16).astype(np.float64) / 32768.0
        rate = f.getframerate()
    a = resample_poly(a, RATE, rate) if rate != RATE else a
    loud = np.flatnonzero(np.abs(a) > 0.02 * max(np.abs(a).max(), 1e-9))
    return a[loud[0]:loud[-1] + 1] if loud.size else a


def noise(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit-RMS noise of a random colour, or mains hum with its harmonics."""
    kind = rng.integers(4)
    if kind == 3:
        t = np.arange(n) / RATE
        f0 = rng.choice([50.0, 60.0])
        v = sum(rng.uniform(0.2, 1.0) * np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 6.3)) for k in range(1, 6))
        v = v + 0.1 * rng.standard_normal(n)
    else:
        spectrum = np.fft.rfft(rng.standard_normal(n))
        f = np.maximum(np.fft.rfftfreq(n, 1 / RATE), 1.0)
        v = np.fft.irfft(spectrum / f ** (0.5 * kind), n)      # white, pink, brown
    return v / (np.sqrt(np.mean(v ** 2)) + 1e-12)


def clip(job) -> np.ndarray:
    """One labelled clip: (label, voice, speed, pitch, seed) -> int16 [16000]."""
    label, voice, speed, pitch, seed = job
    rng = np.random.default_rng(seed)
    out = np.zeros(SAMPLES)
    if label:
        w = speak(CLASSES[label], voice, speed, pitch)[:SAMPLES - 800]
        start = int(rng.integers(400, SAMPLES - len(w) - 399))
        w = w / (np.abs(w).max() + 1e-12) * 10 ** (rng.uniform(-20, -3) / 20)     # peak -20..-3 dBFS
        out[start:start + len(w)] = w
        speech_rms = np.sqrt(np.mean(w ** 2))
        if rng.random() < 0.9:
            out += noise(rng, SAMPLES) * speech_rms * 10 ** (-rng.uniform(5, 30) / 20)
    else:
        out = noise(rng, SAMPLES) * 10 ** (rng.uniform(-60, -20) / 20)
    return np.clip(np.round(out * 32767), -32768, 32767).astype(np.int16)


def jobs(voices: list[str], per_class: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for label in range(len(CLASSES)):
        for _ in range(per_class):
            voice = f"{rng.choice(ACCENTS)}+{rng.choice(voices)}"
            out.append((label, voice, int(rng.integers(110, 230)), int(rng.integers(10, 90)),
                        int(rng.integers(2 ** 31))))
    rng.shuffle(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train-per-class", type=int, default=600)
    ap.add_argument("--test-per-class", type=int, default=80)
    ap.add_argument("--out", default=str(HERE / "data"))
    ap.add_argument("--small", action="store_true", help="write the committed calib.npz and test_small.npz from "
                                                         "the data folder")
    a = ap.parse_args()
    out = Path(a.out)
    if a.small:        # the first clips of each set (already shuffled): 48 calibration clips, 33 test clips
        train, test = np.load(out / "train.npz"), np.load(out / "test.npz")
        np.savez_compressed(HERE / "calib.npz", x=train["x"][:48], y=train["y"][:48])
        np.savez_compressed(HERE / "test_small.npz", x=test["x"][:33], y=test["y"][:33])
        return
    names = variants()
    test_voices, train_voices = names[::5], [v for i, v in enumerate(names) if i % 5]
    out.mkdir(parents=True, exist_ok=True)
    with Pool(2) as pool:
        for split, voices, per_class, seed in (("train", train_voices, a.train_per_class, 1),
                                               ("test", test_voices, a.test_per_class, 2)):
            todo = jobs(voices, per_class, seed)
            x = np.stack(pool.map(clip, todo, chunksize=16))
            y = np.array([j[0] for j in todo], np.int64)
            np.savez_compressed(out / f"{split}.npz", x=x, y=y)
            print(f"{split}: {len(x)} clips, {len(voices)} voice variants")


if __name__ == "__main__":
    main()
