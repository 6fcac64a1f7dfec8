"""Canonicalize + calibrate + quantize + reference on small models of the shapes exporters emit.

Each model's INT8 reference output, dequantized, must track onnxruntime's float
output: a layout or folding mistake gives errors far beyond quantization noise.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import make_model
from edgec.quant import calibrate
from edgec.frontend import canonicalize
from edgec.plan import planner
from edgec.quant import quantize
from edgec.quant import scheme
from edgec.quant import reference
from edgec.errors import EdgecError
from edgec.codegen import lowering

rng = np.random.default_rng(0)


def W(*shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def bn_inits(prefix, c):
    return {f"{prefix}_g": 1 + 0.1 * rng.standard_normal(c), f"{prefix}_b": 0.1 * rng.standard_normal(c),
            f"{prefix}_m": 0.1 * rng.standard_normal(c), f"{prefix}_v": 0.5 + rng.random(c)}


def bn(prefix, x, y):
    return helper.make_node("BatchNormalization", [x, f"{prefix}_g", f"{prefix}_b", f"{prefix}_m", f"{prefix}_v"],
                            [y], name=prefix)


def cnn_nchw():
    """PyTorch-style: Conv+BN+ReLU, Conv+Clip(ReLU6), MaxPool, Flatten of [8,3,3], Gemm, Softmax."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        bn("bn1", "c1", "n1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], strides=[2, 2], pads=[0, 0, 1, 1], name="conv2"),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"], name="relu6"),
        helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[1, 1], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Dropout", ["f"], ["d"], name="drop"),
        helper.make_node("Gemm", ["d", "wf", "bf"], ["g"], transB=1, name="fc"),
        helper.make_node("Softmax", ["g"], ["y"], axis=1, name="softmax"),
    ]
    inits = {"w1": W(6, 3, 3, 3), "b1": W(6), "w2": W(8, 6, 3, 3), "lo": np.array(0, np.float32),
             "hi": np.array(6, np.float32), "wf": W(5, 8 * 3 * 3, scale=0.1), "bf": W(5), **bn_inits("bn1", 6)}
    return make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, 5]), inits), (3, 8, 8)


def conv1d():
    """1-D conv with BN, depthwise 1-D conv, GlobalAveragePool, Flatten, MatMul + Add bias."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[2, 2], kernel_shape=[5], name="conv1"),
        bn("bn1", "c1", "n1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "wd"], ["c2"], group=4, pads=[1, 1], name="dw"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "wm"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "bm"], ["y"], name="bias"),
    ]
    inits = {"w1": W(4, 2, 5), "b1": W(4), "wd": W(4, 1, 3), "wm": W(4, 3), "bm": W(3), **bn_inits("bn1", 4)}
    return make_model(nodes, ("x", [1, 2, 20]), ("y", [1, 3]), inits), (2, 20)


def nhwc_tf2onnx():
    """tf2onnx-style NHWC input: Transpose -> depthwise Conv (SAME_UPPER) -> residual Add -> AveragePool ->
    Transpose back to NHWC at the output (4-D output)."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2], name="to_nchw"),
        helper.make_node("Conv", ["t", "w1", "b1"], ["c1"], auto_pad="SAME_UPPER", kernel_shape=[3, 3],
                         strides=[2, 2], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["c2"], group=8, pads=[1, 1, 1, 1], name="dw"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Add", ["r1", "r2"], ["a"], name="residual"),
        helper.make_node("AveragePool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="avg"),
        helper.make_node("Transpose", ["p"], ["y"], perm=[0, 2, 3, 1], name="to_nhwc"),
    ]
    inits = {"w1": W(8, 3, 3, 3), "b1": W(8), "wd": W(8, 1, 3, 3), "bd": W(8)}
    return make_model(nodes, ("x", [1, 12, 12, 3]), ("y", [1, 3, 3, 8]), inits), (12, 12, 3)


def nchw_output():
    """NCHW conv whose 4-D NCHW output must be transposed back on the device."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["y"], name="relu")]
    return make_model(nodes, ("x", [1, 3, 6, 5]), ("y", [1, 4, 6, 5]), {"w1": W(4, 3, 3, 3), "b1": W(4)}), (3, 6, 5)


MODELS = {"cnn_nchw": cnn_nchw, "conv1d": conv1d, "nhwc_tf2onnx": nhwc_tf2onnx, "nchw_output": nchw_output}


def quantized(model, shape, n=64):
    x = rng.standard_normal((n,) + shape).astype(np.float32)
    graph = canonicalize.canonicalize(model, "m")
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()])
    quantize.quantize(graph, ranges)
    lowering.lower_graph(graph)      # the fast kernels, as a build does before planning
    return graph, x


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
             helper.make_node("LpNormalization", ["b"], ["y"], name="second_bad")]
    model = make_model(nodes, ("x", [1, 4]), ("y", [1, 4]), {})
    with pytest.raises(EdgecError) as err:
        canonicalize.canonicalize(model, "m")
    msg = str(err.value)
    assert "Hardmax (first_bad, opset 13)" in msg and "LpNormalization (second_bad, opset 13)" in msg and "\n" not in msg


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
