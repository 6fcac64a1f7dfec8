"""The streaming wake-word front end (MLPerf Tiny sww01): 16 kHz int16 audio -> 40 log-mel energies per hop
of 512 samples over a 1,024-sample window, as the reference submission computes them
(mlcommons/tiny benchmark/reference_submissions/streaming_wakeword, th_compute_lfbe_f32, and the training
pipeline's tf.signal graph in benchmark/training/streaming_wakeword/get_dataset.py):

    pre-emphasis x[n] - (1 - 2^-5) x[n-1] (continued across hops), symmetric Hamming window, 1,024-point FFT,
    power |X|^2 / 1024, 40 HTK-mel triangles over 0..8 kHz (tf.signal.linear_to_mel_weight_matrix),
    f = clip((10 log10(mel) + 52) / 64, 0, 1), int8 input q = (int8)(f / scale - 128) (C truncation).

Three things here: `float_features` (the reference's float math, float64), `FrontEnd` (the fixed-point
version the firmware runs, runtime_c/harness/edgec_audio_frontend.c, bit for bit) and `c_tables` (the
integer tables both use, written into the firmware so that there is one source of them).

Fixed point: e = 32 x[n] - 31 x[n-1] (exact), Q15 window, an unscaled radix-2 FFT in int32 with Q30
twiddles (|X| < 2^31 for any int16 input: the window keeps sum |v| < 1.2e9), power in uint64, mel weights
Q15 on the power >> 16, log2 from the leading-zero count and a 65-entry table with linear interpolation,
then y = A log2 + B in Q16 and the reference's truncation to int8.
"""
from __future__ import annotations

import numpy as np

RATE = 16000
WINDOW = 1024
HOP = 512
MELS = 40
FRAMES = 30              # the model's input: the last 30 hops' features (1,200 int8 values)
PREEMPHASIS = 1.0 - 2.0 ** -5
POWER_OFFSET = 52.0
DETECT_THRESHOLD = 115   # the reference firmware's: output[0] (int8) > 115 is a detection
_LOG2_BITS = 6           # log2 table: 2^6 intervals of [1, 2)
_MEL_SHIFT = 16          # power >> 16 before the Q15 mel weights


def hamming() -> np.ndarray:
    """tf.signal.hamming_window(1024, periodic=False), float64."""
    n = np.arange(WINDOW)
    return 0.54 - 0.46 * np.cos(2 * np.pi * n / (WINDOW - 1))


def mel_matrix() -> np.ndarray:
    """tf.signal.linear_to_mel_weight_matrix(40, 513, 16000, 0, 8000) in float64: (513, 40)."""
    def mel(hz):
        return 1127.0 * np.log1p(np.asarray(hz, np.float64) / 700.0)
    bins = WINDOW // 2 + 1
    freqs = mel(np.linspace(0.0, RATE / 2, bins)[1:])[:, None]
    edges = np.linspace(mel(0.0), mel(RATE / 2), MELS + 2)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    w = np.maximum(0.0, np.minimum((freqs - lower) / (center - lower), (upper - freqs) / (upper - center)))
    return np.vstack([np.zeros((1, MELS)), w])


def float_features(window: np.ndarray, previous: float) -> np.ndarray:
    """The reference's float features of one 1,024-sample int16 window (`previous`: the sample before it)."""
    x = np.asarray(window, np.float64) / 32768.0
    e = x - PREEMPHASIS * np.concatenate([[previous / 32768.0], x[:-1]])
    power = np.abs(np.fft.rfft(e * hamming())) ** 2 / WINDOW
    mel = np.maximum(power @ mel_matrix(), 1e-30)
    return np.clip((10 * np.log10(mel) + POWER_OFFSET) / 64.0, 0.0, 1.0)


def reference_int8(f: np.ndarray, scale: float) -> np.ndarray:
    """The reference firmware's (int8_t)(f / scale - 128) in single precision (C truncates toward zero)."""
    v = np.asarray(f, np.float32) / np.float32(scale) - np.float32(128)
    return np.clip(np.trunc(v), -128, 127).astype(np.int8)


class Tables:
    """The integer tables of the fixed-point front end for a model input scale."""

    def __init__(self, scale: float):
        self.scale = float(scale)
        self.window = np.round(hamming() * 2 ** 15).astype(np.int32)                  # Q15
        k = np.arange(WINDOW // 2)
        self.cos = np.round(np.cos(2 * np.pi * k / WINDOW) * 2 ** 30).astype(np.int32)  # Q30
        self.sin = np.round(-np.sin(2 * np.pi * k / WINDOW) * 2 ** 30).astype(np.int32)
        m = mel_matrix()
        self.mel_start = np.array([int(np.nonzero(m[:, j])[0][0]) for j in range(MELS)], np.int32)
        self.mel_len = np.array([int(np.nonzero(m[:, j])[0][-1]) + 1 - s for j, s in enumerate(self.mel_start)],
                                np.int32)
        self.mel_weights = np.concatenate([np.round(m[s:s + n, j] * 2 ** 15) for j, (s, n) in
                                           enumerate(zip(self.mel_start, self.mel_len))]).astype(np.int32)
        self.log2 = np.round(np.log2(1 + np.arange(2 ** _LOG2_BITS + 1) / 2 ** _LOG2_BITS) * 2 ** 16).astype(np.int32)
        # y = f / scale = A log2(acc) + B, with mel = acc * 2^-49 (see FrontEnd.hop); A in Q24, B and y in Q16
        a = 10 * np.log10(2.0) / 64.0 / self.scale
        self.a_q24 = int(round(a * 2 ** 24))
        self.b_q16 = int(round((POWER_OFFSET / 64.0 / self.scale - 49 * a) * 2 ** 16))
        self.y_max_q16 = int(np.floor(2 ** 16 / self.scale))


def _fft(re: np.ndarray, im: np.ndarray, t: Tables) -> tuple[np.ndarray, np.ndarray]:
    """Radix-2 decimation-in-time FFT of 1,024 points, int64 holding int32 values, exactly as the C."""
    bits = WINDOW.bit_length() - 1
    rev = np.array([int(format(i, f"0{bits}b")[::-1], 2) for i in range(WINDOW)])
    re, im = re[rev].copy(), im[rev].copy()
    half = 1
    while half < WINDOW:
        step = WINDOW // (2 * half)
        tw = np.arange(half) * step
        wr, wi = t.cos[tw].astype(np.int64), t.sin[tw].astype(np.int64)
        starts = np.arange(0, WINDOW, 2 * half)
        top = (starts[:, None] + np.arange(half)[None, :]).reshape(-1)
        bot = top + half
        wr, wi = np.tile(wr, len(starts)), np.tile(wi, len(starts))
        br, bi = re[bot], im[bot]
        tr = (br * wr - bi * wi + (1 << 29)) >> 30
        ti = (br * wi + bi * wr + (1 << 29)) >> 30
        ar, ai = re[top], im[top]
        re[top], im[top] = ar + tr, ai + ti
        re[bot], im[bot] = ar - tr, ai - ti
        half *= 2
    return re, im


def _log2_q16(acc: np.ndarray, t: Tables) -> np.ndarray:
    """log2 of positive uint64 values in Q16: leading-zero count + table interpolation (the C's log2_q16)."""
    out = np.zeros(len(acc), np.int64)
    for i, a in enumerate(int(v) for v in acc):
        n = a.bit_length() - 1
        m = a >> (n - 30) if n >= 30 else a << (30 - n)        # [2^30, 2^31): 1.xxx in Q30
        idx, rem = (m >> (30 - _LOG2_BITS)) & (2 ** _LOG2_BITS - 1), (m >> (14 - _LOG2_BITS)) & 0xFFFF
        lo, hi = int(t.log2[idx]), int(t.log2[idx + 1])
        out[i] = (n << 16) + lo + (((hi - lo) * rem) >> 16)
    return out


class FrontEnd:
    """The fixed-point front end with its state between hops (the last 512 samples, the sample before the
    window), as the firmware keeps it.  hop(512 int16 samples) -> 40 int8 features."""

    def __init__(self, scale: float):
        self.tables = Tables(scale)
        self.samples = np.zeros(WINDOW, np.int64)
        self.previous = 0
        self.last_y_q16 = np.zeros(MELS, np.int64)     # before the int8 truncation (for precision reports)

    def hop(self, new: np.ndarray) -> np.ndarray:
        t = self.tables
        new = np.asarray(new, np.int64).reshape(-1)
        if new.shape != (HOP,):
            raise ValueError(f"a hop is {HOP} samples, got {new.shape}")
        self.samples = np.concatenate([self.samples[HOP:], new])
        x = self.samples
        prev = np.concatenate([[self.previous], x[:-1]])
        self.previous = int(x[HOP - 1])
        e = 32 * x - 31 * prev                                   # 2^20 (x - 0.96875 x_prev) / 32768 ... exact
        v = (e * t.window + (1 << 14)) >> 15
        re, im = _fft(v, np.zeros(WINDOW, np.int64), t)
        half = WINDOW // 2 + 1
        r, i = re[:half], im[:half]
        power = (r * r).astype(np.uint64) + (i * i).astype(np.uint64)        # |re|, |im| < 2^31: < 2^63
        shifted = power >> np.uint64(_MEL_SHIFT)
        acc = np.zeros(MELS, np.uint64)
        pos = 0
        for j in range(MELS):
            s, n = int(t.mel_start[j]), int(t.mel_len[j])
            acc[j] = np.sum(shifted[s:s + n] * t.mel_weights[pos:pos + n].astype(np.uint64), dtype=np.uint64)
            pos += n
        y = np.zeros(MELS, np.int64)
        nz = acc > 0
        if nz.any():
            y[nz] = ((t.a_q24 * _log2_q16(acc[nz], t) + (1 << 23)) >> 24) + t.b_q16
        y = np.clip(y, 0, t.y_max_q16)
        self.last_y_q16 = y
        z = y - (128 << 16)
        q = np.where(z >= 0, z >> 16, -((-z) >> 16))
        return np.clip(q, -128, 127).astype(np.int8)


def c_tables(t: Tables) -> str:
    """The tables as C definitions for the firmware (edgec_audio_frontend.h declares them)."""
    def arr(ctype, name, values):
        body = ", ".join(str(int(v)) for v in values)
        return f"const {ctype} {name}[{len(values)}] = {{{body}}};\n"
    return ("/* edgec audio front end tables (edgec/targets/audio_frontend.py) */\n#include \"edgec_audio_frontend.h\"\n"
            + arr("int32_t", "edgec_afe_window", t.window) + arr("int32_t", "edgec_afe_cos", t.cos)
            + arr("int32_t", "edgec_afe_sin", t.sin) + arr("int16_t", "edgec_afe_mel_start", t.mel_start)
            + arr("int16_t", "edgec_afe_mel_len", t.mel_len) + arr("int32_t", "edgec_afe_mel_weights", t.mel_weights)
            + arr("int32_t", "edgec_afe_log2", t.log2)
            + f"const int64_t edgec_afe_a_q24 = {t.a_q24};\nconst int64_t edgec_afe_b_q16 = {t.b_q16};\n"
            + f"const int64_t edgec_afe_y_max_q16 = {t.y_max_q16};\n")
