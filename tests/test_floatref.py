"""edgec/quant/floatref.py and what reads it (edgec/quant/sensitivity.py, edgec/quant/fixes.py) on a speech
front-end's tail as Arm's KWT-1 has it (issue 29): power spectrum -> mel matrix -> Maximum(eps) -> Log -> DCT, the
ONNX output an Identity of the last product. On KWT-1 the calibration SQNRs read inf (no output judged: the port was
named after the tensor before the Identity), and the sensitivity pass fed a Log the quantized 0 of its input's range
(log 0 = -inf, then -inf + inf = NaN in the DCT) and counted the NaN as a perfect 120 dB."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import save
from edgec import api, ports
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader
from edgec.quant import fixes, floatref, ptq, sensitivity

RNG = np.random.default_rng(29)


def _log_mel(tmp_path, identity: bool = True):
    """x [1, 32] -> MatMul (a DFT-like projection) -> squared -> MatMul (non-negative mel weights) -> Max(1e-6) ->
    Reshape -> Log -> Reshape -> MatMul (a DCT, both signs) [-> Identity]."""
    w = numpy_helper.from_array(RNG.normal(0, 0.5, (32, 16)).astype(np.float32), "w")
    mel = numpy_helper.from_array(RNG.uniform(0, 0.3, (16, 8)).astype(np.float32), "mel")
    dct = numpy_helper.from_array(RNG.normal(0, 0.5, (8, 4)).astype(np.float32), "dct")
    eps = numpy_helper.from_array(np.array(1e-6, np.float32), "eps")
    frames = numpy_helper.from_array(np.array([1, 2, 4], np.int64), "frames")
    flat = numpy_helper.from_array(np.array([1, 8], np.int64), "flat")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["spec"], name="dft"),
             helper.make_node("Mul", ["spec", "spec"], ["power"], name="power"),
             helper.make_node("MatMul", ["power", "mel"], ["mels"], name="mel"),
             helper.make_node("Max", ["mels", "eps"], ["floor"], name="floor"),
             helper.make_node("Reshape", ["floor", "frames"], ["framed"], name="framed"),    # as KWT-1's
             helper.make_node("Log", ["framed"], ["logmel"], name="log"),
             helper.make_node("Reshape", ["logmel", "flat"], ["logflat"], name="flat"),
             helper.make_node("MatMul", ["logflat", "dct"], ["cep" if identity else "y"], name="dct")]
    if identity:
        nodes.append(helper.make_node("Identity", ["cep"], ["y"], name="out"))
    g = helper.make_graph(nodes, "logmel", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w, mel, eps, frames, flat, dct])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path)


def _quantized(tmp_path, n: int = 8):
    path = _log_mel(tmp_path)
    x = RNG.uniform(-1, 1, (n, 32)).astype(np.float32)
    x[:4] *= 0.02         # quiet samples: mel energies near 0, the Log's input range [0, ...] cuts them
    np.savez(tmp_path / "calib.npz", x=x)
    model, res = api.calibrate_model(path, tmp_path / "calib.npz",
                                     ptq.QuantOptions.plain(sensitivity_samples=0, cache=False))
    return model, res.graph, x


def test_the_calibration_sqnr_judges_an_output_behind_an_identity(tmp_path):
    """The ONNX output 'y' is an Identity of 'cep': edgec's port is named after 'cep'. worst_output_sqnr matched
    onnxruntime's outputs by that name only, judged nothing and returned inf (every default-recipe choice of KWT-1
    read 'inf -> inf dB')."""
    model, graph, x = _quantized(tmp_path)
    assert ports.outputs(graph)[0].name != "y"      # the premise: the port is not named after the ONNX output
    db = fixes.worst_output_sqnr(model, graph, x)
    assert np.isfinite(db) and 0 < db < 60


def test_a_nan_in_the_float_reference_names_its_op_and_tensor(tmp_path):
    """A NaN the float reference computes from inputs without one is an error naming the op and its tensor (here
    the model's own Log of a negative value: nothing downstream may turn it into an SQNR)."""
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Log", ["x"], ["l"], name="the_log"),
                           helper.make_node("MatMul", ["l", "w"], ["y"], name="mm")], "nan",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path)
    graph = canonicalize.canonicalize(loader.load_model(path), "nan")
    floatref.run(graph, np.full((1, 4), 0.5, np.float32))          # finite: no error
    with pytest.raises(EdgecError, match=r"NaN in op '[^']*the_log[^']*' \(lut\), tensor 'l'"):
        floatref.run(graph, np.array([[0.5, -1.0, 2.0, 3.0]], np.float32))


def test_a_layer_whose_quantized_output_sends_a_log_to_minus_infinity_is_the_worst_not_the_best(tmp_path):
    """In the sensitivity pass a layer's int8 output feeds the float ops after it: the Maximum's quantized 0
    sends the Log to -inf and the DCT to NaN. That layer's isolated-output SQNR is the floor (-120 dB), not the
    120 dB a NaN compared into min() gave."""
    _, graph, x = _quantized(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # and no "invalid value encountered in matmul" for the user
        rows = {r["layer"]: r for r in sensitivity.analyse(graph, x[:4])}
    floor = [r for name, r in rows.items() if "floor" in name]
    assert floor and floor[0]["isolated_output_db"] == -sensitivity.MAX_DB
    assert all(r["isolated_output_db"] < sensitivity.MAX_DB for r in rows.values())
    assert sensitivity.sqnr_db(1.0, float("nan")) == -sensitivity.MAX_DB
    assert sensitivity.sqnr_db(1.0, float("inf")) == -sensitivity.MAX_DB


def test_a_large_model_gets_fewer_sensitivity_samples_and_says_so(tmp_path, monkeypatch):
    """The isolated-output runs cost layers x ops / 2 float op runs a sample: KWT-1 (333 layers, 526 ops) took
    tens of minutes on 8 samples; the report keeps within OP_BUDGET (at least MIN_SAMPLES) and logs progress."""
    _, graph, x = _quantized(tmp_path)
    assert sensitivity.samples_within(graph, 16, 5) == 16
    big = sensitivity.samples_within(graph.__class__("big", {}, (), "a", "b"), 16, 0)     # no ops: all samples
    assert big == 16
    ops = len(graph.ops)
    layers = 2 * sensitivity.OP_BUDGET // ops // 3          # three samples' worth
    assert sensitivity.samples_within(graph, 16, layers) == 3
    assert sensitivity.samples_within(graph, 16, 100 * layers) == sensitivity.MIN_SAMPLES
    said = []
    monkeypatch.setattr(sensitivity, "OP_BUDGET", 1)
    rows = sensitivity.analyse(graph, x, said.append)
    assert rows and said and f"{sensitivity.MIN_SAMPLES} of {len(x)} samples" in said[0]
