"""State kept from one inference to the next (TFLite Micro's variable tensors and persistent buffers: an LSTM's
hidden and cell state, an SVDF's activation state, the signal library's noise estimate and sample buffers).

An op kind that keeps state says what it keeps with `OpDef.state(op) -> tuple[Field, ...]`. The same fields are
- in C, one persistent buffer of the arena per op (edgec/plan/planner.py: alive through every inference, shared
  with nothing), the fields one after the other, each aligned to 8 bytes; the generated `<name>_reset()` (and
  `<name>_init()`, `<name>_ctx_init()`) writes every field's initial value, as TFLite Micro's `reset()` does;
- in the NumPy reference, a `reference.State` (edgec/quant/reference.py) the caller holds and hands to
  `reference.run` (no module-level state): a fresh one per call unless the caller keeps one, so a sequence of samples run with one `State` is what
  the device computes over consecutive invokes without reset.
The model decides whether it carries state (any op with fields: `registry.keeps_state`), as TFLite Micro: carried
until reset.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ALIGN = 8


@dataclass(frozen=True)
class Field:
    name: str
    dtype: str                      # a NumPy dtype name: int8, int16, int32, uint32
    shape: tuple[int, ...]
    init: int = 0                   # every element's value after reset

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def layout(fields) -> tuple[dict[str, int], int]:
    """Each field's byte offset in the op's state buffer, and the buffer's bytes."""
    offsets, at = {}, 0
    for f in fields:
        offsets[f.name] = at
        at += -(-f.nbytes // ALIGN) * ALIGN
    return offsets, max(at, ALIGN)


def fresh(fields) -> dict[str, np.ndarray]:
    """The NumPy state of one op after reset: field name -> array (a twin may add entries of its own)."""
    return {f.name: np.full(f.shape, f.init, f.dtype) for f in fields}


def c_field(state_pointer: str, fields, name: str, const: bool = False) -> str:
    """The C expression of one field of an op's state buffer (`state_pointer`: its first byte)."""
    offsets, _ = layout(fields)
    ctype = {f.name: f.dtype for f in fields}[name]
    c = "const " if const else ""
    ctype = ctype + "_t"
    return f"({c}{ctype} *)({c}void *)({state_pointer} + {offsets[name]})"


def c_reset(state_pointer: str, fields) -> list[str]:
    """C statements writing every field's initial value (the variable `i` an int32_t of the enclosing block)."""
    offsets, _ = layout(fields)
    out = []
    for f in fields:
        n = int(np.prod(f.shape, dtype=np.int64))
        value = f"{f.init}" + ("u" if f.dtype.startswith("uint") else "")
        out.append(f"for (i = 0; i < {n}; ++i) ({c_field(state_pointer, fields, f.name)})[i] = {value};")
    return out
