"""The fast broadcast `mul` (kernel edgec_mul_bcast_s8, runtime_c/fast/edgec_mul_bcast.c): an int8 Mul whose
6-D broadcast folds to [rows][cols] rows with each operand either read whole (row stride cols) or one row read
again for every row (row stride 0): squeeze-excite's gate times its feature map (the gate [C] broadcast over
H x W), a per-channel scale, and the plain same-shape Mul (one row).

The portable `edgec_binary_s8` walks six loops and dispatches on the op for every value; this kernel runs one
loop per row with the requantization folded into a fast record (edgec/ops/fast.py rq_records: |a - za| *
|b - zb| <= 255 * 255, far inside the fast path's accumulator bound), bit-exact with `binary_s8`'s mul."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.ops import fast
from edgec.ops.kernel import FAST, Kernel
from edgec.ops.movement import offsets
from edgec.ops.opdef import CallSite

MUL = 4                     # edgec/ops/binary BINARY_OPS["mul"], the op code of the portable kernel
ACC_BOUND = 255 * 255       # |(a - za) * (b - zb)| for int8 values and zero points
MIN_MULT = 1 << 30          # the fast record's multipliers: [2^30, 2^31)


def _row_stride(idx: np.ndarray, rows: int, cols: int) -> int | None:
    """cols if idx walks the operand whole, 0 if it reads one row [cols] again for each row, else None."""
    if np.array_equal(idx, np.arange(rows * cols)):
        return cols
    if np.array_equal(idx, np.tile(np.arange(cols), rows)):
        return 0
    return None


def rows_cols(p: dict) -> tuple[int, int, int, int] | None:
    """(rows, cols, a's row stride, b's row stride) of a broadcast over [dims] that folds to whole rows; None if
    it does not (the longest rows that work)."""
    dims = [int(d) for d in p["dims"]]
    total = int(np.prod(dims))
    ia, ib = offsets(dims, p["a_stride"]), offsets(dims, p["b_stride"])
    for k in range(len(dims)):
        cols = int(np.prod(dims[k:]))
        if cols == 0:
            return None
        rows = total // cols
        sa, sb = _row_stride(ia, rows, cols), _row_stride(ib, rows, cols)
        if sa is not None and sb is not None:
            return rows, cols, sa, sb
    return None


def lower_mul(op: Op):
    """Params and the requantization record, or None (another op, a stored constant operand, a multiplier or
    shift outside the fast record's range, a broadcast that does not fold to rows)."""
    p = op.params
    if int(p.get("op", -1)) != MUL or op.arrays.get("const") is not None:
        return None
    if not MIN_MULT <= int(p["out_mult"]) < 1 << 31:
        return None
    shape = rows_cols(p)
    if shape is None:
        return None
    rq = fast.rq_records(np.zeros(1), np.array([p["out_mult"]]), np.array([p["out_shift"]]), p["out_zp"],
                         acc_bound=ACC_BOUND)
    if rq is None:
        return None
    rows, cols, sa, sb = shape
    params = dict(rows=rows, cols=cols, a_row_stride=sa, b_row_stride=sb, a_zp=int(p["a_zp"]),
                  b_zp=int(p["b_zp"]), act_min=int(p["act_min"]), act_max=int(p["act_max"]))
    return params, {"rq": rq}


def c_mul(op: Op, low, site: CallSite) -> str:
    a, b = site.inputs
    pre = site.prefix
    return f"{low.kernel.name}(&{pre}_params, {a}, {b}, {pre}_rq, {site.output});"


MUL_BCAST = Kernel("edgec_mul_bcast_s8", ("binary",), FAST, c_mul, lower=lower_mul, struct="edgec_mul_bcast_params")
