"""edgec_mul_bcast_s8 (runtime_c/fast/edgec_mul_bcast.c, lowered by edgec/ops/binary/mul.py): int8 Mul over
[rows][cols] with each operand read whole or one row for every row, bit for bit against the portable binary
kernel's NumPy twin (binary_s8) on both inner-loop paths, with guard bytes after the output; and which
broadcasts the lowering takes (squeeze-excite's gate, same shapes) or leaves to edgec_binary_s8."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from ckernels import act, i8, make, ptr
from edgec.ir import Op
from edgec.ops import binary, select
from edgec.ops.binary import mul
from edgec.fixedpoint import scheme

GUARD = 32


@pytest.fixture(params=["portable", "dsp-emulated"])
def lib(request):
    return request.getfixturevalue("ck" if request.param == "portable" else "ck_dsp").lib


def _strides(shape):
    st, acc = [0] * 6, 1
    for k in range(5, -1, -1):
        st[k] = acc if shape[k] > 1 else 0
        acc *= shape[k]
    return st


def _op(rng, dims, a_shape, b_shape, mult_shift=None, act_range=None):
    za, zb, zo = (int(v) for v in rng.integers(-128, 128, 3))
    if mult_shift is None:
        s = math.exp(rng.uniform(math.log(1e-4), math.log(0.2)))
        mult_shift = scheme.quantize_multiplier(s)
    lo, hi = act_range or act(rng, zo)
    p = dict(op=binary.BINARY_OPS["mul"], dims=dims, a_stride=_strides(a_shape), b_stride=_strides(b_shape),
             a_zp=za, b_zp=zb, a_mult=0, a_shift=0, b_mult=0, b_shift=0, left_shift=20, out_zp=zo,
             out_mult=mult_shift[0], out_shift=mult_shift[1], act_min=lo, act_max=hi)
    return Op("binary", "mul", ("a", "b"), "y", params=p)


def _run(lib, low, a, b, n):
    raw = np.full(n + GUARD, 0x5A, np.int8)
    lib.edgec_mul_bcast_s8(ctypes.byref(make(low.struct, low.params)), ptr(a), ptr(b),
                           ptr(np.ascontiguousarray(low.arrays["rq"], np.int32)), ptr(raw))
    assert np.all(raw[n:] == 0x5A), "wrote past its output"
    return raw[:n].copy()


def _case(rng, kind):
    h, w, c = (int(v) for v in rng.integers(1, 9, 3))
    c = c if rng.random() < 0.5 else int(rng.integers(1, 97))
    dims = [1, 1, 1, h, w, c]
    full, gate = [1, 1, 1, h, w, c], [1, 1, 1, 1, 1, c]
    return dims, *{"gate_first": (gate, full), "gate_second": (full, gate), "same": (full, full)}[kind]


@pytest.mark.parametrize("kind", ["gate_first", "gate_second", "same"])
def test_mul_bcast_matches_binary_s8(lib, kind):
    rng = np.random.default_rng(["gate_first", "gate_second", "same"].index(kind) + 70)
    ran = 0
    for _ in range(120):
        dims, sa, sb = _case(rng, kind)
        op = _op(rng, dims, sa, sb)
        low = select.fast(op)
        if low is None:          # a multiplier past the fast record's shifts: the portable kernel keeps it
            continue
        assert low.kernel.name == "edgec_mul_bcast_s8"
        a, b = i8(rng, int(np.prod(sa))), i8(rng, int(np.prod(sb)))
        n = int(np.prod(dims))
        assert np.array_equal(_run(lib, low, a, b, n), binary.run_binary(op, [a, b])), op.params
        ran += 1
    assert ran >= 100


@pytest.mark.parametrize("mult_shift", [(1 << 30, 0), ((1 << 31) - 1, -1), (1 << 30, -24), ((1 << 31) - 1, -20)])
def test_mul_bcast_at_the_multiplier_edges(lib, mult_shift):
    """The largest and smallest multipliers and shifts, on the int8 extremes and both zero-point limits."""
    rng = np.random.default_rng(mult_shift[1] + 99)
    dims, sa, sb = [1, 1, 1, 3, 5, 7], [1, 1, 1, 1, 1, 7], [1, 1, 1, 3, 5, 7]
    for za, zb in ((-128, -128), (127, 127), (-128, 127)):
        op = _op(rng, dims, sa, sb, mult_shift, (-128, 127))
        op.params.update(a_zp=za, b_zp=zb)
        low = select.fast(op)
        assert low is not None and low.kernel.name == "edgec_mul_bcast_s8"
        for a, b in ((i8(rng, 7, 2), i8(rng, 105, 2)), (i8(rng, 7), i8(rng, 105))):
            assert np.array_equal(_run(lib, low, a, b, 105), binary.run_binary(op, [a, b]))


def test_mul_bcast_lowering_declines_what_it_cannot_run():
    rng = np.random.default_rng(3)
    add = _op(rng, [1, 1, 1, 2, 2, 4], [1, 1, 1, 2, 2, 4], [1, 1, 1, 2, 2, 4])
    add.params["op"] = binary.BINARY_OPS["add"]
    assert mul.lower_mul(add) is None
    column = _op(rng, [1, 1, 1, 2, 3, 4], [1, 1, 1, 2, 3, 1], [1, 1, 1, 2, 3, 4])     # broadcast along the last axis
    assert mul.lower_mul(column) is None
    big = _op(rng, [1, 1, 1, 2, 2, 4], [1, 1, 1, 1, 1, 4], [1, 1, 1, 2, 2, 4], (1 << 30, 1))   # a left shift
    assert mul.lower_mul(big) is None
    gate = _op(rng, [1, 1, 1, 2, 3, 4], [1, 1, 1, 1, 1, 4], [1, 1, 1, 2, 3, 4], (1 << 30, -7))
    params, _ = mul.lower_mul(gate)
    assert (params["rows"], params["cols"], params["a_row_stride"], params["b_row_stride"]) == (6, 4, 0, 4)
    assert mul.MUL == binary.BINARY_OPS["mul"]
