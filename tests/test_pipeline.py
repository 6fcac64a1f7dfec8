"""Canonicalize + calibrate + quantize + reference on small models of the shapes exporters emit.

Each model's INT8 reference output, dequantized, must track onnxruntime's float
output: a layout or folding mistake gives errors far beyond quantization noise.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import make_model
from synthetic_models import MODELS, cnn_nchw, nhwc_tf2onnx, quantized
from edgec.quant import calibrate
from edgec.frontend import canonicalize
from edgec.plan import planner
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.errors import EdgecError


@pytest.mark.parametrize("name", sorted(MODELS))
def test_int8_reference_tracks_float(name):
    model, shape = MODELS[name]()
    graph, x = quantized(model, shape)
    tout = graph.tensors[graph.output]
    fl = calibrate.run_float(model, x)
    q = np.stack([reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], xi)) for xi in x])
    deq = scheme.dequantize(tout, q).reshape(fl.shape)
    span = float(fl.max() - fl.min())
    err = np.abs(deq - fl)
    # a few output quantization steps of error at most; wrong layouts give errors of the order of `span`
    assert err.max() < max(8 * tout.scale, 0.08 * span), (err.max(), tout.scale, span)
    assert err.mean() < 2 * tout.scale + 0.02 * span
    plan = planner.plan(graph)
    planner.check_plan(graph, plan)


def test_canonical_ops_fold_and_fuse():
    graph = canonicalize.canonicalize(cnn_nchw()[0], "m")
    kinds = [op.kind for op in graph.ops]
    # BN folded, Relu/Clip fused, Dropout and Flatten views: only kernels that do work remain,
    # plus the one input transpose (C=3 > 1)
    assert kinds == ["transpose", "conv2d", "conv2d", "max_pool", "reshape", "fully_connected", "softmax"]
    assert graph.ops[1].attrs["act"] == (0.0, np.inf)
    assert graph.ops[2].attrs["act"] == (0.0, 6.0)


def test_nhwc_input_transpose_is_free():
    graph = canonicalize.canonicalize(nhwc_tf2onnx()[0], "m")
    kinds = [op.kind for op in graph.ops]
    assert "transpose" not in kinds, kinds      # both Transposes only relabel the layout


def test_unsupported_nodes_are_all_named_before_anything_runs():
    nodes = [helper.make_node("Hardmax", ["x"], ["a"], name="first_bad"),
             helper.make_node("Relu", ["a"], ["b"], name="ok"),
             helper.make_node("Mod", ["b", "b"], ["y"], name="second_bad", fmod=1)]
    model = make_model(nodes, ("x", [1, 4]), ("y", [1, 4]), {})
    with pytest.raises(EdgecError) as err:
        canonicalize.canonicalize(model, "m")
    msg = str(err.value)
    assert "Hardmax (first_bad, opset 13)" in msg and "Mod (second_bad, opset 13)" in msg and "\n" not in msg


def test_dilated_pooling_is_a_clear_limit():
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2], name="dilated")]
    model = make_model(nodes, ("x", [1, 4, 5, 5]), ("y", [1, 4, 3, 3]), {})
    with pytest.raises(EdgecError, match="'dilated'.*dilated pooling"):
        canonicalize.canonicalize(model, "m")


def test_planner_never_overlaps_live_buffers():
    for name in MODELS:
        graph, _ = quantized(MODELS[name]()[0], MODELS[name]()[1], n=4)
        plan = planner.plan(graph)
        planner.check_plan(graph, plan)
        biggest_live = max(sum(b.size for b in plan.buffers if b.first <= i <= b.last)
                           for i in range(len(graph.ops)))
        assert plan.arena_bytes >= biggest_live
