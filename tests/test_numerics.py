"""Numeric edge cases detected at build time (edgec/quant/numerics.py and the checks along the pipeline): constant
calibration tensors, NaN/Inf in data or weights, multipliers out of range, int32 accumulator overflow risk,
dead channels. Each is a one-line EdgecError naming the node/tensor/file, or a warning in the build report."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import EXAMPLES, make_model, save
from edgec import api
from edgec.frontend import canonicalize
from edgec.quant import quantize
from edgec.errors import EdgecError
from edgec.fixedpoint import scheme

DIGITS = EXAMPLES / "digits_cnn"


def _fc(tmp_path, w, b, x, name="m.onnx"):
    """Gemm + Relu model and its calibration file."""
    model = make_model([helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1, name="dense"),
                        helper.make_node("Relu", ["h"], ["y"], name="relu")],
                       ("x", [1, w.shape[1]]), ("y", [1, w.shape[0]]), {"w": w, "b": b})
    np.savez(tmp_path / "calib.npz", x=np.asarray(x, np.float32))
    return save(model, tmp_path, name), tmp_path / "calib.npz"


def test_all_zero_calibration_builds_with_a_warning(tmp_path):
    x = np.zeros((16, 1, 8, 8), np.float32)
    np.savez(tmp_path / "zeros.npz", x=x)
    report = api.build(DIGITS / "model.onnx", tmp_path / "zeros.npz", "host", tmp_path / "out", firmware=False,
                       options=None)
    assert any(w.startswith("the model input is constant (0)") for w in report["warnings"]), report["warnings"]
    assert all("\n" not in w for w in report["warnings"])


def test_constant_calibration_tensor_is_named(tmp_path):
    w = np.ones((4, 6), np.float32)
    b = np.full(4, -100.0, np.float32)          # relu(x.w - 100) == 0 for every calibration sample
    model, calib = _fc(tmp_path, w, b, np.random.default_rng(0).uniform(0, 1, (8, 6)))
    _, result = api.calibrate_model(model, calib)
    assert any("tensor 'y' is constant (0)" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_bias_is_refused_naming_the_node(bad, tmp_path):
    b = np.zeros(4, np.float32)
    b[2] = bad
    model, calib = _fc(tmp_path, np.ones((4, 6), np.float32), b, np.ones((8, 6)))
    with pytest.raises(EdgecError, match=r"node 'dense' \(fully_connected\): its bias hold NaN or Inf"):
        api.calibrate_model(model, calib)


def test_non_finite_calibration_data_is_refused_naming_the_file(tmp_path):
    x = np.ones((8, 6), np.float32)
    x[3, 1] = np.nan
    model, calib = _fc(tmp_path, np.ones((4, 6), np.float32), np.zeros(4, np.float32), x)
    with pytest.raises(EdgecError, match=r"calib.npz: x contains NaN or Inf values \(in samples 0\.\.7\)"):
        api.calibrate_model(model, calib)


def test_multiplier_out_of_range_is_an_edgec_error_naming_the_node(tmp_path):
    model, calib = _fc(tmp_path, np.ones((4, 6), np.float32), np.zeros(4, np.float32), np.ones((8, 6)))
    from edgec.frontend import loader
    graph = canonicalize.canonicalize(loader.load_model(model), "m")
    ranges = {t.source: (-1e20, 1e20) for t in graph.tensors.values()}
    ranges[graph.tensors[graph.output].source] = (0.0, 1e-20)     # input x weight scale / output scale ~ 1e40
    with pytest.raises(scheme.MultiplierRangeError):
        scheme.quantize_multiplier(1e40)
    with pytest.raises(EdgecError, match=r"node 'dense' \(fully_connected\): multiplier .* too large"):
        graph = quantize.quantize(graph, ranges)


def test_deep_dot_product_warns_of_accumulator_overflow(tmp_path):
    k = 70000        # 70000 taps x 127 x 255 > 2^31: a worst-case input overflows int32
    rng = np.random.default_rng(0)
    w = np.where(rng.random((2, k)) < 0.5, -1.0, 1.0).astype(np.float32)
    model, calib = _fc(tmp_path, w, np.zeros(2, np.float32), rng.uniform(0, 1, (4, k)))   # zero point -128
    _, result = api.calibrate_model(model, calib)
    warn = [x for x in result.warnings if "overflow its int32 accumulator" in x]
    assert warn and warn[0].startswith("node 'dense' (fully_connected)") and f"{k * 127} x 255" in warn[0], \
        result.warnings
    # a shallow layer does not warn
    model, calib = _fc(tmp_path, w[:, :1000], np.zeros(2, np.float32), rng.uniform(-1, 1, (4, 1000)), "s.onnx")
    assert not api.calibrate_model(model, calib)[1].warnings


def test_dead_channels_are_reported(tmp_path):
    w = np.ones((4, 6), np.float32)
    w[1] = 1e-30                                  # a dead channel (a folded BatchNorm with gamma ~ 0)
    model, calib = _fc(tmp_path, w, np.full(4, 0.5, np.float32), np.random.default_rng(0).uniform(0, 1, (8, 6)))
    _, result = api.calibrate_model(model, calib)
    assert any("1 output channel(s) (first: 1)" in x for x in result.warnings), result.warnings
