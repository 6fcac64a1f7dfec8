"""edgec/host_reference.py through the API: api.calibrate on arrays, api.reference for one sample from a build
folder or a calibrated graph (the NumPy integer reference the bench checks the device against), and api.build
taking its calibration data as arrays."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLES
from edgec import api, ports
from edgec.errors import EdgecError
from edgec.quant import reference

MODEL, CALIB = EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz"


@pytest.fixture(scope="module")
def calib_x():
    with np.load(CALIB) as f:
        return f["x"]


@pytest.fixture(scope="module")
def built(tmp_path_factory, calib_x):
    out = tmp_path_factory.mktemp("b") / "digits"
    report = api.build(MODEL, calib_x, "host", out, firmware=False)       # the calibration data as an array
    return out, report


def test_build_from_arrays_is_the_build_from_the_file(built, tmp_path):
    _, from_arrays = built
    from_file = api.build(MODEL, CALIB, "host", tmp_path / "f", firmware=False)
    assert from_arrays["model_hash"] == from_file["model_hash"]


def test_calibrate_on_arrays(calib_x, built):
    result = api.calibrate(MODEL, calib_x)
    from_file = api.calibrate(MODEL, CALIB)
    assert result.graph.tensors[result.graph.input].scale == from_file.graph.tensors[from_file.graph.input].scale
    assert result.samples == from_file.samples == len(calib_x)


def test_reference_of_one_sample(built, calib_x):
    out, _ = built
    graph = api.calibrate(MODEL, CALIB).graph
    x = calib_x[3]
    ref = api.reference(out, x)
    xq = ports.quantize_inputs(graph, x[None])[0]
    assert ref.q.dtype == np.int8 and np.array_equal(ref.q, reference.run(graph, xq))
    assert np.array_equal(api.reference(graph, x[None]).q, ref.q)          # batch of one or none
    assert np.array_equal(api.reference(out, xq, quantized=True).q, ref.q)
    t = graph.tensors[graph.output]
    assert np.allclose(ref.y, (ref.q.astype(np.float64) - t.zero_point) * t.scale)
    assert int(np.argmax(ref.y)) == int(np.argmax(ref.q))


def test_reference_errors(built, tmp_path):
    out, _ = built
    with pytest.raises(EdgecError, match="has 64 values"):
        api.reference(out, np.zeros(10, np.float32))
    with pytest.raises(EdgecError, match="quantized=True"):
        api.reference(out, np.zeros(64, np.int8))
    with pytest.raises(EdgecError, match="not an edgec build folder"):
        api.reference(tmp_path, np.zeros(64, np.float32))
