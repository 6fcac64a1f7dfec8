"""The matmul family (runtime_c/edgec_matmul.c and fast/edgec_matmul_fast.c) against its NumPy twin, bit for
bit: products of two activations read and written through strides (transposed operands, a broadcast batch, a
transposed output), on the reference kernel, the fast kernel's portable path and its DSP path (intrinsics
emulated in C), and the lowering's checks."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import make, ptr
from edgec.ir import Op
from edgec.ops import matmul, select
from edgec.fixedpoint.scheme import quantize_multiplier


def _case(rng):
    """Random sizes, zero points and a layout for each operand: row-major or transposed, batch broadcast or
    not; the output contiguous or transposed ([m][batch][n], as attention's context is read back)."""
    batch, m, n = (int(v) for v in rng.integers(1, 7, 3))
    k = int(rng.integers(1, 14))      # groups of 4 widened together and a rest of 0-3 (k padded to 4)
    p = dict(batch=batch, m=m, k=k, n=n)
    a_bc, b_bc = rng.random() < 0.2, rng.random() < 0.2
    if rng.random() < 0.5:
        p.update(a_batch_stride=m * k, a_row_stride=k, a_col_stride=1)
    else:
        p.update(a_batch_stride=m * k, a_row_stride=1, a_col_stride=m)
    if rng.random() < 0.5:
        p.update(b_batch_stride=k * n, b_row_stride=n, b_col_stride=1)
    else:                                                     # K^T read in K's own layout [n][k]
        p.update(b_batch_stride=k * n, b_row_stride=1, b_col_stride=k)
    p["a_batch_stride"] *= 0 if a_bc else 1
    p["b_batch_stride"] *= 0 if b_bc else 1
    if rng.random() < 0.5:
        p.update(out_batch_stride=m * n, out_row_stride=n, out_col_stride=1)
    else:
        p.update(out_batch_stride=n, out_row_stride=batch * n, out_col_stride=1)
    mult, shift = quantize_multiplier(float(rng.uniform(0.0005, 0.02)))
    zo = int(rng.integers(-20, 20))
    lo = -128 if rng.random() < 0.5 else int(rng.integers(-128, zo + 1))
    p.update(a_zp=int(rng.integers(-128, 128)), b_zp=int(rng.integers(-128, 128)), mult=mult, shift=shift,
             output_zp=zo, act_min=lo, act_max=127)
    a = rng.integers(-128, 128, (1 if a_bc else batch) * m * k).astype(np.int8)
    b = rng.integers(-128, 128, (1 if b_bc else batch) * k * n).astype(np.int8)
    return p, a, b


def _fast(lib, p, a, b):
    low = select.fast(Op("matmul", "mm", (), "y", params=p))
    assert low is not None and low.kernel.name == "edgec_matmul_fast_s8"
    out = np.zeros(p["batch"] * p["m"] * p["n"], np.int8)
    assert low.scratch_bytes % 4 == 0
    scratch = np.full(low.scratch_bytes // 4 + 4, 0x5A5A5A5A, np.uint32)   # garbage, then 16 guard bytes
    lib.edgec_matmul_fast_s8(ctypes.byref(make("edgec_matmul_fast_params", low.params)), ptr(a), ptr(b),
                             ptr(scratch), ptr(out))
    assert np.all(scratch[-4:] == 0x5A5A5A5A), "the kernel wrote past the scratch the lowering asked for"
    return out


def test_matmul_strided_reference_and_fast_portable(ck):
    rng = np.random.default_rng(17)
    for _ in range(300):
        p, a, b = _case(rng)
        want = matmul.matmul_s8(p, a, b)
        out = np.zeros_like(want)
        ck.lib.edgec_matmul_s8(ctypes.byref(make("edgec_matmul_params", p)), ptr(a), ptr(b), ptr(out))
        assert np.array_equal(out, want), p
        assert np.array_equal(_fast(ck.lib, p, a, b), want), p


def test_matmul_fast_dsp_path(ck_dsp):
    rng = np.random.default_rng(18)
    for _ in range(300):
        p, a, b = _case(rng)
        assert np.array_equal(_fast(ck_dsp.lib, p, a, b), matmul.matmul_s8(p, a, b)), p


def test_matmul_twin_is_the_float_product():
    """The twin's strides mean what they say: a transposed B and a transposed output give numpy's product."""
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (2, 3, 5)).astype(np.int8)
    bt = rng.integers(-128, 128, (2, 4, 5)).astype(np.int8)            # B^T stored [batch][n][k]
    mult, shift = quantize_multiplier(0.25)
    p = dict(batch=2, m=3, k=5, n=4, a_batch_stride=15, a_row_stride=5, a_col_stride=1, b_batch_stride=20,
             b_row_stride=1, b_col_stride=5, out_batch_stride=4, out_row_stride=8, out_col_stride=1,
             a_zp=0, b_zp=0, mult=mult, shift=shift, output_zp=0, act_min=-128, act_max=127)
    want = np.clip(np.rint(np.matmul(a.astype(np.int64), bt.transpose(0, 2, 1).astype(np.int64)) / 4), -128, 127)
    got = matmul.matmul_s8(p, a, bt).reshape(3, 2, 4).transpose(1, 0, 2)   # written [m][batch][n]
    assert np.abs(got.astype(np.int64) - want).max() <= 1


@pytest.mark.parametrize("k, scale", [(20000, 0.001), (8, 3.0)])
def test_matmul_lowering_declines(k, scale):
    """A k that could overflow the accumulator's 2^30 bound, or a multiplier above 1, keeps the reference."""
    mult, shift = quantize_multiplier(scale)
    p = dict(batch=1, m=2, k=k, n=2, a_batch_stride=0, a_row_stride=k, a_col_stride=1, b_batch_stride=0,
             b_row_stride=2, b_col_stride=1, out_batch_stride=0, out_row_stride=2, out_col_stride=1, a_zp=0,
             b_zp=0, mult=mult, shift=shift, output_zp=0, act_min=-128, act_max=127)
    op = Op("matmul", "mm", (), "y", params=p)
    assert select.fast(op) is None and select.select(op, select.Options()).kernel.name == "edgec_matmul_s8"


@pytest.mark.parametrize("scale", [0.5, -0.5])
def test_operands_read_where_they_lie(scale, tmp_path):
    """q and k Split from one activation and q scaled by a constant: with a positive constant both products'
    operands are the Split's input itself (offset 0 and 6 into each row, the constant in the multiplier: no
    copy, no table); a negative one keeps its table (a scale must stay positive). The reference kernel takes
    the offsets (no lowering here), bit for bit against the twin, and the result tracks onnxruntime."""
    from onnx import helper
    from conftest import check_generated_c, make_model
    from edgec.frontend import canonicalize
    from edgec.quant import calibrate, quantize, reference
    from edgec.fixedpoint import scheme
    nodes = [helper.make_node("Split", ["x", "split"], ["q", "k"], axis=-1, name="split"),
             helper.make_node("Mul", ["q", "c"], ["qs"], name="qs"),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
             helper.make_node("MatMul", ["qs", "kt"], ["y"], name="scores")]
    model = make_model(nodes, ("x", [1, 5, 12]), ("y", [1, 5, 5]),
                       {"split": np.array([6, 6], np.int64), "c": np.array(scale, np.float32)})
    graph = canonicalize.canonicalize(model, "qk")
    mm = graph.ops[-1]
    assert mm.inputs[1] == graph.input and mm.attrs["b_offset"] == 6
    assert (mm.inputs[0] == graph.input and mm.attrs["alpha"] == scale) == (scale > 0)
    assert (len(graph.ops) == 1) == (scale > 0)
    if scale < 0:
        return
    x = np.random.default_rng(4).normal(0, 1, (16, 5, 12)).astype(np.float32)
    graph = quantize.quantize(graph, calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()]))
    want = calibrate.run_float(model, x[:1])[0]
    got = scheme.dequantize(graph.tensors[graph.output],
                            reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    assert np.abs(got.reshape(want.shape) - want).max() <= 0.05 * np.ptp(want)
    check_generated_c(graph, x[:4], tmp_path)


@pytest.mark.parametrize("eq_scores, eq_context, c_too", [
    ("ntd,nsd->nts", "nts,nsd->ntd", False),                                   # torch's einsum attention
    pytest.param("ntd,nsd->nst", "nst,nsd->ndt", True, marks=pytest.mark.sweep)])  # transposed outputs; the C
def test_einsum_products_read_where_they_lie(eq_scores, eq_context, c_too, tmp_path):
    """Einsum of two activations (q, k, v Split from one tensor: the dynamo exporter's einsum attention was refused
    as an unsupported operator) is the matmul op, its operands read through their letters' strides: no copy, no
    Transpose; the result tracks onnxruntime and the C is bit-exact with the twin."""
    from onnx import helper
    from conftest import check_generated_c, make_model
    from edgec.frontend import canonicalize
    from edgec.quant import calibrate, quantize, reference
    from edgec.fixedpoint import scheme
    nodes = [helper.make_node("Split", ["x", "split"], ["q", "k", "v"], axis=-1, name="split"),
             helper.make_node("Einsum", ["q", "k"], ["s"], equation=eq_scores, name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
             helper.make_node("Einsum", ["p", "v"], ["y"], equation=eq_context, name="context")]
    out_shape = [1, 5, 4] if eq_context.endswith("td") else [1, 4, 5]
    model = make_model(nodes, ("x", [1, 5, 12]), ("y", out_shape), {"split": np.array([4, 4, 4], np.int64)},
                       opset=13)
    graph = canonicalize.canonicalize(model, "einsum")
    mms = [op for op in graph.ops if op.kind == "matmul"]
    assert len(mms) == 2 and mms[0].inputs == (graph.input, graph.input)
    assert {op.kind for op in graph.ops} == {"matmul", "softmax"}
    x = np.random.default_rng(5).normal(0, 1, (16, 5, 12)).astype(np.float32)
    graph = quantize.quantize(graph, calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()]))
    want = calibrate.run_float(model, x[:1])[0]
    got = scheme.dequantize(graph.tensors[graph.output],
                            reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[0])))
    assert np.abs(got.reshape(want.shape) - want).max() <= 0.05 * np.ptp(want)
    if c_too:
        check_generated_c(graph, x[:4], tmp_path)


@pytest.mark.parametrize("equation, why", [("ij,jk->ik", "constant operand"), ("nij,njk->nik,", "matrix product"),
                                           ("ii,ij->ij", "matrix product"), ("...ij,...jk->...ik", "no ellipsis"),
                                           ("nij->nji", "only two operands")])
def test_einsum_refusals_say_what(equation, why):
    """An Einsum that is no batched product of two activations is refused naming the node and what to do."""
    from onnx import helper
    from conftest import make_model
    from edgec.errors import EdgecError
    from edgec.frontend import canonicalize
    const = equation == "ij,jk->ik"
    operands = ["a"] if "," not in equation else ["a", "w" if const else "a"]
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("Einsum", operands, ["y"], equation=equation, name="ein")]
    shape = [4, 4] if "n" not in equation else [1, 4, 4]
    model = make_model(nodes, ("x", shape), ("y", shape), {"w": np.eye(4)} if const else {}, opset=13)
    with pytest.raises(EdgecError, match=f"ein.*{why}"):
        canonicalize.canonicalize(model, "einsum")
