"""State kept from one inference to the next (edgec/ops/state.py): the fields' layout and reset statements, the
planner's persistent buffer (shared with no other buffer, at any time), the generated `NAME_reset()` /
`NAME_HAS_STATE` only where a model keeps state, the reference's `State` held by the caller, and `edgec bench`
carrying the state through a stream of samples or resetting it before each (`--reset-state`), on the host device,
against TFLite Micro (a streaming corpus model: DTLN noise suppression)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import tflite_cases_recurrent as recurrent_cases
import tflite_oracle as oracle
from edgec import api
from edgec.codegen import cmodel
from edgec.ops import state as op_state
from edgec.ops.registry import keeps_state, state_fields
from edgec.plan import planner
from edgec.quant import reference

DTLN = Path(__file__).parent / "corpus" / "tflm_dtln_noise_suppression"


def test_fields_are_laid_out_aligned_and_reset_to_their_initial_values():
    fields = (op_state.Field("c", "int16", (2, 3)), op_state.Field("h", "int8", (2, 3), -5),
              op_state.Field("n", "uint32", (1,)))
    offsets, size = op_state.layout(fields)
    assert offsets == {"c": 0, "h": 16, "n": 24} and size == 32
    fresh = op_state.fresh(fields)
    assert fresh["h"].dtype == np.int8 and (fresh["h"] == -5).all() and not fresh["c"].any()
    lines = op_state.c_reset("arena.bytes + 64", fields)
    assert lines[1] == "for (i = 0; i < 6; ++i) ((int8_t *)(void *)(arena.bytes + 64 + 16))[i] = -5;"
    assert lines[2].endswith("= 0u;")


def _lstm_graph(tmp_path):
    case = next(c for c in oracle.cases(seed=7, n=8, makers=recurrent_cases.MAKERS)
                if c.nodes[0].op == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    f = tmp_path / "lstm.tflite"
    f.write_bytes(oracle.write(case))
    return oracle.importer.load(f, "lstm"), case


def test_the_plan_keeps_state_in_a_buffer_no_other_shares(tmp_path):
    g, _ = _lstm_graph(tmp_path)
    assert keeps_state(g)
    g = g.replace_ops(planner.schedule(g))
    plan = planner.plan(g)
    (i, off), = plan.state.items()
    buf = next(b for b in plan.buffers if b.state_op == i)
    assert (buf.first, buf.last, buf.offset) == (-1, len(g.ops), off)
    assert buf.size == op_state.layout(state_fields(g.ops[i]))[1]
    for b in plan.buffers:          # alive through every inference: no other buffer's bytes overlap it
        assert b is buf or b.offset + b.size <= off or off + buf.size <= b.offset, b
    planner.check_plan(g, plan)
    cmodel.generate(g, plan, tmp_path / "c", "lstm", runtime=False)
    header, source = ((tmp_path / "c" / f"lstm.{x}").read_text() for x in ("h", "c"))
    assert "#define LSTM_HAS_STATE 1" in header and "void lstm_reset(void);" in header
    assert "void lstm_ctx_reset(lstm_ctx *c);" in header and "lstm_reset();" in source


def test_a_model_without_state_has_no_reset(tmp_path):
    case = next(c for c in oracle.cases(seed=1, n=30) if c.nodes[0].op == "FULLY_CONNECTED")
    f = tmp_path / "fc.tflite"
    f.write_bytes(oracle.write(case))
    g = oracle.importer.load(f, "fc")
    assert not keeps_state(g)
    g = g.replace_ops(planner.schedule(g))
    plan = planner.plan(g)
    assert not plan.state
    cmodel.generate(g, plan, tmp_path / "c", "fc", runtime=False)
    assert "_reset(" not in (tmp_path / "c" / "fc.h").read_text()


def test_the_reference_carries_the_callers_state_and_only_that(tmp_path):
    g, case = _lstm_graph(tmp_path)
    xs = [x.reshape(-1) for x in case.x]
    carried = reference.run_sequence(g, xs)
    state = reference.State(g)
    again = np.stack([reference.run(g, x, state=state).reshape(-1) for x in xs])
    np.testing.assert_array_equal(again, carried)
    state.reset()
    np.testing.assert_array_equal(reference.run(g, xs[0], state=state).reshape(-1), carried[0])
    each = reference.run_sequence(g, xs, reset_each=True)
    np.testing.assert_array_equal(each, np.stack([reference.run(g, x).reshape(-1) for x in xs]))
    assert not np.array_equal(each[1:], carried[1:])


@pytest.mark.sweep
@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                    reason="tflite-micro (the TFLite Micro interpreter) is not installed")
def test_bench_carries_the_state_or_resets_it_on_the_host_device(tmp_path):
    """DTLN noise suppression (two LSTMs) built for the host board: its device bit-identical with the reference
    and the reference with TFLite Micro over a stream of samples, the state carried; and with reset_state (the
    link's RESET frame before every sample) likewise, with other outputs."""
    stored = np.load(DTLN / "oracle.npz")
    x = (stored["x_q"].astype(np.float32) - float(stored["x_zero_point"])) * np.float32(stored["x_scale"])
    np.savez(tmp_path / "data.npz", x=x)
    api.build(DTLN / "model.tflite", None, "host", tmp_path / "b")
    for reset in (False, True):
        r = api.bench(tmp_path / "b", tmp_path / "data.npz", reset_state=reset)
        assert r["agreement"]["device_vs_reference"] == 1.0, reset
        assert r["tflite"]["reference_vs_interpreter"] == 1.0, (reset, r["tflite"])
