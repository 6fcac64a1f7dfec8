"""The fast kernels (runtime_c/fast/, chosen by edgec/ops/select.py) in whole generated models on the host, bit for bit
with the NumPy reference, through both inner-loop paths (portable C, and the Arm DSP path with its intrinsics
emulated in C). Their one-multiply requantization: tests/kernels/test_requantize.py; the depthwise 3x3 kernel's
cases: test_conv.py. The real DSP build is checked on the emulated Cortex-M4 by tests/test_examples.py."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import EXAMPLES, SANITIZE, check_generated_c
from edgec import api
from synthetic_models import MODELS, quantized
from edgec.ops import select
from edgec.ops.kernel import FAST
from edgec.quant.ptq import QuantOptions

PATHS = {"portable": ("-O2",), "dsp-emulated": ("-O2", "-DEDGEC_EMULATE_DSP")}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_synthetic_models_both_paths(name, path, tmp_path):
    model, shape = MODELS[name]()
    graph, x = quantized(model, shape, n=16)
    check_generated_c(graph, x, tmp_path, flags=PATHS[path])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_example_uses_fast_kernels_on_both_paths(path, tmp_path):
    _, graph, plan = api.compile_model(EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz")
    assert plan.scratch and all(b.scratch_op is not None for b in plan.buffers if not b.tensors)
    from edgec.data import load_dataset
    x = load_dataset(EXAMPLES / "digits_cnn" / "test.npz", graph.input_onnx_shape, 64).x
    check_generated_c(graph, x, tmp_path, flags=PATHS[path])
    text = next(tmp_path.glob("digits_cnn.c")).read_text()
    # --optimize speed: the one-channel first layer on blocked4's padded variant (the call names the mode and loop
    # its params need, banded or not: edgec/ops/conv/im2col.py blocked4_entry), the 3x3 one on the window kernel
    assert re.search(r"edgec_conv2d_blocked4_(un)?banded_\w+_s8\(", text)
    assert "edgec_conv2d_window_s8(" in text
    # the fully connected layer (512 -> 10) on the kernel the cost model picks without the DSP extension (the
    # generic one; rows8 on a DSP core: tests/test_select.py), its call naming the one-pass path (512 inputs:
    # edgec/ops/dense.py packed_entry), not the entry that chooses at run time
    assert "edgec_fully_connected_packed_onepass_s8(" in text and "edgec_fully_connected_packed_s8(" not in text


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
    assert sum(select.fast(op, select.dtypes(graph, op)) is not None for op in graph.ops if op.lowering) >= 4
    check_generated_c(graph, x, tmp_path, flags=SANITIZE + PATHS[path][1:])


def test_transformer_example_attention_fast_and_views(tmp_path):
    """examples/transformer_digits (one post-norm encoder block, two heads): the attention products run on the
    fast matmul kernel reading Q, K^T and V where they lie (no layout copies left: the head Transposes are
    views), the projections on the fast fully connected kernel, bit for bit on the DSP path (intrinsics
    emulated; the portable path: tests/kernels/test_matmul.py). Accuracy against float: `edgec bench`."""
    ex = EXAMPLES / "transformer_digits"     # its int8 model (by default its rows gain 8.8 dB in int16 and take them)
    _, graph, _ = api.compile_model(ex / "model.onnx", ex / "calib.npz",
                                    options=QuantOptions(attention_int16=False))
    kinds = [op.kind for op in graph.ops]
    assert kinds.count("matmul") == 2 and "transpose" not in kinds
    # in_proj's bias is its own (no table per channel), q, k and v are read where in_proj wrote them (no Split
    # copies) and q's 1/sqrt(8) is in the scores' multiplier (no table): in_proj, scores, softmax, context
    attention = kinds[kinds.index("fully_connected_rows", 1):kinds.index("matmul") + 3]
    assert attention == ["fully_connected_rows", "matmul", "softmax", "matmul"], attention
    scores = next(op for op in graph.ops if op.kind == "matmul")
    assert scores.inputs[0] == scores.inputs[1] and scores.attrs["b_offset"] == 16
    assert scores.attrs["alpha"] == pytest.approx(8 ** -0.5)
    assert kinds.count("layer_norm") == 2 and kinds.count("reduce") == 1    # each LayerNormalization: one op
    assert all(op.lowering.kernel.role == FAST for op in graph.ops if op.kind in ("matmul", "fully_connected_rows"))
    from edgec.data import load_dataset
    data = load_dataset(ex / "test.npz", graph.input_onnx_shape, 12)
    check_generated_c(graph, data.x, tmp_path, flags=PATHS["dsp-emulated"])
