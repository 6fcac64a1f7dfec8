"""TFLite resource variables (edgec/ops/variables.py, runtime_c/edgec_variables.c): two streaming models made by
TensorFlow's TFLiteConverter with a tf.Variable updated at every call (scripts/make_variable_models.py: a leaky
recurrent cell, and a running mean assigned from a TANH through the variable's own quantization), over several
consecutive invokes: edgec's NumPy reference and its generated C (host, ASan + UBSan) bit-identical with TFLite
Micro carrying the variables, and with TFLite Micro's reset() before each invoke where NAME_reset() is called."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import tflite_oracle as oracle
from edgec import api
from edgec.ops.registry import keeps_state
from edgec.quant import reference

DATA = Path(__file__).parent / "data"
MODELS = ["variable_recurrent", "variable_running_mean"]
pytestmark = pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None and not os.environ.get("CI"),
                                reason="tflite-micro (the TFLite Micro interpreter) is not installed")


def _inputs(seed: int, n: int = 8) -> np.ndarray:
    x = np.random.default_rng(seed).integers(-128, 128, (n, 1, 8)).astype(np.int8)
    x[2] = 127          # full scale and the bottom of the range among them
    x[3] = -128
    return x


def test_the_init_subgraph_is_folded_into_the_reset_state():
    g = oracle.importer.load(DATA / "variable_recurrent.tflite", "rec")
    read = next(op for op in g.ops if "size" in op.attrs and "state_of" not in op.attrs)
    assert keeps_state(g) and read.attrs["init"] == g.tensors[read.output].zero_point     # tf.zeros, quantized
    assign = next(op for op in g.ops if "state_of" in op.attrs)
    assert assign.attrs["state_of"] == read.name and read.output in assign.inputs     # runs after the read


@pytest.mark.parametrize("name", MODELS)
def test_reference_carries_the_variable_as_tflite_micro(name):
    model = (DATA / f"{name}.tflite").read_bytes()
    g = oracle.importer.load(DATA / f"{name}.tflite", name)
    x = _inputs(1)
    carried = oracle.tflm(model, x, carry_state=True)
    np.testing.assert_array_equal(reference.run_sequence(g, [xi.reshape(-1) for xi in x]), carried)
    each = oracle.tflm(model, x, carry_state=False)
    np.testing.assert_array_equal(reference.run_sequence(g, [xi.reshape(-1) for xi in x], reset_each=True), each)
    assert not np.array_equal(carried[1:], each[1:])       # the variable really carries


@pytest.mark.parametrize("path", ["reference", pytest.param("sanitized", marks=pytest.mark.sweep)])
def test_generated_c_carries_and_resets_the_variables_on_the_host(tmp_path, path):
    graphs = [oracle.importer.load(DATA / f"{n}.tflite", n) for n in MODELS]
    xs = [_inputs(k + 2) for k in range(len(MODELS))]
    for reset in (False, True):
        outs = oracle.run_c(graphs, xs, tmp_path / str(reset), path, reset_each=reset)
        for n, x, got in zip(MODELS, xs, outs):
            want = oracle.tflm((DATA / f"{n}.tflite").read_bytes(), x, carry_state=not reset)
            np.testing.assert_array_equal(got, want, err_msg=f"{n} reset={reset}")


def test_a_float_operator_on_the_variable_is_refused_in_one_line():
    from edgec.errors import EdgecError
    with pytest.raises(EdgecError) as e:
        oracle.importer.load(DATA / "variable_stream_conv.tflite", "sc")
    line = str(e.value)
    assert "\n" not in line and "READ_VARIABLE (operator #2: a float32 variable read by anything but one QUANTIZE" in line


@pytest.mark.sweep
def test_bench_on_the_host_device(tmp_path):
    x = _inputs(4).reshape(-1, 8).astype(np.float32)
    g = oracle.importer.load(DATA / "variable_running_mean.tflite", "m")
    t = g.tensors[g.input]
    np.savez(tmp_path / "d.npz", x=(x - t.zero_point) * np.float32(t.scale))
    api.build(DATA / "variable_running_mean.tflite", None, "host", tmp_path / "b")
    r = api.bench(tmp_path / "b", tmp_path / "d.npz")
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["tflite"]["reference_vs_interpreter"] == 1.0
