"""The fast `add` (kernel edgec_add_lut_s8, runtime_c/fast/edgec_add_lut.c; its Helium twin edgec_add_lut_mve_s8):
TFLite's int8 ADD of two same-shape tensors, and a `binary` SUB of two same-shape activations (TFLite's SUB is its
ADD with the second rescaled operand subtracted), with a 256-entry table per input for its rescaling and one
fast requantization record, bit-exact with the portable kernels (`add_s8`, `binary_s8`)."""
from __future__ import annotations

import numpy as np

from edgec.fixedpoint.scheme import requantize
from edgec.ir import Op
from edgec.ops import fast
from edgec.ops.kernel import FAST, HELIUM, MVE, Kernel
from edgec.ops.movement import offsets
from edgec.ops.opdef import CallSite

SUB = 1                     # edgec/ops/binary BINARY_OPS["sub"], the op code of the portable kernel


def c_add_lut(op: Op, low, site: CallSite) -> str:
    x, y = site.inputs
    pre = site.prefix
    return (f"{low.kernel.name}(&{pre}_params, {x}, {y}, {pre}_lut1, {pre}_lut2, {pre}_rq, "
            f"{site.output});")


def same_shape_sub(op: Op) -> dict | None:
    """A `binary` SUB of two same-shape activations in the `add` kind's params (TFLite's SUB is its ADD with the
    second rescaled operand subtracted: lower_add negates its table), else None."""
    p = op.params
    if op.kind != "binary" or p.get("op") != SUB or op.arrays.get("const") is not None:
        return None
    n = int(np.prod([int(d) for d in p["dims"]]))
    if not all(np.array_equal(offsets(p["dims"], p[k]), np.arange(n)) for k in ("a_stride", "b_stride")):
        return None
    names = ("zp", "mult", "shift")
    return {**{f"input{i}_{k}": p[f"{ab}_{k}"] for i, ab in ((1, "a"), (2, "b")) for k in names}, "n": n,
            **{f"output_{k}": p[f"out_{k}"] for k in names}, **{k: p[k] for k in ("left_shift", "act_min", "act_max")}}


def lower_add(op: Op):
    """Add (and same_shape_sub, its second table negated) with a 256-entry table per input for its rescaling, each
    entry doubled (the requantization takes the doubled sum, no shift an element; exact: sum below ACC_LIMIT)."""
    p, sign = (op.params, 1) if op.kind == "add" else (same_shape_sub(op), -1)
    if p is None:
        return None
    v = np.arange(-128, 128, dtype=np.int64)
    ls = 1 << int(p["left_shift"])
    lut1 = requantize((v - p["input1_zp"]) * ls, p["input1_mult"], p["input1_shift"]).astype(np.int64)
    lut2 = sign * requantize((v - p["input2_zp"]) * ls, p["input2_mult"], p["input2_shift"]).astype(np.int64)
    if np.abs(lut1).max() + np.abs(lut2).max() >= fast.ACC_LIMIT:
        return None
    rq = fast.rq_records(np.zeros(1), np.array([p["output_mult"]]), np.array([p["output_shift"]]), p["output_zp"])
    if rq is None:
        return None
    params = {k: int(p[k]) for k in ("n", "output_zp", "act_min", "act_max")}
    return params, {"lut1": (2 * lut1).astype(np.int32), "lut2": (2 * lut2).astype(np.int32), "rq": rq}


def lower_add_mve(op: Op, base):
    """The Helium add's tables: the rescaled inputs themselves (its vector requantization doubles the sum), the
    DSP kernel's doubled entries halved back (exact: they are even)."""
    return base.params, {**base.arrays, "lut1": base.arrays["lut1"] >> 1, "lut2": base.arrays["lut2"] >> 1}


ADD_LUT = Kernel("edgec_add_lut_s8", ("add", "binary"), FAST, c_add_lut, lower=lower_add, struct="edgec_add_lut_params")
ADD_LUT_MVE = Kernel("edgec_add_lut_mve_s8", ("add",), HELIUM, c_add_lut, base=ADD_LUT, isa=MVE,
                     lower=lower_add_mve,   # the tables gathered 4 values at a time
                     struct="edgec_add_lut_params")
