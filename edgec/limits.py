"""The memory limit edgec holds itself to: no single array it allocates (a data file's `x`, a model's tensor)
may exceed it, checked from the npz headers and the model's static shapes before anything is allocated.

1 GiB by default; $EDGEC_MEMORY_LIMIT (bytes, or with a K/M/G suffix) changes it: edgec/settings.py reads it
once, and the stages that allocate take the limit as a parameter."""
from __future__ import annotations

from edgec.errors import EdgecError

DEFAULT = 1 << 30
ENV = "EDGEC_MEMORY_LIMIT"
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse(raw: str) -> int:
    """The limit in bytes that $EDGEC_MEMORY_LIMIT's text `raw` gives (DEFAULT when empty)."""
    text = raw.strip().upper().removesuffix("B").removesuffix("I")
    if not text:
        return DEFAULT
    scale = _UNITS.get(text[-1], 1)
    try:
        value = int(float(text[:-1] if text[-1] in _UNITS else text) * scale)
    except (ValueError, OverflowError):       # "inf", "nan", "1e999"
        raise EdgecError(f"{ENV}={raw!r} is not a size (bytes, or a number with K, M or G)") from None
    if value <= 0:
        raise EdgecError(f"{ENV}={raw!r} must be positive")
    return value


def check_bytes(nbytes: int, what: str, advice: str, limit: int = DEFAULT) -> None:
    """EdgecError (one line) if an allocation of `nbytes` would exceed the memory limit `limit`."""
    if nbytes > limit:
        raise EdgecError(f"{what} needs {nbytes / 2**20:,.0f} MiB, more than edgec's memory limit of "
                         f"{limit / 2**20:,.0f} MiB (EDGEC_MEMORY_LIMIT); {advice}")
