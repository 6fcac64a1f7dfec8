"""benchmarks/cycle_layers.py: the cycle estimate per layer. End to end on the AD autoencoder on qemu-cortex-m4: one
window a layer, each holding that layer's profiled instructions (plus the harness's hook, a few dozen), cycles at
least the instructions, and the layers' cycles summing to the whole invoke's estimate within the hooks' share."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from conftest import MLPERF, require, require_mlperf

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "cycle_layers.py"


def _load():
    spec = importlib.util.spec_from_file_location("cycle_layers_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow        # an edgec build and three QEMU runs of AD: about 10 s
def test_ad_cycles_per_layer_add_up_to_the_invoke(tmp_path):
    require_mlperf(MLPERF / "ad_fc_autoencoder_int8.tflite")
    require(shutil.which("qemu-system-arm") is not None and shutil.which("arm-none-eabi-gcc") is not None,
            "qemu-system-arm and arm-none-eabi-gcc", "run scripts/setup.sh")
    m = _load()
    from edgec import api
    from edgec.quant import artifact
    model = m.peers.mlperf_models(["ad"])[0]
    out = tmp_path / "edgec"
    api.build(model.path, None, "qemu-cortex-m4", out)
    data, _ = m.peers.write_inputs(artifact.load_graph(out), m.peers.input_row(model, artifact.load_graph(out)),
                                   tmp_path)
    rows = m.layer_cycles(out, data, tmp_path)
    whole = api.bench(out, data, limit=1, report_dir=None)["latency"]["cycles_estimate"]["median"]
    assert [r["index"] for r in rows] == list(range(len(rows))) and len(rows) >= 10
    for r in rows:
        assert 0 <= r["window_instructions"] - r["instructions"] <= 200, r
        assert r["cycles"] >= r["window_instructions"], r
    assert abs(sum(r["cycles"] for r in rows) - whole) <= 300 * len(rows)
    table = m.markdown("ad", rows)
    assert table.count("\n| ") == len(rows) + 1 and f"{rows[0]['cycles']:,}" in table
