"""--protocol mlperf: the firmware speaks the MLPerf Tiny runner's UART protocol; a host-side client of
that protocol (edgec.device.mlperf, modelled on mlcommons/tiny's runner) loads inputs, runs and checks results."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLES, assert_clean_error, edgec
from edgec import api
from edgec.quant import artifact
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.data import load_dataset
from edgec.errors import EdgecError
from edgec.device.mlperf import open_mlperf

DIGITS = EXAMPLES / "digits_cnn"


@pytest.mark.parametrize("board", ["host", "qemu-cortex-m4"])
def test_mlperf_runner_protocol(board, tmp_path):
    out = tmp_path / "b"
    rep = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", board, out, protocol="mlperf", mlperf_model="digits01")   # not an MLPerf benchmark: raw int8 input
    assert rep["protocol"] == "mlperf"
    _, the_board, firmware = api.load_build(out)
    graph = artifact.load_graph(out)
    data = load_dataset(DIGITS / "test.npz", graph.input_onnx_shape, limit=3)
    xq = scheme.quantize_input(graph.tensors[graph.input], data.x)
    tout = graph.tensors[graph.output]
    with open_mlperf(the_board, firmware) as dut:
        c = dut.client
        assert c.name() == "edgec"
        assert c.profile() == {"profile": "ULPMark for tinyML Firmware V0.0.1", "model": "digits01"}
        with pytest.raises(EdgecError, match=r"refused 'infer 1 0': e-\[Input db has 0 bytes, expected 64\]"):
            c.infer(1, 0)
        for i in range(len(xq)):
            c.load(xq[i].tobytes())
            r = c.infer(3, 1)
            want = scheme.dequantize(tout, reference.run(graph, xq[i]).reshape(-1))
            assert np.max(np.abs(np.array(r["results"]) - want)) <= 0.0005 + 1e-6
            assert r["elapsed_us"] > 0
            assert [ln for ln in r["lines"] if ln.startswith("m-") and "lap" not in ln][:4] == [
                "m-warmup-start-1", "m-warmup-done", "m-infer-start-3", "m-infer-done"]
        assert c.results() == r["results"]
        shown = [ln for ln in c.command("db print") if ln.startswith("m-buffer-")]
        assert shown[0] == "m-buffer-" + "-".join(f"{b:02x}" for b in xq[-1].tobytes()[:8])
        with pytest.raises(EdgecError, match=r"Unknown command: bogus"):
            c.command("bogus")
        with pytest.raises(EdgecError, match=r"exceeds maximum of 64"):
            c.command("db load 65")
    assert api.flash(out) == {"protocol": "mlperf", "board": board, "name": "edgec", "model": "digits01",
                              "profile": "ULPMark for tinyML Firmware V0.0.1"}
    with pytest.raises(EdgecError, match="speaks the mlperf protocol"):
        api.bench(out, DIGITS / "test.npz", limit=1)
    # `edgec mlperf` wants the runner's dataset layout; without it, one line and nothing written
    p = edgec("mlperf", out, "--dataset", tmp_path / "datasets")
    assert_clean_error(p, "digits01/y_labels.csv does not exist")
    assert not (out / "mlperf-results").exists()
