"""One line instead of a traceback, and no silently wrong numbers: damaged calibration caches are recomputed,
damaged build folders refused, out-of-range labels refused, index outputs (ArgMax) understood, rank-0 models
and bad numbers on the command line refused."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import EXAMPLES, make_model, save
from edgec import api, cli
from edgec.bench import runner
from edgec.errors import EdgecError
from edgec.frontend import loader
from edgec.pipeline import compile_model
from edgec.quant import artifact, calibrate, reference
from edgec.fixedpoint import scheme
from edgec.quant.ptq import QuantOptions
from edgec.settings import Settings
from edgec.targets.build_folder import load_build

CANCER = EXAMPLES / "cancer_conv1d"


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage"])
def test_a_damaged_calibration_cache_entry_is_recomputed(damage, tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    opts = QuantOptions(sensitivity_samples=0)
    api.calibrate_model(CANCER / "model.onnx", CANCER / "calib.npz", opts)
    entries = sorted(Settings.from_environment().calib_cache.glob("*.npz"))   # (the default recipe's trials: several)
    assert entries
    for entry in entries:
        data = entry.read_bytes()
        entry.write_bytes({"truncated": data[:len(data) // 2], "empty": b"", "garbage": b"PK\x03\x04" + bytes(99)}[damage])
    _, result = api.calibrate_model(CANCER / "model.onnx", CANCER / "calib.npz", opts)
    assert not result.cached                                                   # recomputed and stored again
    assert all(calibrate.load_stats(entry) is not None for entry in entries)
    assert api.calibrate_model(CANCER / "model.onnx", CANCER / "calib.npz", opts)[1].cached


@pytest.fixture(scope="module")
def quantized_folder(tmp_path_factory):
    """A build folder's quantization record (no firmware needed to read it)."""
    out = tmp_path_factory.mktemp("q") / "b"
    api.build(CANCER / "model.onnx", CANCER / "calib.npz", "host", out, firmware=False)
    return out


@pytest.mark.parametrize("damage", ["npz-truncated", "npz-empty", "json-list", "json-wrong-types"])
def test_a_damaged_build_folder_is_refused_with_one_line(damage, quantized_folder, tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(quantized_folder, folder)
    if damage.startswith("npz"):
        npz = folder / "quantized.npz"
        npz.write_bytes(npz.read_bytes()[:300] if damage == "npz-truncated" else b"")
        with pytest.raises(EdgecError, match="quantized model record is missing or damaged"):
            artifact.load_graph(folder)
        return
    report = folder / "build-report.json"
    report.write_text("[1, 2]" if damage == "json-list" else json.dumps({"board": 5, "firmware": ["x"]}))
    with pytest.raises(EdgecError, match="damaged build report"):
        load_build(folder)


def test_bench_cli_on_a_damaged_report(quantized_folder, tmp_path, capsys):
    folder = tmp_path / "b"
    shutil.copytree(quantized_folder, folder)
    (folder / "build-report.json").write_text('{"board": {"x": 1}}')
    assert cli.main(["bench", str(folder), "--data", str(CANCER / "test.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgec: error: ") and err.count("\n") == 1 and "damaged build report" in err, err


@pytest.mark.parametrize("argv, needle", [
    (["bench", "b", "--data", "d.npz", "--limit", "0"], "--limit: 0 is less than 1"),
    (["bench", "b", "--data", "d.npz", "--limit", "-1"], "--limit: -1 is less than 1"),
    (["calibrate", "m.onnx", "--calib", "c.npz", "--auto-seconds", "nan"], "--auto-seconds"),
    (["calibrate", "m.onnx", "--calib", "c.npz", "--auto-seconds", "-3"], "--auto-seconds"),
    (["calibrate", "m.onnx", "--calib", "c.npz", "--sensitivity-samples", "-2"], "--sensitivity-samples"),
    (["calibrate", "m.onnx", "--calib", "c.npz", "--percentile", "inf"], "--percentile")])
def test_bad_numbers_on_the_command_line(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("edgec: error: ") and err.count("\n") == 1 and needle in err, err


@pytest.mark.parametrize("where", ["input", "output"])
def test_rank0_inputs_are_refused_and_rank0_outputs_work(where, tmp_path):
    shape_in, shape_out = ([], [1]) if where == "input" else ([1], [])
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape_in)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape_out)],
                          [helper.make_tensor("s", TensorProto.INT64, [len(shape_out)], shape_out)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = save(m, tmp_path)
    if where == "input":        # no batch dimension to run samples on: refused with one line
        with pytest.raises(EdgecError, match="input 'x' is a scalar"):
            loader.load_model(path)
        with pytest.raises(EdgecError, match="scalar"):
            api.inspect_model(path)
        return
    calib = tmp_path / "c.npz"       # a scalar output (inspect calls it supported): it calibrates and runs
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    np.savez(calib, x=x)
    _, graph, _ = compile_model(path, calib, options=QuantOptions(sensitivity_samples=0, cache=False))
    assert np.allclose(calibrate.run_float(loader.load_model(path), x), x)


def _classifier(tmp_path, argmax: bool):
    """x [1, 6] -> Gemm -> 4 scores (-> ArgMax: the class index)."""
    rng = np.random.default_rng(7)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["s"], transB=1)]
    if argmax:
        nodes.append(helper.make_node("ArgMax", ["s"], ["yi"], axis=1, keepdims=1))
        nodes.append(helper.make_node("Cast", ["yi"], ["y"], to=TensorProto.FLOAT))
    else:
        nodes[0].output[0] = "y"
    model = make_model(nodes, ("x", [1, 6]), ("y", [1, 1 if argmax else 4]),
                       {"w": rng.normal(size=(4, 6)), "b": rng.normal(size=4)})
    path = save(model, tmp_path, f"cls{int(argmax)}.onnx")
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=rng.normal(size=(64, 6)).astype(np.float32))
    _, graph, _ = compile_model(path, calib, options=QuantOptions(sensitivity_samples=0))
    x = rng.normal(size=(40, 6)).astype(np.float32)
    float_out = calibrate.run_float(loader.load_model(path), x).reshape(len(x), -1)
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    ref = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    return graph, x, float_out, ref


def test_index_outputs_are_classes_and_labels_must_be_classes(tmp_path):
    graph, x, float_out, ref = _classifier(tmp_path, argmax=True)
    labels = float_out[:, 0].astype(np.int64)               # the float model's own classes: accuracy 1
    assert runner.task_of(graph, labels) == "classification"
    q = runner._quality(graph, labels, float_out, ref, ref, x, None, None)
    assert q["accuracy"]["float"] == 1.0 and q["accuracy"]["int8_reference"] >= 0.9
    assert len(q["confusion"]["matrix"]) == 4 and sum(map(sum, q["confusion"]["matrix"])) == len(x)
    for bad in (4, -1):
        wrong = labels.copy()
        wrong[3] = bad
        with pytest.raises(EdgecError, match=rf"label y\[3\] = {bad} is not a class of this model \(0..3"):
            runner.check_labels(graph, wrong, "test.npz")
    graph, x, float_out, ref = _classifier(tmp_path, argmax=False)
    with pytest.raises(EdgecError, match="not a class"):
        runner._quality(graph, np.full(len(x), 7), float_out, ref, ref, x, None, None)


def test_variadic_max_sum_min_with_a_constant(tmp_path):
    """Max/Sum/Min of three inputs, one of them a constant, build and match the reference."""
    c = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("Max", ["x", "c", "r"], ["m"]), helper.make_node("Sum", ["m", "n", "c"], ["s"]),
             helper.make_node("Min", ["s", "c", "x"], ["y"])]
    path = save(make_model(nodes, ("x", [1, 8]), ("y", [1, 8]), {"c": c}), tmp_path)
    calib = tmp_path / "calib.npz"
    x = np.random.default_rng(2).normal(size=(32, 8)).astype(np.float32)
    np.savez(calib, x=x)
    _, graph, _ = compile_model(path, calib, options=QuantOptions(sensitivity_samples=0))
    want = np.minimum(np.maximum(np.maximum(x, c), np.maximum(x, 0)) - x + c, np.minimum(c, x))
    got = np.stack([scheme.dequantize(graph.tensors[graph.output], reference.run(graph, q)).reshape(-1)
                    for q in scheme.quantize_input(graph.tensors[graph.input], x)])
    assert np.max(np.abs(got - want)) < 0.1


def test_a_rebuild_during_the_bench_gets_no_old_report(quantized_folder, tmp_path, monkeypatch):
    """edgec build replaces the folder while a bench of it runs: the old bench's report must not land in it."""
    folder = tmp_path / "b"
    shutil.copytree(quantized_folder, folder)

    def bench_while_rebuilt(outdir, *a, **k):
        shutil.copytree(quantized_folder, tmp_path / "new")
        shutil.rmtree(outdir)
        (tmp_path / "new").rename(outdir)                # what staged_folder does: a new folder in its place
        return {"model": "old"}
    monkeypatch.setattr(runner, "run", bench_while_rebuilt)
    result = api.bench(folder, CANCER / "test.npz", report_dir=folder, flash=False)
    assert result["report_files"] == [] and not (folder / "bench-report.json").exists()


def test_complex_data_and_bad_options_through_the_api(tmp_path):
    """The API refuses what the CLI refuses: complex x (its imaginary part would be dropped silently),
    negative or NaN option numbers."""
    calib = tmp_path / "c.npz"
    np.savez(calib, x=np.load(CANCER / "calib.npz")["x"][:8].astype(np.complex64) * (1 + 1j))
    with pytest.raises(EdgecError, match="real numbers"):
        api.calibrate_model(CANCER / "model.onnx", calib, QuantOptions(sensitivity_samples=0))
    for bad in (dict(auto_seconds=float("nan")), dict(auto_seconds=-1.0), dict(sensitivity_samples=-1)):
        with pytest.raises(EdgecError, match="--auto-seconds|--sensitivity-samples"):
            QuantOptions(**bad).checked()


def test_cli_main_restores_the_signal_handlers(capsys):
    import signal
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    assert cli.main(["boards"]) == 0
    assert {s: signal.getsignal(s) for s in before} == before


def test_constant_node_external_data_is_read_beside_the_model(tmp_path, monkeypatch):
    """A Constant node keeping its value in an external file: read from the model's folder, never from the
    current folder (where a file of that name must not end up in the firmware)."""
    import onnx
    from onnx import external_data_helper, numpy_helper
    folder, elsewhere = tmp_path / "model", tmp_path / "cwd"
    folder.mkdir()
    elsewhere.mkdir()
    real = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    (folder / "c.bin").write_bytes(real.tobytes())
    (elsewhere / "c.bin").write_bytes(np.full((1, 4), 99.0, np.float32).tobytes())      # the decoy
    t = numpy_helper.from_array(real, "c")
    external_data_helper.set_external_data(t, location="c.bin")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    g = helper.make_graph([helper.make_node("Constant", [], ["c"], value=t), helper.make_node("Add", ["x", "c"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    monkeypatch.chdir(elsewhere)
    model = loader.load_model(folder / "m.onnx")
    got = calibrate.run_float(model, np.zeros((1, 4), np.float32))
    assert np.array_equal(got, real)
