"""edgec/frontend/input_shapes.py: a dynamic input axis other than the batch (a torch.onnx export's
`dynamic_axes={"x": {0: "batch", 2: "T"}}`, tests/data/make_torch_dynamic_time.py) pinned from the calibration
set's sample shape; refused in one line where nothing gives its size."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import require, save
from edgec import api, data
from edgec.errors import EdgecError
from edgec.frontend import loader
from edgec.quant import calibrate

DATA = Path(__file__).resolve().parent / "data"
MODEL = DATA / "torch_dynamic_time.onnx"


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """(calibration .npz, test .npz, torch's outputs on the test inputs) of the exported audio model."""
    require(MODEL.is_file(), str(MODEL), "/work/torch-venv/bin/python tests/data/make_torch_dynamic_time.py")
    tmp = tmp_path_factory.mktemp("dynamic_time")
    d = np.load(DATA / "torch_dynamic_time_data.npz")
    np.savez(tmp / "calib.npz", x=d["calib"])
    np.savez(tmp / "test.npz", x=d["x"])
    return tmp / "calib.npz", tmp / "test.npz", d["y_torch"]


def test_the_export_keeps_its_time_axis_dynamic():
    dims = onnx.load(str(MODEL)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", 4, "T"]


def test_the_time_axis_is_pinned_from_the_calibration_set(sets):
    calib, test, y_torch = sets
    model = loader.load_model(MODEL, calib=calib)
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, 4, 50]
    np.testing.assert_allclose(calibrate.run_float(model, np.load(test)["x"]), y_torch, atol=1e-4)


def test_a_dynamic_time_axis_builds_and_runs_on_host_bit_exact(sets, tmp_path):
    """Built from the calibration set's 50 frames, run on the host: the C output equals the NumPy reference, the
    INT8 logits are within 3% of the float output's range (onnxruntime on the same file)."""
    calib, test, y_torch = sets
    out = tmp_path / "b"
    report = api.build(MODEL, calib, "host", out)
    assert report["input"]["shape"] == [1, 4, 50]
    dims = onnx.load(str(out / "model.onnx")).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [1, 4, 50]        # the bench's float model is the one built
    r = api.bench(out, test)
    assert r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]
    assert r["output_error"]["max_abs_vs_float"] <= 0.03 * float(np.ptp(y_torch)), r["output_error"]


def test_without_a_calibration_set_the_dynamic_axis_is_one_line_naming_it():
    with pytest.raises(EdgecError, match=r"input 'x' has a dynamic dimension 2 \('T'\); edgec takes its size from "
                                         r"the calibration set: give --calib FILE.npz .*or export the model with a "
                                         r"fixed input shape") as err:
        api.inspect_model(MODEL)
    assert "\n" not in str(err.value)


def test_inspect_without_a_calibration_set_says_what_it_can(sets, capsys):
    """`edgec inspect MODEL` of the dynamic-time model (no --board, no --calib; it failed): every node with its
    operator's support, the shapes left unknown and a note naming the dynamic axis and --calib; with --calib (no
    --board) the full table, the time axis sized from the calibration set."""
    import json

    from edgec import cli
    assert cli.main(["inspect", str(MODEL)]) == 0
    text = capsys.readouterr().out
    n = len(onnx.load(str(MODEL)).graph.node)
    assert "note: input 'x' dimension 2 ('T') is dynamic" in text and "--calib" in text, text
    assert text.count("  yes") == n, text
    assert cli.main(["inspect", str(MODEL), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["inputs"][0]["shape"] == [1, 4, "T"] and info["macs"] is None and len(info["nodes"]) == n
    calib, _, _ = sets
    assert cli.main(["inspect", str(MODEL), "--calib", str(calib), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["input"]["shape"] == [1, 4, 50] and info["macs"] > 0 and "note" not in info


def test_a_calibration_set_of_another_rank_is_one_line(tmp_path):
    np.savez(tmp_path / "c.npz", x=np.zeros((3, 4), np.float32))
    with pytest.raises(EdgecError, match=r"input 'x' has a dynamic dimension 2 \('T'\), taken from the calibration "
                                         r"set, but .*c.npz has x shaped \[3, 4\]; give x shaped \(N, 4, T\)") as err:
        api.build(MODEL, tmp_path / "c.npz", "host", tmp_path / "out", firmware=False)
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()


def _two_inputs(tmp_path):
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("a", f, ["batch", 3, "T"]),
           helper.make_tensor_value_info("b", f, ["batch", 3, "T"])]
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "two", ins,
                                            [helper.make_tensor_value_info("y", f, ["batch", 3, "T"])]),
                          opset_imports=[helper.make_opsetid("", 13)])
    return save(m, tmp_path)


def test_inputs_sharing_a_dynamic_axis_take_one_size(tmp_path):
    path = _two_inputs(tmp_path)
    np.savez(tmp_path / "ok.npz", x_a=np.ones((2, 3, 7), np.float32), x_b=np.ones((2, 3, 7), np.float32))
    model = loader.load_model(path, calib=tmp_path / "ok.npz")
    assert [[d.dim_value for d in v.type.tensor_type.shape.dim] for v in (*model.graph.input, *model.graph.output)] \
        == [[1, 3, 7]] * 3
    np.savez(tmp_path / "bad.npz", x_a=np.ones((2, 3, 7), np.float32), x_b=np.ones((2, 3, 5), np.float32))
    with pytest.raises(EdgecError, match=r"input 'b' dimension 2 \('T'\) is 5 in the calibration set but input 'a' "
                                         r"dimension 2 of the same name is 7; give calibration arrays of one size "
                                         r"along 'T'"):
        loader.load_model(path, calib=tmp_path / "bad.npz")


def test_sample_shapes_reads_the_sample_arrays_headers_only(tmp_path):
    np.savez(tmp_path / "d.npz", x_a=np.zeros((2, 3), np.float32), x_b=np.zeros((2, 5, 1)), y=np.zeros(2))
    assert data.sample_shapes(tmp_path / "d.npz") == {"x_a": (2, 3), "x_b": (2, 5, 1)}
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(EdgecError, match="not a readable .npz file"):
        data.sample_shapes(tmp_path / "junk.npz")
