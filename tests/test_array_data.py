"""edgec/array_data.py: arrays where the API takes a data file, written once to a temporary .npz."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgec.array_data import accepts_arrays, data_file
from edgec.errors import EdgecError


def test_paths_and_none_pass_through(tmp_path):
    with data_file(str(tmp_path / "c.npz")) as p:
        assert p == tmp_path / "c.npz"
    with data_file(None) as p:
        assert p is None


def test_arrays_become_an_npz_removed_afterwards():
    x, y = np.arange(12, dtype=np.float32).reshape(3, 4), np.array([0, 1, 2])
    with data_file(x, "calibration data") as p:
        with np.load(p) as f:
            assert sorted(f.files) == ["x"] and np.array_equal(f["x"], x)
    assert not p.exists()
    with data_file((x, y)) as p, np.load(p) as f:
        assert np.array_equal(f["y"], y) and np.array_equal(f["x"], x)
    with data_file({"x_a": x, "x_b": x[:, :2]}) as p, np.load(p) as f:
        assert sorted(f.files) == ["x_a", "x_b"]


def test_anything_else_is_one_clear_error():
    with pytest.raises(EdgecError, match="calib: expected a path to an .npz, an array x"):
        with data_file([1, 2, 3], "calib"):
            pass


def test_decorator_converts_only_the_named_parameter():
    @accepts_arrays("calib_path")
    def f(model, calib_path=None, other=None):
        return model, calib_path, Path(calib_path).is_file() if calib_path is not None else None, other

    model, path, existed, other = f("m.onnx", np.zeros((2, 3), np.float32), other="o")
    assert (model, existed, other) == ("m.onnx", True, "o") and path.suffix == ".npz" and not path.exists()
    assert f("m.onnx")[1] is None and f("m.onnx", "c.npz")[1] == Path("c.npz")


@pytest.mark.parametrize("bad, needle", [
    (np.full((4, 1, 30), np.nan, np.float32), "NaN"),
    (np.zeros((4, 1, 30), np.complex64), "complex64"),
    (np.zeros((0, 1, 30), np.float32), "no samples"),
    (np.zeros(3, dtype=[("a", "f4")]), "shape"),
])
def test_bad_arrays_are_named_as_the_arrays_given(bad, needle):
    """A data check on arrays named a temporary .npz (already removed when the message is read) as where the
    problem is: the message names the arrays the caller gave instead."""
    from conftest import EXAMPLES
    from edgec import api
    with pytest.raises(EdgecError, match=needle) as err:
        api.calibrate(EXAMPLES / "cancer_conv1d" / "model.onnx", bad)
    line = str(err.value)
    assert "the calib arrays given" in line and ".npz" not in line and "edgec-tmp" not in line, line
