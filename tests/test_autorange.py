"""`--method auto` per tensor (edgec/quant/autorange.py) and `auto-model`: the greedy search starts from the
best single method, keeps only changes that help on held-out samples, records its choice per tensor,
and respects its time budget."""
from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import helper

from conftest import make_model, save
from edgec import api
from edgec.quant import autorange
from edgec.quant import calibrate
from edgec.frontend import canonicalize
from edgec.quant import floatref
from edgec.quant import ptq
from edgec.quant import quantize
from edgec.quant import ranges
from edgec.data import open_samples


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))


def _spiky():
    """x[8] -> fc1+ReLU -> fc2[4]. Input feature 0 is 0, or 100 in 0.5% of samples, and reaches only
    hidden unit 0, which fc2 barely reads: the spike is harmless in float, but a min/max range on x and
    on the hidden layer spends all 256 levels on it. Clipping those two tensors (and nothing else) helps."""
    r = np.random.default_rng(0)
    w1 = (r.standard_normal((16, 8)) * 0.5).astype(np.float32)
    w1[0], w1[:, 0] = 0.0, 0.0
    w1[0, 0] = 1.0
    w2 = (r.standard_normal((4, 16)) * 0.5).astype(np.float32)
    w2[:, 0] = 0.001
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1, name="fc1"),
             helper.make_node("Relu", ["h"], ["rh"], name="relu"),
             helper.make_node("Gemm", ["rh", "w2", "b2"], ["y"], transB=1, name="fc2")]
    return make_model(nodes, ("x", [1, 8]), ("y", [1, 4]), {"w1": w1, "b1": np.zeros(16), "w2": w2, "b2": np.zeros(4)})


def _data(n, seed):
    g = np.random.default_rng(seed)
    x = g.random((n, 8)).astype(np.float32)
    x[:, 0] = np.where(g.random(n) < 0.005, 100.0, 0.0)
    return x


@pytest.fixture
def files(tmp_path):
    model = _spiky()
    path = save(model, tmp_path, "spiky.onnx")
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=_data(512, 1))
    return model, path, calib


def test_search_from_a_poor_start_fixes_the_tensors_that_need_it(files):
    model, path, calib = files
    graph = canonicalize.canonicalize(model, "m")
    with open_samples(calib, graph.input_onnx_shape) as samples:
        stats = calibrate.collect(model, samples, [t.source for t in graph.tensors.values()], holdout=64)
    x = stats.holdout_x
    y = np.stack([floatref.run(graph, xi)[graph.output] for xi in x])
    fit = {m: stats.ranges(m, part="fit") for m in ranges.METHODS}
    search = autorange.per_tensor(graph, fit, {}, x, y, "minmax", per_channel=True)
    assert search.reached == search.tensors == 3
    assert search.final_db > search.start_db + 10.0
    assert set(search.changed) <= {"x", "rh"} and search.changed            # the output range was fine as it was
    # on fresh samples (spikes included) the chosen ranges beat min/max everywhere by far
    every = {m: stats.ranges(m) for m in ranges.METHODS}
    xt = _data(2000, 2)
    yt = calibrate.run_float(model, xt)
    per_tensor = quantize.quantize(canonicalize.canonicalize(model, "m"), autorange.ranges_of(search, every))
    minmax = quantize.quantize(canonicalize.canonicalize(model, "m"), every["minmax"])
    assert ptq.output_sqnr(per_tensor, xt, yt) > ptq.output_sqnr(minmax, xt, yt) + 10.0


def test_auto_is_never_worse_than_auto_model_on_held_out_samples_and_records_its_choice(files, tmp_path):
    _, path, calib = files
    _, whole = api.calibrate_model(path, calib, ptq.QuantOptions(method="auto-model", sensitivity_samples=0))
    assert whole.search is None and whole.method in ranges.METHODS
    assert whole.scores[whole.method] == max(whole.scores.values())
    opts = ptq.QuantOptions(method="auto", sensitivity_samples=0)
    _, res = api.calibrate_model(path, calib, opts)
    assert res.method == whole.method and res.search.start == whole.method
    assert res.search.final_db >= res.search.start_db == pytest.approx(whole.scores[whole.method], abs=0.01)
    doc = res.to_json(opts)
    assert doc["auto_per_tensor"]["complete"] and doc["auto_per_tensor"]["changed"] == res.search.changed
    for t in doc["tensors"].values():
        assert t["method"] == res.search.choice.get(t["source"], res.method)
        assert tuple(t["range"]) == tuple(res.ranges[t["source"]])
    json.dumps(doc)


def test_search_stops_at_its_budget(files):
    _, path, calib = files
    _, res = api.calibrate_model(path, calib, ptq.QuantOptions(method="auto", auto_seconds=0.0, sensitivity_samples=0))
    s = res.search
    assert s.reached == 0 and s.trials == 0 and not s.to_json()["complete"] and not s.changed
    assert s.final_db == s.start_db
