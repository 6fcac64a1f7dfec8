"""The four MLPerf Tiny models (NHWC files and the _nchw variants) built for the host and the emulated
Cortex-M4 and run on the real samples of mlperf_tiny/data: every device output byte-identical to the
NumPy INT8 reference, the same top-1 as the float model for KWS and VWW, a close anomaly score for AD.

Calibration and evaluation samples are apart (conftest.mlperf_calibration, mlperf_samples): the accuracy
claims rest on samples the quantizer never saw. Each variant is built once per board for the session (conftest.mlperf_build, shared with test_fit.py).
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import AD_SPLIT, ad_windows, mlperf_calibration, mlperf_samples, require_mlperf, MLPERF
from edgec import api

BOARDS = ["host", "qemu-cortex-m4"]
VARIANTS = [("kws", False), ("kws", True), ("vww", False), ("vww", True), ("ic", False), ("ic", True),
            ("ad", False)]


def anomaly_score(outputs, labels, inputs):
    """MLPerf Tiny AD: the mean over windows of the reconstruction's MSE."""
    out = np.asarray(outputs, np.float64).reshape(len(inputs), -1)
    return float(np.mean((out - np.asarray(inputs, np.float64).reshape(len(inputs), -1)) ** 2))


# the default run (the suite's time): every NHWC file on the emulated Cortex-M4 (the fast kernels' DSP path, the
# accuracy claims); the _nchw variants of KWS (one input channel) and VWW (three, as IC's) on the host (their layout,
# the host board end to end). With the sweeps: the NHWC files on the host (their portable C is checked bit-exact in
# the default run by tests/test_cmodel_sanitizers.py), IC's _nchw, and the _nchw variants on the Cortex-M4 (the same
# kernels as for the NHWC file).
DEFAULT = {("kws", False, "qemu-cortex-m4"), ("vww", False, "qemu-cortex-m4"), ("ic", False, "qemu-cortex-m4"),
           ("ad", False, "qemu-cortex-m4"), ("kws", True, "host"), ("vww", True, "host")}
CASES = [pytest.param(k, c, b, id=f"{k}{'_nchw' if c else ''}-{b}",
                      marks=[] if (k, c, b) in DEFAULT else [pytest.mark.sweep])
         for k, c in VARIANTS for b in BOARDS]


@pytest.mark.parametrize("key,channels_first,board", CASES)
def test_mlperf_model_on_board(key, channels_first, board, mlperf_build):
    report, out, test = mlperf_build(key, board, channels_first)
    assert report["board"] == board and report["firmware"]
    score = f"{__file__}:anomaly_score" if key == "ad" else None
    r = api.bench(out, test, score=score)
    assert r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]
    q = r
    if key in ("kws", "vww"):
        # real samples with labels: float, the INT8 reference and the device all give the label
        assert q["accuracy"] == {"float": 1.0, "int8_reference": 1.0, "device": 1.0}, q["accuracy"]
        assert q["agreement_top1"]["device_vs_float"] == 1.0
    elif key == "ad":
        s = q["score"]
        assert s["device"] == s["int8_reference"]
        assert abs(s["device"] - s["float"]) / s["float"] < 0.06, s
        print(f"AD anomaly score on {board}: float {s['float']:.4f}, device {s['device']:.4f}")
    else:  # IC: no real CIFAR-10 image in the repository; golden random inputs, bit-exact only
        assert r["samples"] == 4


@pytest.mark.parametrize("key", ["kws", "vww", "ic", "ad"])
def test_evaluation_samples_are_not_calibration_samples(key):
    require_mlperf(MLPERF / "data" / f"golden_{key}.npz")
    calib, (test, _) = mlperf_calibration(key), mlperf_samples(key)
    assert len(calib) >= 3 and len(test) >= 1
    flat = calib.reshape(len(calib), -1)
    for x in test.reshape(len(test), -1):
        assert np.min(np.max(np.abs(flat - x), axis=1)) > 0       # no evaluation sample is a calibration one
    if key == "ad":      # nor shares a frame: calibration windows end before frame AD_SPLIT, evaluation ones start there
        frames = ad_windows().reshape(-1, 5, 128)
        assert not set(map(bytes, frames[AD_SPLIT:].reshape(-1, 128))) & set(map(bytes, calib.reshape(-1, 128)))
