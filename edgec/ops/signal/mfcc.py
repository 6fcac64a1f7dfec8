"""A training pipeline's float MFCC / log-mel front end (tf.signal, torchaudio: mfcc_onnx.py reads it from an
exported ONNX graph) in fixed point: int16 audio in, int32 features out (Q16: the float feature times 65536).
The NumPy integer twin is here; the C kernel, edgec_signal_mfcc_s16 in runtime_c/edgec_signal.c, does the same
integer operations bit for bit (tests/kernels/test_signal_mfcc.py).

Per frame of `frame_length` samples every `hop`:
  FftAutoScale's shift s (the frame's largest magnitude fills int16; the signal family's kernel) -> the window
  (Q15 weights; the products rounded to int32 below 2^(30 - window_shift)) -> an unscaled int32 radix-2 FFT of
  `fft_length` points (Q30 twiddles, each product rounded once; parts stay below 2^30) -> power re^2 + im^2
  (uint64), or the magnitude (its floor square root), shifted down `value_shift` bits -> mel bands (Q15 weights,
  uint64 sums) -> shifted up `headroom` bits, the float graph's epsilon added (or clamped to, as torchaudio's
  Clip) at the frame's scale (a table over s) -> log2 in Q16 (the top 32 bits, TFLM's piecewise-linear log
  correction) -> plus log2 of the frame's scale (a table over s) -> times c ln 2 (c = 1 for ln, 10 / ln 10 for
  dB; Q24).
Then over the whole clip: torchaudio's top_db floor (the clip's largest value - top_db), and the DCT (an int16
matrix in Q`dct_shift`, int64 sums) rounded to Q16.

Where it differs from the float graph: the input is int16 (the host rounds float samples to 1/32768); the FFT
rounds at every stage at about 2^-21 of the frame's peak (after auto-scaling), so bins 100 dB below a frame's
loudest keep few bits; the window, mel and DCT weights are rounded to Q15 (2^-15 absolute: a mel weight below
2^-16 is dropped); the log has 2^-16 resolution (and TFLM's correction, about 1e-4); an epsilon below the
frame's integer resolution is rounded (torchaudio's 1e-10 clamp keeps about 2 digits at full scale).
"""
from __future__ import annotations

import math

import numpy as np

from edgec.errors import EdgecError
from edgec.ops import cemit
from edgec.ops.signal import twins

LOG_SHIFT = 24          # the log's c ln 2 multiplier is Q24
SHIFTS = 16             # FftAutoScale's shift s is 0..15: one eps and one scale entry for each


def constants(spec: dict, input_scale: float = 2.0 ** -15) -> tuple[dict, dict]:
    """The kernel's integer parameters and constant arrays from a float front end `spec` (mfcc_onnx.recognise):
    samples, hop, frame_length, fft_length, window [frame_length], mel [bins, mels], power (1 | 2), eps,
    eps_mode ("added" | "clamped"), log_scale (c), top_db (None or dB), dct [mels, coeffs], transposed; the int16
    audio is the float audio / input_scale (2^-15: a full-scale float sample is 32768)."""
    n, power = int(spec["fft_length"]), int(spec["power"])
    if n < 8 or n & (n - 1) or n > 1 << 15:
        raise EdgecError(f"an FFT of {n} points: edgec's MFCC front end takes powers of two from 8 to 32768")
    if np.abs(np.asarray(spec["window"])).max() > 1 or np.asarray(spec["mel"]).min() < 0:
        raise EdgecError("the front end's window goes beyond [-1, 1] or its mel matrix has negative weights; "
                         "edgec's MFCC front end takes windows in [-1, 1] and non-negative mel weights")
    mel = np.asarray(spec["mel"], np.float64)
    bins, mels = mel.shape
    dct = np.asarray(spec["dct"], np.float64)
    frames = 1 + (int(spec["samples"]) - int(spec["frame_length"])) // int(spec["hop"])
    window = np.clip(np.round(np.asarray(spec["window"], np.float64) * 32768), -32768, 32767).astype(np.int16)
    melq = np.clip(np.round(mel.T * 32768), 0, 32767).astype(np.int16)               # [mels, bins]
    lo = np.array([np.flatnonzero(r)[0] if r.any() else 0 for r in melq], np.int16)
    hi = np.array([np.flatnonzero(r)[-1] + 1 if r.any() else 0 for r in melq], np.int16)
    vbits = 31 if power == 1 else 61            # |X| < 2^30.5 (the FFT's output < 2^30 per part)
    top = math.ceil(math.log2(max(float(melq.astype(np.float64).sum(axis=1).max()), 1.0))) + vbits
    value_shift, headroom = max(0, top - 62), max(0, 62 - top)
    # E (the float mel energy) = acc * unit(s): acc the integer band sum, s the frame's auto-scale shift
    shift = max(9, n.bit_length() - 1)      # windowed samples < 2^(30 - shift): the unscaled FFT stays < 2^30
    gain = (float(input_scale) * 32768) ** power
    unit = [gain * 2.0 ** (value_shift - headroom - (45 - shift + s if power == 1 else 75 - 2 * shift + 2 * s))
            for s in range(SHIFTS)]
    eps = float(spec["eps"])
    eps_q = np.array([min(round(eps / u), 1 << 62) for u in unit], np.int64)
    log2u = np.array([round(65536 * math.log2(u)) for u in unit], np.int32)
    dmax = float(np.abs(dct).max()) or 1.0
    dct_shift = min(15, 14 - math.floor(math.log2(dmax)))     # the largest |weight| in [2^14, 2^15)
    dctq = np.clip(np.round(dct * 2.0 ** dct_shift), -32768, 32767).astype(np.int16)  # [mels, coeffs]
    k = np.arange(n // 2)
    params = dict(samples=int(spec["samples"]), frames=frames, hop=int(spec["hop"]),
                  frame_length=int(spec["frame_length"]), fft_length=n, window_shift=shift, mels=mels,
                  coeffs=dctq.shape[1],
                  power=power, clamp=int(spec["eps_mode"] == "clamped"), value_shift=value_shift, headroom=headroom,
                  log_mult=round(float(spec["log_scale"]) * math.log(2) * 2 ** LOG_SHIFT),
                  top_db=0 if spec.get("top_db") is None else round(float(spec["top_db"]) * 65536),
                  dct_shift=dct_shift, transposed=int(bool(spec["transposed"])))
    arrays = dict(window=window, mel=np.ascontiguousarray(melq.reshape(-1)), mel_lo=lo, mel_hi=hi, eps=eps_q,
                  log2_unit=log2u, dct=np.ascontiguousarray(dctq.reshape(-1)),
                  cos=np.round(np.cos(2 * np.pi * k / n) * 2 ** 30).astype(np.int32),
                  sin=np.round(-np.sin(2 * np.pi * k / n) * 2 ** 30).astype(np.int32))
    return params, arrays


def fft(re, im, cos, sin) -> tuple[np.ndarray, np.ndarray]:
    """In-order radix-2 decimation in time, unscaled, int32 parts, Q30 twiddles (e^-2 pi i k / n), each complex
    product rounded once ((v + 2^29) >> 30 in int64); int64 arrays in, int64 out (int32 values)."""
    n = re.size
    bits = n.bit_length() - 1
    rev = np.array([int(format(i, f"0{bits}b")[::-1], 2) for i in range(n)])
    re, im = re[rev].astype(np.int64), im[rev].astype(np.int64)
    half = 1
    while half < n:
        step = n // (2 * half)
        w = np.arange(half) * step
        wr, wi = cos[w].astype(np.int64), sin[w].astype(np.int64)
        a = (np.arange(0, n, 2 * half)[:, None] + np.arange(half)[None, :]).reshape(-1)
        b = a + half
        wr, wi = np.tile(wr, n // (2 * half)), np.tile(wi, n // (2 * half))
        tr = (re[b] * wr - im[b] * wi + (1 << 29)) >> 30
        ti = (re[b] * wi + im[b] * wr + (1 << 29)) >> 30
        re[b], im[b] = re[a] - tr, im[a] - ti
        re[a], im[a] = re[a] + tr, im[a] + ti
        half *= 2
    return re, im


def log2_q16(a: np.ndarray) -> np.ndarray:
    """log2 of uint64 values >= 1 in Q16: the integer part from the top bit, the fraction from the 16 bits below
    it with TFLM's piecewise-linear correction (twins.LOG_LUT, as SignalFilterBankLog)."""
    a = [int(v) for v in np.asarray(a, np.uint64).reshape(-1)]
    out = []
    for v in a:
        i = v.bit_length() - 1
        m = v >> (i - 31) if i >= 31 else v << (31 - i)
        frac = (m - (1 << 31)) >> 15
        seg = frac >> 9
        c0, c1 = int(twins.LOG_LUT[seg]), int(twins.LOG_LUT[seg + 1])
        out.append((i << 16) + frac + c0 + (((c1 - c0) * (frac - 512 * seg)) >> 16))
    return np.array(out, np.int64)


_isqrt = np.frompyfunc(math.isqrt, 1, 1)


def log_mel(x, p: dict, a: dict) -> np.ndarray:
    """The log-mel values of int16 audio x [samples]: int32 [frames, mels] in Q16 (before top_db and the DCT)."""
    x = np.asarray(x, np.int64).reshape(-1)
    w = a["window"].astype(np.int64)
    melq = a["mel"].astype(np.int64).reshape(p["mels"], -1)
    bins = p["fft_length"] // 2 + 1
    out = np.zeros((p["frames"], p["mels"]), np.int64)
    for f in range(p["frames"]):
        frame = x[f * p["hop"]:f * p["hop"] + p["frame_length"]]
        z, s = twins.fft_auto_scale(frame)
        y = np.zeros(p["fft_length"], np.int64)
        y[:frame.size] = (z.astype(np.int64) * w + (1 << (p["window_shift"] - 1))) >> p["window_shift"]
        re, im = fft(y, np.zeros_like(y), a["cos"], a["sin"])
        power = (re[:bins] ** 2 + im[:bins] ** 2).astype(object)
        v = (power if p["power"] == 2 else _isqrt(power)) >> p["value_shift"]
        acc = [sum(int(melq[m, k]) * int(v[k]) for k in range(a["mel_lo"][m], a["mel_hi"][m]))
               << p["headroom"] for m in range(p["mels"])]
        eps = int(a["eps"][s])
        acc = [max(v, eps) if p["clamp"] else v + eps for v in acc]
        l2 = log2_q16(np.array([max(v, 1) for v in acc], np.uint64)) + int(a["log2_unit"][s])
        out[f] = (l2 * p["log_mult"] + (1 << (LOG_SHIFT - 1))) >> LOG_SHIFT
    return out.astype(np.int32)


def features(x, p: dict, a: dict) -> np.ndarray:
    """The front end's output for int16 audio x: int32 Q16 features, [frames, coeffs] ([coeffs, frames] when
    transposed), flattened."""
    y = log_mel(x, p, a).astype(np.int64)
    if p["top_db"]:
        y = np.maximum(y, y.max() - p["top_db"])
    d = a["dct"].astype(np.int64).reshape(p["mels"], p["coeffs"])
    out = (y @ d + (1 << (p["dct_shift"] - 1))) >> p["dct_shift"]
    return (out.T if p["transposed"] else out).astype(np.int32).reshape(-1)


def audio_to_int16(audio) -> np.ndarray:
    """Float audio in [-1, 1] as the kernel's int16 input (rounded half to even, saturated)."""
    return np.clip(np.round(np.asarray(audio, np.float64) * 32768), -32768, 32767).astype(np.int16)


# ---- the op kind: its quantizer, twin and C call (registered by edgec/ops/signal/__init__.py) ------------------
INPUT_SCALE = 2.0 ** -15        # the audio is int16 PCM (float 1.0 is 32768)
OUTPUT_SCALE = 2.0 ** -16       # the features are int32 Q16


def quantize(op, ins, out) -> None:
    """The kernel's parameters for the front end the importer read (op.attrs["spec"]), at its input's scale."""
    params, arrays = constants(op.attrs["spec"], ins[0].scale)
    op.params.update(params)
    op.arrays.update(arrays)


def run_mfcc(op, ins):
    return features(ins[0], op.params, op.arrays)


def c_mfcc(op, low, s) -> str:
    a = s.arrays
    call = (f"edgec_signal_mfcc_s16(&p, (const int16_t *)(const void *)({s.inputs[0]}), {a['window']}, {a['mel']}, "
            f"{a['mel_lo']}, {a['mel_hi']}, {a['eps']}, {a['log2_unit']}, {a['dct']}, {a['cos']}, {a['sin']}, "
            f"(int32_t *)(void *)({s.scratch}), (int32_t *)(void *)({s.output}));")
    return cemit.with_params("edgec_signal_mfcc_params", op.params, call, only_fields=True)


KINDS = {"signal_mfcc": ("edgec_signal_mfcc_s16", run_mfcc, c_mfcc)}
