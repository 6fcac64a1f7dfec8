"""Small models of the shapes exporters emit (PyTorch NCHW, 1-D conv, tf2onnx NHWC, NCHW output) and
`quantized()`, which takes one through canonicalize + calibrate + quantize + lowering, as a build does.

Shared by tests/test_pipeline.py, test_cmodel.py and tests/kernels/test_fast_models.py."""
from __future__ import annotations

import numpy as np
from onnx import helper

from conftest import make_model
from edgec.quant import calibrate
from edgec.frontend import canonicalize
from edgec.quant import quantize
from edgec import pipeline

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
    graph = quantize.quantize(graph, ranges)
    graph = pipeline.lower(graph)      # the fast kernels, as a build does before planning
    return graph, x
