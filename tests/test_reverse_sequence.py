"""edgec/ops/rearrange.py's ONNX ReverseSequence (tf2onnx writes a Keras Bidirectional's tf.reverse so): one remap
reversing the first L steps along the time axis; the INT8 reference is ONNX Runtime's float output on the input's
grid (the bytes are only moved) and the generated C on the host equals it bit for bit; lengths that differ along
the batch are named in one line. A Keras Bidirectional(GRU) through tf2onnx 1.17 (ReverseSequence, two Loops)
builds since (docs/corpus.md)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from conftest import check_generated_c, make_model, save
from edgec import api
from edgec.errors import EdgecError


def reverse_model(lens, batch: int = 1, time_axis: int = 0):
    """x [batch, 12, 5] (time_axis 0: Transpose to [12, batch, 5] first, as tf2onnx writes it) -> Tanh ->
    ReverseSequence(lens) -> Add the Tanh's output (the reversed sequence read beside the original)."""
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2], name="time_major")] if time_axis == 0 else []
    xt = "xt" if time_axis == 0 else "x"
    nodes += [helper.make_node("Tanh", [xt], ["t"], name="tanh"),
              helper.make_node("ReverseSequence", ["t", "lens"], ["r"], time_axis=time_axis, batch_axis=1 - time_axis,
                               name="reverse"),
              helper.make_node("Add", ["r", "t"], ["y"], name="add")]
    yshape = [12, batch, 5] if time_axis == 0 else [batch, 12, 5]
    return make_model(nodes, ("x", [batch, 12, 5]), ("y", yshape), {"lens": np.asarray(lens, np.int64)}, opset=13)


@pytest.mark.parametrize("lens,time_axis", [([12], 0), ([7], 0), ([12], 1)])
def test_reverse_sequence_is_a_remap_bit_exact_in_c(lens, time_axis, tmp_path):
    path = save(reverse_model(lens, time_axis=time_axis), tmp_path)
    rng = np.random.default_rng(4)
    quant = api.calibrate(path, rng.normal(size=(16, 12, 5)).astype(np.float32))
    assert [op.kind for op in quant.graph.ops].count("remap") >= 1
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = rng.normal(size=(4, 1, 12, 5)).astype(np.float32)
    want = np.stack([sess.run(None, {"x": xi})[0].reshape(-1) for xi in x]).astype(np.float64)
    got = np.stack([np.asarray(api.reference(quant, xi).y, np.float64).reshape(-1) for xi in x])
    snr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2))
    assert snr > 30, snr
    check_generated_c(quant.graph, x, tmp_path / "c")


def test_lengths_that_differ_along_the_batch_are_named(tmp_path):
    path = save(reverse_model([12, 5], batch=2, time_axis=1), tmp_path)
    with pytest.raises(EdgecError, match=r"ReverseSequence with sequence_lens \[12, 5\]: only one length") as e:
        api.calibrate(path, np.zeros((2, 2, 12, 5), np.float32))
    assert "\n" not in str(e.value)
