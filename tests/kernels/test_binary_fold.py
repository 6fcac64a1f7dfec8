"""A constant Mul and Add after a convolution fold into its weights and bias at import (edgec/ops/binary/fold.py):
a BatchNorm a converter left as Mul then Add (tf2onnx after a depthwise convolution), as ONNX Runtime's Conv/Mul
and Conv/Add fusions fold it; the float model unchanged, nothing rounded to int8 between them, and the generated C
bit-exact with the reference."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import check_generated_c, make_model
from edgec.frontend import canonicalize
from edgec.quant import calibrate, floatref, quantize, reference
from edgec.fixedpoint import scheme


def _model(group: int, scale_shape, activation: bool):
    rng = np.random.default_rng(5)
    c = 6
    inits = {"w": rng.normal(0, 0.5, (c, c // group, 3, 3)), "b": rng.normal(0, 0.1, c),
             "s": rng.uniform(-3, 3, scale_shape), "t": rng.normal(0, 1, (1, c, 1, 1))}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["h"], name="conv", pads=[1, 1, 1, 1], group=group),
             helper.make_node("Mul", ["h", "s"], ["m"], name="bn_mul"),
             helper.make_node("Add", ["m", "t"], ["a" if activation else "y"], name="bn_add")]
    if activation:
        nodes.append(helper.make_node("Relu", ["a"], ["y"], name="relu"))
    return make_model(nodes, ("x", [1, c, 8, 8]), ("y", [1, c, 8, 8]), inits)


@pytest.mark.parametrize("group,scale_shape,activation", [(1, (1, 6, 1, 1), True), (6, (1, 6, 1, 1), True),
                                                         (6, (1,), False), (1, (6, 1, 1), False)])
def test_mul_and_add_fold_into_the_convolution(group, scale_shape, activation, tmp_path):
    model = _model(group, scale_shape, activation)
    graph = canonicalize.canonicalize(model, "fold_model")
    kept = [op for op in graph.ops if op.kind != "transpose"]       # (the NCHW <-> channels-last views aside)
    assert len(kept) == 1 and "weights" in kept[0].attrs                # the Mul, the Add and the Relu in the conv
    x = np.random.default_rng(6).uniform(-1, 1, (16, 6, 8, 8)).astype(np.float32)
    want = calibrate.run_float(model, x[:2])
    got = np.stack([floatref.output(graph, xi) for xi in x[:2]]).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()])
    q = quantize.quantize(graph, ranges)
    tout = q.tensors[q.output]
    deq = scheme.dequantize(tout, reference.run(q, scheme.quantize_input(q.tensors[q.input], x[0])))
    assert np.abs(deq.reshape(want[0].shape) - want[0]).max() <= 3 * tout.scale
    check_generated_c(q, x[:4], tmp_path)


def test_a_mul_varying_across_space_is_not_folded():
    rng = np.random.default_rng(7)
    inits = {"w": rng.normal(0, 0.5, (4, 4, 1, 1)), "b": np.zeros(4), "s": rng.uniform(1, 2, (1, 1, 8, 8))}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["h"], name="conv"),
             helper.make_node("Mul", ["h", "s"], ["y"], name="mul")]
    model = make_model(nodes, ("x", [1, 4, 8, 8]), ("y", [1, 4, 8, 8]), inits)
    graph = canonicalize.canonicalize(model, "nofold")
    assert any(op.name == "mul" for op in graph.ops)
    x = rng.uniform(-1, 1, (1, 4, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(floatref.output(graph, x[0]).reshape(1, 4, 8, 8), calibrate.run_float(model, x),
                               rtol=1e-4, atol=1e-4)
