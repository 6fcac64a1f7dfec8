"""edgec's pytest plugin (edgec/pytest_plugin.py, edgec/testing.py) as a user meets it: a project with
nothing but a test file, run through pytest's `pytester` on the host board and on qemu-cortex-m4 (the shipped
example, examples/pytest_on_device/). Builds are shared with test_gates.py through one session folder."""
from __future__ import annotations

from importlib.metadata import entry_points

import numpy as np
import pytest

from conftest import EXAMPLES
from edgec.testing import cache_key

pytest_plugins = ["pytester"]
CANCER = EXAMPLES / "cancer_conv1d"
NO_LABGRID = ("-p", "no:labgrid")     # labgrid's own pytest plugin (the farm extra) rewrites the summary pytester reads
EXAMPLE = EXAMPLES / "pytest_on_device" / "test_cancer_on_device.py"

USER_TEST = f'''
import numpy as np
import pytest
from edgec.bench.runner import layers as layers_of

MODEL, CALIB = {str(CANCER / "model.onnx")!r}, {str(CANCER / "calib.npz")!r}
X = np.load({str(CANCER / "test.npz")!r})["x"][:3]


@pytest.fixture(scope="module")
def dut(edgec_device):
    return edgec_device(MODEL, CALIB)


def test_outputs(dut, edgec_board):
    assert dut.board.name == edgec_board == "host"
    out, ref = dut.run(X[0]), dut.reference(X[0])
    assert out.int8.dtype == np.int8 and out.float.dtype == np.float32 and out.int8.shape == (2,)
    assert np.array_equal(out.int8, ref.int8) and np.array_equal(out.float, ref.float)
    assert np.array_equal(dut.run(dut.quantize(X[1])).int8, dut.run(X[1]).int8)   # int8 input taken as is
    assert np.abs(out.float - dut.float_model(X[0])).max() < 0.1
    assert out.units > 0


def test_time_and_report(dut, edgec_build):
    lat = dut.latency(X[0], repeats=2)
    assert lat.unit == "ns" and lat.units > 0 and lat.ms == lat.units / 1e6
    layers = dut.profile(X[0])
    assert [layer["name"] for layer in layers] == [op.name for op in layers_of(dut.graph)]
    assert dut.report["model"] == "cancer_conv1d"
    assert edgec_build(MODEL, CALIB) == dut.build_dir          # the session's build, not a second one


def test_a_wrong_input_fails_with_edgecs_message(dut):
    with pytest.raises(Exception, match="the model takes one sample shaped"):
        dut.run(np.zeros((7, 7), np.float32))


def test_a_missing_model(edgec_device):
    edgec_device("no-such-model.onnx", CALIB)
'''


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.getbasetemp() / "edgec-builds"


def test_plugin_is_registered_through_the_pytest11_entry_point():
    assert "edgec.pytest_plugin" in [e.value for e in entry_points(group="pytest11")]


def test_user_project_with_only_a_test_file_on_host(pytester, build_dir):
    pytester.makepyfile(test_model=USER_TEST)
    result = pytester.runpytest("--edgec-build-dir", str(build_dir), "-p", "no:cacheprovider", *NO_LABGRID)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*edgec: model *no-such-model.onnx does not exist*"])
    assert "Traceback" not in result.stdout.str().split("test_a_missing_model")[-1]
    (folder,) = [p for p in build_dir.iterdir() if p.name.startswith("cancer_conv1d-host-")]

    again = pytester.runpytest(str(EXAMPLE), "--edgec-build-dir", str(build_dir), "-p", "no:cacheprovider", *NO_LABGRID)
    again.assert_outcomes(passed=4)                   # the shipped example, on the same (cached) host build
    assert [p for p in build_dir.iterdir() if p.name.startswith("cancer_conv1d-host-")] == [folder]


def test_shipped_example_on_qemu_cortex_m4(pytester, build_dir):
    result = pytester.runpytest(str(EXAMPLE), "--edgec-board", "qemu-cortex-m4", "--edgec-build-dir", str(build_dir),
                                "-p", "no:cacheprovider", *NO_LABGRID)
    result.assert_outcomes(passed=4)
    assert "edgec: board qemu-cortex-m4" in result.stdout.str()


def test_board_from_project_settings_or_option(pytester):
    """(With neither, the board is host: test_user_project_with_only_a_test_file_on_host.)"""
    def expect(board, *args):
        pytester.makepyfile(test_board=f"def test_board(edgec_board):\n    assert edgec_board == {board!r}\n")
        pytester.runpytest(*args, *NO_LABGRID).assert_outcomes(passed=1)

    (pytester.path / "edgec.toml").write_text('board = "qemu-cortex-m3"\n')
    expect("qemu-cortex-m3")
    expect("qemu-cortex-m7", "--edgec-board", "qemu-cortex-m7")


def test_the_build_cache_key_follows_every_input(tmp_path):
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.load(CANCER / "calib.npz")["x"])
    key = cache_key(CANCER / "model.onnx", calib, "host", {})
    assert key == cache_key(CANCER / "model.onnx", calib, "host", {})
    assert key != cache_key(CANCER / "model.onnx", calib, "qemu-cortex-m4", {})
    assert key != cache_key(CANCER / "model.onnx", calib, "host", {"method": "percentile"})
    np.savez(calib, x=np.load(CANCER / "calib.npz")["x"][:-1])
    assert key != cache_key(CANCER / "model.onnx", calib, "host", {})


def test_the_cache_key_follows_external_weight_files_and_a_damaged_stamp_rebuilds(tmp_path):
    """A model whose weights live in an external file: changing that file changes the key (it used to reuse
    the stale build); a damaged stamp means "build again", not a crash of every test."""
    import json
    import onnx
    from edgec.testing import CACHE_KEY, build_cached
    folder = tmp_path / "m"
    folder.mkdir()
    model = onnx.load(str(CANCER / "model.onnx"))
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    calib = CANCER / "calib.npz"
    key = cache_key(folder / "model.onnx", calib, "host", {})
    data = bytearray((folder / "weights.bin").read_bytes())
    data[0] ^= 1
    (folder / "weights.bin").write_bytes(bytes(data))
    assert cache_key(folder / "model.onnx", calib, "host", {}) != key
    root = tmp_path / "builds"
    built = build_cached(CANCER / "model.onnx", calib, "host", root, sensitivity_samples=0)
    (built / CACHE_KEY).write_text("{damaged")
    assert build_cached(CANCER / "model.onnx", calib, "host", root, sensitivity_samples=0) == built
    assert json.loads((built / CACHE_KEY).read_text())["key"]
