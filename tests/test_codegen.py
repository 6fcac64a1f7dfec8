"""Generated C, compiled for the host, against the NumPy reference: bit for bit, under sanitizers too."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLE_NAMES, EXAMPLES, run_generated_c
from test_pipeline import MODELS, quantized
from edgec import api, codegen, planner, quantize, reference
from edgec.data import load_dataset


def _check(graph, x_float, tmp_path, cc="gcc", flags=("-O2",)):
    plan = planner.plan(graph)
    codegen.generate(graph, plan, tmp_path, graph.name)
    xq = quantize.quantize_input(graph.tensors[graph.input], x_float)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    got = run_generated_c(tmp_path, graph.name, xq.reshape(len(xq), -1), want.shape[1], cc=cc, flags=flags)
    mismatched = np.flatnonzero(np.any(got != want, axis=1))
    assert mismatched.size == 0, f"samples {mismatched[:10]} differ from the reference"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_synthetic_models_bit_exact(name, tmp_path):
    model, shape = MODELS[name]()
    graph, x = quantized(model, shape, n=32)
    _check(graph, x, tmp_path)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_examples_bit_exact_gcc_and_clang_sanitized(example, tmp_path):
    _, graph, _ = api.compile_model(EXAMPLES / example / "model.onnx", EXAMPLES / example / "calib.npz")
    test = load_dataset(EXAMPLES / example / "test.npz", graph.input_onnx_shape)
    _check(graph, test.x, tmp_path / "gcc")
    _check(graph, test.x[:64], tmp_path / "clang", cc="clang",
           flags=("-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"))


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


def test_generation_is_reproducible(tmp_path):
    out = []
    for k in range(2):
        _, graph, plan = api.compile_model(EXAMPLES / "cancer_conv1d" / "model.onnx",
                                           EXAMPLES / "cancer_conv1d" / "calib.npz")
        files = codegen.generate(graph, plan, tmp_path / str(k), graph.name)
        out.append({p.name: p.read_bytes() for p in files})
    assert out[0] == out[1]


@pytest.mark.parametrize("arena_guard", [False, True])
def test_build_folder_is_reproducible(arena_guard, tmp_path):
    """Same model, data and options -> byte-identical model library (every file of model/) and quantized.json,
    equal quantized arrays; once from fresh calibration statistics, once from the cache."""
    from edgec import ptq
    outs = []
    for k, cache in enumerate((False, True)):
        out = tmp_path / str(k)
        api.build(EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "calib.npz", "host", out,
                  firmware=False, options=ptq.QuantOptions(cache=cache), arena_guard=arena_guard)
        outs.append(out)
    a, b = ({p.relative_to(o): p.read_bytes() for p in sorted((o / "model").rglob("*")) if p.is_file()} for o in outs)
    assert a == b and len(a) >= 8
    assert (outs[0] / "quantized.json").read_bytes() == (outs[1] / "quantized.json").read_bytes()
    with np.load(outs[0] / "quantized.npz") as x, np.load(outs[1] / "quantized.npz") as y:
        assert x.files == y.files and all(np.array_equal(x[f], y[f]) for f in x.files)
