"""edgec/api.py: quantization options as keywords of build and export (api.build(..., method=...) was a
TypeError that needed an internal import)."""
from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES
from edgec import api

CANCER = EXAMPLES / "cancer_conv1d"


def test_quantization_keywords_reach_the_build(tmp_path):
    report = api.build(CANCER / "model.onnx", CANCER / "calib.npz", "host", tmp_path / "b", firmware=False,
                       method="percentile", percentile=99.9, sensitivity_samples=0)
    quant = json.loads((tmp_path / "b" / "quant.json").read_text())
    assert report["quantization"]["method"] == "percentile"
    assert (quant["options"]["method"], quant["options"]["percentile"]) == ("percentile", 99.9)


def test_keywords_override_an_options_value_and_unknown_ones_are_refused(tmp_path):
    base = api.QuantOptions(method="minmax", per_channel=False)
    merged = api.quant_options(base, {"method": "mse"})
    assert (merged.method, merged.per_channel, base.method) == ("mse", False, "minmax")
    with pytest.raises(TypeError, match="unexpected keyword argument 'methd'.*method"):
        api.build(CANCER / "model.onnx", CANCER / "calib.npz", "host", tmp_path / "c", firmware=False, methd="mse")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("model", ["lstm", "gru"])
def test_inspect_estimates_the_arena_of_a_float_recurrent_model(model):
    """A float ONNX LSTM/GRU has no quantized params yet: `edgec inspect` stopped with a traceback (KeyError:
    edgec_recurrent_s8_get_buffer_size reads p->gru) instead of estimating its scratch from the op's attributes."""
    info = api.inspect_model(EXAMPLES / "gesture_rnn" / f"{model}.onnx")
    assert not info["unsupported"]
    assert info["arena_bytes_estimate"] > 0


def test_weights_in_ram_is_reported_and_refused_when_the_weights_do_not_fit(tmp_path):
    """build(weights_in_ram=True): the report counts the weights copied into RAM; a board whose RAM holds the
    arena but not the weights too is refused with one line before anything is written."""
    report = api.build(CANCER / "model.onnx", CANCER / "calib.npz", "host", tmp_path / "b", firmware=False,
                       weights_in_ram=True)
    m = report["memory"]
    assert m["weights_in_ram_bytes"] == m["constants"]["weights"] + m["constants"]["biases_requantization"]
    assert m["constants"]["weights"] > 0 and m["constants"]["biases_requantization"] > 0
    host = (EXAMPLES.parent / "boards" / "host.toml").read_text()
    small = tmp_path / "small.toml"
    small.write_text(host.replace("ram_bytes = 1073741824",
                                  f"ram_bytes = {m['fit_estimate']['ram']['total'] + m['weights_in_ram_bytes'] - 1}"))
    with pytest.raises(api.EdgecError, match=r"--weights-in-ram: .* do not fit .* build without --weights-in-ram"):
        api.build(CANCER / "model.onnx", CANCER / "calib.npz", str(small), tmp_path / "c", firmware=False,
                  weights_in_ram=True)
    assert not (tmp_path / "c").exists()
