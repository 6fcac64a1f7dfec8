"""The int16 real FFT of TFLite Micro's SignalRfft: KISS FFT built with FIXED_POINT=16 (kiss_fftr over a complex
FFT of half the length), as NumPy integer arithmetic performing the same int16/int32 operations in the same
order, so its outputs are TFLM's bit for bit. Written from KISS FFT's documented fixed-point scheme (Q15
twiddles rounded as floor(0.5 + 32767 cos(phase)), every butterfly input divided by its radix with rounding,
int16 wrap-around on stores); the C kernel (runtime_c/edgec_signal.c) runs the same steps on the tables made
here.
"""
from __future__ import annotations

import math

import numpy as np

SAMP_MAX = 32767
FRACBITS = 15


def factors(n: int) -> list[tuple[int, int]]:
    """KISS FFT's factorization of a complex FFT length: radix 4 first, then 2, then odd radices; [(p, m)]."""
    out, p, root = [], 4, math.floor(math.sqrt(n))
    while n > 1:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > root:
                p = n
        n //= p
        out.append((p, n))
    return out


def supported(fft_length: int) -> bool:
    """Lengths edgec runs: a power of two from 8 (radix-4 and radix-2 butterflies only)."""
    return fft_length >= 8 and fft_length & (fft_length - 1) == 0


def _cexp(phase: float) -> tuple[int, int]:
    return (int(math.floor(0.5 + SAMP_MAX * math.cos(phase))), int(math.floor(0.5 + SAMP_MAX * math.sin(phase))))


def twiddles(fft_length: int) -> np.ndarray:
    """The complex FFT's twiddles (ncfft = fft_length / 2 of them) [ncfft, 2] int16, as kiss_fft_alloc makes them."""
    n = fft_length // 2
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    return np.array([_cexp(-2 * pi * i / n) for i in range(n)], np.int16).reshape(n, 2)


def super_twiddles(fft_length: int) -> np.ndarray:
    """kiss_fftr's twiddles of the real split [ncfft / 2, 2] int16."""
    n = fft_length // 2
    return np.array([_cexp(-3.14159265358979323846264338327 * ((i + 1) / n + .5)) for i in range(n // 2)],
                    np.int16).reshape(-1, 2)


def _s16(x):
    """A store into int16 (two's complement wrap-around, as the C compilers edgec targets do)."""
    return ((np.asarray(x, np.int64) + 32768) & 0xFFFF) - 32768


def _sround(x):
    return _s16((np.asarray(x, np.int64) + (1 << (FRACBITS - 1))) >> FRACBITS)


def _fixdiv(re, im, k: int):
    d = SAMP_MAX // k
    return _sround(re * d), _sround(im * d)


def _cmul(ar, ai, br, bi):
    return _sround(ar * br - ai * bi), _sround(ar * bi + ai * br)


def _bfly2(re, im, m, tw, fstride):
    k = np.arange(m)
    t = tw[k * fstride].astype(np.int64)
    r0, i0 = _fixdiv(re[..., :m], im[..., :m], 2)
    r1, i1 = _fixdiv(re[..., m:2 * m], im[..., m:2 * m], 2)
    tr, ti = _cmul(r1, i1, t[:, 0], t[:, 1])
    return np.concatenate([_s16(r0 + tr), _s16(r0 - tr)], -1), np.concatenate([_s16(i0 + ti), _s16(i0 - ti)], -1)


def _bfly4(re, im, m, tw, fstride):
    k = np.arange(m)
    t1, t2, t3 = (tw[k * fstride * j].astype(np.int64) for j in (1, 2, 3))
    f = [_fixdiv(re[..., j * m:(j + 1) * m], im[..., j * m:(j + 1) * m], 4) for j in range(4)]
    s0 = _cmul(*f[1], t1[:, 0], t1[:, 1])
    s1 = _cmul(*f[2], t2[:, 0], t2[:, 1])
    s2 = _cmul(*f[3], t3[:, 0], t3[:, 1])
    s5 = (_s16(f[0][0] - s1[0]), _s16(f[0][1] - s1[1]))
    f0 = (_s16(f[0][0] + s1[0]), _s16(f[0][1] + s1[1]))
    s3 = (_s16(s0[0] + s2[0]), _s16(s0[1] + s2[1]))
    s4 = (_s16(s0[0] - s2[0]), _s16(s0[1] - s2[1]))
    o2 = (_s16(f0[0] - s3[0]), _s16(f0[1] - s3[1]))
    o0 = (_s16(f0[0] + s3[0]), _s16(f0[1] + s3[1]))
    o1 = (_s16(s5[0] + s4[1]), _s16(s5[1] - s4[0]))
    o3 = (_s16(s5[0] - s4[1]), _s16(s5[1] + s4[0]))
    return np.concatenate([o0[0], o1[0], o2[0], o3[0]], -1), np.concatenate([o0[1], o1[1], o2[1], o3[1]], -1)


def _work(re, im, fstride, stages, tw, butterflies=None):
    """kf_work: the DFTs of the sequences (re, im) [batch, p * m] (already strided), by the remaining (radix, m)
    stages; the p interleaved sub-sequences of every row are transformed together, as one batch (the same
    integer operations as KISS FFT's recursion, all sub-transforms of a stage in one NumPy step)."""
    butterflies = butterflies or {4: _bfly4, 2: _bfly2}
    p, m = stages[0]
    if p not in butterflies:
        raise ValueError(f"radix {p}: edgec's KISS FFT twin takes radix 4 and 2 (power-of-two lengths)")
    if m == 1:
        ore, oim = re[..., :p].copy(), im[..., :p].copy()
    else:
        b = re.shape[0]
        sub = (re.reshape(b, m, p).transpose(0, 2, 1).reshape(b * p, m),
               im.reshape(b, m, p).transpose(0, 2, 1).reshape(b * p, m))
        ore, oim = _work(*sub, fstride * p, stages[1:], tw, butterflies)
        ore, oim = ore.reshape(b, p * m), oim.reshape(b, p * m)
    return butterflies[p](ore, oim, m, tw, fstride)


def rfft(x, fft_length: int) -> np.ndarray:
    """SignalRfft of one int16 frame x (zero-padded to fft_length): [fft_length / 2 + 1, 2] int16 (re, im)."""
    n = fft_length // 2
    frame = np.zeros(fft_length, np.int64)
    x = np.asarray(x, np.int64).reshape(-1)
    frame[:x.size] = x
    tw = twiddles(fft_length).astype(np.int64)
    re, im = (a[0] for a in _work(frame[None, 0::2], frame[None, 1::2], 1, factors(n), tw))
    out = np.zeros((n + 1, 2), np.int64)
    dr, di = _fixdiv(re[0], im[0], 2)
    out[0, 0], out[n, 0] = _s16(dr + di), _s16(dr - di)
    k = np.arange(1, n // 2 + 1)
    st = super_twiddles(fft_length).astype(np.int64)
    pr, pi_ = _fixdiv(re[k], im[k], 2)
    nr, ni = _fixdiv(re[n - k], _s16(-im[n - k]), 2)
    f1r, f1i = _s16(pr + nr), _s16(pi_ + ni)
    f2r, f2i = _s16(pr - nr), _s16(pi_ - ni)
    twr, twi = _cmul(f2r, f2i, st[k - 1, 0], st[k - 1, 1])
    out[k, 0], out[k, 1] = _s16((f1r + twr) >> 1), _s16((f1i + twi) >> 1)
    out[n - k, 0], out[n - k, 1] = _s16((f1r - twr) >> 1), _s16((twi - f1i) >> 1)
    return out.astype(np.int16)


def _inverse_twiddles(fft_length: int) -> tuple[np.ndarray, np.ndarray]:
    """kiss_fftr_alloc(inverse=1)'s tables: the phases negated."""
    n = fft_length // 2
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    tw = np.array([_cexp(2 * pi * i / n) for i in range(n)], np.int16).reshape(n, 2)
    st = np.array([_cexp(3.14159265358979323846264338327 * ((i + 1) / n + .5)) for i in range(n // 2)],
                  np.int16).reshape(-1, 2)
    return tw, st


def inverse_twiddles(fft_length: int) -> np.ndarray:
    return _inverse_twiddles(fft_length)[0]


def inverse_super_twiddles(fft_length: int) -> np.ndarray:
    return _inverse_twiddles(fft_length)[1]


def _ibfly4(re, im, m, tw, fstride):
    """kf_bfly4 of an inverse transform (its +i rotation)."""
    k = np.arange(m)
    t1, t2, t3 = (tw[k * fstride * j].astype(np.int64) for j in (1, 2, 3))
    f = [_fixdiv(re[..., j * m:(j + 1) * m], im[..., j * m:(j + 1) * m], 4) for j in range(4)]
    s0, s1, s2 = _cmul(*f[1], t1[:, 0], t1[:, 1]), _cmul(*f[2], t2[:, 0], t2[:, 1]), _cmul(*f[3], t3[:, 0], t3[:, 1])
    s5 = (_s16(f[0][0] - s1[0]), _s16(f[0][1] - s1[1]))
    f0 = (_s16(f[0][0] + s1[0]), _s16(f[0][1] + s1[1]))
    s3 = (_s16(s0[0] + s2[0]), _s16(s0[1] + s2[1]))
    s4 = (_s16(s0[0] - s2[0]), _s16(s0[1] - s2[1]))
    o2 = (_s16(f0[0] - s3[0]), _s16(f0[1] - s3[1]))
    o0 = (_s16(f0[0] + s3[0]), _s16(f0[1] + s3[1]))
    o1 = (_s16(s5[0] - s4[1]), _s16(s5[1] + s4[0]))
    o3 = (_s16(s5[0] + s4[1]), _s16(s5[1] - s4[0]))
    return np.concatenate([o0[0], o1[0], o2[0], o3[0]], -1), np.concatenate([o0[1], o1[1], o2[1], o3[1]], -1)


def _iwork(re, im, fstride, stages, tw):
    return _work(re, im, fstride, stages, tw, {4: _ibfly4, 2: _bfly2})


def irfft(spectrum, fft_length: int) -> np.ndarray:
    """SignalIrfft (int16) of one spectrum [fft_length / 2 + 1, 2] (re, im): kiss_fftri, fft_length samples."""
    n = fft_length // 2
    s = np.asarray(spectrum, np.int64).reshape(-1, 2)
    tw, st = (a.astype(np.int64) for a in _inverse_twiddles(fft_length))
    re, im = np.zeros(n, np.int64), np.zeros(n, np.int64)
    re[0], im[0] = _fixdiv(_s16(s[0, 0] + s[n, 0]), _s16(s[0, 0] - s[n, 0]), 2)
    k = np.arange(1, n // 2 + 1)
    fr, fi = _fixdiv(s[k, 0], s[k, 1], 2)
    nr, ni = _fixdiv(s[n - k, 0], _s16(-s[n - k, 1]), 2)
    er, ei = _s16(fr + nr), _s16(fi + ni)
    tr, ti = _s16(fr - nr), _s16(fi - ni)
    ofr, ofi = _cmul(tr, ti, st[k - 1, 0], st[k - 1, 1])
    re[k], im[k] = _s16(er + ofr), _s16(ei + ofi)
    re[n - k], im[n - k] = _s16(er - ofr), _s16(-_s16(ei - ofi))
    ore, oim = (a[0] for a in _iwork(re[None], im[None], 1, factors(n), tw))
    out = np.empty(fft_length, np.int64)
    out[0::2], out[1::2] = ore, oim
    return out.astype(np.int16)
