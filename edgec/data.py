"""Calibration and test data: `.npz` files with `x` (N, *input shape without batch) and optional `y`."""
from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgec.errors import EdgecError


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
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception as exc:  # a damaged file fails in many ways (zip, zlib, the npy header's Python literal)
        raise EdgecError(f"{path}: not a readable .npz file ({exc}); save data with numpy.savez(path, x=..., y=...)") from None
    if "x" not in arrays:
        raise EdgecError(f"{path}: has no array 'x' (found: {', '.join(arrays) or 'nothing'}); "
                         "save the samples as x with numpy.savez(path, x=..., y=...)")
    x = arrays["x"]
    want = tuple(input_shape[1:])
    if x.shape[1:] != want:
        raise EdgecError(f"{path}: x has shape {list(x.shape)} but the model takes {list(input_shape)}; "
                         f"x must be (N, {', '.join(map(str, want))})")
    if len(x) == 0:
        raise EdgecError(f"{path}: x holds no samples")
    if not np.issubdtype(x.dtype, np.number):
        raise EdgecError(f"{path}: x has dtype {x.dtype}; it must hold numbers (float32)")
    x = x.astype(np.float32)
    if not np.all(np.isfinite(x)):
        raise EdgecError(f"{path}: x contains NaN or Inf values")
    y = arrays.get("y")
    if y is not None and float_labels and np.issubdtype(y.dtype, np.floating):
        if len(y) != len(x) or not np.all(np.isfinite(y)):
            raise EdgecError(f"{path}: y must hold {len(x)} finite targets, got {y.dtype} {list(y.shape)}")
        y = y.astype(np.float32)
    elif y is not None:
        if y.ndim != 1 or len(y) != len(x) or not np.issubdtype(y.dtype, np.integer):
            raise EdgecError(f"{path}: y must be integer labels shaped ({len(x)},), got {y.dtype} {list(y.shape)}")
        y = y.astype(np.int64)
    if limit is not None:
        x, y = x[:limit], (y[:limit] if y is not None else None)
    return Dataset(x=x, y=y, path=path)


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
        if not np.issubdtype(dtype, np.number):
            raise EdgecError(f"{self.path}: x has dtype {dtype}; it must hold numbers (float32)")
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
