"""The fully connected family (runtime_c/edgec_fully_connected.c) against its NumPy twins, bit for bit: fully
connected (int8 and 16x8), `rows` rows through one layer, batched matmul of two activations (edgec_matmul.c; tests/kernels/test_matmul.py has its strided and fast
forms). The fast
fully connected kernel runs in the generated models of tests/kernels/test_fast_models.py."""
from __future__ import annotations

import ctypes
import math
from pathlib import Path

import numpy as np
import pytest

from ckernels import (act, eq, fully_connected_s16_and_conversion_cases, group_conv_fc_rows_matmul_cases, i8, make,
                      ptr, requant_params)
from edgec.ir import Op
from edgec.ops import dense, matmul, select


def test_fully_connected_random(ck):
    rng = np.random.default_rng(20)
    for _ in range(500):
        n_in, n_out = int(rng.integers(1, 300)), int(rng.integers(1, 40))
        zi, zo = (int(v) for v in rng.integers(-128, 128, size=2))
        lo, hi = act(rng, zo)
        p = dict(in_features=n_in, out_features=n_out, input_zp=zi, output_zp=zo, act_min=lo, act_max=hi)
        acc_scale = 5500.0 * math.sqrt(n_in)
        mult, shift = requant_params(rng, n_out, acc_scale if rng.random() < 0.8 else None)
        case = (p, i8(rng, n_in), i8(rng, (n_out, n_in)),
                rng.integers(-int(acc_scale), int(acc_scale) + 1, size=n_out).astype(np.int32), mult, shift)
        eq(dense.fully_connected_s8(*case), ck.fully_connected_s8(*case))


@pytest.mark.parametrize("seed", range(6))
def test_fully_connected_rows_and_matmul(ck, seed):
    _, (q, rows, x, w, fb, fm, fs), (m, a, b) = group_conv_fc_rows_matmul_cases(seed)
    out = np.zeros(rows * q["out_features"], np.int8)
    ck.lib.edgec_fully_connected_rows_s8(ctypes.byref(make("edgec_fully_connected_rows_params", dict(q, rows=rows))),
                                         ptr(x), ptr(w), ptr(fb), ptr(fm), ptr(fs), ptr(out))
    want = dense.fully_connected_rows_s8(q, rows, x, w, fb, fm, fs)
    assert np.array_equal(out, want.reshape(-1))
    out = np.zeros(12, np.int8)
    ck.lib.edgec_matmul_s8(ctypes.byref(make("edgec_matmul_params", m)), ptr(a), ptr(b), ptr(out))
    assert np.array_equal(out, matmul.matmul_s8(m, a, b))


def test_fully_connected_s16_bit_exact(ck):
    for (p, x, w, bias, mult, shift), _ in fully_connected_s16_and_conversion_cases():
        got = np.zeros(p["out_features"], np.int16)
        ck.lib.edgec_fully_connected_s16(ctypes.byref(make("edgec_fully_connected_params", p)), ptr(x), ptr(w),
                                         ptr(bias), ptr(mult), ptr(shift), ptr(got))
        assert np.array_equal(got, dense.fully_connected_s16(p, x, w, bias, mult, shift))


@pytest.mark.parametrize("path", ["ck", "ck_dsp"])
def test_fully_connected_packed_rows(request, path):
    """fully_connected_rows lowered onto the fast kernel, row by row: the twin's output on both fast paths."""
    lib = request.getfixturevalue(path).lib
    rng = np.random.default_rng(21)
    ran = 0
    for _ in range(60):
        rows, n_in, n_out = int(rng.integers(1, 9)), int(rng.integers(1, 70)), int(rng.integers(1, 20))
        zi, zo = (int(v) for v in rng.integers(-128, 128, size=2))
        lo, hi = act(rng, zo)
        q = dict(in_features=n_in, out_features=n_out, input_zp=zi, output_zp=zo, act_min=lo, act_max=hi, rows=rows)
        mult, shift = requant_params(rng, n_out, 5500.0 * math.sqrt(n_in))
        x, w = i8(rng, rows * n_in), i8(rng, (n_out, n_in))
        bias = rng.integers(-5000, 5000, size=n_out).astype(np.int32)
        op = Op("fully_connected_rows", "fc", (), "y", params=q,
                arrays=dict(weights=w, bias=bias, mult=mult, shift=shift))
        low = select.fast(op)
        if low is None:
            continue
        assert low.kernel.name == "edgec_fully_connected_packed_rows_s8"
        out = np.zeros(rows * n_out, np.int8)
        scratch = np.zeros(low.scratch_bytes // 4 + 1, np.uint32)
        fw, rq = low.arrays["fw"], np.ascontiguousarray(low.arrays["rq"], np.int32)
        lib.edgec_fully_connected_packed_rows_s8(ctypes.byref(make(low.struct, low.params)), ptr(x),
                                                 ptr(fw), ptr(rq), ptr(scratch), ptr(out))
        assert np.array_equal(out, dense.fully_connected_rows_s8(q, rows, x, w, bias, mult, shift).reshape(-1))
        ran += 1
    assert ran >= 40


@pytest.mark.parametrize("path", ["ck", "ck_dsp"])
def test_fully_connected_packed_long_input_widened_in_chunks(request, path):
    """edgec_fully_connected_packed_s8 on inputs longer than EDGEC_FC_WIDEN_GROUPS groups of 4 (edgec_nn.h): its
    scratch bounded (2 KiB), the input widened a chunk at a time for each block of 4 rows (the remaining rows
    too), the last chunk and the last group partial, the input aligned or not: the twin's output on both paths."""
    lib = request.getfixturevalue(path).lib
    rng = np.random.default_rng(22)
    for case in range(8):
        n_in, n_out = int(rng.integers(1025, 2600)), int(rng.integers(1, 10))
        zi, zo = (int(v) for v in rng.integers(-128, 128, size=2))
        lo, hi = act(rng, zo)
        q = dict(in_features=n_in, out_features=n_out, input_zp=zi, output_zp=zo, act_min=lo, act_max=hi)
        mult, shift = requant_params(rng, n_out, 5500.0 * math.sqrt(n_in))
        w = i8(rng, (n_out, n_in))
        bias = rng.integers(-5000, 5000, size=n_out).astype(np.int32)
        op = Op("fully_connected", "fc", ("x",), "y", params=q, arrays=dict(weights=w, bias=bias, mult=mult, shift=shift))
        low = select.fast(op)
        assert low.kernel.name == "edgec_fully_connected_packed_s8" and low.scratch_bytes == 2048
        raw = i8(rng, n_in + 1)
        x = raw[case % 2:case % 2 + n_in]                    # (odd cases: an input not on a word boundary)
        fw, rq = low.arrays["fw"], np.ascontiguousarray(low.arrays["rq"], np.int32)
        entry = dense.packed_entry(low.params)
        assert entry == "edgec_fully_connected_packed_chunked_s8"        # what the generated call names
        for name in (entry, "edgec_fully_connected_packed_s8"):        # and the entry that tests k4 at run time
            out = np.zeros(n_out, np.int8)
            scratch = np.full(low.scratch_bytes // 4 + 16, 0x5A5A5A5A, np.uint32)
            getattr(lib, name)(ctypes.byref(make(low.struct, low.params)), ptr(x), ptr(fw), ptr(rq), ptr(scratch),
                               ptr(out))
            assert np.array_equal(out, dense.fully_connected_s8(q, x, w, bias, mult, shift)), (name, q)
            assert np.all(scratch[low.scratch_bytes // 4:] == 0x5A5A5A5A)


def test_packed_call_names_the_path_its_input_length_needs():
    """The generated call of the packed kernel names its one-pass path up to EDGEC_FC_WIDEN_GROUPS groups of 4
    inputs and its chunked path beyond (so a firmware links only the one it runs); the boundary is the header's."""
    header = (Path(__file__).resolve().parents[2] / "runtime_c" / "edgec_nn.h").read_text()
    assert f"#define EDGEC_FC_WIDEN_GROUPS {dense.FC_WIDEN_GROUPS}\n" in header
    edge = 4 * dense.FC_WIDEN_GROUPS
    assert dense.packed_entry({"k4": edge}) == "edgec_fully_connected_packed_onepass_s8"
    assert dense.packed_entry({"k4": edge + 4}) == "edgec_fully_connected_packed_chunked_s8"
    assert set(dense.PACKED.entries) == {dense.packed_entry({"k4": 4}), dense.packed_entry({"k4": edge + 4})}


def test_gemm_with_a_computed_bias_is_a_product_then_an_add():
    """Gemm(x, W, C) with C computed (tf2onnx writes a Keras LSTM cell so: x W + h U in one Gemm) was refused
    ("the bias (C) must be constant"): it is the product (edgec's own tensor), then an Add of C; the result tracks
    onnxruntime."""
    import onnxruntime as ort
    from onnx import helper
    from conftest import make_model
    from edgec.frontend import canonicalize
    from edgec.ir import SYNTHETIC
    from edgec.quant import calibrate, floatref, quantize, reference
    from edgec.fixedpoint import scheme
    rng = np.random.default_rng(8)
    nodes = [helper.make_node("MatMul", ["x", "u"], ["hu"], name="recurrent"),
             helper.make_node("Gemm", ["x", "w", "hu"], ["y"], transB=1, name="cell")]
    model = make_model(nodes, ("x", [1, 8]), ("y", [1, 4]),
                       {"u": rng.normal(0, 0.4, (8, 4)), "w": rng.normal(0, 0.4, (4, 8))})
    graph = canonicalize.canonicalize(model, "gemm_c")
    assert [op.kind for op in graph.ops].count("fully_connected") == 2 and len(graph.ops) == 3
    x = rng.normal(0, 1, (16, 8)).astype(np.float32)
    sources = {t.source for t in graph.tensors.values()}
    own = {s for s in sources if s.startswith(SYNTHETIC)}
    assert own, "the product is edgec's own tensor"
    ranges = {**calibrate.calibrate(model, x, sorted(sources - own)), **floatref.ranges(graph, x, own)}
    graph = quantize.quantize(graph, ranges)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x[:1]})[0]
    got = scheme.dequantize(graph.tensors[graph.output],
                            reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    assert np.abs(got.reshape(want.shape) - want).max() <= 0.03 * np.ptp(want)
