"""Calibration and test data: `.npz` files with `x` (N, *input shape without batch) and optional `y`; for a
model with several inputs or outputs, `x_<input name>` for each input and optional `y_<output name>`
(`load_named`: the inputs packed into one float vector per sample, edgec/ports.py).

Test data is loaded (`load_dataset`, `load_named`: the rows asked for); calibration samples are opened once
(`open_samples`, `open_named_samples`): a `Samples` object holds the open file and streams batches from it
for every pass a build makes over them (statistics, cache key, the first few for the checks that need
them). Every array's size is checked against the memory limit (edgec/limits.py; the caller's Settings)
before it is allocated."""
from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from edgec.errors import EdgecError
from edgec.limits import DEFAULT as DEFAULT_MEMORY_LIMIT, check_bytes


@dataclass
class Dataset:
    x: np.ndarray              # float32 (N, *model input shape without batch)
    y: np.ndarray | None       # int64 (N,) labels, or None
    path: Path
    ys: dict[str, np.ndarray] | None = None   # several outputs: {output name: labels or targets}, those given


def _open(path: Path) -> BinaryIO:
    """The one place a data file is opened (tests count the calls)."""
    return open(path, "rb")


def load_dataset(path: str | Path, input_shape: tuple[int, ...], limit: int | None = None,
                 float_labels: bool = False, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Dataset:
    """Read and check a data file against the model's input shape (batch dimension included).

    With float_labels, y may also be float targets shaped (N, ...) (regression, autoencoders)."""
    path = Path(path)
    if not path.is_file():
        raise EdgecError(f"{path}: no such data file (expected an .npz with an array 'x')")
    if limit is not None and limit < 1:
        raise EdgecError(f"--limit {limit}: the number of samples to use must be at least 1")
    try:
        with _open(path) as f, zipfile.ZipFile(f) as z:
            names = _names(z)
            if "x" not in names:
                raise _no_x(path, names)
            # only the arrays edgec uses, only the rows it uses
            x, n = read_array(z, path, "x", limit, tuple(input_shape[1:]), memory_limit=memory_limit)
            y, ny = read_array(z, path, "y", limit, memory_limit=memory_limit) if "y" in names else (None, None)
    except EdgecError:
        raise
    except Exception as exc:  # a damaged file fails in many ways (zip, zlib, the npy header's Python literal)
        raise _unreadable(path, exc) from None
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
               limit: int | None = None, float_labels: bool = False,
               memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Dataset:
    """A data file of a model with several inputs or outputs: `x_<name>` (N, *shape without batch) for each
    input (x, for one input), `y_<name>` for the outputs that have labels or targets (y, for one output).
    Returns x packed (N, total): each input flattened, in the model's order."""
    path = Path(path)
    if not path.is_file():
        raise EdgecError(f"{path}: no such data file (expected an .npz with arrays "
                         f"{', '.join(_key('x', n, inputs) for n, _ in inputs)})")
    if limit is not None and limit < 1:
        raise EdgecError(f"--limit {limit}: the number of samples to use must be at least 1")
    with _open(path) as f:
        return _load_named(path, f, inputs, outputs, limit, float_labels, memory_limit)


def _load_named(path: Path, f: BinaryIO, inputs, outputs, limit, float_labels, memory_limit) -> Dataset:
    """load_named on the file already open as f."""
    parts, ys, n = [], {}, None
    try:
        with zipfile.ZipFile(f) as z:
            names = _names(z)
            for name, shape in inputs:
                key = _key("x", name, inputs)
                if key not in names:
                    raise EdgecError(f"{path}: has no array '{key}' for the model input '{name}' (found: "
                                     f"{', '.join(names) or 'nothing'}); save one array per input: numpy.savez(path, "
                                     f"{', '.join(_key('x', m, inputs) + '=...' for m, _ in inputs)})")
                x, rows = read_array(z, path, key, limit, tuple(shape[1:]), label=key, memory_limit=memory_limit)
                if n is not None and rows != n:
                    raise EdgecError(f"{path}: {key} has {rows} samples but {parts[0][0]} has {n}; every input "
                                     "array needs one row per sample")
                n = rows
                parts.append((key, x))
            for name in outputs:
                key = _key("y", name, [(o, ()) for o in outputs])
                if key in names:
                    y, ny = read_array(z, path, key, limit, memory_limit=memory_limit)
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


def split_file(path: str | Path, parts: int, folder: Path, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list[Path]:
    """The data file cut into `parts` consecutive .npz files in `folder`: only its sample arrays (x, y, and
    x_<input> / y_<output> of a model with several), each read with its size checked against the memory limit
    before anything is allocated (a junk array is never read)."""
    path = Path(path)
    try:
        with _open(path) as f, zipfile.ZipFile(f) as z:
            names = [n for n in _names(z) if n in ("x", "y") or n.startswith(("x_", "y_"))]
            if not any(n == "x" or n.startswith("x_") for n in names):
                raise _no_x(path, _names(z))
            arrays = {}
            for n in names:
                a, rows = read_array(z, path, n, None, memory_limit=memory_limit)
                if rows is None:
                    raise EdgecError(f"{path}: {n} is a single number, not one row per sample")
                arrays[n] = a
    except EdgecError:
        raise
    except Exception as exc:  # a damaged file fails in many ways (zip, zlib, the npy header's Python literal)
        raise _unreadable(path, exc) from None
    rows = {len(a) for a in arrays.values()}
    if len(rows) != 1:
        raise EdgecError(f"{path}: its arrays ({', '.join(arrays)}) have different numbers of rows; every array "
                         "needs one row per sample")
    n = rows.pop()
    if n < parts:
        raise EdgecError(f"{path}: {n} samples cannot be split over {parts} units; give more data or fewer units")
    bounds = np.linspace(0, n, parts + 1).astype(int)
    out = []
    for i in range(parts):
        p = Path(folder) / f"part{i}.npz"
        np.savez(p, **{k: v[bounds[i]:bounds[i + 1]] for k, v in arrays.items()})
        out.append(p)
    return out


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


def _names(z: zipfile.ZipFile) -> list[str]:
    return [m[:-4] for m in z.namelist() if m.endswith(".npy")]


def _no_x(path: Path, names: list[str]) -> EdgecError:
    return EdgecError(f"{path}: has no array 'x' (found: {', '.join(names) or 'nothing'}); "
                      "save the samples as x with numpy.savez(path, x=..., y=...)")


def _unreadable(path: Path, exc: Exception) -> EdgecError:
    return EdgecError(f"{path}: not a readable .npz file ({exc}); save data with numpy.savez(path, x=..., y=...)")


def one_value_rows(shape: tuple[int, ...], sample_shape: tuple[int, ...]) -> tuple[int, ...]:
    """A 1-D array (N,) of samples that are one value each (a model taking [1, 1], hello_world's) read as
    (N, *sample_shape): the same bytes."""
    if len(shape) == 1 and sample_shape and int(np.prod(sample_shape, dtype=np.int64)) == 1:
        return (shape[0], *sample_shape)
    return tuple(shape)


def read_array(z: zipfile.ZipFile, path: Path, name: str, limit: int | None,
                sample_shape: tuple[int, ...] | None = None, label: str = "x",
                memory_limit: int = DEFAULT_MEMORY_LIMIT) -> tuple[np.ndarray, int | None]:
    """Array `name` of an open npz, its first `limit` rows only, and its length in the file (None: 0-d); its
    size checked (from the npy header) against the memory limit before anything is allocated; x's shape and
    dtype checked first."""
    with z.open(f"{name}.npy") as f:
        shape, fortran, dtype = _npy_header(f)
        if dtype.hasobject:
            raise EdgecError(f"{path}: {name} holds Python objects; save numbers with numpy.savez")
        if sample_shape is not None:
            shape = one_value_rows(shape, sample_shape)
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
                    f"{path}: array {name} {list(shape)} {dtype}", "use --limit or a smaller data file", memory_limit)
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


class Samples:
    """The calibration samples of one data file, the file opened once: their count (`n`), batches in order
    (`batches`), the first few (`first`), the first n as samples of their own (`head`: the fit part when the
    rest is held out), the labels (`labels`) and a content digest (`digest`, for caches keyed by data), all
    read from the one open file. With one input, `x` is streamed from the `.npy` member of the zip (np.savez
    and np.savez_compressed alike) a batch at a time, never whole (bounded memory); a column-major `x` and the
    packed inputs of a model with several are loaded, as their rows cannot be streamed. Use it as a context
    manager (or `close()` it); `head` shares the file."""

    def __init__(self, path: Path, file: BinaryIO, archive: zipfile.ZipFile, n: int, sample_shape: tuple[int, ...],
                 dtype=None, loaded: np.ndarray | None = None, memory_limit: int = DEFAULT_MEMORY_LIMIT):
        self.path, self.n, self.sample_shape = path, n, sample_shape
        self._file, self._zip, self._dtype, self._loaded = file, archive, dtype, loaded
        self.memory_limit = memory_limit
        self._owner: Samples = self
        self._digest: str | None = None

    def batches(self, size: int):
        """Yield (start index, float32 array of up to `size` samples), in order."""
        if self._loaded is not None:
            for i in range(0, self.n, size):
                yield i, self._loaded[i:i + size]
            return
        row = int(np.prod(self.sample_shape, dtype=np.int64)) * self._dtype.itemsize
        with self._zip.open("x.npy") as f:      # a member of the open file: nothing is opened again
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
                x = np.frombuffer(buf, self._dtype).reshape((k,) + self.sample_shape).astype(np.float32)
                if not np.all(np.isfinite(x)):
                    raise EdgecError(f"{self.path}: x contains NaN or Inf values (in samples {i}..{i + k - 1})")
                yield i, x

    def first(self, n: int) -> np.ndarray:
        """The first n samples (all of them when there are fewer)."""
        _, x = next(iter(self.batches(n)))
        return x

    def head(self, n: int) -> Samples:
        """The first n samples (the rest held out), reading the same open file."""
        part = Samples(self.path, self._file, self._zip, min(self.n, n), self.sample_shape, self._dtype,
                       self._loaded, self.memory_limit)
        part._owner = self._owner
        return part

    def labels(self) -> np.ndarray | None:
        """The file's integer labels `y` (int64, one per sample of the file), None when it has none; an
        EdgecError when y is not one integer label per sample of x."""
        if "y" not in _names(self._zip) or "x" not in _names(self._zip):     # (several inputs: x_<name>)
            return None
        try:
            with self._zip.open("x.npy") as f:
                rows = _npy_header(f)[0][0]
            y, ny = read_array(self._zip, self.path, "y", None, memory_limit=self.memory_limit)
        except EdgecError:
            raise
        except Exception as exc:
            raise _unreadable(self.path, exc) from None
        if y.ndim != 1 or ny != rows or not np.issubdtype(y.dtype, np.integer):
            raise EdgecError(f"{self.path}: y must be integer labels shaped ({rows},), got {y.dtype} {list(y.shape)}")
        return y.astype(np.int64)

    def digest(self) -> str:
        """A content hash of the whole file and the number of samples used (read once, from the open file)."""
        owner = self._owner
        if owner._digest is None:
            import hashlib

            h = hashlib.sha256()
            owner._file.seek(0)
            for block in iter(lambda: owner._file.read(1 << 22), b""):
                h.update(block)
            owner._digest = h.hexdigest()
        return f"{owner._digest}:{self.n}"

    def close(self) -> None:
        if self._owner is self:
            self._zip.close()
            self._file.close()

    def __enter__(self) -> Samples:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_samples(path: str | Path, input_shape: tuple[int, ...],
                 memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Samples:
    """The calibration samples `x` of a data file, checked against the model's input shape (batch included):
    the file opened once, x's header read; a missing, damaged or misshapen file is one EdgecError line."""
    path = Path(path)
    sample_shape = tuple(input_shape[1:])
    if not path.is_file():
        raise EdgecError(f"{path}: no such data file (expected an .npz with an array 'x')")
    f = _open(path)
    try:
        try:
            archive = zipfile.ZipFile(f)
            if "x" not in _names(archive):
                raise _no_x(path, _names(archive))
            with archive.open("x.npy") as member:
                shape, fortran, dtype = _npy_header(member)
        except EdgecError:
            raise
        except Exception as exc:  # damaged zip or npy header (its Python literal may not even parse)
            raise _unreadable(path, exc) from None
        shape = one_value_rows(shape, sample_shape)
        if tuple(shape[1:]) != sample_shape or len(shape) == 0:
            raise EdgecError(f"{path}: x has shape {list(shape)} but the model takes {list(input_shape)}; "
                             f"x must be (N, {', '.join(map(str, sample_shape))})")
        if np.issubdtype(dtype, np.complexfloating) or not np.issubdtype(dtype, np.number):
            raise EdgecError(f"{path}: x has dtype {dtype}; it must hold real numbers (float32)")
        if shape[0] == 0:
            raise EdgecError(f"{path}: x holds no samples")
        loaded = None
        if fortran:         # rare; cannot be streamed row by row
            x, _ = read_array(archive, path, "x", None, sample_shape, memory_limit=memory_limit)
            loaded = x.astype(np.float32)
            if not np.all(np.isfinite(loaded)):
                raise EdgecError(f"{path}: x contains NaN or Inf values")
        return Samples(path, f, archive, int(shape[0]), sample_shape, dtype, loaded, memory_limit)
    except BaseException:
        f.close()
        raise


def open_named_samples(path: str | Path, inputs: list[tuple[str, tuple[int, ...]]],
                       memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Samples:
    """The calibration samples of a model with several inputs: `x_<name>` for each, loaded and packed
    (load_named), from the file opened once."""
    path = Path(path)
    if not path.is_file():
        raise EdgecError(f"{path}: no such data file (expected an .npz with arrays "
                         f"{', '.join(_key('x', n, inputs) for n, _ in inputs)})")
    f = _open(path)
    try:
        data = _load_named(path, f, inputs, [], None, False, memory_limit)
        return Samples(path, f, zipfile.ZipFile(f), len(data.x), (data.x.shape[1],), loaded=data.x,
                       memory_limit=memory_limit)
    except BaseException:
        f.close()
        raise


def sample_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """The shapes of a data file's sample arrays (x, x_<input name>), (N, *sample shape), from their .npy headers
    only: what a model's dynamic input dimensions are pinned from (edgec/frontend/input_shapes.py)."""
    path = Path(path)
    if not path.is_file():
        raise EdgecError(f"{path}: no such data file (expected an .npz with an array 'x')")
    try:
        with _open(path) as f, zipfile.ZipFile(f) as z:
            shapes = {}
            for name in _names(z):
                if name == "x" or name.startswith("x_"):
                    with z.open(f"{name}.npy") as member:
                        shapes[name] = tuple(int(d) for d in _npy_header(member)[0])
            return shapes
    except Exception as exc:  # a damaged file fails in many ways (zip, zlib, the npy header's Python literal)
        raise _unreadable(path, exc) from None


def _npy_header(f):
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    return np.lib.format.read_array_header_2_0(f)
