"""NumPy integer twins of TensorFlow Lite Micro's signal-library kernels (signal/src and signal/micro/kernels of
tflite-micro): the same integer operations on the same widths, so each agrees with TFLM bit for bit (tested
against TFLM's interpreter in tests/kernels/test_signal.py). The C kernels are runtime_c/edgec_signal.c.

Widths follow TFLM: int16 audio and spectra, uint32 energies, uint64 filter-bank sums; `msb(x)` is TFLM's
MostSignificantBit32 as GCC builds it (32 - clz(x), and 32 for 0), which FftAutoScale and PCAN depend on.
"""
from __future__ import annotations

import numpy as np

from edgec.ops.signal.kissfft import rfft as _rfft

U32 = 0xFFFFFFFF
U64 = (1 << 64) - 1
LOG_LUT = np.array([
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944, 3087, 3224,
    3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791, 4864, 4934, 5001,
    5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595, 5610, 5622, 5631,
    5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332,
    5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264,
    4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549,
    2437, 2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142, 0,
    0], np.int64)     # the piecewise-linear correction of log2's fraction (129 segments and a pad)
PCAN_SNR_BITS, PCAN_OUTPUT_BITS = 12, 6


def msb(x: int) -> int:
    """MostSignificantBit32 as TFLM builds it with GCC: bits needed for x, 32 for 0."""
    return int(x).bit_length() if x else 32


def window(x, weights, shift: int) -> np.ndarray:
    """SignalWindow: (x * w) >> shift, saturated to int16, the weights repeated over x's frames."""
    w = np.asarray(weights, np.int64).reshape(-1)
    x = np.asarray(x, np.int64).reshape(-1, w.size)
    return np.clip((x * w) >> shift, -32768, 32767).astype(np.int16).reshape(-1)


def fft_auto_scale(x) -> tuple[np.ndarray, int]:
    """SignalFftAutoScale: x shifted left so its largest magnitude fills int16; (scaled x, the shift)."""
    x = np.asarray(x, np.int64).reshape(-1)
    mx = 0
    for v in x:                     # MaxAbs16 in int16: -(-32768) is -32768 again, which then stays the max
        if v > mx:
            mx = int(v)
        elif -v > mx:
            mx = int(np.int16(-v)) if -v > 32767 else int(-v)
    bits = max(16 - msb(mx & U32) - 1, 0)
    return (((x * (1 << bits)) + 32768) % 65536 - 32768).astype(np.int16), bits


def rfft(x, fft_length: int, input_length: int | None = None) -> np.ndarray:
    """SignalRfft (int16): each frame of input_length samples -> its fft_length/2+1 bins, (re, im) interleaved."""
    x = np.asarray(x, np.int16).reshape(-1)
    n = input_length or x.size
    return np.concatenate([_rfft(x[i:i + n], fft_length).reshape(-1) for i in range(0, x.size, n)])


def energy(spectrum, start: int, end: int, out=None) -> np.ndarray:
    """SignalEnergy: re^2 + im^2 of bins [start, end) (uint32); the others keep `out`'s values (TFLM leaves
    them as its arena held them; edgec writes 0)."""
    s = np.asarray(spectrum, np.int64).reshape(-1, 2)
    y = np.zeros(s.shape[0], np.uint32) if out is None else np.array(out, np.uint32)
    y[start:end] = ((s[start:end, 0] ** 2 + s[start:end, 1] ** 2) & U32).astype(np.uint32)
    return y


def filter_bank(x, weights, unweights, freq_starts, weight_starts, widths, num_channels: int) -> np.ndarray:
    """SignalFilterBank: each channel's weighted sum of energies (uint64), its first neighbour's 1-w share carried
    into the next channel (TFLM's accumulate-and-discard-channel-0 order)."""
    x = [int(v) for v in np.asarray(x, np.uint32).reshape(-1)]
    w, u = np.asarray(weights, np.int64), np.asarray(unweights, np.int64)
    out, acc, uacc = [], 0, 0
    for i in range(num_channels + 1):
        f0, w0 = int(freq_starts[i]), int(weight_starts[i])
        for j in range(int(widths[i])):
            acc = (acc + (int(w[w0 + j]) & U64) * x[f0 + j]) & U64      # int16 * uint64 in uint64
            uacc = (uacc + (int(u[w0 + j]) & U64) * x[f0 + j]) & U64
        out.append(acc)
        acc, uacc = uacc, 0
    return np.array(out[1:], np.uint64)


def sqrt32(num: int) -> int:
    if num == 0:
        return 0
    res = 0
    top = (32 - msb(num)) | 1
    bit = 1 << (31 - top)
    for _ in range((31 - top) // 2 + 1):
        if num >= res + bit:
            num -= res + bit
            res = (res >> 1) + bit
        else:
            res >>= 1
        bit >>= 2
    return res + 1 if num > res and res != 0xFFFF else res


def sqrt64(num: int) -> int:
    if num >> 32 == 0:
        return sqrt32(num)
    res = 0
    top = (64 - num.bit_length()) | 1
    bit = 1 << (63 - top)
    for _ in range((63 - top) // 2 + 1):
        if num >= res + bit:
            num -= res + bit
            res = (res >> 1) + bit
        else:
            res >>= 1
        bit >>= 2
    return (res + 1 if num > res and res != 0xFFFFFFFF else res) & U32


def filter_bank_square_root(x, scale_bits: int) -> np.ndarray:
    """SignalFilterBankSquareRoot: sqrt of each uint64 sum (TFLM's rounding integer root) >> scale_bits."""
    return np.array([sqrt64(int(v)) >> int(scale_bits) for v in np.asarray(x, np.uint64)], np.uint32)


def spectral_subtraction(x, noise, p: dict) -> tuple[np.ndarray, np.ndarray]:
    """SignalFilterBankSpectralSubtraction: (output, the new noise estimate) from the input and the noise estimate
    the op keeps between invocations (its state)."""
    x = [int(v) for v in np.asarray(x, np.uint32)]
    noise = [int(v) for v in np.asarray(noise, np.uint32)]
    sb, ssb = int(p["smoothing_bits"]), int(p["spectral_subtraction_bits"])
    out = []
    for i, v in enumerate(x):
        s, oms = (p["smoothing"], p["one_minus_smoothing"]) if i % 2 == 0 else \
            (p["alternate_smoothing"], p["alternate_one_minus_smoothing"])
        s, oms = int(s) & U32, int(oms) & U32
        up = (v << sb) & U32
        noise[i] = ((up * s + noise[i] * oms) & U64) >> ssb & U32
        est = noise[i]
        if est > up:
            est = up
            if p["clamping"]:
                noise[i] = est
        floor = ((v * (int(p["min_signal_remaining"]) & U32)) & U64) >> ssb & U32
        sub = (up - est) >> sb
        out.append(max(sub, floor))
    return np.array(out, np.uint32), np.array(noise, np.uint32)


def _wide_dynamic(x: int, lut) -> int:
    if x <= 2:
        return int(lut[x])
    interval = msb(x)
    base = 4 * interval - 6
    frac = ((x << (11 - interval)) if interval < 11 else (x >> (interval - 11))) & 0x3FF
    r = _i32((int(lut[base + 2]) * frac) >> 5)
    r = _i32(r + _i32((int(lut[base + 1]) & U32) << 5))
    r = _i32(r * frac)
    r = _i32(r + (1 << 14)) >> 15
    r += int(lut[base])
    return int(np.int64(r).astype(np.int16))


def _i32(v: int) -> int:
    return ((v + (1 << 31)) & U32) - (1 << 31)


def _shrink(x: int) -> int:
    if x < (2 << PCAN_SNR_BITS):
        return ((x * x) & U32) >> (2 + 2 * PCAN_SNR_BITS - PCAN_OUTPUT_BITS)
    return ((x >> (PCAN_SNR_BITS - PCAN_OUTPUT_BITS)) - (1 << PCAN_OUTPUT_BITS)) & U32


def pcan(x, noise, gain_lut, snr_shift: int) -> np.ndarray:
    """SignalPCAN: per-channel automatic gain control of x from the noise estimate (gain from the wide-dynamic
    look-up table), then the shrink curve."""
    out = []
    for v, n in zip(np.asarray(x, np.uint32), np.asarray(noise, np.uint32)):
        gain = _wide_dynamic(int(n), gain_lut) & U32
        snr = ((int(v) * gain) & U64) >> int(snr_shift) & U32
        out.append(_shrink(snr))
    return np.array(out, np.uint32)


def log32(x: int, out_scale: int) -> int:
    integer = msb(x) - 1
    frac = x - (1 << integer)
    frac = _i32(frac << (16 - integer)) if integer < 16 else _i32(frac) >> (integer - 16)
    seg = (frac >> 9) & U32
    c0, c1 = int(LOG_LUT[seg]), int(LOG_LUT[seg + 1])
    rel = _i32((c1 - c0) * (frac - 512 * seg)) >> 16
    fraction = (frac + c0 + rel) & U32
    log2 = ((integer << 16) + fraction) & U32
    loge = ((45426 * log2 + 32768) & U64) >> 16 & U32
    return (((int(out_scale) & U32) * loge + 32768) & U32) >> 16


def filter_bank_log(x, output_scale: int, correction_bits: int) -> np.ndarray:
    """SignalFilterBankLog: output_scale * ln(x << correction_bits) in fixed point, saturated to int16."""
    out = []
    for v in np.asarray(x, np.uint32):
        s = (int(v) << int(correction_bits)) & U32
        out.append(min(log32(s, output_scale), 32767) if s > 1 else 0)
    return np.array(out, np.int16)
