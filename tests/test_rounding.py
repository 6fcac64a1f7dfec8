"""GPTQ-style weight rounding (edgec/quant/rounding.py)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLES, check_generated_c
from edgec import api
from edgec.quant import floatref, ptq, reference, rounding
from edgec.fixedpoint.scheme import quantize_input, quantize_weights

DIGITS = EXAMPLES / "digits_cnn"


def test_gptq_levels_lower_the_output_error_and_keep_the_scales():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 24)) @ rng.standard_normal((24, 24))     # correlated inputs
    w = rng.standard_normal((6, 24))
    q, scale = rounding.gptq_levels(w, x)
    nearest, s_nearest = quantize_weights(w, 0, True, 7)
    assert np.abs(q).max() <= 7 and np.allclose(scale, s_nearest)
    assert np.all(np.abs(q).max(axis=1) == 7)             # each row's largest weight stays at +-7: same scale
    err = np.sum((x @ (w - q * scale[:, None]).T) ** 2)
    err_nearest = np.sum((x @ (w - nearest * s_nearest[:, None]).T) ** 2)
    assert err < 0.8 * err_nearest, (err, err_nearest)
    assert not np.array_equal(q, nearest)


def test_block_updates_round_as_column_by_column(monkeypatch):
    """The lazy batch updates (BLOCK columns at a time) give the levels of the one-column-at-a-time update."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 40)) @ rng.standard_normal((40, 40))
    w = rng.standard_normal((6, 40))
    monkeypatch.setattr(rounding, "BLOCK", 7)
    blocked = rounding.gptq_levels(w, x, 127)[0]
    monkeypatch.setattr(rounding, "BLOCK", 1000)
    assert np.array_equal(blocked, rounding.gptq_levels(w, x, 127)[0])


def test_gptq_leaves_a_qdq_models_own_weights_as_the_file_gives_them():
    """A QDQ model's weights are the file's integers at the file's scales: `--rounding gptq` rounded six layers of
    tests/corpus/tiny13_kj_kws_ds_cnn anew (then snapped them to the file's scales), changing the model."""
    d = EXAMPLES.parent / "tests" / "corpus" / "tiny13_kj_kws_ds_cnn"
    graphs = [api.calibrate(d / "model.onnx", d / "calib.npz", cache=False, sensitivity_samples=0, rounding=mode).graph
              for mode in rounding.MODES]
    layers = [(a, b) for a, b in zip(*(g.ops for g in graphs)) if "weights" in a.arrays]
    assert len(layers) == 10 and all("weight_scale" in a.attrs for a, _ in layers)
    assert all(np.array_equal(a.arrays["weights"], b.arrays["weights"]) for a, b in layers)


@pytest.fixture(scope="module")
def digits_int4():
    out = {}
    for mode in rounding.MODES:
        options = ptq.QuantOptions.plain(weights="int4", rounding=mode, sensitivity_samples=0, cache=False)
        out[mode] = api.calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz", options)[1].graph
    return out


def _top1(graph, x, y) -> float:
    xq = quantize_input(graph.tensors[graph.input], x)
    return 100 * float(np.mean([int(np.argmax(reference.run(graph, q))) == t for q, t in zip(xq, y)]))


def test_int4_digits_within_one_point_of_float_and_no_worse_than_nearest(digits_int4):
    z = np.load(DIGITS / "test.npz")
    x, y = z["x"].astype(np.float32), z["y"]
    g = digits_int4["gptq"]
    float_top1 = 100 * float(np.mean([int(np.argmax(floatref.run(g, xi)[g.output])) == t for xi, t in zip(x, y)]))
    assert _top1(g, x, y) >= float_top1 - 1.0
    assert _top1(g, x, y) >= _top1(digits_int4["nearest"], x, y)


def test_rounded_layers_keep_their_scales_and_the_float_model(digits_int4):
    g, n = digits_int4["gptq"], digits_int4["nearest"]
    rounded = [op for op in g.ops if "float_weights" in op.attrs]
    assert {op.name for op in rounded} == {"/conv1/Conv", "/conv2/Conv", "/fc/Gemm"}
    by_name = {op.name: op for op in n.ops}
    for op in rounded:
        twin = by_name[op.name]
        assert np.array_equal(op.attrs["float_weights"], twin.attrs["weights"])     # the model's own weights
        # the quantizer found the same per-channel scales: the same requantization multipliers and shifts
        assert np.array_equal(op.arrays["mult"], twin.arrays["mult"]) and np.array_equal(op.arrays["shift"],
                                                                                           twin.arrays["shift"])
    x = np.load(DIGITS / "calib.npz")["x"][:4].astype(np.float32)
    for xi in x:                                   # the float reference is the model's, not the rounded one
        assert np.allclose(floatref.run(g, xi)[g.output], floatref.run(n, xi)[n.output])


def test_gptq_int4_model_is_bit_exact_in_c(digits_int4, tmp_path):
    x = np.load(DIGITS / "test.npz")["x"][:64].astype(np.float32)
    from edgec import pipeline
    check_generated_c(pipeline.lower(digits_int4["gptq"]), x, tmp_path)


def test_unknown_rounding_is_one_clear_error():
    from edgec.errors import EdgecError
    with pytest.raises(EdgecError, match="unknown weight rounding 'stochastic'"):
        ptq.QuantOptions(rounding="stochastic").checked()
