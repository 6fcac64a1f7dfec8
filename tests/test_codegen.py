"""Generated C, compiled for the host, against the NumPy reference: bit for bit, under sanitizers too."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLE_NAMES, EXAMPLES, check_generated_c
from synthetic_models import MODELS, quantized
from edgec import api
from edgec.codegen import cmodel as codegen
from edgec.quant import quantize
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
    check_generated_c(graph, test.x[:64], tmp_path / "clang", cc="clang",
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
    from edgec.quant import ptq
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
