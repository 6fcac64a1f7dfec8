"""scripts/corpus/evaluation.py: each corpus .onnx's evaluation set (32 samples, fewer for large outputs) drawn
again by the generator that made its calibration set, disjoint from it; the stored oracle outputs belong to exactly
those inputs; corpus_table measures the SQNRs on them and says on how many samples edgec is at least as close."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "scripts" / "corpus"))
import corpus_table  # noqa: E402
import evaluation  # noqa: E402
import oracles  # noqa: E402
from corpus import manifest  # noqa: E402

ENTRIES = manifest.load()
ONNX = sorted(n for n, e in ENTRIES.items() if e["format"] in ("onnx", "tflite-float"))     # (a float .tflite too)
FAST = ["onnx2c_atmega_mnist", "tf2onnx_har_cnn1d", "torch_shapes_detector_nms",    # each generator kind, small
        "tf2onnx_tflite_tflm_micro_speech", "tf2onnx_two_stream_har"]


def test_every_onnx_oracle_has_an_evaluation_set():
    for name in ONNX:
        oracle = _oracle(name)
        assert "eval_x_sha256" in oracle, f"{name}: python scripts/corpus/evaluation.py --only {name}"
        first = _first_float_output(oracle)
        n = len(oracle[f"eval_float{first}"])
        assert evaluation.EVAL_MIN_SAMPLES <= n <= evaluation.EVAL_SAMPLES, name
        assert f"eval_ort_int8_{first}" not in oracle or len(oracle[f"eval_ort_int8_{first}"]) == n, name


def _oracle(name):
    return np.load(manifest.CORPUS / name / "oracle.npz")


def _first_float_output(oracle) -> int:
    """Outputs go by index; one ORT's float run does not give as floats (a classifier's int64 label) has none."""
    return min(int(k[len("eval_float"):]) for k in oracle.files if k.startswith("eval_float"))


def _drawn_again_and_disjoint(name):
    oracle = _oracle(name)
    n = len(oracle[f"eval_float{_first_float_output(oracle)}"])
    x = evaluation.stored_inputs(name, ENTRIES[name], oracle)       # raises if the draws are not the stored ones
    path = manifest.CORPUS / ENTRIES[name]["file"]
    calib = np.load(path.parent / "calib.npz")["x"] if not evaluation.several_inputs(ENTRIES[name]) else \
        oracles.pack(oracles.calibration(path.parent / "calib.npz", [i for i, _ in oracles.onnx_input_list(path)]))
    assert x.shape == (n, *calib.shape[1:])
    flat, cal = x.reshape(n, -1), calib.reshape(len(calib), -1)
    assert not any(np.array_equal(a, b) for a in flat for b in cal), "an evaluation sample is a calibration sample"
    assert len({a.tobytes() for a in flat}) == n


@pytest.mark.parametrize("name", FAST)
def test_the_evaluation_set_is_drawn_again_and_disjoint_from_calibration(name):
    _drawn_again_and_disjoint(name)


@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(set(ONNX) - set(FAST)))
def test_every_evaluation_set_is_drawn_again_and_disjoint_from_calibration(name):
    _drawn_again_and_disjoint(name)


def test_an_int8_input_and_output_are_run_on_their_grids():
    """tf2onnx's from_tflite keeps a .tflite's int8 input (read by a DequantizeLinear) and int8 output (written by a
    QuantizeLinear): ONNX Runtime once refused the oracle's float samples ("expected: (tensor(int8))"), and an int8
    output was left out of the stored outputs. The sample goes in on the input's grid, the output comes out as the
    real values it stands for, equal to the stored evaluation outputs."""
    name = "tf2onnx_tflite_tflm_micro_speech"
    path, oracle = manifest.CORPUS / name / "model.onnx", _oracle(name)
    x = evaluation.stored_inputs(name, ENTRIES[name], oracle)
    floats, ints, _ = oracles.onnx_runs(path, oracles.onnx_inputs(path, name)[0], x[:1], x)
    y = np.stack([r[0] for r in floats])
    assert ints is None and y.dtype == np.float32 and np.array_equal(y, oracle["eval_float0"])
    steps = y.reshape(-1) * 256 + 128                                   # the output grid: 1/256, zero point -128
    assert np.allclose(steps, np.round(steps), atol=1e-3) and np.ptp(y) > 0


def test_several_inputs_are_drawn_again_fed_by_name_and_packed_in_the_models_order():
    """A model with several inputs (tf2onnx of a two-stream Keras model: acc and gyro windows): its calib.npz holds
    x_<name> per input (edgec's data files), its evaluation inputs are drawn again per input and packed in the
    model's order, and ONNX Runtime fed each input's part by name gives the stored float outputs bit for bit; the
    oracle's own samples are packed the same way (corpus_table.float_inputs)."""
    import onnxruntime as ort
    name = "tf2onnx_two_stream_har"
    path, oracle = manifest.CORPUS / name / "model.onnx", _oracle(name)
    inputs = oracles.onnx_input_list(path)
    assert [i for i, _ in inputs] == ["acc", "gyro"] and list(oracle["inputs"]) == ["acc", "gyro"]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for x, want in ((evaluation.stored_inputs(name, ENTRIES[name], oracle), oracle["eval_float0"]),
                    (corpus_table.float_inputs(oracle), oracle["float0"])):
        assert x.shape == (len(want), 2 * 64 * 3)
        got = [sess.run(None, {"acc": xi[None, :192].reshape(1, 64, 3), "gyro": xi[None, 192:].reshape(1, 64, 3)})[0]
               for xi in x]
        assert np.array_equal(np.stack(got), want)
    assert not np.array_equal(corpus_table.float_inputs(oracle)[:, :192], corpus_table.float_inputs(oracle)[:, 192:])


def test_a_generator_that_draws_other_inputs_is_refused():
    name = "onnx2c_atmega_mnist"
    oracle = dict(_oracle(name))
    oracle["eval_x_sha256"] = np.asarray("0" * 64)
    with pytest.raises(ValueError, match="not those of the stored oracle"):
        evaluation.stored_inputs(name, ENTRIES[name], oracle)


def test_no_generator_reproduces_a_foreign_calibration_set(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    np.savez(folder / "calib.npz", x=np.full((8, 5), 0.25, np.float32))
    entry = {"name": "m", "file": str(folder / "model.onnx"), "source": {}}
    with pytest.raises(LookupError, match="no known generator"):
        evaluation.evaluation_inputs("m", entry)


def test_the_sqnrs_are_measured_on_the_evaluation_set():
    """onnx2c's opset-8 MNIST (small): edgec's reference on the 32 evaluation samples against the stored float
    outputs, beside ORT's INT8, with the count of samples where edgec is at least as close."""
    from edgec import api, ports
    from edgec.quant import reference

    name = "onnx2c_atmega_mnist"
    oracle = _oracle(name)
    graph = api.calibrate(manifest.CORPUS / name / "model.onnx", manifest.CORPUS / name / "calib.npz",
                          cache=False, sensitivity_samples=0).graph
    x = corpus_table.float_inputs(oracle)
    row = corpus_table.Row(name, "classification", "onnx", "reference")
    corpus_table.accuracy(row, graph, ENTRIES[name], oracle, x,
                          reference.run_sequence(graph, ports.quantize_inputs(graph, x)))
    x_eval = evaluation.stored_inputs(name, ENTRIES[name], oracle)
    got = ports.dequantize_outputs(graph, reference.run_sequence(graph, ports.quantize_inputs(graph, x_eval)))
    assert row.samples == len(x_eval) == len(oracle["eval_float0"]) > len(x)
    assert row.sqnr_edgec == corpus_table.sqnr(oracle["eval_float0"], got)
    assert row.sqnr_ort == corpus_table.sqnr(oracle["eval_float0"], oracle["eval_ort_int8_0"])
    assert 0 <= row.closer_samples <= row.samples
