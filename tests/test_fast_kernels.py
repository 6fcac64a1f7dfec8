"""The fast kernels (runtime_c/edgec_fast.c via edgec/fastkernels.py) against the NumPy reference, bit for bit:
the one-multiply requantization, and whole generated models on the host through both inner-loop paths
(portable C, and the Arm DSP path with its intrinsics emulated in C). The real DSP build is checked on the
emulated Cortex-M4 by tests/test_e2e.py."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLES
from test_codegen import _check
from test_pipeline import MODELS, quantized
from edgec import api, fastkernels, kernels_ref as K

PATHS = {"portable": ("-O2",), "dsp-emulated": ("-O2", "-DEDGEC_EMULATE_DSP")}


def test_one_multiply_requantization_is_tflite_exact():
    rng = np.random.default_rng(1)
    for t in range(300):
        mult = int(rng.integers((1 << 30) + 1, 1 << 31)) if t % 5 else (1 << 31) - 1
        shift = -int(rng.integers(0, fastkernels.MAX_RIGHT_SHIFT + 1))
        zp = int(rng.integers(-128, 128))
        acc = np.concatenate([rng.integers(-(1 << 30) + 1, 1 << 30, 1000), np.arange(-600, 600)])
        rq = fastkernels.rq_records(np.zeros(1), np.array([mult]), np.array([shift]), zp)
        np.testing.assert_array_equal(fastkernels.run_rq(acc, rq[0]), K.requantize(acc, mult, shift) + zp)


def test_multipliers_outside_the_fast_path_are_declined():
    assert fastkernels.rq_records(np.zeros(1), np.array([1 << 30]), np.array([-3])) is None   # exact 2^30
    assert fastkernels.rq_records(np.zeros(1), np.array([1 << 30 | 5]), np.array([2])) is None  # left shift
    assert fastkernels.rq_records(np.zeros(1), np.array([1 << 30 | 5]), np.array([-30])) is None


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_synthetic_models_both_paths(name, path, tmp_path):
    model, shape = MODELS[name]()
    graph, x = quantized(model, shape, n=16)
    _check(graph, x, tmp_path, flags=PATHS[path])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_example_uses_fast_kernels_on_both_paths(path, tmp_path):
    _, graph, plan = api.compile_model(EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz")
    assert plan.scratch and all(b.scratch_op is not None for b in plan.buffers if not b.tensors)
    from edgec.data import load_dataset
    x = load_dataset(EXAMPLES / "digits_cnn" / "test.npz", graph.input_onnx_shape, 64).x
    _check(graph, x, tmp_path, flags=PATHS[path])
    text = next(tmp_path.glob("digits_cnn.c")).read_text()
    assert "edgec_conv2d_im2col_s8(" in text and "edgec_fully_connected_packed_s8(" in text


@pytest.mark.parametrize("path", sorted(PATHS))
def test_random_layers_sanitized(path, tmp_path):
    """Odd shapes (channels not multiples of 4, strides, asymmetric padding, short pixel blocks) under
    ASan/UBSan: a conv-dw-conv-fc net with random weights through generated code."""
    import onnx
    from onnx import helper
    from conftest import make_model
    rng = np.random.default_rng(7)
    w1 = rng.normal(0, .4, (12, 3, 5, 3)).astype(np.float32)
    w2 = rng.normal(0, .4, (12, 1, 3, 3)).astype(np.float32)
    w3 = rng.normal(0, .4, (7, 12, 1, 1)).astype(np.float32)
    wf = rng.normal(0, .4, (7 * 5 * 2, 5)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], strides=[2, 2], pads=[2, 0, 3, 1]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["c"], group=12, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w3"], ["d"]),
             helper.make_node("Flatten", ["d"], ["e"]),
             helper.make_node("MatMul", ["e", "wf"], ["y"])]
    model = make_model(nodes, ("x", [1, 3, 9, 5]), ("y", [1, 5]), {"w1": w1, "w2": w2, "w3": w3, "wf": wf})
    onnx.checker.check_model(model)
    graph, x = quantized(model, (3, 9, 5), n=16)
    assert sum(fastkernels.lower(op) is not None for op in graph.ops) >= 4
    _check(graph, x, tmp_path, flags=PATHS[path] + ("-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"))


@pytest.mark.parametrize("path", sorted(PATHS))
def test_depthwise_3x3_strides_orientations_and_clamps_sanitized(path, tmp_path):
    """A chain of depthwise 3x3 layers covering the fast kernel's cases: stride 1 and 2, a wide image
    (swept along its rows) and tall ones (swept down the columns, weights transposed), symmetric,
    asymmetric and no padding, odd output lengths (the single-output tail), 12 channels (3 groups of
    4), and a narrowed activation range (the clamping requantization loop), under ASan/UBSan."""
    import onnx
    from onnx import helper
    from conftest import make_model
    rng = np.random.default_rng(11)
    c = 12
    layers = [(1, [1, 1, 1, 1]),      # 6x13 -> 6x13, wide
              (2, [0, 0, 1, 1]),      # -> 3x6 (TF 'SAME' stride 2)
              (1, [2, 0, 2, 0]),      # -> 5x4, tall
              (2, [1, 0, 1, 0]),      # -> 3x1, tall, stride 2
              (1, [1, 1, 1, 1])]      # -> 3x1
    nodes, inits, prev = [], {}, "x"
    for i, (stride, pads) in enumerate(layers):
        inits[f"w{i}"] = rng.normal(0, .5, (c, 1, 3, 3)).astype(np.float32)
        inits[f"b{i}"] = rng.normal(0, .2, c).astype(np.float32)
        nodes.append(helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"d{i}"], group=c,
                                      strides=[stride, stride], pads=pads))
        nodes.append(helper.make_node("Relu", [f"d{i}"], [f"r{i}"]))
        prev = f"r{i}"
    nodes[-1] = helper.make_node("Identity", [f"d{len(layers) - 1}"], ["y"])
    model = make_model(nodes, ("x", [1, c, 6, 13]), ("y", [1, c, 3, 1]), inits)
    onnx.checker.check_model(model)
    graph, x = quantized(model, (c, 6, 13), n=16)
    dws = [op for op in graph.ops if op.kind == "depthwise_conv2d"]
    assert len(dws) == len(layers)
    dws[1].params.update(act_min=-100, act_max=20)   # narrower than int8: the C and the reference clamp
    fastkernels.lower_graph(graph)
    lowered = [op.lowered for op in dws]
    assert all(low and low["kernel"] == "edgec_depthwise_conv2d_3x3_s8" for low in lowered)
    assert [low["params"]["stride"] for low in lowered] == [1, 2, 1, 2, 1]
    # input (rows, cols) in the sweep orientation: the tall images' are transposed
    assert [(low["params"]["rows"], low["params"]["cols"]) for low in lowered] == [(6, 13), (6, 13), (6, 3), (4, 5),
                                                                                    (1, 3)]
    _check(graph, x, tmp_path, flags=PATHS[path] + ("-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"))
