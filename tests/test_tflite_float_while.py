"""edgec/frontend/tflite_float_while.py: a float .tflite's WHILE of a known trip count written out once per
iteration. TFLiteConverter's Keras LSTM and GRU without unroll=True (tests/data/float_tflite/keras_*_while_float32,
scripts/corpus/export_tf_float.py): the translation computes what TF Lite's interpreter computes, edgec builds it
from a calibration set (its INT8 reference as close to float as ONNX Runtime's static INT8 of the translation,
measured: LSTM 15.2 dB both) and the generated C equals the reference bit for bit; a WHILE it cannot write out is
named in one line with the reason."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import tflite_oracle as oracle
from conftest import bench_report, check_generated_c, require
from tflite_oracle import Case, Node, T
from edgec import api
from edgec.errors import EdgecError
from edgec.frontend import tflite_float
from edgec.quant.ptq import QuantOptions

DATA = Path(__file__).parent / "data" / "float_tflite"
MODELS = ["keras_lstm_while_float32", "keras_gru_while_float32"]


def _fixture(name):
    path = DATA / f"{name}.tflite"
    require(path.exists(), str(path), f"/work/venv-tf/bin/python scripts/corpus/export_tf_float.py --only {name}")
    return path, np.load(DATA / f"{name}_oracle.npz")


def _calib() -> np.ndarray:
    return np.random.default_rng(11).standard_normal((32, 12, 5)).astype(np.float32)


@pytest.mark.parametrize("name", MODELS)
def test_the_while_loop_translates_to_what_tf_lite_computes(name):
    path, o = _fixture(name)
    model = tflite_float.to_onnx(path)
    assert not any(n.op_type == "Loop" for n in model.graph.node)
    assert len({i.name for i in model.graph.initializer}) == len(model.graph.initializer)
    sess = ort.InferenceSession(model.SerializeToString())
    got = np.stack([sess.run(None, {sess.get_inputs()[0].name: xi[None]})[0].reshape(-1) for xi in o["x"]])
    want = o["y"].reshape(len(got), -1)
    assert np.abs(got - want).max() < 1e-5, np.abs(got - want).max()
    assert np.abs(want - want.mean(0)).max() > 1e-3


@pytest.mark.parametrize("name", MODELS)
def test_the_while_loop_builds_and_its_c_equals_the_reference(name, tmp_path):
    """Quantized from 32 inputs (the plain recipe, no sensitivity report: seconds; the default takes ~50 s on this
    233-node graph): within 12 dB of TF Lite's float outputs (the recurrent state per tensor int8 through 12 steps; ONNX
    Runtime's static INT8 of the translation is as far) and the host C bit-exact."""
    path, o = _fixture(name)
    quant = api.calibrate(path, _calib(), QuantOptions.plain(sensitivity_samples=0))
    want = o["y"].reshape(len(o["x"]), -1).astype(np.float64)
    ref = np.stack([np.asarray(api.reference(quant, xi[None]).y, np.float64).reshape(-1) for xi in o["x"]])
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - ref) ** 2))
    assert sqnr > 12, sqnr
    check_generated_c(quant.graph, o["x"][:, None], tmp_path)


@pytest.mark.sweep        # ~70 s (the host C is checked in the default run, above)
def test_the_lstm_while_on_cortex_m4_equals_its_reference(tmp_path):
    path, o = _fixture(MODELS[0])
    r = bench_report(path, _calib(), o["x"], tmp_path)
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["samples"] == len(o["x"])


def test_a_while_loop_it_cannot_write_out_is_named_with_the_reason(tmp_path):
    """A WHILE whose condition and body subgraphs do not take its values (here: empty)."""
    F32 = 0
    ts = [T((1, 4), [], [], F32), T((1, 4), [], [], F32), T((1, 4), [], [], F32)]
    case = Case("while", ts, [Node("WHILE", [0], 1, ("WhileOptions", {"CondSubgraphIndex": 1, "BodySubgraphIndex": 2})),
                              Node("RELU", [1], 2)], 0, 2)
    case.subgraphs = 3
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError, match=r"WHILE \(operator #0: its condition and body do not take and give its "
                                         r"values\)") as e:
        tflite_float.to_onnx(path)
    assert "\n" not in str(e.value)
