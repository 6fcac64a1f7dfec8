"""The `lut` kind on int16 values by a table (a QDQ file's int16 GELU, Sigmoid, Tanh... of an ONNX model:
edgec/frontend/qdq16.py): TFLite's int16 lookup (gelu.cc / LUTPopulate<int16_t> and lut_lookup_with_interpolation,
as its int16 GELU computes it): 513 samples of the float function over the input's int16 range in float32 on the
output's symmetric grid, each less half its midpoint's interpolation error, then entry 256 + (x >> 7) and the
next interpolated over the low 7 bits. Kernel edgec_lut16_s16 (runtime_c/edgec_elementwise.c), bit-exact with
`lut16_s16`. The sigmoid-table activations TFLite's own 16x8 files give (edgec_activation_s16) stay as they are.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Op, Tensor
from edgec.ops import cemit
from edgec.ops.kernel import INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite
from edgec.ops.softmax import lut16, lut16_lookup


def as_table16(op: Op) -> Op:
    """An ONNX `lut` op run on int16 by its table (Int16.as16; a TFLite file's own activations keep their kernel)."""
    return dataclasses.replace(op, attrs={**op.attrs, "table16": True})


def quantize_table16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The 513-entry table of an ONNX `lut` op (count 1) between int16 tensors."""
    from edgec.ops.lut import apply        # (the family's float functions; lut/__init__ imports this module)
    a, x = op.attrs, ins[0]
    if a.get("count", 1) != 1:
        raise EdgecError(f"node '{op.name}': no int16 table per channel ({a['count']} of them); leave it int8")
    c = a.get("consts")
    c = None if c is None else np.asarray(c, np.float64).reshape(np.shape(c)[1:] if np.ndim(c) > 1 else ())

    def fn(v):
        y = apply(a["fn"], np.asarray(v, np.float64), c, a.get("fparams"))
        return np.nan_to_num(y, nan=0.0, posinf=1e30, neginf=-1e30).astype(np.float32)
    op.arrays.pop("table", None)
    op.arrays["table16"] = lut16(fn, x.scale, x.zero_point, out.scale)
    op.params.clear()
    op.params["n"] = out.size


def lut16_s16(p: dict, table, x) -> np.ndarray:
    """TFLite's int16 LUT lookup of every value."""
    return lut16_lookup(np.asarray(x, np.int16).reshape(-1), table).astype(np.int16)


def c_lut16(op: Op, low, site: CallSite) -> str:
    call = (f"{low.kernel.name}(&p, {cemit.i16(site.inputs[0], const=True)}, {site.arrays['table16']}, "
            f"{cemit.i16(site.output)});")
    return cemit.with_params("edgec_lut16_params", op.params, call)


def _table16(op: Op) -> bool:
    """Marked by as_table16, or its table made (a graph read back from a build's artifact)."""
    return bool(op.attrs.get("table16")) or "table16" in op.arrays


LUT16 = Kernel("edgec_lut16_s16", ("lut",), REFERENCE, c_lut16, precision=INT16, applies=_table16,
               run=lambda op, inputs: lut16_s16(op.params, op.arrays["table16"], inputs[0]), code_bytes=120)
