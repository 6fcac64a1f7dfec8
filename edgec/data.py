"""Calibration and test data: `.npz` files with `x` (N, *input shape without batch) and optional `y`; for a
model with several inputs or outputs, `x_<input name>` for each input and optional `y_<output name>`
(`load_named`: the inputs packed into one float vector per sample, edgec/ports.py)."""
from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgec.errors import EdgecError
from edgec.limits import check_bytes


@dataclass
class Dataset:
    x: np.ndarray              # float32 (N, *model input shape without batch)
    y: np.ndarray | None       # int64 (N,) labels, or None
    path: Path
    ys: dict[str, np.ndarray] | None = None   # several outputs: {output name: labels or targets}, those given


def load_dataset(path: str | Path, input_shape: tuple[int, ...], limit: int | None = None,
                 float_labels: bool = False) -> Dataset:
    """Read and check a data file against the model's input shape (batch dimension included).

    With float_labels, y may also be float targets shaped (N, ...) (regression, autoencoders)."""
    path = Path(path)
    if not path.is_file():
        raise EdgecError(f"{path}: no such data file (expected an .npz with an array 'x')")
    if limit is not None and limit < 1:
        raise EdgecError(f"--limit {limit}: the number of samples to use must be at least 1")
    want = tuple(input_shape[1:])
    try:
        with zipfile.ZipFile(path) as z:
            names = [n[:-4] for n in z.namelist() if n.endswith(".npy")]
            if "x" not in names:
                raise EdgecError(f"{path}: has no array 'x' (found: {', '.join(names) or 'nothing'}); "
                                 "save the samples as x with numpy.savez(path, x=..., y=...)")
            x, n = _read_array(z, path, "x", limit, want)   # only the arrays edgec uses, only the rows it uses
            y, ny = _read_array(z, path, "y", limit) if "y" in names else (None, None)
    except EdgecError:
        raise
    except Exception as exc:  # a damaged file fails in many ways (zip, zlib, the npy header's Python literal)
        raise EdgecError(f"{path}: not a readable .npz file ({exc}); save data with numpy.savez(path, x=..., y=...)") from None
    x = x.astype(np.float32)
    if not np.all(np.isfinite(x)):
        raise EdgecError(f"{path}: x contains NaN or Inf values")
    if y is not None and float_labels and np.issubdtype(y.dtype, np.floating):
        if ny != n or not np.all(np.isfinite(y)):
            raise EdgecError(f"{path}: y must hold {len(x)} finite targets, got {y.dtype} {list(y.shape)}")
        y = y.astype(np.float32)
    elif y is not None:
        if y.ndim != 1 or ny != n or not np.issubdtype(y.dtype, np.integer):
            raise EdgecError(f"{path}: y must be integer labels shaped ({len(x)},), got {y.dtype} {list(y.shape)}")
        y = y.astype(np.int64)
    return Dataset(x=x, y=y, path=path)


def load_named(path: str | Path, inputs: list[tuple[str, tuple[int, ...]]], outputs: list[str],
               limit: int | None = None, float_labels: bool = False) -> Dataset:
    """A data file of a model with several inputs or outputs: `x_<name>` (N, *shape without batch) for each
    input (x, for one input), `y_<name>` for the outputs that have labels or targets (y, for one output).
    Returns x packed (N, total): each input flattened, in the model's order."""
    path = Path(path)
    if not path.is_file():
        raise EdgecError(f"{path}: no such data file (expected an .npz with arrays "
                         f"{', '.join(_key('x', n, inputs) for n, _ in inputs)})")
    if limit is not None and limit < 1:
        raise EdgecError(f"--limit {limit}: the number of samples to use must be at least 1")
    parts, ys, n = [], {}, None
    try:
        with zipfile.ZipFile(path) as z:
            names = [m[:-4] for m in z.namelist() if m.endswith(".npy")]
            for name, shape in inputs:
                key = _key("x", name, inputs)
                if key not in names:
                    raise EdgecError(f"{path}: has no array '{key}' for the model input '{name}' (found: "
                                     f"{', '.join(names) or 'nothing'}); save one array per input: numpy.savez(path, "
                                     f"{', '.join(_key('x', m, inputs) + '=...' for m, _ in inputs)})")
                x, rows = _read_array(z, path, key, limit, tuple(shape[1:]), label=key)
                if n is not None and rows != n:
                    raise EdgecError(f"{path}: {key} has {rows} samples but {parts[0][0]} has {n}; every input "
                                     "array needs one row per sample")
                n = rows
                parts.append((key, x))
            for name in outputs:
                key = _key("y", name, [(o, ()) for o in outputs])
                if key in names:
                    y, ny = _read_array(z, path, key, limit)
                    if ny != n:
                        raise EdgecError(f"{path}: {key} has {ny} rows but the inputs have {n} samples")
                    ys[name] = _labels(path, key, y, float_labels)
    except EdgecError:
        raise
    except Exception as exc:  # a damaged file fails in many ways (zip, zlib, the npy header's Python literal)
        raise EdgecError(f"{path}: not a readable .npz file ({exc}); save data with numpy.savez") from None
    x = np.concatenate([a.astype(np.float32).reshape(len(a), -1) for _, a in parts], axis=1)
    bad = next((k for k, a in parts if not np.all(np.isfinite(a))), None)
    if bad is not None:
        raise EdgecError(f"{path}: {bad} contains NaN or Inf values")
    single = ys.get(outputs[0]) if len(outputs) == 1 else None
    return Dataset(x=x, y=single, path=path, ys=ys if len(outputs) > 1 else None)


def _key(prefix: str, name: str, ports: list) -> str:
    """The array of a port in a data file: x / y for the only one, x_<name> / y_<name> for one of several."""
    return prefix if len(ports) == 1 else f"{prefix}_{name}"


def _labels(path: Path, key: str, y: np.ndarray, float_labels: bool) -> np.ndarray:
    if float_labels and np.issubdtype(y.dtype, np.floating):
        if not np.all(np.isfinite(y)):
            raise EdgecError(f"{path}: {key} holds NaN or Inf targets")
        return y.astype(np.float32)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise EdgecError(f"{path}: {key} must be integer labels shaped (N,) or float targets, got {y.dtype} "
                         f"{list(y.shape)}")
    return y.astype(np.int64)


def _read_array(z: zipfile.ZipFile, path: Path, name: str, limit: int | None,
                sample_shape: tuple[int, ...] | None = None, label: str = "x") -> tuple[np.ndarray, int | None]:
    """Array `name` of an open npz, its first `limit` rows only, and its length in the file (None: 0-d); its
    size checked (from the npy header) against the memory limit before anything is allocated; x's shape and
    dtype checked first."""
    with z.open(f"{name}.npy") as f:
        shape, fortran, dtype = _npy_header(f)
        if dtype.hasobject:
            raise EdgecError(f"{path}: {name} holds Python objects; save numbers with numpy.savez")
        if sample_shape is not None:
            if len(shape) == 0 or tuple(shape[1:]) != sample_shape:
                raise EdgecError(f"{path}: {label} has shape {list(shape)} but the model takes {[1, *sample_shape]}; "
                                 f"{label} must be (N, {', '.join(map(str, sample_shape))})")
            if shape[0] == 0:
                raise EdgecError(f"{path}: {label} holds no samples")
            if np.issubdtype(dtype, np.complexfloating) or not np.issubdtype(dtype, np.number):
                raise EdgecError(f"{path}: {label} has dtype {dtype}; it must hold real numbers (float32)")
        scalar = len(shape) == 0
        if scalar:
            shape = (1,)
        rows = shape[0] if limit is None else min(shape[0], limit)
        row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        whole = fortran and len(shape) > 1           # column-major: the rows are not contiguous
        check_bytes((shape[0] if whole else rows) * row + rows * int(np.prod(shape[1:], dtype=np.int64)) * 4,
                    f"{path}: array {name} {list(shape)} {dtype}", "use --limit or a smaller data file")
        count = (shape[0] if whole else rows) * row
        buf = f.read(count)
        if len(buf) != count:
            raise EdgecError(f"{path}: {name} is truncated; save the data again with numpy.savez")
    a = np.frombuffer(buf, dtype)
    if scalar:
        return a.reshape(()), None
    if whole:
        return a.reshape(shape[::-1]).T[:rows], shape[0]
    return a.reshape((rows, *shape[1:])), shape[0]


class SampleStream:
    """The `x` of a data file read in batches, never the whole array at once (bounded memory).

    Works on `np.savez` and `np.savez_compressed` files by reading the `x.npy` member of the zip
    as a stream; `digest` is a content hash of the whole file (for caches keyed by data)."""

    def __init__(self, path: str | Path, input_shape: tuple[int, ...], limit: int | None = None):
        self.path = Path(path)
        self.sample_shape = tuple(input_shape[1:])
        if not self.path.is_file():
            raise EdgecError(f"{self.path}: no such data file (expected an .npz with an array 'x')")
        try:
            with zipfile.ZipFile(self.path) as z, z.open("x.npy") as f:
                shape, fortran, dtype = _npy_header(f)
        except KeyError:
            load_dataset(self.path, input_shape)  # raises the precise error (no 'x', ...)
            raise EdgecError(f"{self.path}: has no array 'x'") from None
        except EdgecError:
            raise
        except Exception as exc:  # damaged zip or npy header (its Python literal may not even parse)
            raise EdgecError(f"{self.path}: not a readable .npz file ({exc}); "
                             "save data with numpy.savez(path, x=..., y=...)") from None
        if tuple(shape[1:]) != self.sample_shape or len(shape) == 0:
            raise EdgecError(f"{self.path}: x has shape {list(shape)} but the model takes {list(input_shape)}; "
                             f"x must be (N, {', '.join(map(str, self.sample_shape))})")
        if np.issubdtype(dtype, np.complexfloating) or not np.issubdtype(dtype, np.number):
            raise EdgecError(f"{self.path}: x has dtype {dtype}; it must hold real numbers (float32)")
        if shape[0] == 0:
            raise EdgecError(f"{self.path}: x holds no samples")
        self.fortran, self.dtype = fortran, dtype
        self.n = int(shape[0]) if limit is None else min(int(shape[0]), limit)

    def batches(self, size: int):
        """Yield (start index, float32 array of up to `size` samples), in order."""
        if self.fortran:  # rare; cannot be streamed row by row
            x = load_dataset(self.path, (1,) + self.sample_shape).x[:self.n]
            for i in range(0, self.n, size):
                yield i, x[i:i + size]
            return
        row = int(np.prod(self.sample_shape, dtype=np.int64)) * self.dtype.itemsize
        with zipfile.ZipFile(self.path) as z, z.open("x.npy") as f:
            _npy_header(f)
            for i in range(0, self.n, size):
                k = min(size, self.n - i)
                try:
                    buf = f.read(k * row)
                except (OSError, zipfile.BadZipFile, zlib.error, EOFError) as exc:
                    raise EdgecError(f"{self.path}: damaged data file ({exc}, in samples {i}..{i + k - 1}); "
                                     "save the data again with numpy.savez(path, x=..., y=...)") from None
                if len(buf) != k * row:
                    raise EdgecError(f"{self.path}: x is truncated (sample {i + len(buf) // row} is incomplete)")
                x = np.frombuffer(buf, self.dtype).reshape((k,) + self.sample_shape).astype(np.float32)
                if not np.all(np.isfinite(x)):
                    raise EdgecError(f"{self.path}: x contains NaN or Inf values (in samples {i}..{i + k - 1})")
                yield i, x

    def digest(self) -> str:
        import hashlib

        h = hashlib.sha256()
        with open(self.path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        return f"{h.hexdigest()}:{self.n}"


def _npy_header(f):
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    return np.lib.format.read_array_header_2_0(f)


class LoadedStream:
    """SampleStream's interface over a data set already loaded (the packed inputs of a model with several)."""

    def __init__(self, data: Dataset, limit: int | None = None):
        self.x = data.x if limit is None else data.x[:limit]
        self.path, self.n = data.path, len(self.x)

    def batches(self, size: int):
        for i in range(0, self.n, size):
            yield i, self.x[i:i + size]

    def digest(self) -> str:
        return SampleStream.digest(self)
