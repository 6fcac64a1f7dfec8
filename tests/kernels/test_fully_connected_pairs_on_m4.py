"""edgec_fully_connected_pairs_s8 (edgec/ops/dense_pairs.py) as the emulated Cortex-M4 runs it (its SMLAD / UXTB16
path exists only in the Arm build; tests/kernels/test_fast_sweep.py runs its portable C on the host): a chain of
fully connected layers with awkward shapes, every layer forced onto pairs, bit for bit with the NumPy reference:
114 inputs (not whole words) to 13 outputs (a partial last block of 4: its padded rows never stored), 13 to 37
(one group plus a partial one: the odd group out of the loop's pairs), 37 to 6, 6 to 1 (edgec's own per-channel
weight scales and ReLU ranges: the C blocks); and MLPerf Tiny's AD .tflite (one weight scale a layer over the full
range: the uniform stage's assembly, 640, 128 and 8 inputs: a count of groups entering the loop of 8 part-way)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

from conftest import MLPERF, make_model, mlperf_samples, require_mlperf
from edgec import api
from edgec.ops import dense_pairs


@pytest.mark.sweep
def test_the_pairs_kernel_on_the_emulated_cortex_m4(tmp_path):
    rng = np.random.default_rng(7)
    dims = [114, 13, 37, 6, 1]
    weights = {f"w{i}": rng.normal(0, .3, (a, b)).astype(np.float32) for i, (a, b) in enumerate(zip(dims, dims[1:]))}
    nodes, x = [], "x"
    for i in range(len(dims) - 1):
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]))
        x = f"m{i}"
        if i < len(dims) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes[-1].output[0] = "y"
    path = tmp_path / "mlp.onnx"
    import onnx
    onnx.save(make_model(nodes, ("x", [1, dims[0]]), ("y", [1, 1]), weights), path)
    np.savez(tmp_path / "calib.npz", x=rng.normal(0, 1, (64, dims[0])).astype(np.float32))
    np.savez(tmp_path / "test.npz", x=rng.normal(0, 1, (12, dims[0])).astype(np.float32))
    out = tmp_path / "build"
    report = api.build(path, tmp_path / "calib.npz", "qemu-cortex-m4", out,
                       choose=lambda op, generic: "pairs" if "pairs" in generic.variants else None)
    text = (out / "model" / f"{report['model']}.c").read_text()
    assert text.count("edgec_fully_connected_pairs_s8(") == len(dims) - 1
    r = api.bench(out, tmp_path / "test.npz")
    assert r["samples"] == 12 and r["agreement"]["device_vs_reference"] == 1.0


@pytest.mark.sweep
def test_the_pairs_kernels_assembly_on_ads_layers(tmp_path):
    path = MLPERF / "ad_fc_autoencoder_int8.tflite"
    require_mlperf(path)
    np.savez(tmp_path / "test.npz", x=mlperf_samples("ad")[0][:3])
    out = tmp_path / "build"
    report = api.build(path, None, "qemu-cortex-m4", out,
                       choose=lambda op, generic: "pairs" if "pairs" in generic.variants else None)
    text = (out / "model" / f"{report['model']}.c").read_text()
    assert text.count("edgec_fully_connected_pairs_s8(") == 10
    # every layer's header word: the uniform stage (the assembly), one requantization record
    assert len(re.findall(rf"_fw\[\d+\] = {{\n    {dense_pairs.UNIFORM}u,", text)) == 10
    assert text.count("_rq[1] = {") == 10
    r = api.bench(out, tmp_path / "test.npz")
    assert r["samples"] == 3 and r["agreement"]["device_vs_reference"] == 1.0
