"""Real PyTorch exports (examples/gesture_rnn/pytorch, examples/transformer_digits/pytorch: nn.LSTM, nn.GRU,
nn.TransformerEncoderLayer and nn.MultiheadAttention classifiers trained in torch and written by both of its
ONNX exporters, TorchScript and dynamo, with a fixed and a dynamic batch, batch_first either way; see the
examples' train_export.py). No torch at test time: the committed .onnx files are the material.

Default run (host, gcc): one file per model and exporter, the generated C over the whole test set, bit for bit
with the NumPy reference on the first samples, top-1 within 1 point of onnxruntime's float top-1. Every file on
host, qemu-cortex-m4 and qemu-cortex-m3 through `edgec build` + `edgec bench` (the whole test set, device vs
reference): marker sweep."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from conftest import EXAMPLES, run_generated_c
from edgec import api
from edgec.codegen import cmodel
from edgec.data import load_dataset
from edgec.quant import reference
from edgec.fixedpoint import scheme

FOLDERS = {"lstm": "gesture_rnn", "gru": "gesture_rnn", "encoder": "transformer_digits", "mha": "transformer_digits"}
ALL = sorted(p.relative_to(EXAMPLES).as_posix() for f in set(FOLDERS.values())
             for p in (EXAMPLES / f / "pytorch").glob("*.onnx"))
# one file per model kind and exporter, both batch modes and both batch_first settings among them
DEFAULT = ["gesture_rnn/pytorch/lstm_torchscript_batch1.onnx", "gesture_rnn/pytorch/lstm_dynamo_dynbatch.onnx",
           "gesture_rnn/pytorch/gru_torchscript_dynbatch.onnx", "gesture_rnn/pytorch/gru_dynamo_batch1.onnx",
           "transformer_digits/pytorch/encoder_bf_torchscript.onnx",
           "transformer_digits/pytorch/encoder_sf_dynamo.onnx",
           "transformer_digits/pytorch/mha_bf_dynamo.onnx", "transformer_digits/pytorch/mha_sf_torchscript.onnx"]
REFERENCE_SAMPLES = 24


def _float_top1(model, x, y) -> float:
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    out = np.concatenate([sess.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])
    return float(np.mean(out.argmax(1) == y))


def test_material_is_what_the_examples_export():
    """Every model kind by both exporters, each with a fixed and a dynamic batch (16 files), and the encoder by
    TorchScript at opset 14 (its LayerNorms decomposed; tests/test_decomposed.py)."""
    assert len(ALL) == 17 and set(DEFAULT) <= set(ALL)
    assert "transformer_digits/pytorch/encoder_bf_torchscript_opset14.onnx" in ALL
    for kind, folder in FOLDERS.items():
        for exporter in ("torchscript", "dynamo"):
            assert len([f for f in ALL if f.startswith(f"{folder}/pytorch/{kind}_") and exporter in f
                        and "opset14" not in f]) == 2


def _assert_attention_reads_in_place(graph):
    """q, k and v reach the two attention products through the exporters' unflatten + unbind (Reshape,
    Unsqueeze, Transpose, Squeeze, Gather), head Reshapes and Transposes, and q and k^T each times
    sqrt(1/sqrt(dh)): all of it is read where in_proj wrote it (offsets and strides), both scale factors in the
    scores' multiplier, so nothing but views lies between in_proj and the products."""
    kinds = [op.kind for op in graph.ops]
    assert kinds.count("matmul") == 2 and not {"remap", "transpose", "concat"} & set(kinds), kinds
    scores, context = [op for op in graph.ops if op.kind == "matmul"]
    in_proj = graph.producer(scores.inputs[0])
    assert in_proj.kind == "fully_connected_rows" and in_proj.attrs["weights"].shape[0] == 48
    assert scores.inputs == (in_proj.output, in_proj.output) and context.inputs[1] == in_proj.output
    assert (scores.attrs["a_offset"], scores.attrs["b_offset"], context.attrs["b_offset"]) == (0, 16, 32)
    assert graph.producer(context.inputs[0]).kind == "softmax"
    assert scores.attrs["alpha"] == pytest.approx(1 / np.sqrt(8)) and context.attrs.get("alpha", 1.0) == 1.0


@pytest.mark.parametrize("rel", DEFAULT)
def test_export_bit_exact_and_accurate_on_host(rel, tmp_path):
    model = EXAMPLES / rel
    folder = model.parent.parent
    _, graph, plan = api.compile_model(model, folder / "calib.npz")
    if model.stem.startswith(("lstm", "gru")):      # the recurrence stays one layer whatever the exporter wrote
        assert [op.kind for op in graph.ops].count(model.stem.split("_")[0]) == 1
    else:
        _assert_attention_reads_in_place(graph)
    test = load_dataset(folder / "test.npz", graph.input_onnx_shape)
    cmodel.generate(graph, plan, tmp_path, graph.name)
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    xq = scheme.quantize_input(tin, test.x)
    got = run_generated_c(tmp_path, graph.name, xq.reshape(len(xq), -1), int(np.prod(tout.shape)))
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq[:REFERENCE_SAMPLES]])
    assert np.array_equal(got[:REFERENCE_SAMPLES], want)
    top1 = float(np.mean(scheme.dequantize(tout, got).argmax(1) == test.y))
    float_top1 = _float_top1(model, test.x, test.y)
    assert float_top1 >= (0.95 if folder.name == "gesture_rnn" else 0.9)     # trained, not random weights
    assert float_top1 - top1 <= 0.01, (float_top1, top1)


@pytest.mark.sweep
@pytest.mark.parametrize("board", ["host", "qemu-cortex-m4", "qemu-cortex-m3"])
@pytest.mark.parametrize("rel", ALL)
def test_export_on_board(rel, board, tmp_path):
    model = EXAMPLES / rel
    folder = model.parent.parent
    out = tmp_path / board
    api.build(model, folder / "calib.npz", board, out)
    r = api.bench(out, folder / "test.npz")
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["accuracy"]["float"] - r["accuracy"]["device"] <= 0.01
