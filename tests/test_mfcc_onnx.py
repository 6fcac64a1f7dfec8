"""A training pipeline's MFCC front end built by edgec (edgec/ops/signal/mfcc_onnx.py: the whole graph read as one
signal_mfcc op by the canonicalizer): the exported tf.signal and torchaudio front ends (tests/audio/frontends)
load, quantize (int16 PCM in, int32 Q16 features out) and run on the NumPy reference
with feature SQNR >= 40 dB against onnxruntime running the float graph; built and benchmarked on the host, the
device's features are the reference's."""
from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from edgec import api, pipeline
from edgec.errors import EdgecError
from edgec.ops.signal import mfcc_onnx
from edgec.quant import reference

AUDIO = Path(__file__).resolve().parent / "audio"
CLIPS = ("yes", "no", "noise", "silence")


def clips() -> np.ndarray:
    out = []
    for c in CLIPS:
        with wave.open(str(AUDIO / f"{c}_1000ms.wav")) as w:
            out.append(np.frombuffer(w.readframes(16000), np.int16).astype(np.float32) / 32768)
    return np.stack(out)


def sqnr(ref, x) -> float:
    ref, x = np.asarray(ref, np.float64).reshape(-1), np.asarray(x, np.float64).reshape(-1)
    return float(10 * np.log10((ref ** 2).sum() / ((ref - x) ** 2).sum()))


@pytest.fixture
def calib(tmp_path):
    x = clips()
    np.savez(tmp_path / "calib.npz", x=x)
    return tmp_path / "calib.npz", x


@pytest.mark.parametrize("name", ["tf_signal_mfcc", "torchaudio_mfcc"])
def test_exported_front_end_quantizes_to_one_integer_op(calib, name):
    path = AUDIO / "frontends" / f"{name}.onnx"
    _, result = pipeline.calibrate_model(path, calib[0])
    graph = result.graph
    assert [op.kind for op in graph.ops] == ["signal_mfcc"]
    x_t, y_t = graph.tensors[graph.input], graph.tensors[graph.output]
    assert (x_t.dtype, y_t.dtype, y_t.scale) == ("int16", "int32", 2.0 ** -16)
    assert (x_t.scale, x_t.zero_point) == (2.0 ** -15, 0)          # int16 PCM as it is, whatever the calibration
    session = ort.InferenceSession(str(path))
    for x in calib[1]:
        want = session.run(None, {"audio": x[None]})[0]
        x_q = np.clip(np.round(x / x_t.scale), -32768, 32767).astype(np.int16)
        got = reference.run(graph, x_q[None]).astype(np.float64) * y_t.scale
        assert got.shape == want.shape
        assert sqnr(want, got) >= 40


def test_a_model_that_is_not_a_front_end_is_left_to_the_node_importers():
    model = onnx.load(str(AUDIO / "frontends" / "tf_signal_mfcc.onnx"))
    assert mfcc_onnx.is_front_end(model)
    assert not mfcc_onnx.is_front_end(onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Log", ["x"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])])))


@pytest.mark.sweep
def test_exported_front_end_builds_and_runs_on_the_host(calib, tmp_path):
    out = tmp_path / "b"
    api.build(AUDIO / "frontends" / "torchaudio_mfcc.onnx", calib[0], "host", out)
    result = api.bench(out, calib[0])
    assert result["agreement"] == {"device_vs_reference": 1.0, "mismatched_samples": []}


def test_a_front_end_and_a_classifier_in_one_graph_is_refused_with_one_line(tmp_path):
    model = onnx.load(str(AUDIO / "frontends" / "tf_signal_mfcc.onnx"))
    g = model.graph
    feats = g.output[0].name
    g.initializer.append(onnx.numpy_helper.from_array(np.ones((10, 4), np.float32), "w_cls"))
    g.node.append(onnx.helper.make_node("MatMul", [feats, "w_cls"], ["scores"]))
    del g.output[:]
    g.output.append(onnx.helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, [1, 49, 4]))
    onnx.save(model, tmp_path / "merged.onnx")
    with pytest.raises(EdgecError, match="as two ONNX files"):
        pipeline.canonical(pipeline.load(tmp_path / "merged.onnx"), "merged")
