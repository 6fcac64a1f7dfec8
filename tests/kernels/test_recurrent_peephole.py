"""LSTM peepholes (ONNX LSTM's input P, TF's use_peepholes; edgec/ops/recurrent.py, runtime_c/edgec_recurrent.c):
the portable, fast and int16 C kernels against the NumPy twin bit for bit on random shapes and peephole weights
(saturating ones too); the twin against the float recurrence; an ONNX LSTM with P through the float path against
onnxruntime and the int8 path to generated C."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from onnx import helper

from ckernels import make, ptr
from conftest import check_generated_c, make_model
from edgec import cheader
from edgec.frontend import canonicalize
from edgec.ir import Op, Tensor
from edgec.ops import recurrent, select
from edgec.quant import calibrate, floatref, quantize, reference
from edgec.fixedpoint import scheme


def _op(r, steps, n_in, hid, batch=1, reverse=0, output=0, init=False, p_scale=1.0):
    s = float(r.uniform(0.3, 1.0)) / np.sqrt(hid + n_in)
    attrs = dict(steps=steps, input_size=n_in, hidden=hid, W=r.normal(0, s, (4 * hid, n_in)),
                 R=r.normal(0, s, (4 * hid, hid)), Wb=r.normal(0, 0.3, 4 * hid), Rb=r.normal(0, 0.3, 4 * hid),
                 init_h=r.uniform(-0.9, 0.9, batch * hid) if init else np.zeros(batch * hid),
                 init_c=r.uniform(-2, 2, batch * hid) if init else np.zeros(batch * hid), batch=batch,
                 reverse=reverse, output=output, linear_before_reset=0, P=r.normal(0, p_scale, 3 * hid))
    return Op(kind="lstm", name="lstm", inputs=("x",), output="y", attrs=attrs)


def _quantized(r, op, wide=False):
    dt, zp = ("int16", 0) if wide else ("int8", int(r.integers(-20, 20)))
    x = Tensor("x", (op.attrs["steps"], op.attrs["batch"], op.attrs["input_size"]), "x",
               float(r.uniform(0.5, 3.0)) / 32767 if wide else float(r.uniform(0.005, 0.05)), zp, dtype=dt)
    y = Tensor("y", (1,), "y", float(r.uniform(0.5, 2.0)) / 32767 if wide else float(r.uniform(0.004, 0.01)),
               0 if wide else int(r.integers(-10, 10)), dtype=dt)
    recurrent.quantize_recurrent(op, [x], y)
    return x, y


def _cases(r, n):
    for case in range(n):
        steps, n_in, hid, batch = int(r.integers(1, 8)), int(r.integers(1, 12)), int(r.integers(1, 20)), int(r.integers(1, 3))
        yield case, _op(r, steps, n_in, hid, batch, reverse=case % 2, output=(case // 2) % 3, init=case % 3 == 0,
                        p_scale=20.0 if case % 4 == 3 else 1.0)     # (20: the peephole terms saturate the gates)


def test_peephole_is_quantized_after_init_c():
    r = np.random.default_rng(0)
    op = _op(r, 3, 2, 5, batch=2)
    _quantized(r, op)
    assert op.params["peephole"] == 1 and len(op.params["peep_mult"]) == 3
    assert op.arrays["init_c"].dtype == np.int16 and op.arrays["init_c"].size == 2 * 5 + 3 * 5
    p = recurrent.peephole_weights(op.params, op.arrays)
    assert np.abs(p).max(axis=1).tolist() == [32767] * 3         # each gate's own int16 scale


def test_peephole_kernel_matches_twin(ck):
    """edgec_recurrent_s8 with peepholes: every gate's term, i and f from c_{t-1}, o from c_t."""
    r = np.random.default_rng(31)
    for case, op in _cases(r, 30):
        _quantized(r, op)
        p, a = op.params, op.arrays
        xq = r.integers(-128, 128, p["steps"] * p["batch"] * p["input_size"]).astype(np.int8)
        scratch = np.zeros(cheader.buffer_size("edgec_recurrent_s8", p) // 4 + 1, np.int32)
        out = np.full((p["steps"] if p["output"] == 0 else 1) * p["batch"] * p["hidden"], 99, np.int8)
        ck.lib.edgec_recurrent_s8(ctypes.byref(make("edgec_recurrent_params", p)), ptr(xq),
                                  *[ptr(np.ascontiguousarray(a[k])) for k in recurrent.ARRAYS], ptr(scratch), ptr(out))
        np.testing.assert_array_equal(out, recurrent.recurrent_s8(p, a, xq), err_msg=f"case {case}")


def test_peephole_changes_the_result():
    """The twin with the peephole weights zeroed differs (the terms are not dropped on the way)."""
    r = np.random.default_rng(4)
    op = _op(r, 6, 4, 8, init=True)
    _quantized(r, op)
    xq = r.integers(-128, 128, 6 * 4).astype(np.int8)
    with_p = recurrent.recurrent_s8(op.params, op.arrays, xq)
    a = dict(op.arrays, init_c=op.arrays["init_c"].copy())
    a["init_c"][8:] = 0
    assert not np.array_equal(with_p, recurrent.recurrent_s8(op.params, a, xq))


@pytest.mark.parametrize("path", ["portable", "dsp-emulated"])
@pytest.mark.parametrize("wide", [False, True])
def test_peephole_fast_kernel_matches_twin(ck, ck_dsp, path, wide):
    """edgec_recurrent_fast_s8 / _s16 (the same step, the products on SMLAD) with peepholes."""
    lib = (ck if path == "portable" else ck_dsp).lib
    r = np.random.default_rng(90 + wide)
    for case, op in _cases(r, 12):
        _quantized(r, op, wide)
        p = op.params
        n = p["steps"] * p["batch"] * p["input_size"]
        xq = (r.integers(-32768, 32768, n).astype(np.int16) if wide else r.integers(-128, 128, n).astype(np.int8))
        low = select.fast(op) if not wide else None
        if wide:
            lowered = recurrent.lower_recurrent16(op)
            name, (params, arrays) = "edgec_recurrent_fast_s16", lowered
            n_scratch = cheader.buffer_size(name, params)
        else:
            name, params, arrays, n_scratch = low.kernel.name, op.params, dict(low.arrays), low.scratch_bytes
        want = recurrent.recurrent_s8(op.params, op.arrays, xq, wide=wide)
        scratch = np.zeros(n_scratch // 4 + 2, np.int32)
        out = np.zeros(want.size, want.dtype)
        records = [ptr(np.ascontiguousarray(arrays[k])) if k in arrays else None for k in ("rq_x", "rq_h")]
        getattr(lib, name)(ctypes.byref(make("edgec_recurrent_params", params)), ptr(xq),
                           *[ptr(np.ascontiguousarray(arrays[k])) for k in recurrent.ARRAYS], *records, ptr(scratch),
                           ptr(out))
        np.testing.assert_array_equal(out, want, err_msg=f"{name} case {case}")


def test_peephole_twin_tracks_float():
    r = np.random.default_rng(9)
    op = _op(r, 16, 6, 12, init=True)
    x, y = _quantized(r, op)
    xq = r.integers(-60, 60, (16, 6)).astype(np.int8)
    want = recurrent.float_recurrent(op, [(xq.astype(np.float64) - x.zero_point) * x.scale])
    got = (recurrent.recurrent_s8(op.params, op.arrays, xq).astype(np.float64) - y.zero_point) * y.scale
    inside = (want > (-128 - y.zero_point) * y.scale) & (want < (127 - y.zero_point) * y.scale)   # (not clipped)
    assert inside.mean() > 0.9 and np.abs(got - want)[inside].max() <= 0.02 + y.scale
    del op.attrs["P"]
    assert np.abs(recurrent.float_recurrent(op, [(xq.astype(np.float64) - x.zero_point) * x.scale]) - want).max() > 0.05


def _peephole_model(direction="forward", steps=7, n_in=5, hid=6, output="Y"):
    r = np.random.default_rng(3)
    dirs = 2 if direction == "bidirectional" else 1
    s = 0.8 / np.sqrt(hid)
    inits = {"W": r.normal(0, s, (dirs, 4 * hid, n_in)), "R": r.normal(0, s, (dirs, 4 * hid, hid)),
             "B": r.normal(0, 0.2, (dirs, 8 * hid)), "c0": r.uniform(-1, 1, (dirs, 1, hid)),
             "P": r.normal(0, 0.7, (dirs, 3 * hid))}
    outs = {"Y": ["yt"], "Y_h": ["", "yt"], "Y_c": ["", "", "yt"]}[output]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2], name="to_time_major"),
             helper.make_node("LSTM", ["xt", "W", "R", "B", "", "", "c0", "P"], outs, hidden_size=hid,
                              direction=direction, name="rnn"),
             helper.make_node("Transpose", ["yt"], ["y"], perm=[2, 0, 1, 3] if output == "Y" else [1, 0, 2],
                              name="to_batch_first")]
    yshape = [1, steps, dirs, hid] if output == "Y" else [1, dirs, hid]
    return make_model(nodes, ("x", [1, steps, n_in]), ("y", yshape), inits, opset=14)


@pytest.mark.parametrize("direction,output", [("forward", "Y"), ("bidirectional", "Y_c"), ("reverse", "Y_h")])
def test_onnx_lstm_with_peepholes(direction, output, tmp_path):
    """Float path = onnxruntime (1e-5); INT8 near float; the generated C bit-exact with the reference."""
    model = _peephole_model(direction, output=output)
    x = np.random.default_rng(1).uniform(-1, 1, (16, 7, 5)).astype(np.float32)
    graph = canonicalize.canonicalize(model, "peephole_model")
    want = calibrate.run_float(model, x[:1])[0]
    np.testing.assert_allclose(floatref.output(graph, x[0]).reshape(want.shape), want, atol=1e-5)
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values() if not t.source.startswith("edgec:")])
    ranges.update(floatref.ranges(graph, x, [t.source for t in graph.tensors.values() if t.source.startswith("edgec:")]))
    graph = quantize.quantize(graph, ranges)
    assert all(op.params.get("peephole") == 1 for op in graph.ops if op.kind == "lstm")
    tout = graph.tensors[graph.output]
    got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    assert np.abs(got.reshape(want.shape) - want).max() <= 4 * tout.scale + 0.03
    check_generated_c(graph, x[:4], tmp_path)
