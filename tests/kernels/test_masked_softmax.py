"""The masked softmax (edgec/ops/softmax/masked.py, runtime_c/edgec_softmax.c edgec_masked_softmax_s8): the C kernel
against its NumPy twin bit for bit on random shapes and masks (every masked position exactly -128, a fully masked
row all -128, the kept positions edgec's softmax of the kept values alone); the ONNX patterns folded into it (an
additive -inf / finfo.min / -1e9 mask, Where with -inf either way round, a key-padding mask broadcast over heads;
opset 23's Attention with is_causal: tests/test_onnx_functions.py) with edgec's float graph equal to ONNX
Runtime's; a bias that is not a mask left alone; the generated C (reference and ASan/UBSan) equal to the
reference."""
from __future__ import annotations

import ctypes

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from ckernels import eq, i8, make, ptr
from conftest import make_model
from edgec.errors import EdgecError
from edgec.frontend import canonicalize
from edgec.ops import softmax
from edgec.ops.softmax import masked as masked_softmax
from edgec.quant import floatref, numerics

T, D = 6, 8


def c_masked(ck, p, x, keep, table):
    x, keep = np.ascontiguousarray(x, np.int8), np.ascontiguousarray(keep, np.int8)
    table = np.ascontiguousarray(table, np.uint32)
    out = np.zeros(x.size, np.int8)
    ck.lib.edgec_masked_softmax_s8(ctypes.byref(make("edgec_masked_softmax_params", p)), ptr(x), ptr(keep),
                                   ptr(table), ptr(out))
    return out


def test_masked_softmax_kernel_random(ck):
    rng = np.random.default_rng(46)
    for n in range(150):
        scale = float(np.exp(rng.uniform(np.log(1e-3), np.log(1.0))))
        table = softmax.softmax_table(scale)
        mask_rows, cols = int(rng.integers(1, 9)), int(rng.integers(1, 300))
        rows = mask_rows * int(rng.integers(1, 5))
        keep = (rng.random((mask_rows, cols)) < rng.choice([0.1, 0.5, 0.9, 1.0])).astype(np.int8)
        if n % 3 == 0:
            keep[int(rng.integers(mask_rows))] = 0          # a row with nothing to attend to
        x = i8(rng, (rows, cols))
        p = dict(rows=rows, cols=cols, mask_rows=mask_rows)
        got = masked_softmax.masked_softmax_s8(p, x, keep, table)
        eq(got, c_masked(ck, p, x, keep, table))
        k = np.tile(keep, (rows // mask_rows, 1)).reshape(-1) != 0
        assert np.all(got[~k] == -128)
        for r in range(rows):                                 # the kept ones: the plain softmax of them alone
            kr = keep[r % mask_rows] != 0
            if kr.any():
                np.testing.assert_array_equal(got.reshape(rows, cols)[r, kr],
                                              softmax.softmax_s8(x[r, kr][None], table)[0])


def test_a_causal_mask_matches_float_softmax():
    """A causal mask over 4 heads of T x T scores: close to NumPy's float softmax with -inf added."""
    rng = np.random.default_rng(3)
    scale = 0.05
    keep = masked_softmax.period(np.tile(np.tril(np.ones((T, T), bool)), (4, 1)))
    assert keep.shape == (T, T)
    x = rng.integers(-128, 128, (4 * T, T)).astype(np.int8)
    got = (masked_softmax.masked_softmax_s8(dict(rows=4 * T, cols=T, mask_rows=T), x, keep,
                                            softmax.softmax_table(scale)).astype(float) + 128) / 256
    z = np.where(np.tile(keep, (4, 1)), x * scale, -np.inf)
    f = np.exp(z - z.max(axis=1, keepdims=True))
    f = (f / f.sum(axis=1, keepdims=True)).reshape(-1)
    assert np.max(np.abs(got - np.minimum(f, 255 / 256))) <= 1 / 256 + 1e-6


def _scores_model(mask_nodes, consts, heads=2, opset=17):
    """x [1, T, D] -> q, k, v -> scores [1, heads, T, T/heads...] -> mask -> Softmax -> @ v -> out."""
    rng = np.random.default_rng(0)
    consts = dict(consts, **{n: rng.normal(size=(D, D)).astype(np.float32) for n in ("wq", "wk", "wv")})
    consts["shape"] = np.array([1, T, heads, D // heads], np.int64)
    consts["back"] = np.array([1, T, D], np.int64)
    nodes = []
    for n in "qkv":
        nodes += [helper.make_node("MatMul", ["x", f"w{n}"], [f"{n}0"], name=f"{n}mm"),
                  helper.make_node("Reshape", [f"{n}0", "shape"], [f"{n}1"], name=f"{n}rs"),
                  helper.make_node("Transpose", [f"{n}1"], [n], name=f"{n}tr",
                                   perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["q", "k"], ["scores"], name="qk")] + mask_nodes
    nodes += [helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["probs", "v"], ["a"], name="av"),
              helper.make_node("Transpose", ["a"], ["a1"], name="atr", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["a1", "back"], ["out"], name="out")]
    return make_model(nodes, ("x", [1, T, D]), ("out", [1, T, D]), consts, opset=opset)


CAUSAL = np.tril(np.ones((T, T), bool))
PADDING = np.array([1, 1, 1, 1, 0, 0], bool).reshape(1, 1, 1, T)     # the last two keys are padding


def _additive(fill, keep=CAUSAL):
    return [helper.make_node("Add", ["scores", "mask"], ["masked"], name="add")], \
        {"mask": np.where(keep, 0.0, fill).astype(np.float32)}


CASES = {
    "causal -inf": _additive(-np.inf),
    "causal finfo.min": _additive(np.finfo(np.float32).min),
    "causal -1e9, mask first": ([helper.make_node("Add", ["mask", "scores"], ["masked"], name="add")],
                                {"mask": np.where(CAUSAL, 0.0, -1e9).astype(np.float32)}),
    "key padding -inf": _additive(-np.inf, PADDING),
    "where scores, -inf": ([helper.make_node("Where", ["cond", "scores", "ninf"], ["masked"], name="where")],
                           {"cond": CAUSAL, "ninf": np.array(-np.inf, np.float32)}),
    "where -inf, scores": ([helper.make_node("Where", ["cond", "ninf", "scores"], ["masked"], name="where")],
                           {"cond": ~CAUSAL, "ninf": np.array(-np.inf, np.float32)}),
}


def _check_float(model, graph):
    x = np.random.default_rng(1).normal(size=(1, T, D)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(floatref.output(graph, x).reshape(want.shape), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", list(CASES))
def test_a_constant_mask_is_folded_into_a_masked_softmax(case):
    nodes, consts = CASES[case]
    model = _scores_model(nodes, consts)
    graph = canonicalize.canonicalize(model, "m")
    kinds = [op.kind for op in graph.ops]
    assert "masked_softmax" in kinds and "softmax" not in kinds and "binary" not in kinds and "where" not in kinds
    op = next(op for op in graph.ops if op.kind == "masked_softmax")
    assert op.attrs["keep"].shape == ((T, T) if "padding" not in case else (1, T))    # one period of rows
    numerics.check_finite(graph)
    _check_float(model, graph)


def test_a_bias_with_a_mask_is_not_a_mask():
    """A constant holding other values than 0 and the mask's (a position bias) stays an Add: -inf there is still
    refused in one line."""
    nodes, consts = _additive(-np.inf)
    consts["mask"] = consts["mask"] + np.where(CAUSAL, 0.5, 0.0).astype(np.float32)
    graph = canonicalize.canonicalize(_scores_model(nodes, consts), "m")
    assert "masked_softmax" not in [op.kind for op in graph.ops]
    with pytest.raises(EdgecError, match="attention mask"):
        numerics.check_finite(graph)


@pytest.mark.parametrize("path", ["reference", "sanitized"])
def test_the_generated_c_matches_the_reference(tmp_path, path):
    import tflite_oracle as oracle
    from edgec import api
    from edgec.quant import reference
    nodes, consts = CASES["causal -inf"]
    model = tmp_path / "m.onnx"
    model.write_bytes(_scores_model(nodes, consts).SerializeToString())
    rng = np.random.default_rng(2)
    g = api.calibrate(model, rng.normal(size=(32, T, D)).astype(np.float32)).graph
    assert "masked_softmax" in [op.kind for op in g.ops]
    xq = [rng.integers(-128, 128, T * D).astype(np.int8) for _ in range(4)]
    got = oracle.run_c([g], [np.stack(xq)], tmp_path / "c", path)[0]
    want = np.stack([np.asarray(reference.run(g, x)).reshape(-1) for x in xq])
    assert np.array_equal(np.asarray(got).reshape(len(xq), -1), want)
