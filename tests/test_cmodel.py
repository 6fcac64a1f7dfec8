"""Generated C, compiled for the host, against the NumPy reference: bit for bit, under sanitizers too."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLE_NAMES, EXAMPLES, SANITIZE, check_generated_c, run_generated_c
from synthetic_models import MODELS, quantized
from edgec import api
from edgec.codegen import cmodel as codegen
from edgec.codegen import constants
from edgec.fixedpoint import scheme
from edgec.plan import planner
from edgec.quant import reference
from edgec.data import load_dataset


@pytest.mark.parametrize("name", sorted(MODELS))
def test_synthetic_models_bit_exact(name, tmp_path):
    model, shape = MODELS[name]()
    graph, x = quantized(model, shape, n=32)
    check_generated_c(graph, x, tmp_path)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_examples_bit_exact_gcc_and_clang_sanitized(example, tmp_path):
    _, graph, _ = api.compile_model(EXAMPLES / example / "model.onnx", EXAMPLES / example / "calib.npz")
    test = load_dataset(EXAMPLES / example / "test.npz", graph.input_onnx_shape)
    check_generated_c(graph, test.x, tmp_path / "gcc")
    check_generated_c(graph, test.x[:64], tmp_path / "clang", cc="clang", flags=SANITIZE)


def test_generated_library_is_const_and_malloc_free(tmp_path):
    _, graph, plan = api.compile_model(EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz")
    files = codegen.generate(graph, plan, tmp_path, graph.name)
    text = "\n".join(p.read_text() for p in files if p.suffix in (".c", ".h"))
    assert "malloc" not in text and "stdio" not in text and "printf" not in text
    model_c = (tmp_path / f"{graph.name}.c").read_text()
    for line in model_c.splitlines():
        if line.startswith("static") and "[" in line and "arena" not in line and "bytes" not in line:
            assert line.startswith("static const"), line
    assert f"int8_t bytes[{plan.arena_bytes}]" in model_c



def _weights_in_ram_library(tmp_path):
    model, shape = MODELS["cnn_nchw"]()
    graph, x = quantized(model, shape, n=16)
    codegen.generate(graph, planner.plan(graph), tmp_path, graph.name, weights_in_ram=True)
    return graph, x


def test_weights_in_ram_leaves_only_the_weights_and_their_requantization_writable(tmp_path):
    """--weights-in-ram: the weight arrays and their biases / requantization records are initialized statics (the
    C runtime copies them into RAM at startup); every other constant array (tables, ...) stays `const` (in flash)."""
    graph, _ = _weights_in_ram_library(tmp_path)
    model_c = (tmp_path / f"{graph.name}.c").read_text()
    lines = {line.split("[")[0].split()[-1]: line for line in model_c.splitlines()
             if line.startswith("static") and "[" in line and "= {" in line and "arena" not in line}
    writable = {a for a, line in lines.items() if not line.startswith("static const ")}
    kinds = {a: constants.kind_of(a.split("_", 1)[1]) for a in lines}
    weights = {a for a, k in kinds.items() if k == "weights"}
    biases = {a for a, k in kinds.items() if k == "biases_requantization"}
    assert len(weights) == 3 and biases and writable == weights | biases and len(lines) > len(writable)


@pytest.mark.sweep
def test_weights_in_ram_library_is_warning_free_and_bit_exact(tmp_path):
    graph, x = _weights_in_ram_library(tmp_path)
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    got = run_generated_c(tmp_path, graph.name, xq.reshape(len(xq), -1), want.shape[1])
    assert np.array_equal(got, want)


BUILD_IN_A_FRESH_INTERPRETER = """
import sys
from pathlib import Path
from edgec import api
from edgec.quant import ptq
model, calib, out, guard, cache = sys.argv[1:]
api.build(Path(model), Path(calib), "host", Path(out), firmware=False, options=ptq.QuantOptions(cache=cache == "1"),
          arena_guard=guard == "1")
"""


def _build_with_hash_seed(seed: int, example: str, out: Path, arena_guard: bool, cache: bool, cache_dir: Path):
    """api.build in its own interpreter with PYTHONHASHSEED=seed: set and dict orders keyed by strings
    differ between the runs, so anything that leaks them into the output shows up."""
    env = dict(os.environ, PYTHONHASHSEED=str(seed), EDGEC_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", BUILD_IN_A_FRESH_INTERPRETER, EXAMPLES / example / "model.onnx",
                           EXAMPLES / example / "calib.npz", out, str(int(arena_guard)), str(int(cache))],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("example,arena_guard", [("cancer_conv1d", False), ("digits_cnn", True)])
def test_build_folder_is_reproducible(example, arena_guard, tmp_path):
    """Same model, data and options -> byte-identical model library (every file of model/) and quantized.json,
    equal quantized arrays: built twice in separate interpreters under two PYTHONHASHSEEDs, once from fresh
    calibration statistics, once from the cache the first wrote."""
    outs = [tmp_path / "seed1", tmp_path / "seed2"]
    for seed, out in zip((1, 2), outs):
        _build_with_hash_seed(seed, example, out, arena_guard, True, tmp_path / "cache")
    assert len(list((tmp_path / "cache").rglob("*"))) > 0          # the second build read the first's statistics
    a, b = ({p.relative_to(o): p.read_bytes() for p in sorted((o / "model").rglob("*")) if p.is_file()} for o in outs)
    assert a == b and len(a) >= 8
    assert (outs[0] / "quantized.json").read_bytes() == (outs[1] / "quantized.json").read_bytes()
    with np.load(outs[0] / "quantized.npz") as x, np.load(outs[1] / "quantized.npz") as y:
        assert x.files == y.files and all(np.array_equal(x[f], y[f]) for f in x.files)
