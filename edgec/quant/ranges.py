"""Range estimation: from the statistics of one tensor (min, max, histogram) to the range int8 covers.

Every method returns (lo, hi); quantize.qparams_from_range turns it into a scale and zero point
(asymmetric int8, 255 steps, 0 exactly representable).

- minmax:     the observed extremes.
- percentile: the P-th and (100-P)-th percentiles (clips rare outliers).
- entropy:    the TensorRT KL-divergence threshold (the clip whose 8-bit histogram loses the least
              information); on |x| with 128 levels for signed tensors, on x with 255 levels otherwise.
- mse:        the range minimising the expected squared quantization error (rounding + clipping),
              computed on the histogram for a grid of clipped ranges, with the real zero-point rounding.
"""
from __future__ import annotations

import numpy as np

METHODS = ("minmax", "percentile", "entropy", "mse")
BINS = 2048


def histogram(values: np.ndarray, lo: float, hi: float, bins: int = BINS) -> np.ndarray:
    """Counts of `values` in `bins` equal bins over [lo, hi] (hi - lo > 0)."""
    idx = ((values.reshape(-1) - lo) * (bins / (hi - lo))).astype(np.int64)
    np.clip(idx, 0, bins - 1, out=idx)
    return np.bincount(idx, minlength=bins).astype(np.int64)


def choose(method: str, lo: float, hi: float, hist: np.ndarray | None, percentile: float = 99.99) -> tuple[float, float]:
    """The range of one tensor by `method` from its observed [lo, hi] and histogram over [lo, hi]."""
    if method == "minmax" or hist is None or hi - lo <= 0 or hist.sum() == 0:
        return lo, hi
    if method == "percentile":
        return _percentile(lo, hi, hist, percentile)
    if method == "entropy":
        return _entropy(lo, hi, hist)
    if method == "mse":
        return _mse(lo, hi, hist)
    raise ValueError(f"unknown range method {method}")


def _edges(lo, hi, n):
    return lo + (hi - lo) * np.arange(n + 1) / n


def _percentile(lo, hi, hist, p):
    cdf = np.cumsum(hist) / hist.sum()
    edges = _edges(lo, hi, len(hist))
    top = edges[min(int(np.searchsorted(cdf, p / 100.0)) + 1, len(hist))]
    bottom = edges[int(np.searchsorted(cdf, 1.0 - p / 100.0))]
    new_lo = lo if lo >= 0 else min(float(bottom), 0.0)
    new_hi = hi if hi <= 0 else max(float(top), 0.0)
    return new_lo, new_hi


def _fold_abs(lo, hi, hist):
    """Histogram of |x| over [0, max(|lo|, |hi|)] from a histogram of x over [lo, hi]."""
    n = len(hist)
    centers = (_edges(lo, hi, n)[:-1] + _edges(lo, hi, n)[1:]) / 2
    top = max(abs(lo), abs(hi))
    return top, np.histogram(np.abs(centers), bins=n, range=(0.0, top), weights=hist)[0]


def _kl_threshold(hist: np.ndarray, levels: int, stride: int = 4) -> int:
    """TensorRT's entropy calibration: the number of bins to keep (the clip) with the least KL divergence."""
    hist = hist.astype(np.float64)
    n = len(hist)
    if n <= levels:
        return n
    best, best_i = np.inf, n
    for i in range(levels, n + 1, stride):
        ref = hist[:i].copy()
        ref[-1] += hist[i:].sum()
        nonzero = hist[:i] != 0
        # merge the i bins into `levels` groups, then spread each group's mass over its non-empty bins
        group = (np.arange(i) * levels) // i
        mass = np.bincount(group, weights=hist[:i], minlength=levels)
        count = np.bincount(group, weights=nonzero.astype(np.float64), minlength=levels)
        q = np.where(nonzero, mass[group] / np.maximum(count[group], 1), 0.0)
        p_sum, q_sum = ref.sum(), q.sum()
        if p_sum == 0 or q_sum == 0:
            continue
        p, qn = ref / p_sum, q / q_sum
        mask = p > 0
        with np.errstate(divide="ignore"):
            kl = float(np.sum(p[mask] * np.log(p[mask] / np.where(qn[mask] > 0, qn[mask], 1e-12))))
        if kl < best:
            best, best_i = kl, i
    return best_i


def _entropy(lo, hi, hist):
    if lo >= 0:
        hist = hist.copy()
        if lo == 0:
            hist[0] = 0  # the spike of exact zeros after a ReLU: zero is exact in int8, and it would dominate KL
        i = _kl_threshold(hist, 255)
        return lo, lo + (hi - lo) * i / len(hist)
    top, folded = _fold_abs(lo, hi, hist)
    t = top * _kl_threshold(folded, 128) / len(folded)
    return max(lo, -t), min(hi, t)


def _quant_error(centers, counts, los, his):
    """Expected squared error of quantizing values at `centers` (weights `counts`) for each candidate range."""
    los, his = np.minimum(los, 0.0), np.maximum(his, 0.0)   # as quantize.qparams_from_range
    scale = np.maximum(his - los, 1e-12) / 255.0
    zp = np.clip(np.round(-128 - los / scale), -128, 127)
    errs = np.empty(len(los))
    for k in range(0, len(los), 128):
        s, z = scale[k:k + 128, None], zp[k:k + 128, None]
        q = np.clip(np.round(centers / s) + z, -128, 127)
        errs[k:k + 128] = (((q - z) * s - centers) ** 2) @ counts
    return errs


def _mse(lo, hi, hist):
    n = len(hist)
    edges = _edges(lo, hi, n)
    centers = (edges[:-1] + edges[1:]) / 2
    keep = hist > 0
    centers, counts = centers[keep], hist[keep].astype(np.float64)
    grid = np.linspace(0.02, 1.0, 50)
    if lo >= 0 or hi <= 0:
        los = np.full(len(grid), lo) if lo >= 0 else lo * grid
        his = hi * grid if lo >= 0 else np.full(len(grid), hi)
    else:
        a, b = np.meshgrid(grid, grid, indexing="ij")
        los, his = lo * a.reshape(-1), hi * b.reshape(-1)
    k = int(np.argmin(_quant_error(centers, counts, los, his)))
    return float(los[k]), float(his[k])


# ---- minmax ranges from few samples ---------------------------------------------------------------------

def sample_extremes(prev: tuple | None, mins: np.ndarray, maxs: np.ndarray, size: int = 1) -> tuple:
    """Running summary of one value's per-sample minima and maxima, `prev` updated with more samples' (each of
    `size` numbers): (samples, lowest min, second-lowest min, highest min, highest max, second-highest max,
    lowest max, numbers per sample); with one sample, its extremes stand for the second ones too."""
    mins, maxs = np.asarray(mins, np.float64).reshape(-1), np.asarray(maxs, np.float64).reshape(-1)
    count = len(mins)
    if prev is not None:
        n, l1, l2, lw, h1, h2, hw, seen = prev
        count, size = count + n, max(size, seen)
        k = min(n, 3)                   # the samples prev's entries are (one sample's extremes stand for three)
        mins, maxs = np.concatenate([mins, [l1, l2, lw][:k]]), np.concatenate([maxs, [h1, h2, hw][:k]])
    lo_s, hi_s = np.sort(mins), np.sort(maxs)
    return (count, float(lo_s[0]), float(lo_s[min(1, count - 1)]), float(lo_s[-1]),
            float(hi_s[-1]), float(hi_s[max(-2, -count)]), float(hi_s[0]), int(size))


def unseen(lo: float, hi: float, spread: tuple | None) -> tuple[float, float]:
    """The minmax range [lo, hi] of n calibration samples widened, end by end, towards where the extremes of
    samples not seen lie, when that lowers the expected squared error of one such sample.

    A new sample passes the largest of n per-sample maxima with probability 1 / (n + 1), by about their mean
    spacing g = (largest - smallest) / (n - 1) (the uniform case's unbiased end point: max + g), on about one
    number: g^2 / (n + 1) of squared error saved. Widening by g costs each of the tensor's `size` numbers per
    sample the rounding error ((R + g)^2 - R^2) / (12 x 255^2), R the range. Widened only where the first is larger:
    a small tensor whose extremes vary between samples (a graph output, an MLP or recurrent state), not a feature
    map of thousands of numbers, where the clip of a few costs less than a coarser grid for all. (The jackknife's
    gap, (n - 1) / n x (largest - second largest), was measured too: one outlier sample makes it most of the range.)"""
    if spread is None or spread[0] < 2:
        return lo, hi
    n, l1, _, lw, h1, _, hw, size = spread

    def widen(gap: float) -> float:
        r = hi - lo
        return gap if gap * gap / (n + 1) > size * ((r + gap) ** 2 - r * r) / (12 * 255.0 ** 2) else 0.0
    return lo - widen((lw - l1) / (n - 1)), hi + widen((h1 - hw) / (n - 1))
