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
