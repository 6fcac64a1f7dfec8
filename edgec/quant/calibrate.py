"""Stage 3: run the float model over the calibration set and collect statistics of every value.

onnxruntime runs the original ONNX model with every intermediate value exposed as an output,
in batches when the model allows it (a copy with a dynamic batch dimension). The statistics are
streamed: pass 1 keeps each value's min and max, pass 2 (for the histogram methods) a fixed-size
histogram over [min, max]; neither keeps activations or the whole data set in memory. The last
few samples are held out (their histograms kept apart, their inputs and float outputs kept) so
that `auto` can judge the range methods on data they were not fitted to.

Statistics are cached in the folder the caller gives (Settings.calib_cache: ~/.cache/edgec/calib, or
$EDGEC_CACHE_DIR/calib), keyed by the model, the data file's content and the options that change them: a
rebuild does not recalibrate.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import onnx

from edgec import __version__
from edgec.frontend import opsets
from edgec.data import Samples
from edgec.errors import EdgecError
from edgec.frontend.loader import graph_inputs
from edgec.quant.ranges import BINS, choose, histogram, sample_extremes

Progress = Callable[[int, int], None]
STATS_FORMAT = 3        # in the cache key: entries written before `Stats.extremes` are not read
EXTREMES_SAMPLES = 64   # the first samples whose own min and max of every value are kept (Stats.extremes)


def float_session(model: onnx.ModelProto, outputs: Iterable[str] | None = None):
    """An onnxruntime session of `model`, optionally returning extra values too."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    if outputs is not None:
        known = {o.name for o in model.graph.output}
        types = {vi.name: vi for vi in model.graph.value_info}
        for name in outputs:
            if name not in known and name in types:
                model.graph.output.append(types[name])
                known.add(name)
    return _session(model)


def _session(model: onnx.ModelProto):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 4   # failures come back as exceptions (EdgecError); no log lines on stderr
    model = opsets.for_onnxruntime(model)    # onnxruntime may not run the newest IR version / opset yet
    try:
        return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ort_error(exc, "onnxruntime cannot load the float model") from None


def ort_error(exc: Exception, what: str) -> Exception:
    """An onnxruntime failure on the user's model as an EdgecError (other exceptions unchanged)."""
    if not type(exc).__module__.startswith("onnxruntime"):
        return exc
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    return EdgecError(f"{what} ({text}); check that the model runs in onnxruntime")


def batched_session(model: onnx.ModelProto, outputs: Iterable[str]):
    """A session of a copy of `model` with a dynamic batch dimension returning `outputs` too,
    or None when the model cannot run batches (e.g. a Reshape to a fixed [1, ...])."""
    if any(_unbatched(vi) for vi in graph_inputs(model)):
        return None
    m = onnx.ModelProto.FromString(model.SerializeToString())
    for inp in graph_inputs(m):
        inp.type.tensor_type.shape.dim[0].dim_param = "batch"
    del m.graph.value_info[:]
    names = list(dict.fromkeys([o.name for o in m.graph.output] + list(outputs)))
    del m.graph.output[:]
    m.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in names)
    try:
        return _session(m)
    except Exception:
        return None


def feeds(model: onnx.ModelProto, x: np.ndarray) -> dict[str, np.ndarray]:
    """_feeds, an integer input (nn.Embedding's token ids, int64 or int32) in its own type (the samples come as
    floats holding whole numbers)."""
    ints = {vi.name: onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type) for vi in graph_inputs(model)
            if vi.type.tensor_type.elem_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)}
    return {k: np.rint(v).astype(ints[k]) if k in ints else v for k, v in _feeds(model, x).items()}


def _feeds(model: onnx.ModelProto, x: np.ndarray) -> dict[str, np.ndarray]:
    """onnxruntime's feed for samples x (N, *input shape without batch); a model with several inputs takes
    them packed (N, total), each flattened in its ONNX layout, in the model's order (edgec/ports.py)."""
    inputs = graph_inputs(model)
    if len(inputs) == 1 and _unbatched(inputs[0]):    # a rank-1 input (no batch axis): one sample, the vector
        return {inputs[0].name: np.ascontiguousarray(x).reshape(_dims(inputs[0]))}
    if len(inputs) == 1:      # (packed too when the model has several outputs: back to the input's shape)
        shape = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim[1:]]
        fits = shape and all(d > 0 for d in shape) and x.ndim == 2 and x.shape[1] == int(np.prod(shape)) \
            and len(shape) > 1
        return {inputs[0].name: np.ascontiguousarray(x).reshape(len(x), *shape) if fits else x}
    out, start = {}, 0
    for vi in inputs:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim[1:]]
        size = int(np.prod(_dims(vi) if _unbatched(vi) else shape, dtype=np.int64))
        part = np.ascontiguousarray(x[:, start:start + size])
        out[vi.name] = part.reshape(_dims(vi)) if _unbatched(vi) else part.reshape(len(x), *shape)
        start += size
    return out


def _dims(vi: onnx.ValueInfoProto) -> list[int]:
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def _unbatched(vi: onnx.ValueInfoProto) -> bool:
    """A rank-1 input [n] (n > 1): one vector, no batch axis (edgec.ir.batched reads its samples as [1, n])."""
    dims = _dims(vi)
    return len(dims) == 1 and dims[0] > 1


def _packed_outputs(model: onnx.ModelProto, results: list[np.ndarray]) -> np.ndarray:
    """The model's output (one) or its outputs packed (several) from one batch's results."""
    if len(model.graph.output) == 1:
        o = results[0]
        if np.ndim(o) == 1 and np.size(o) > 1 and _unbatched(model.graph.output[0]):   # one vector, no batch axis
            return np.reshape(o, (1, -1))
        return np.reshape(o, (1,)) if np.ndim(o) == 0 else o    # rank 0: one per sample
    return np.concatenate([np.reshape(o, (1, -1) if np.ndim(o) == 1 and _unbatched(vi) else (len(o), -1))
                           for o, vi in zip(results, model.graph.output)], axis=1)


def run_float(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """Float outputs of the model for every sample of x (N, *input shape without batch; several inputs:
    packed); several outputs come packed (N, total)."""
    try:
        sess = float_session(model)
        outs = [_packed_outputs(model, sess.run(None, feeds(model, x[i:i + 1]))) for i in range(len(x))]
    except Exception as exc:      # onnxruntime refusing the user's model: one line (others unchanged)
        raise ort_error(exc, "the float model failed on the calibration data") from None
    return np.concatenate(outs)


def run_float_each(model: onnx.ModelProto, x: np.ndarray) -> list[dict[str, np.ndarray]]:
    """Float outputs of the model for every sample of x, as onnxruntime gives them ({output name: array}, any
    shape: a NonMaxSuppression's selection has as many rows as it selected)."""
    try:
        sess = float_session(model)
        names = [o.name for o in sess.get_outputs()]
        return [dict(zip(names, sess.run(None, feeds(model, x[i:i + 1])))) for i in range(len(x))]
    except Exception as exc:      # onnxruntime refusing the user's model: one line (others unchanged)
        raise ort_error(exc, "the float model failed on the test data") from None


def calibrate(model: onnx.ModelProto, x: np.ndarray, values: Iterable[str],
              progress: Progress | None = None) -> dict[str, tuple[float, float]]:
    """min/max of each named ONNX value over the calibration samples (in-memory x)."""
    stats = collect(model, _ArrayStream(x), values, histograms=False, holdout=0, progress=progress)
    return stats.ranges("minmax")


# ---- streaming statistics -------------------------------------------------------------------------

@dataclass
class Stats:
    """What calibration learned about every ONNX value, enough for every range method."""

    lo: dict[str, float]
    hi: dict[str, float]
    hist_fit: dict[str, np.ndarray] = field(default_factory=dict)    # samples [0, n - holdout)
    hist_hold: dict[str, np.ndarray] = field(default_factory=dict)   # the held-out samples
    holdout_x: np.ndarray | None = None
    holdout_y: np.ndarray | None = None                              # float model outputs of holdout_x
    samples: int = 0
    batch: int = 1
    spread: dict[str, tuple] = field(default_factory=dict)   # per-sample extremes (ranges.sample_extremes)
    extremes: dict[str, np.ndarray] = field(default_factory=dict)   # (k, 2): min, max of each of the first
                                                                    # EXTREMES_SAMPLES samples (cross-validation)
    with_histograms: bool = False
    seconds: float = 0.0
    cached: bool = False

    def ranges(self, method: str, percentile: float = 99.99, part: str = "all") -> dict[str, tuple[float, float]]:
        """{ONNX value: (lo, hi)} by `method`; part 'fit' leaves the held-out samples out."""
        out = {}
        for name in self.lo:
            hist = self.hist_fit.get(name)
            if part == "all" and name in self.hist_hold:
                hist = self.hist_hold[name] if hist is None else hist + self.hist_hold[name]
            out[name] = choose(method, self.lo[name], self.hi[name], hist, percentile)
        return out


class _ArrayStream:
    """Samples' interface (edgec/data.py) over an array already in memory."""

    def __init__(self, x: np.ndarray):
        self.x, self.n = np.asarray(x, np.float32), len(x)

    def batches(self, size):
        for i in range(0, self.n, size):
            yield i, self.x[i:i + size]

    def digest(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.x).tobytes()).hexdigest()


def collect(model: onnx.ModelProto, stream, values: Iterable[str], histograms: bool = True,
            holdout: int = 0, rescale: dict[str, tuple[int, np.ndarray]] | None = None, batch: int = 8,
            progress: Progress | None = None) -> Stats:
    """Statistics of the named ONNX values over every sample of `stream`.

    `rescale` {value: (axis, factors)} multiplies a value along an axis before it is observed (the
    channel scales of cross-layer equalization, which changes the canonical graph but not the ONNX one)."""
    t0 = time.monotonic()
    values = list(dict.fromkeys(values))
    n = stream.n
    holdout = min(holdout, n // 2)
    sess, size = _pick_session(model, values, stream, batch)
    names = [o.name for o in sess.get_outputs()]
    want = set(values)
    rescale = rescale or {}
    total = n * (2 if histograms else 1)
    done = 0

    def run(x):
        return dict(zip(names, sess.run(None, feeds(model, x)))) if size > 1 else \
            {k: np.concatenate(v) for k, v in _per_sample(sess, names, model, x).items()}

    def outputs(results):
        return _packed_outputs(model, [results[o.name] for o in model.graph.output])

    def observed(results, i):
        for name, r in results.items():
            if name in want:
                if name in rescale:
                    axis, f = rescale[name]
                    shape = [1] * r.ndim
                    shape[axis] = -1
                    r = r * f.reshape(shape).astype(np.float32)
                yield name, r

    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    spread: dict[str, tuple] = {}
    extremes: dict[str, list] = {}
    for i, x in stream.batches(size):
        results = run(x)
        results.update(feeds(model, x))
        for name, r in observed(results, i):
            rows = r.reshape(len(x), -1) if r.ndim and len(x) > 1 and len(r) == len(x) else r.reshape(1, -1)
            mins, maxs = rows.min(axis=1), rows.max(axis=1)       # per sample (batch 1: the batch is the sample)
            a, b = float(mins.min()), float(maxs.max())
            if not (np.isfinite(a) and np.isfinite(b)):
                raise EdgecError(f"calibration samples {i}..{i + len(x) - 1}: value '{name}' is not finite "
                                 "(NaN/Inf); check the calibration data and the model's weights")
            lo[name], hi[name] = min(lo.get(name, a), a), max(hi.get(name, b), b)
            spread[name] = sample_extremes(spread.get(name), mins, maxs, rows.shape[1])
            if i < EXTREMES_SAMPLES:
                per = np.stack([mins, maxs], axis=1) if len(mins) == len(x) else np.tile([[a, b]], (len(x), 1))
                extremes.setdefault(name, []).append(per[:EXTREMES_SAMPLES - i])
        done += len(x)
        if progress:
            progress(done, total)
    missing = [v for v in values if v not in lo]
    if missing:
        raise EdgecError(f"calibration could not observe values {missing[:5]}")
    stats = Stats(lo=lo, hi=hi, samples=n, batch=size, with_histograms=histograms, spread=spread,
                  extremes={k: np.concatenate(v).astype(np.float64) for k, v in extremes.items()})
    if histograms:
        held_x, held_y = [], []
        for i, x in stream.batches(size):
            results = run(x)
            split = max(0, min(len(x), n - holdout - i))     # rows before the held-out part
            if split < len(x):
                held_x.append(x[split:])
                held_y.append(outputs(results)[split:])
            results.update(feeds(model, x))
            for name, r in observed(results, i):
                if hi[name] - lo[name] <= 0:
                    continue
                for part, rows in ((stats.hist_fit, r[:split]), (stats.hist_hold, r[split:])):
                    if len(rows):
                        h = histogram(rows, lo[name], hi[name])
                        part[name] = part[name] + h if name in part else h
            done += len(x)
            if progress:
                progress(done, total)
        if held_x:
            stats.holdout_x, stats.holdout_y = np.concatenate(held_x), np.concatenate(held_y)
    stats.seconds = time.monotonic() - t0
    return stats


def _per_sample(sess, names, model, x):
    out: dict[str, list] = {k: [] for k in names}
    for j in range(len(x)):
        for k, r in zip(names, sess.run(None, feeds(model, x[j:j + 1]))):
            out[k].append(np.reshape(r, (1,)) if np.ndim(r) == 0 else r)    # a rank-0 value: one per sample
    return out


def _pick_session(model, values, stream, batch):
    """A batched session when the model runs batches and gives the same values as batch 1."""
    single = float_session(model, values)
    if batch <= 1 or stream.n < 2:
        return single, 1
    sess = batched_session(model, values)
    if sess is None:
        return single, 1
    _, x = next(iter(stream.batches(2)))
    import onnxruntime as ort
    quiet = ort.RunOptions()
    quiet.log_severity_level = 4       # a model that cannot run batches is expected: no error on stderr
    try:
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds(model, x), quiet)))
    except Exception:
        return single, 1
    names = [o.name for o in single.get_outputs()]
    for j in range(len(x)):
        for k, r in zip(names, single.run(None, feeds(model, x[j:j + 1]))):
            if k not in got or got[k].ndim == 0 or r.ndim == 0 or len(got[k]) != len(x) \
                    or got[k].shape[1:] != r.shape[1:] or \
                    not np.allclose(got[k][j:j + 1], r, rtol=1e-4, atol=1e-5):
                return single, 1
    return sess, batch


# ---- cache -----------------------------------------------------------------------------------------

def cache_key(model: onnx.ModelProto, data_digest: str, **options) -> str:
    h = hashlib.sha256()
    h.update(model.SerializeToString(deterministic=True))
    h.update(data_digest.encode())
    opts = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in options.items()}
    h.update(json.dumps({"edgec": __version__, "bins": BINS, "stats": STATS_FORMAT, **opts}, sort_keys=True,
                        default=_jsonable).encode())
    return h.hexdigest()[:24]


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, tuple):
        return list(v)
    raise TypeError(type(v))


def save_stats(stats: Stats, path: Path) -> None:
    names = list(stats.lo)
    arrays = {f"fit.{i}": stats.hist_fit[n] for i, n in enumerate(names) if n in stats.hist_fit}
    arrays.update({f"hold.{i}": stats.hist_hold[n] for i, n in enumerate(names) if n in stats.hist_hold})
    arrays.update({f"ext.{i}": stats.extremes[n] for i, n in enumerate(names) if n in stats.extremes})
    if stats.holdout_x is not None:
        arrays.update(holdout_x=stats.holdout_x, holdout_y=stats.holdout_y)
    meta = {"names": names, "lo": [stats.lo[n] for n in names], "hi": [stats.hi[n] for n in names],
            "samples": stats.samples, "batch": stats.batch, "seconds": stats.seconds,
            "with_histograms": stats.with_histograms, "spread": [stats.spread.get(n) for n in names]}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp.npz", dir=path.parent)   # one per writer
    os.close(fd)                                                                             # (threads too)
    tmp = Path(name)
    try:
        np.savez(tmp, meta=np.array(json.dumps(meta)), **arrays)
        tmp.replace(path)
    except BaseException:         # full disk, Ctrl-C, SIGTERM: no half-written file left in the cache
        tmp.unlink(missing_ok=True)
        raise


def load_stats(path: Path) -> Stats | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            names = meta["names"]
            if len(meta.get("spread", names)) != len(names):
                return None
            stats = Stats(lo=dict(zip(names, meta["lo"])), hi=dict(zip(names, meta["hi"])),
                          samples=meta["samples"], batch=meta["batch"], seconds=meta["seconds"], cached=True,
                          with_histograms=meta["with_histograms"],
                          spread={n: tuple(v) for n, v in zip(names, meta.get("spread", [])) if v is not None})
            for i, n in enumerate(names):
                if f"fit.{i}" in z.files:
                    stats.hist_fit[n] = z[f"fit.{i}"]
                if f"hold.{i}" in z.files:
                    stats.hist_hold[n] = z[f"hold.{i}"]
                if f"ext.{i}" in z.files:
                    stats.extremes[n] = z[f"ext.{i}"]
            if "holdout_x" in z.files:
                stats.holdout_x, stats.holdout_y = z["holdout_x"], z["holdout_y"]
        return stats if _sound(stats, names) else None
    except Exception:       # truncated, empty or foreign: a zip, zlib, npy or JSON error of any kind
        return None


def _sound(stats: Stats, names) -> bool:
    """What a cache entry says is what `collect` writes (an edited or foreign entry is discarded, not used:
    ranges that are not numbers crashed the build, inverted or NaN ones made a model or an error that blamed
    the calibration data): names, finite ranges lo <= hi, counts, histograms of BINS counts, hold-out rows."""
    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)
            and len(stats.lo) == len(stats.hi) == len(names)):
        return False
    if not all(number(stats.lo[n]) and number(stats.hi[n]) and stats.lo[n] <= stats.hi[n] for n in names):
        return False
    if not (isinstance(stats.samples, int) and isinstance(stats.batch, int) and stats.samples >= 0
            and stats.batch >= 1 and number(stats.seconds) and isinstance(stats.with_histograms, bool)):
        return False
    if not all(isinstance(v, tuple) and len(v) == 8 and isinstance(v[0], int) and v[0] >= 1 and
               all(number(e) for e in v[1:7]) and isinstance(v[7], int) and v[7] >= 1 for v in stats.spread.values()):
        return False
    if not all(e.ndim == 2 and e.shape[1] == 2 and e.dtype.kind == "f" and np.isfinite(e).all()
               for e in stats.extremes.values()):
        return False
    for h in (*stats.hist_fit.values(), *stats.hist_hold.values()):
        if h.shape != (BINS,) or h.dtype.kind not in "iu" or (h < 0).any():
            return False
    x, y = stats.holdout_x, stats.holdout_y
    if x is not None and (y is None or x.dtype.kind != "f" or y.dtype.kind != "f" or not x.ndim or not y.ndim
                          or len(x) != len(y) or not np.isfinite(x).all()):
        return False
    return True


def collect_cached(model: onnx.ModelProto, stream: Samples, values: Iterable[str], histograms: bool,
                   holdout: int, rescale=None, cache_dir: Path | None = None, progress: Progress | None = None,
                   log: Callable[[str], None] | None = None) -> Stats:
    """`collect`, reusing the statistics of an earlier run on the same model, data and options kept in
    cache_dir (None: no cache)."""
    values = sorted(set(values))
    path = None
    if cache_dir is not None:
        key = cache_key(model, stream.digest(), values=values, holdout=holdout,
                        rescale={k: [a, f] for k, (a, f) in sorted((rescale or {}).items())})
        path = Path(cache_dir) / f"{key}.npz"
        cached = load_stats(path) if path.is_file() else None
        if cached is not None and not set(values) <= set(cached.lo):
            cached = None            # not the statistics asked for (another model's entry put here): discarded
        if cached is None and path.is_file():       # a damaged entry (edgec's own file): discard, recompute
            if log:
                log(f"warning: the calibration cache entry {path} is damaged; calibrating again")
            path.unlink(missing_ok=True)
        if cached is not None and (cached.with_histograms or not histograms):
            if log:
                log(f"calibration statistics from the cache ({path})")
            return cached
    try:
        stats = collect(model, stream, values, histograms=histograms, holdout=holdout, rescale=rescale,
                        progress=progress)
    except Exception as exc:
        raise ort_error(exc, "the float model failed on the calibration data") from None
    if path is not None:
        try:
            save_stats(stats, path)
        except OSError as exc:
            if log:
                log(f"warning: could not write the calibration cache {path} ({exc})")
    return stats
