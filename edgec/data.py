"""Calibration and test data: `.npz` files with `x` (N, *input shape without batch) and optional `y`."""
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


def _read_array(z: zipfile.ZipFile, path: Path, name: str, limit: int | None,
                sample_shape: tuple[int, ...] | None = None) -> tuple[np.ndarray, int | None]:
    """Array `name` of an open npz, its first `limit` rows only, and its length in the file (None: 0-d); its
    size checked (from the npy header) against the memory limit before anything is allocated; x's shape and
    dtype checked first."""
    with z.open(f"{name}.npy") as f:
        shape, fortran, dtype = _npy_header(f)
        if dtype.hasobject:
            raise EdgecError(f"{path}: {name} holds Python objects; save numbers with numpy.savez")
        if sample_shape is not None:
            if len(shape) == 0 or tuple(shape[1:]) != sample_shape:
                raise EdgecError(f"{path}: x has shape {list(shape)} but the model takes {[1, *sample_shape]}; "
                                 f"x must be (N, {', '.join(map(str, sample_shape))})")
            if shape[0] == 0:
                raise EdgecError(f"{path}: x holds no samples")
            if np.issubdtype(dtype, np.complexfloating) or not np.issubdtype(dtype, np.number):
                raise EdgecError(f"{path}: x has dtype {dtype}; it must hold real numbers (float32)")
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
