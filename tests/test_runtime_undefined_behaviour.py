"""No input triggers undefined behaviour anywhere in the runtime: a generated stress set of degenerate
channels (all-zero, tiny and huge weights, saturating biases) and degenerate data (all-equal calibration
samples, extreme test inputs) through every kernel family (conv, depthwise, fully connected, pool, the
elementwise LUTs and binaries, softmax, movement, concat, reduce, resize, cumsum, convert), compiled with
-fsanitize=undefined -fno-sanitize-recover and bit-exact with the NumPy reference. The runtime is compiled
once under UBSan; each model's library is compiled and linked against it."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from conftest import DRIVER, REPO, host_compiler, make_model, save
from edgec import cheader
from edgec.codegen import cmodel
from edgec.pipeline import compile_model
from edgec.quant import reference
from edgec.fixedpoint import scheme
from edgec.quant.ptq import QuantOptions

UBSAN = ("-std=c99", "-O0", "-fsanitize=undefined", "-fno-sanitize-recover=all", "-Wall", "-Wextra",
         "-Werror", "-pedantic")
RNG = np.random.default_rng(14)


VARIANTS = {"portable": (), "dsp-emulated": ("-DEDGEC_EMULATE_DSP",)}   # the fast kernels' two paths


@pytest.fixture(scope="module")
def ub_runtime(tmp_path_factory):
    """{variant: object files of the runtime compiled under UBSan}."""
    root = tmp_path_factory.mktemp("ub_runtime")
    jobs = {}
    for variant, flags in VARIANTS.items():
        for f in (f for f in cheader.runtime_files() if f.endswith(".c")):
            o = root / f"{variant}_{Path(f).stem}.o"
            jobs[variant, str(o)] = subprocess.Popen([host_compiler(), *UBSAN, *flags, "-c", str(REPO / "runtime_c" / f),
                                                      "-o", str(o)], stderr=subprocess.PIPE)
    for job in jobs.values():
        assert job.wait() == 0, job.stderr.read().decode()
    return {v: [o for (variant, o) in jobs if variant == v] for v in VARIANTS}


def degenerate_weights(out_c: int, rest: tuple[int, ...], saturate: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel: zero, tiny (1e-30) and huge (1e4) weights, then ordinary ones; biases that
    saturate int32 (1e9 next to tiny weights; without `saturate`, where the fast kernels take the layer:
    they decline an accumulator that could reach 2^30), are zero, or are ordinary."""
    w = RNG.normal(0, 0.5, (out_c, *rest)).astype(np.float32)
    w[0] = 0
    w[1 % out_c] = 1e-30 * np.sign(RNG.normal(size=rest))
    w[2 % out_c] = 1e4 if saturate else 20.0     # a multiplier > 1 (huge weights) also keeps the fast kernels out
    b = RNG.normal(0, 1, out_c).astype(np.float32)
    b[:3] = ([5.0, 1e9, -1e9] if saturate else [5.0, 1e-3, -3.0])[:min(3, out_c)]
    return w, b


def conv_model(saturate: bool = True):
    """conv (degenerate channels) -> relu -> depthwise (degenerate) -> max pool -> sigmoid -> add/mul/max/sub
    with constants -> average pool -> flatten -> gemm (degenerate) -> softmax"""
    w1, b1 = degenerate_weights(4, (3, 3, 3), saturate)
    w2, b2 = degenerate_weights(4, (1, 3, 3), saturate)
    w3, b3 = degenerate_weights(5, (16,), saturate)
    c = np.array([0.0, 1e-20, 1e3, -2.0], np.float32).reshape(1, 4, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=4, name="dw"),
             helper.make_node("MaxPool", ["c2"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Sigmoid", ["p1"], ["s1"]),
             helper.make_node("Add", ["s1", "c"], ["a1"]),
             helper.make_node("Mul", ["a1", "p1"], ["m1"]),
             helper.make_node("Max", ["m1", "s1"], ["mx"]),
             helper.make_node("Sub", ["mx", "c"], ["d1"]),
             helper.make_node("AveragePool", ["d1"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p2"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["g"], transB=1, name="fc"),
             helper.make_node("Softmax", ["g"], ["y"], axis=1)]
    return make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, 5]),
                      {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "w3": w3, "b3": b3, "c": c})


def movement_model():
    """transpose, reshape, slice, pad, concat, reduce (mean, max), resize, cumsum, tanh, div"""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]),
             helper.make_node("Slice", ["t", "st", "en", "ax"], ["sl"]),
             helper.make_node("Pad", ["sl", "pads"], ["pd"]),
             helper.make_node("Concat", ["pd", "t"], ["cc"], axis=1),
             helper.make_node("Resize", ["cc", "", "scales"], ["rs"], mode="linear"),
             helper.make_node("ReduceMean", ["rs"], ["rm"], axes=[3], keepdims=1),
             helper.make_node("ReduceMax", ["rs"], ["rx"], axes=[3], keepdims=1),
             helper.make_node("Div", ["rm", "two"], ["dv"]),
             helper.make_node("Add", ["dv", "rx"], ["ad"]),
             helper.make_node("CumSum", ["ad", "axis"], ["cs"]),
             helper.make_node("Tanh", ["cs"], ["th"]),
             helper.make_node("Reshape", ["th", "shape"], ["y"])]
    inits = {"st": np.array([1], np.int64), "en": np.array([3], np.int64), "ax": np.array([2], np.int64),
             "pads": np.array([0, 0, 1, 0, 0, 0, 1, 0], np.int64), "scales": np.array([1, 1, 2, 2], np.float32),
             "two": np.array([2.0], np.float32), "axis": np.array(2, np.int64), "shape": np.array([1, 32], np.int64)}
    return make_model(nodes, ("x", [1, 2, 4, 4]), ("y", [1, 32]), inits)


def _test_inputs(shape) -> np.ndarray:
    """Extremes, all-equal, zeros and random samples."""
    x = [np.full(shape, v, np.float32) for v in (0.0, 1.0, -1.0, 1e6, -1e6, 1e30)]
    x += list(RNG.normal(0, 10, (4, *shape)).astype(np.float32))
    return np.stack(x)


def _run_under_ubsan(graph, plan, x, tmp_path, runtime) -> None:
    lib = tmp_path / "lib"
    cmodel.generate(graph, plan, lib, graph.name)
    (lib / "driver_main.c").write_text(DRIVER % {"name": graph.name, "NAME": graph.name.upper()})
    exe = tmp_path / "driver"
    subprocess.run([host_compiler(), *UBSAN, "-I", str(lib), str(lib / f"{graph.name}.c"), str(lib / "driver_main.c"),
                    *runtime, "-o", str(exe), "-lm"], check=True, capture_output=True)
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    proc = subprocess.run([str(exe)], input=np.ascontiguousarray(xq, np.int8).tobytes(), capture_output=True)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode(errors="replace")[-2000:]
    port = np.int16 if graph.tensors[graph.output].dtype == "int16" else np.int8    # (an int16 tail's port)
    got = np.frombuffer(proc.stdout, port).reshape(want.shape)
    assert np.array_equal(got, want.astype(port)), "the C differs from the reference"


CASES = {"conv": (conv_model, (), "portable"), "conv-dsp": (conv_model, (), "dsp-emulated"),
         "conv-fast": (lambda: conv_model(saturate=False), (), "portable"),
         "conv-fast-dsp": (lambda: conv_model(saturate=False), (), "dsp-emulated"),
         "conv-int16": (conv_model, ("dw",), "portable"), "movement": (movement_model, (), "portable")}


@pytest.mark.parametrize("calib", ["random", "all-equal"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_degenerate_models_are_defined_behaviour(case, calib, ub_runtime, tmp_path):
    build_model, int16, variant = CASES[case]
    model = build_model()
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim][1:]
    path = save(model, tmp_path, f"{case.replace('-', '_')}.onnx")
    cal = tmp_path / "calib.npz"
    x = RNG.normal(0, 1, (8, *shape)).astype(np.float32) if calib == "random" else np.full((4, *shape), 0.5, np.float32)
    np.savez(cal, x=x)
    _, graph, plan = compile_model(path, cal, options=QuantOptions(sensitivity_samples=0, cache=False, int16=int16))
    _run_under_ubsan(graph, plan, _test_inputs(shape), tmp_path, ub_runtime[variant])
