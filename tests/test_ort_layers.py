"""scripts/corpus/ort_layers.py: ORT's QDQ grid of every value, the graph outputs' included (their QuantizeLinear
reads the value renamed `<name>_QuantizeLinear_Input`; the table called them "ORT float" and the last layer of
torch_conv_tasnet_tiny_op17 looked unquantized by ORT when ORT puts it on edgec's own grid)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "corpus"))
import ort_layers  # noqa: E402


def _conv_model(path: Path) -> None:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=(4, 2, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["h"], pads=[1, 1]),
             helper.make_node("Relu", ["h"], ["h2"]),
             helper.make_node("Conv", ["h2", "w2"], ["y"], pads=[1, 1])]
    w2 = numpy_helper.from_array(rng.normal(size=(2, 4, 3)).astype(np.float32), "w2")
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 16])], [w, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_the_graph_outputs_grid_is_found_under_the_outputs_own_name(tmp_path):
    _conv_model(tmp_path / "m.onnx")
    calib = np.random.default_rng(1).normal(size=(8, 1, 2, 16)).astype(np.float32)
    qm = ort_layers.ort_int8(tmp_path / "m.onnx", [{"x": c} for c in calib])
    found = ort_layers.quantize_nodes(qm)
    assert "y" in found and "h2" in found
    assert found["y"].input[0] != "y"          # ORT renamed the value its QuantizeLinear reads
    inits = {i.name for i in qm.graph.initializer}
    assert found["y"].input[1] in inits        # a scale of its own: ORT's int8 grid of the output
    dq = {n.input[0]: n.output[0] for n in qm.graph.node if n.op_type == "DequantizeLinear"}
    assert dq[found["y"].output[0]] == "y"


def test_a_model_with_several_inputs_is_fed_each_input_from_the_packed_samples():
    """sample_feeds: the oracle's packed samples (each input flattened, in the model's order) back into one
    {name: [1, ...]} feed per sample, so ort_layers runs two-input models (torch_siamese_anomaly_op17)."""
    inputs = [("window", (1, 2, 3)), ("reference", (1, 4))]
    x = np.arange(2 * 10, dtype=np.float32).reshape(2, 10)
    feeds = ort_layers.sample_feeds(inputs, x)
    assert [sorted(f) for f in feeds] == [["reference", "window"]] * 2
    assert np.array_equal(feeds[1]["window"], x[1, :6].reshape(1, 2, 3))
    assert np.array_equal(feeds[1]["reference"], x[1, 6:].reshape(1, 4))
    one = ort_layers.sample_feeds([("x", (1, 10))], x)
    assert one[0]["x"].shape == (1, 10)
