"""NumPy arrays where the API takes a data file: calibration and test data as arrays instead of an .npz path.

    with data_file(x) as path: ...                 # x: (N, *input shape) -> an .npz with x
    with data_file((x, y)) as path: ...            # test data with labels or targets
    with data_file({"x_a": xa, "x_b": xb}) as path # a model with several inputs: the .npz's own names

The arrays are written once to a temporary .npz (removed when the block ends), so every check and the streamed
reading of a data file (edgec/data.py) apply to them unchanged. A path (str or Path) or None passes through.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
from pathlib import Path
from typing import Iterator

import numpy as np

from edgec import children
from edgec.errors import EdgecError


def _arrays(data, what: str) -> dict[str, np.ndarray]:
    if isinstance(data, np.ndarray):
        return {"x": data}
    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(a, np.ndarray) for a in data):
        return {"x": data[0], "y": data[1]}
    if isinstance(data, dict) and data and all(isinstance(k, str) and isinstance(v, np.ndarray)
                                              for k, v in data.items()):
        return dict(data)
    raise EdgecError(f"{what}: expected a path to an .npz, an array x (N, *input shape), a pair (x, y) or a dict "
                     f"of arrays by name, got {type(data).__name__}")


@contextlib.contextmanager
def data_file(data, what: str = "data") -> Iterator[Path | None]:
    """The path of `data`: itself when it is a path (or None), else a temporary .npz of its arrays."""
    if data is None or isinstance(data, (str, Path)):
        yield None if data is None else Path(data)
        return
    arrays = _arrays(data, what)
    with children.temporary_folder() as tmp:        # removed even if edgec is killed
        path = Path(tmp) / f"{what.replace(' ', '-')}.npz"
        np.savez(path, **arrays)
        try:
            yield path
        except EdgecError as e:      # the arrays the caller gave, not a temporary file gone when the error is read
            if str(path) not in str(e):
                raise
            raise EdgecError(str(e).replace(str(path), f"the {what} arrays given")) from None


def accepts_arrays(*names: str):
    """Decorator: the named parameters of an API function take arrays as well as paths (data_file)."""
    def decorate(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            with contextlib.ExitStack() as stack:
                for name in names:
                    if name in bound.arguments:
                        bound.arguments[name] = stack.enter_context(data_file(bound.arguments[name],
                                                                              name.replace("_path", "")))
                return fn(*bound.args, **bound.kwargs)
        return wrapper
    return decorate
