"""LSTM and GRU (edgec/ops/recurrent.py, runtime_c/edgec_recurrent.c): the C kernel against its NumPy twin bit
for bit on random shapes, weights and quantization; the twin against float; ONNX LSTM/GRU models (forward,
reverse, bidirectional, layout 0 and 1, with and without initial states, Y or Y_h) through the pipeline
against onnxruntime and bit-exact in generated C; the limits refused with the node named."""
from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest
from onnx import helper

from ckernels import make, ptr
from conftest import check_generated_c, make_model
from edgec import cheader
from edgec.errors import EdgecError
from edgec import pipeline
from edgec.frontend import canonicalize
from edgec.ir import Op, Tensor
from edgec.ops import recurrent, select
from edgec.quant import calibrate, floatref, quantize, reference
from edgec.fixedpoint import scheme


def _op(r, kind, steps, n_in, hid, reverse=0, lbr=0, output=0, init=False, batch=1):
    g = recurrent.GATES[kind]
    s = float(r.uniform(0.3, 1.0)) / np.sqrt(hid + n_in)
    attrs = dict(steps=steps, input_size=n_in, hidden=hid, W=r.normal(0, s, (g * hid, n_in)),
                 R=r.normal(0, s, (g * hid, hid)), Wb=r.normal(0, 0.3, g * hid), Rb=r.normal(0, 0.3, g * hid),
                 init_h=r.uniform(-0.9, 0.9, batch * hid) if init else np.zeros(batch * hid),
                 init_c=r.uniform(-2, 2, batch * hid) if init else np.zeros(batch * hid), batch=batch,
                 reverse=reverse, output=output, linear_before_reset=lbr)
    return Op(kind=kind, name=kind, inputs=("x",), output="y", attrs=attrs)


def _quantized(r, op, bits=8):
    op.attrs["weight_bits"] = bits
    x = Tensor("x", (op.attrs["steps"], op.attrs["batch"], op.attrs["input_size"]), "x", float(r.uniform(0.005, 0.05)),
               int(r.integers(-20, 20)))
    y = Tensor("y", (1,), "y", float(r.uniform(0.004, 0.01)), int(r.integers(-10, 10)))
    recurrent.quantize_recurrent(op, [x], y)
    return x, y


def _c_run(ck, op, xq):
    p, a = op.params, op.arrays
    arrays = [np.ascontiguousarray(a[k + "4"] if k + "4" in a else a[k]) for k in recurrent.ARRAYS]
    scratch = np.zeros(cheader.buffer_size("edgec_recurrent_s8", p) // 4 + 1, np.int32)
    out = np.full((p["steps"] if p["output"] == 0 else 1) * p["batch"] * p["hidden"], 99, np.int8)
    kernel = ck.lib.edgec_recurrent_s4 if select.int4_weights(op) else ck.lib.edgec_recurrent_s8
    kernel(ctypes.byref(make("edgec_recurrent_params", p)), ptr(np.ascontiguousarray(xq, np.int8)),
           *[ptr(v) for v in arrays], ptr(scratch), ptr(out))
    return out


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("kind,lbr", [("lstm", 0), ("gru", 0), ("gru", 1)])
def test_kernel_matches_twin(ck, kind, lbr, bits):
    """edgec_recurrent_s8, and edgec_recurrent_s4 with int4 W and R (odd sizes: rows that start mid-byte)."""
    r = np.random.default_rng({"lstm": 1, "gru": 2}[kind] + 10 * lbr + bits)
    for case in range(40 if bits == 8 else 20):
        steps, n_in, hid = int(r.integers(1, 9)), int(r.integers(1, 12)), int(r.integers(1, 20))
        batch = int(r.integers(1, 4))
        op = _op(r, kind, steps, n_in, hid, reverse=case % 2, lbr=lbr, output=(case // 2) % (3 if kind == "lstm" else 2),
                 init=case % 3 == 0, batch=batch)
        _quantized(r, op, bits)
        assert select.int4_weights(op) == (bits == 4)
        xq = r.integers(-128, 128, steps * batch * n_in).astype(np.int8)
        np.testing.assert_array_equal(_c_run(ck, op, xq), recurrent.recurrent_s8(op.params, op.arrays, xq),
                                      err_msg=f"case {case}")


def test_saturating_gates_and_cell_match(ck):
    """Large weights drive the gate pre-activations and the cell state into int16 saturation on both sides."""
    r = np.random.default_rng(5)
    op = _op(r, "lstm", 12, 4, 6)
    op.attrs["W"] *= 40
    op.attrs["Wb"] = np.full(24, 7.0)
    _quantized(r, op)
    xq = r.integers(-128, 128, 48).astype(np.int8)
    np.testing.assert_array_equal(_c_run(ck, op, xq), recurrent.recurrent_s8(op.params, op.arrays, xq))


@pytest.mark.parametrize("kind,lbr", [("lstm", 0), ("gru", 0), ("gru", 1)])
def test_twin_tracks_float(kind, lbr):
    r = np.random.default_rng(9)
    op = _op(r, kind, 16, 6, 12, lbr=lbr, init=True)
    x, y = _quantized(r, op)
    xf = r.uniform(-1, 1, (16, 6))
    xq = np.clip(np.round(xf / x.scale) + x.zero_point, -128, 127).astype(np.int8)
    want = recurrent.float_recurrent(op, [(xq.astype(np.float64) - x.zero_point) * x.scale])
    got = (recurrent.recurrent_s8(op.params, op.arrays, xq).astype(np.float64) - y.zero_point) * y.scale
    assert np.abs(got - want).max() <= 0.02 + y.scale


def _rnn_model(kind, steps=7, n_in=5, hid=6, direction="forward", layout=0, init=False, output="Y", lbr=0):
    r = np.random.default_rng(3)
    g, dirs = recurrent.GATES[kind], 2 if direction == "bidirectional" else 1
    s = 0.8 / np.sqrt(hid)
    inits = {"W": r.normal(0, s, (dirs, g * hid, n_in)), "R": r.normal(0, s, (dirs, g * hid, hid)),
             "B": r.normal(0, 0.2, (dirs, 2 * g * hid))}
    ins = ["x", "W", "R", "B"]
    if init:
        inits["h0"] = r.uniform(-0.5, 0.5, (dirs, 1, hid))
        ins += ["", "h0"]
        if kind == "lstm":
            inits["c0"] = r.uniform(-1, 1, (dirs, 1, hid))
            ins.append("c0")
    nodes = []
    if not layout:      # the model's input is batch first; PyTorch puts a Transpose before a layout 0 RNN
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2], name="to_time_major"))
        ins[0] = "xt"
    yshape = [1, steps, dirs, hid] if output == "Y" else [1, dirs, hid]
    outs = {"Y": ["y"], "Y_h": ["", "y"], "Y_c": ["", "", "y"]}[output]
    if not layout:      # and a Transpose back to batch first after it
        outs = [o and "yt" for o in outs]
        nodes_after = [helper.make_node("Transpose", ["yt"], ["y"], perm=[2, 0, 1, 3] if output == "Y" else [1, 0, 2],
                                        name="to_batch_first")]
    else:
        nodes_after = []
    extra = dict(linear_before_reset=lbr) if kind == "gru" else {}
    node = helper.make_node(kind.upper(), ins, outs, hidden_size=hid, direction=direction, layout=layout,
                            name="rnn", **extra)
    return make_model(nodes + [node] + nodes_after, ("x", [1, steps, n_in]), ("y", yshape), inits, opset=14)


SWEEP = pytest.mark.sweep       # the same paths in other combinations: outside the default run
CASES = [("lstm", "bidirectional", 0, True, "Y", 4),      # lbr 4: int4 weights (an LSTM has no linear_before_reset)
         ("gru", "forward", 1, False, "Y_h", 1), ("lstm", "reverse", 1, True, "Y_c", 0),
         ("gru", "bidirectional", 0, True, "Y", 0),
         pytest.param("lstm", "bidirectional", 0, True, "Y", 0, marks=SWEEP),
         pytest.param("lstm", "forward", 0, False, "Y", 0, marks=SWEEP),
         pytest.param("lstm", "reverse", 1, True, "Y_h", 0, marks=SWEEP),
         pytest.param("gru", "bidirectional", 1, False, "Y_h", 1, marks=SWEEP),
         pytest.param("lstm", "bidirectional", 0, False, "Y_c", 0, marks=SWEEP)]


@pytest.mark.parametrize("kind,direction,layout,init,output,lbr", CASES)
def test_onnx_end_to_end(kind, direction, layout, init, output, lbr, tmp_path):
    """(lbr 4: an LSTM with int4 weights, generated on the fast s4 kernel; the kernels under UBSan: the tests
    above.)"""
    bits = 4 if lbr == 4 else 8
    model = _rnn_model(kind, direction=direction, layout=layout, init=init, output=output, lbr=lbr % 4)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(1).uniform(-1, 1, [16] + shape[1:]).astype(np.float32)
    graph = canonicalize.canonicalize(model, f"{kind}_model")
    for op in graph.ops:
        op.attrs["weight_bits"] = bits
    want = calibrate.run_float(model, x[:1])[0]
    np.testing.assert_allclose(floatref.output(graph, x[0]).reshape(want.shape), want, atol=1e-5)
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values() if not t.source.startswith("edgec:")])
    ranges.update(floatref.ranges(graph, x, [t.source for t in graph.tensors.values() if t.source.startswith("edgec:")]))
    graph = quantize.quantize(graph, ranges)
    tout = graph.tensors[graph.output]
    got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    assert np.abs(got.reshape(want.shape) - want).max() <= 4 * tout.scale + (0.03 if bits == 8 else 0.15)
    if bits == 4:
        assert all(select.int4_weights(op) for op in graph.ops if op.kind == kind)
        graph = pipeline.lower(graph)
        assert {op.lowering.kernel.name for op in graph.ops if op.kind == kind} == {"edgec_recurrent_fast_s4"}
    check_generated_c(graph, x[:4], tmp_path)


@pytest.mark.parametrize("change,match", [
    (dict(clip=3.0), "'clip' attribute"), (dict(activations=["Relu", "Tanh", "Tanh"]), "default activations"),
    (dict(input_forget=1), "input_forget")])
def test_limits_name_the_node(change, match):
    model = _rnn_model("lstm")
    model.graph.node[1].attribute.extend([helper.make_attribute(k, v) for k, v in change.items()])
    with pytest.raises(EdgecError, match=f"node 'rnn'.*{match}"):
        canonicalize.canonicalize(model, "m")


del itertools


def _unrolled_lstm(steps=4, n_in=3, hid=5):
    """An LSTM as exporters unroll it: per step Slice, MatMul, Add, Split, Sigmoid, Tanh, Mul (no LSTM node)."""
    r = np.random.default_rng(4)
    s = 0.8 / np.sqrt(hid)
    inits = {"W": r.normal(0, s, (n_in, 4 * hid)), "R": r.normal(0, s, (hid, 4 * hid)), "b": r.normal(0, 0.2, 4 * hid),
             "h0": np.zeros((1, hid)), "c0": np.zeros((1, hid)), "axes": np.array([1], np.int64)}
    nodes, h, c = [], "h0", "c0"
    for t in range(steps):
        inits[f"s{t}"], inits[f"e{t}"] = np.array([t], np.int64), np.array([t + 1], np.int64)
        p = f"t{t}_"
        nodes += [helper.make_node("Slice", ["x", f"s{t}", f"e{t}", "axes"], [p + "x3"], name=p + "slice"),
                  helper.make_node("Squeeze", [p + "x3", "axes"], [p + "x"], name=p + "squeeze"),
                  helper.make_node("MatMul", [p + "x", "W"], [p + "wx"], name=p + "wx"),
                  helper.make_node("MatMul", [h, "R"], [p + "rh"], name=p + "rh"),
                  helper.make_node("Add", [p + "wx", p + "rh"], [p + "a0"], name=p + "add0"),
                  helper.make_node("Add", [p + "a0", "b"], [p + "a"], name=p + "add1"),
                  helper.make_node("Split", [p + "a"], [p + g for g in "iofg"], axis=1, name=p + "split"),
                  helper.make_node("Sigmoid", [p + "i"], [p + "si"], name=p + "si"),
                  helper.make_node("Sigmoid", [p + "o"], [p + "so"], name=p + "so"),
                  helper.make_node("Sigmoid", [p + "f"], [p + "sf"], name=p + "sf"),
                  helper.make_node("Tanh", [p + "g"], [p + "tg"], name=p + "tg"),
                  helper.make_node("Mul", [p + "sf", c], [p + "fc"], name=p + "fc"),
                  helper.make_node("Mul", [p + "si", p + "tg"], [p + "ig"], name=p + "ig"),
                  helper.make_node("Add", [p + "fc", p + "ig"], [p + "c"], name=p + "c"),
                  helper.make_node("Tanh", [p + "c"], [p + "tc"], name=p + "tc"),
                  helper.make_node("Mul", [p + "so", p + "tc"], [p + "h"], name=p + "h")]
        h, c = p + "h", p + "c"
    nodes[-1].output[0] = "y"
    return make_model(nodes, ("x", [1, steps, n_in]), ("y", [1, hid]), inits, opset=13)


def test_unrolled_lstm_builds_bit_exact(tmp_path):
    """The unrolled form runs on the existing kinds (fully connected, binary, lut) and tracks onnxruntime."""
    model = _unrolled_lstm()
    x = np.random.default_rng(2).uniform(-1, 1, (32, 4, 3)).astype(np.float32)
    graph = canonicalize.canonicalize(model, "unrolled_lstm")
    want = calibrate.run_float(model, x[:1])[0]
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()])
    graph = quantize.quantize(graph, ranges)
    tout = graph.tensors[graph.output]
    got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    assert np.abs(got.reshape(want.shape) - want).max() <= 4 * tout.scale + 0.03
    check_generated_c(graph, x[:4], tmp_path)


@pytest.mark.parametrize("path", ["portable", "dsp-emulated"])
@pytest.mark.parametrize("kind,lbr,bits", [("lstm", 0, 8), ("gru", 0, 8), ("gru", 1, 8), ("lstm", 0, 4),
                                           ("gru", 1, 4)])
def test_fast_kernel_matches_twin(ck, ck_dsp, path, kind, lbr, bits):
    """edgec_recurrent_fast_s8 (recurrent.lower_recurrent: rows padded to words, products on SMLAD) and
    edgec_recurrent_fast_s4 (int4: rows padded to 8, 8 nibbles a word) on both inner-loop paths, odd input and
    hidden sizes (part-full words), guard bytes after scratch and output."""
    lib = (ck if path == "portable" else ck_dsp).lib
    r = np.random.default_rng(170 + {"lstm": 1, "gru": 2}[kind] + 10 * lbr + bits)
    ran, left, cases = 0, 0, 25 if bits == 8 else 16
    for case in range(cases):
        steps, n_in, hid, batch = int(r.integers(1, 7)), int(r.integers(1, 14)), int(r.integers(1, 23)), int(r.integers(1, 3))
        op = _op(r, kind, steps, n_in, hid, reverse=case % 2, lbr=lbr, output=(case // 2) % (3 if kind == "lstm" else 2),
                 init=case % 3 == 0, batch=batch)
        if case % 5 == 4:
            op.attrs["W"] *= 30         # input multipliers over 1
        _quantized(r, op, bits)
        xq = r.integers(-128, 128, size=steps * batch * n_in).astype(np.int8)
        low = select.fast(op)
        assert low.kernel.name == f"edgec_recurrent_fast_s{bits}"
        # (records: for a multiplier over 1 with the accumulator shifted left first; none where that could reach
        # 2^30, then the reference requantization)
        packed = dict(low.arrays)
        ran += ("rq_x" if bits == 8 else "rq_h") in packed
        left += "rq_x" in packed and packed["rq_x"].reshape(-1, 5)[:, 0].max() > 0
        packed.pop(("rq_h", "rq_x")[case % 2] if case % 4 == 3 else "none", None)   # that path too
        want = recurrent.recurrent_s8(op.params, op.arrays, xq)
        guard, n_scratch = 64, low.scratch_bytes
        raw = np.full(n_scratch + guard + 16, 0x5A, np.int8)
        scratch = raw[(-raw.ctypes.data) % 16:]                  # 16-byte aligned, as the planner places it
        out = np.full(want.size + guard, 99, np.int8)
        arrays = [np.ascontiguousarray(packed[k]) for k in recurrent.ARRAYS]
        records = [ptr(np.ascontiguousarray(packed[k])) if k in packed else None for k in ("rq_x", "rq_h")]
        getattr(lib, low.kernel.name)(ctypes.byref(make("edgec_recurrent_params", op.params)), ptr(xq),
                                      *[ptr(v) for v in arrays], *records, ptr(scratch), ptr(out))
        assert np.array_equal(out[:want.size], want), (kind, case)
        assert np.all(out[want.size:] == 99) and np.all(scratch[n_scratch:n_scratch + guard] == 0x5A)
    assert ran >= cases // 2 and left >= 2, (ran, left)    # (left: records of multipliers over 1)


@pytest.mark.parametrize("kind,lbr", [("lstm", 0), ("gru", 0), ("gru", 1)])
def test_s16_kernel_matches_twin(ck, kind, lbr):
    """edgec_recurrent_s16 (int16 sequence in and out, zero points 0; a float model's GRU by default) against
    recurrent_s8(wide=True), with inputs over the whole int16 range."""
    r = np.random.default_rng(40 + {"lstm": 1, "gru": 2}[kind] + 10 * lbr)
    for case in range(20):
        steps, n_in, hid, batch = int(r.integers(1, 9)), int(r.integers(1, 12)), int(r.integers(1, 20)), int(r.integers(1, 3))
        op = _op(r, kind, steps, n_in, hid, reverse=case % 2, lbr=lbr,
                 output=(case // 2) % (3 if kind == "lstm" else 2), init=case % 3 == 0, batch=batch)
        x = Tensor("x", (steps, batch, n_in), "x", float(r.uniform(0.5, 3.0)) / 32767, 0, dtype="int16")
        y = Tensor("y", (1,), "y", float(r.uniform(0.5, 2.0)) / 32767, 0, dtype="int16")
        recurrent.quantize_recurrent(op, [x], y)
        p, a = op.params, op.arrays
        xq = r.integers(-32768, 32768, steps * batch * n_in).astype(np.int16)
        arrays = [np.ascontiguousarray(a[k]) for k in recurrent.ARRAYS]
        scratch = np.zeros(cheader.buffer_size("edgec_recurrent_s16", p) // 4 + 1, np.int32)
        out = np.full((steps if p["output"] == 0 else 1) * batch * hid, 999, np.int16)
        ck.lib.edgec_recurrent_s16(ctypes.byref(make("edgec_recurrent_params", p)), ptr(xq),
                                   *[ptr(v) for v in arrays], ptr(scratch), ptr(out))
        want = recurrent.recurrent_s8(p, a, xq, wide=True)
        assert want.dtype == np.int16
        np.testing.assert_array_equal(out, want, err_msg=f"case {case}")


@pytest.mark.parametrize("path", ["portable", "dsp-emulated"])
@pytest.mark.parametrize("kind,lbr", [("lstm", 0), ("gru", 1)])
def test_fast_s16_kernel_matches_twin(ck, ck_dsp, path, kind, lbr):
    """edgec_recurrent_fast_s16 (recurrent.lower_recurrent16: int16 x laid out as h, products on SMLAD, the x
    records checked for |x| <= 32768) on both inner-loop paths against recurrent_s8(wide=True), odd sizes, guard
    bytes after scratch and output."""
    lib = (ck if path == "portable" else ck_dsp).lib
    r = np.random.default_rng(270 + {"lstm": 1, "gru": 2}[kind] + 10 * lbr)
    ran = 0
    for case in range(16):
        steps, n_in, hid, batch = int(r.integers(1, 7)), int(r.integers(1, 14)), int(r.integers(1, 23)), int(r.integers(1, 3))
        op = _op(r, kind, steps, n_in, hid, reverse=case % 2, lbr=lbr, output=(case // 2) % (3 if kind == "lstm" else 2),
                 init=case % 3 == 0, batch=batch)
        x = Tensor("x", (steps, batch, n_in), "x", float(r.uniform(0.5, 3.0)) / 32767, 0, dtype="int16")
        y = Tensor("y", (1,), "y", float(r.uniform(0.5, 2.0)) / 32767, 0, dtype="int16")
        recurrent.quantize_recurrent(op, [x], y)
        xq = r.integers(-32768, 32768, size=steps * batch * n_in).astype(np.int16)
        low = select.fast(op, ("int16", "int16"))
        assert low.kernel.name == "edgec_recurrent_fast_s16"
        packed = dict(low.arrays)
        ran += "rq_x" in packed
        want = recurrent.recurrent_s8(op.params, op.arrays, xq, wide=True)
        guard, n_scratch = 64, low.scratch_bytes
        raw = np.full(n_scratch + guard + 16, 0x5A, np.int8)
        scratch = raw[(-raw.ctypes.data) % 16:]
        out = np.full(want.size + guard, 999, np.int16)
        arrays = [np.ascontiguousarray(packed[k]) for k in recurrent.ARRAYS]
        records = [ptr(np.ascontiguousarray(packed[k])) if k in packed else None for k in ("rq_x", "rq_h")]
        getattr(lib, low.kernel.name)(ctypes.byref(make("edgec_recurrent_params", op.params)), ptr(xq),
                                      *[ptr(v) for v in arrays], *records, ptr(scratch), ptr(out))
        assert np.array_equal(out[:want.size], want), (kind, case)
        assert np.all(out[want.size:] == 999) and np.all(scratch[n_scratch:n_scratch + guard] == 0x5A)
    assert ran >= 8, ran
