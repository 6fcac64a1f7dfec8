"""edgec/ops/dense_pairs.py: the packing of the pairs fully connected kernel (int8 weights, rows in pairs, the even
row offset by 128) holds every weight of the packed lowering, and the kernel is offered only where the odd rows'
sums stay exact (|dot| < 2^23) and the input is widened in one pass; the memory chooser picks it where flash bytes
cost cycles and keeps the zero-wait-state choice (rows8) on the emulated boards."""
from __future__ import annotations

import numpy as np
import pytest

from edgec.ir import Op
from edgec.ops import dense, dense_pairs, select


def _fc(rng, n_in: int, n_out: int, w=None) -> Op:
    w = rng.integers(-127, 128, (n_out, n_in), dtype=np.int8) if w is None else w
    p = dict(in_features=n_in, out_features=n_out, input_zp=-3, output_zp=5, act_min=-128, act_max=127)
    arrays = dict(weights=w, bias=rng.integers(-1000, 1000, n_out).astype(np.int32),
                  mult=np.full(n_out, 1 << 30, np.int32), shift=np.full(n_out, -8, np.int32))
    return Op("fully_connected", "fc", ("x",), "y", params=p, arrays=arrays)


@pytest.mark.parametrize("n_in,n_out", [(1, 1), (5, 3), (114, 13), (640, 128), (128, 8), (8, 6)])
def test_the_packing_holds_every_weight_once(n_in, n_out):
    rng = np.random.default_rng(n_in * 1000 + n_out)
    op = _fc(rng, n_in, n_out)
    base = select.fast(op)
    low = select.variant(op, base, "pairs")
    rows = dense_pairs.reference_rows(low.params, low.arrays)
    n4 = -(-n_out // 4) * 4
    k4 = base.params["k4"]
    assert rows.shape == (n4, k4) and low.arrays["fw"].size == 1 + n4 // 4 * (k4 + 4)   # header, blocks + biases
    assert np.array_equal(rows[:n_out, :n_in], op.arrays["weights"]) and not rows[:n_out, n_in:].any()
    assert np.array_equal(rows[n_out:], np.repeat(rows[n_out - 1:n_out], n4 - n_out, axis=0))   # copies of the last
    rq = base.arrays["rq"]
    bias = low.arrays["fw"][1:].reshape(n4 // 4, k4 + 4)[:, k4:].reshape(-1).view(np.int32)
    assert np.array_equal(bias[:n_out], 2 * rq[:n_out, 0]) and np.all(bias[n_out:] == 2 * rq[n_out - 1, 0])
    assert low.arrays["fw"][0] == dense_pairs.UNIFORM and np.array_equal(low.arrays["rq"], rq[:1])   # one scale
    assert dense.PAIRS.flash_bytes(base.params) == n4 * (k4 + 4)     # its weights and biases, each read once


def test_the_output_stage_and_its_records():
    """One weight scale over the full range: the uniform stage and one record; a scale per row: a record a row
    (padded like the rows); a ReLU range or a record whose neg is not -1: the stages the C blocks take."""
    rng = np.random.default_rng(3)
    op = _fc(rng, 20, 6)
    op.arrays["mult"] = np.arange(6, dtype=np.int32) + (1 << 30)
    low = select.variant(op, select.fast(op), "pairs")
    assert low.arrays["fw"][0] == dense_pairs.FULL and len(low.arrays["rq"]) == 8
    rq = np.array([[0, 1, 0, -1, 2]] * 3)
    assert dense_pairs.stage(rq, -128, 127) == dense_pairs.UNIFORM and dense_pairs.stage(rq, 0, 127) == dense_pairs.RELU
    rq[1, 3] = 0
    assert dense_pairs.stage(rq, -128, 127) == dense_pairs.CLAMP and dense_pairs.stage(rq[:1], -128, 100) == dense_pairs.CLAMP


def test_it_applies_only_where_the_odd_rows_stay_exact():
    """128 * sum |w| of an odd row must stay under 2^23: 512 inputs of -128 on row 1 reach it exactly; on row 0
    (an even row, summed apart) they do not matter; more than 1024 inputs: not widened in one pass."""
    rng = np.random.default_rng(1)
    w = np.zeros((4, 512), np.int8)
    w[1] = -128
    assert not dense_pairs.applies(select.fast(_fc(rng, 512, 4, w)))
    w[1, 0] = -127
    assert dense_pairs.applies(select.fast(_fc(rng, 512, 4, w)))
    w = np.zeros((4, 512), np.int8)
    w[0] = -128
    assert dense_pairs.applies(select.fast(_fc(rng, 512, 4, w)))
    assert not dense_pairs.applies(select.fast(_fc(rng, 1028, 4, np.ones((4, 1028), np.int8))))


def test_the_memory_chooser_picks_it_from_flash_and_not_at_zero_wait_states():
    """AD's layers (640 -> 128, 128 -> 128, 128 -> 8): from flash at 5 wait states / 8-byte lines pairs (1 byte a
    weight, fewer cycles than the packed kernel), at zero wait states the cost model's own choice, never pairs
    (more instructions than rows8)."""
    rng = np.random.default_rng(2)
    for n_in, n_out in ((640, 128), (128, 128), (128, 8)):
        base = select.fast(_fc(rng, n_in, n_out, rng.integers(-40, 41, (n_out, n_in), dtype=np.int8)))
        assert "pairs" in [k.variant for k in select.offered(base, dsp=True)]
        assert "pairs" not in [k.variant for k in select.offered(base, dsp=False)]
        assert select.cheapest(base, True, 5 / 8) == "pairs"
        assert select.cheapest(base, True) != "pairs"
