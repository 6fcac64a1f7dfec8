"""The user's --score function: loaded from `module:function` or `file.py:function`, called contained (its
exceptions and sys.exit become one error line) and its result checked (a number or a dict of numbers, finite)."""
from __future__ import annotations

import importlib
import importlib.util
import math
import numbers
from pathlib import Path
from typing import Callable

import numpy as np

from edgec.errors import EdgecError


def load_score(spec: str) -> Callable:
    """`module:function` or `path/to/file.py:function` -> the function.

    It is called as fn(outputs, labels, inputs) with float outputs shaped (N, *model output shape without
    batch), the data file's y (or None) and x, and returns a number or a dict of numbers."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise EdgecError(f"--score {spec!r}: expected module:function or path/to/file.py:function")
    try:
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise EdgecError(f"--score {spec!r}: {path} does not exist")
            loaded = importlib.util.spec_from_file_location(f"edgec_score_{path.stem}", path)
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except EdgecError:
        raise
    except SystemExit as e:     # the user's module must not end edgec
        raise EdgecError(f"--score {spec!r}: importing {target} exited (sys.exit({e.code!r})); a score module "
                         "must only define its function") from None
    except Exception as e:      # the user's code: any failure to import is reported on one line
        raise EdgecError(f"--score {spec!r}: cannot import {target}: {type(e).__name__}: {e}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise EdgecError(f"--score {spec!r}: {target} has no function {name}")
    return fn


def _score_number(spec: str, what: str, v) -> float:
    """A finite real number of a score result (numpy scalars and 0-d arrays too), else one clear error."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise EdgecError(f"--score {spec!r}: {what} is {type(v).__name__}, not a number; return a number or a "
                         "dict of numbers")
    f = float(v)
    if not math.isfinite(f):
        raise EdgecError(f"--score {spec!r}: {what} is {f}; return finite numbers")
    return f


def call_score(spec: str, fn: Callable, outputs, labels, x):
    """The user's score, contained: its exceptions and sys.exit become one error line (a sys.exit(0) must not
    end edgec with 0 while gates fail), its result must be finite numbers."""
    try:
        value = fn(outputs, labels, x)
    except (Exception, SystemExit) as e:
        if isinstance(e, SystemExit):
            raise EdgecError(f"--score {spec!r} exited (sys.exit({e.code!r})); return a value instead") from None
        raise EdgecError(f"--score {spec!r} failed: {type(e).__name__}: {e}") from None
    if isinstance(value, dict):
        return {str(k): _score_number(spec, repr(str(k)), v) for k, v in value.items()}
    return _score_number(spec, "the result", value)
