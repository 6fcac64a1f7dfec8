"""ONNX comparisons (edgec/ops/binary/compare.py): a peak test of a strictly increasing function's values,
`Equal(MaxPool(f(x)), f(x))` (a CenterNet heat map's, f = Sigmoid), is made on f's input, `Equal(MaxPool(x), x)`:
the same mask in exact arithmetic, and in int8 it has none of the ties f's table makes where it maps several levels
of x to one output level (each tie a false peak)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from conftest import check_generated_c, make_model
from edgec.frontend import canonicalize
from edgec.quant import calibrate, quantize, reference
from edgec.fixedpoint import scheme

SCALE = 0.05      # the input's grid: the calibrated range -6.4 .. 6.35 is 255 steps of 0.05, zero point 0


def _peaks_model(fn: str) -> onnx.ModelProto:
    nodes = [helper.make_node(fn, ["x"], ["s"], name="f"),
             helper.make_node("MaxPool", ["s"], ["m"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Equal", ["m", "s"], ["peak"], name="eq"),
             helper.make_node("Cast", ["peak"], ["keep"], name="cast", to=onnx.TensorProto.FLOAT),
             helper.make_node("Mul", ["s", "keep"], ["y"], name="mul")]
    return make_model(nodes, ("x", [1, 2, 8, 8]), ("y", [1, 2, 8, 8]), {})


def _samples(n: int = 6) -> np.ndarray:
    """Inputs on the input's grid (so x is exact in int8), neighbours a step or two apart where the sigmoid is flat
    (|x| > 3, its slope below the ratio of the grids), the range's ends fixed by two corners."""
    rng = np.random.default_rng(7)
    x = rng.integers(60, 127, (n, 2, 8, 8)) * rng.choice([-1, 1], (n, 2, 1, 1))
    x[:, 0, 0, 0], x[:, 1, 7, 7] = -128, 127
    return (x * SCALE).astype(np.float32)


@pytest.mark.parametrize("fn", ["Sigmoid", "Relu"])
def test_a_peak_test_of_an_increasing_function_is_made_on_its_input(fn, tmp_path):
    """Sigmoid: the Equal reads the max pool of the sigmoid's input and that input; its mask is onnxruntime's float
    mask on every sample (the inputs are on their grid), where the test on the sigmoid's int8 values (main's) passes
    neighbours the table ties as peaks; the output is the sigmoid's int8 values where the mask is set, and the
    generated C equals the reference. Relu (not strictly increasing: its zeros are ties in float too) is left as is."""
    model = _peaks_model(fn)
    graph = canonicalize.canonicalize(model, "peaks")
    (eq,) = [op for op in graph.ops if op.name == "eq" and op.kind == "binary"]
    (f,) = [op for op in graph.ops if op.name == "f" and op.kind != "transpose"]
    pooled = graph.producer(eq.inputs[0])
    assert pooled.kind == "max_pool"
    held = [graph.tensors[t].source for t in (eq.inputs[1], pooled.inputs[0])]
    assert held == (["x", "x"] if fn == "Sigmoid" else ["s", "s"])     # (in whichever layout)
    x = _samples()
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()])
    q = quantize.quantize(graph, ranges)
    tin = q.tensors[q.input]
    assert (tin.scale, tin.zero_point) == pytest.approx((SCALE, 0))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (eq,) = [op for op in q.ops if op.name == "eq" and op.kind == "binary"]
    (f,) = [op for op in q.ops if op.name == "f" and op.kind != "transpose"]
    ours = tables = want = 0
    for xi in x:
        env = reference.run(q, scheme.quantize_input(tin, xi), keep_all=True)
        mask = env[eq.output].astype(bool)
        s = env[f.output].astype(np.int32).transpose(0, 2, 3, 1)      # the sigmoid's int8 values, as the mask NHWC
        pad = np.pad(s, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-129)
        old = np.max([pad[:, a:a + 8, b:b + 8] for a in range(3) for b in range(3)], axis=0) == s
        assert not np.any(mask & ~old)               # never a peak the test on the table's values would not pass
        float_mask = sess.run(None, {"x": xi[None]})[0] != 0     # y != 0 exactly at a peak (sigmoid > 0)
        ours, tables, want = ours + mask.sum(), tables + old.sum(), want + float_mask.sum()
        y = scheme.dequantize(q.tensors[q.output], reference.run(q, scheme.quantize_input(tin, xi)))
        kept = (env[f.output] != q.tensors[f.output].zero_point) & mask.transpose(0, 3, 1, 2)
        assert np.array_equal(y.reshape(-1) != 0, kept.reshape(-1))
    if fn == "Sigmoid":
        assert ours == want < tables          # onnxruntime's float peaks exactly; main's test passed table ties too
    else:
        assert ours == tables
    check_generated_c(q, x, tmp_path)
