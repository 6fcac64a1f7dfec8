"""Calibration and test data: `.npz` files with `x` (N, *input shape without batch) and optional `y`."""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import EdgecError


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
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
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
