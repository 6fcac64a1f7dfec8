"""Every example's and every MLPerf Tiny model's generated C, compiled for this host with
-fsanitize=address,undefined and run over its test data: no sanitizer report, output bit-exact with the NumPy
reference. The C (model library, every runtime file: fast kernels on the portable path and with the Arm DSP
path emulated, extended kernels, link, MLPerf runner, arena guard) is clean under -Wall -Wextra -Werror
-pedantic with gcc and clang. The runtime is compiled once per variant for the whole run (tests/hostcc.py)."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from onnx import helper

import hostcc
from conftest import (DRIVER, EXAMPLES, MLPERF, REPO, SANITIZE, WARN, host_compiler, library_sources, make_model,
                      require_mlperf, save)
from edgec import api
from edgec.codegen import cmodel as codegen
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec import cheader
from edgec.data import load_dataset

VARIANTS = {"portable": (), "dsp-emulated": ("-DEDGEC_EMULATE_DSP",)}
# clang's extra warnings every runtime file a model library ships passes (the harness is not held to them)
STRICT_CLANG = ("-Wshadow", "-Wcast-qual")
# model -> (onnx file, test data: .npz with x, or (MLPerf golden .npz, NCHW?)), samples run under the sanitizers
MODELS = {
    "digits_cnn": (EXAMPLES / "digits_cnn" / "model.onnx", EXAMPLES / "digits_cnn" / "test.npz", 32),
    "cancer_conv1d": (EXAMPLES / "cancer_conv1d" / "model.onnx", EXAMPLES / "cancer_conv1d" / "test.npz", 32),
    # the attention products' fast kernel (q/k/v read in place in in_proj's output) in a real PyTorch export
    "mha_pytorch": (EXAMPLES / "transformer_digits" / "pytorch" / "mha_bf_dynamo.onnx",
                    EXAMPLES / "transformer_digits" / "test.npz", 16),
    "ad_fc_autoencoder_fp32": (MLPERF / "ad_fc_autoencoder_fp32.onnx", ("ad", False), 12),
    "kws_dscnn_fp32": (MLPERF / "kws_dscnn_fp32.onnx", ("kws", False), 4),
    "kws_dscnn_fp32_nchw": (MLPERF / "kws_dscnn_fp32_nchw.onnx", ("kws", True), 4),
    "ic_resnet8_fp32": (MLPERF / "ic_resnet8_fp32.onnx", ("ic", False), 2),
    "ic_resnet8_fp32_nchw": (MLPERF / "ic_resnet8_fp32_nchw.onnx", ("ic", True), 2),
    "vww_mobilenetv1_025_fp32": (MLPERF / "vww_mobilenetv1_025_fp32.onnx", ("vww", False), 1),
    "vww_mobilenetv1_025_fp32_nchw": (MLPERF / "vww_mobilenetv1_025_fp32_nchw.onnx", ("vww", True), 1),
}
RUN_DSP = {"digits_cnn", "kws_dscnn_fp32", "ic_resnet8_fp32", "mha_pytorch"}   # also run on the emulated DSP path

def _run(cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, **kw)
    assert proc.returncode == 0, (cmd[0], proc.stderr.decode(errors="replace")[-3000:])
    return proc


def _test_data(model: str, x_shape) -> np.ndarray:
    _, data, n = MODELS[model]
    if isinstance(data, tuple):
        key, nchw = data
        x = np.load(MLPERF / "data" / f"golden_{key}.npz")["x_fp32"][:n]
        return np.ascontiguousarray(np.moveaxis(x, -1, 1)) if nchw else x
    return load_dataset(data, x_shape, n).x


def _calib(model: str, tmp_path):
    _, data, _ = MODELS[model]
    if not isinstance(data, tuple):
        return data.parent / "calib.npz"
    key, nchw = data
    x = np.load(MLPERF / "data" / f"golden_{key}.npz")["x_fp32"]
    path = tmp_path / "calib.npz"
    np.savez(path, x=np.ascontiguousarray(np.moveaxis(x, -1, 1)) if nchw else x)
    return path


# the _nchw variants with the sweeps: the same kernels as their NHWC files, after an input transpose
@pytest.mark.parametrize("model", [pytest.param(m, marks=[pytest.mark.sweep] if m.endswith("_nchw") else [])
                                   for m in MODELS])
def test_generated_c_is_sanitizer_and_warning_clean(model, tmp_path):
    onnx_path = MODELS[model][0]
    if not onnx_path.is_file():
        require_mlperf(onnx_path)
    _, graph, plan = api.compile_model(onnx_path, _calib(model, tmp_path))
    _check(graph, plan, _test_data(model, graph.input_onnx_shape), model in RUN_DSP, tmp_path)


def test_extended_kernels_are_sanitizer_clean(tmp_path):
    """The extended kernels at run time: a small net through every one of them."""
    path = save(ext_model(), tmp_path)
    x = np.random.default_rng(1).normal(0, 1, (48, 3, 4, 4)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x[:32])
    _, graph, plan = api.compile_model(path, tmp_path / "calib.npz")
    kinds = {op.kind for op in graph.ops}
    assert {"lut", "concat", "group_conv2d", "resize_linear", "reduce", "binary", "log_softmax"} <= kinds, kinds
    _check(graph, plan, x[32:], True, tmp_path)
    assert "edgec_mul_bcast_s8(" in (tmp_path / "lib" / f"{graph.name}.c").read_text()


def _check(graph, plan, x, dsp: bool, tmp_path) -> None:
    lib = tmp_path / "lib"
    codegen.generate(graph, plan, lib, graph.name)
    (lib / "driver_main.c").write_text(DRIVER % {"name": graph.name, "NAME": graph.name.upper()})
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    model_c, driver = lib / f"{graph.name}.c", lib / "driver_main.c"
    # clang: warnings of the model library (the runtime files are checked by the test below)
    _run([host_compiler("clang"), *WARN, "-O1", "-fsyntax-only", "-I", lib, model_c, driver])
    for variant in ("portable", "dsp-emulated") if dsp else ("portable",):
        exe = tmp_path / f"model_{variant}"
        hostcc.build(library_sources(lib), lib, exe, host_compiler("gcc"), [*WARN, *SANITIZE, *VARIANTS[variant], "-I", lib])
        proc = _run([exe], input=xq.reshape(len(xq), -1).tobytes(), env={"ASAN_OPTIONS": "detect_leaks=1",
                                                                          "UBSAN_OPTIONS": "print_stacktrace=1"})
        assert proc.stderr == b"", proc.stderr.decode(errors="replace")
        got = np.frombuffer(proc.stdout, np.int8).reshape(want.shape)
        assert np.array_equal(got, want), f"{variant}: samples {np.flatnonzero(np.any(got != want, axis=1))} differ"


def ext_model():
    """A small net through every extended kernel family: lut, binary (a squeeze-excite gate's broadcast Mul:
    edgec_mul_bcast_s8), concat, remap, resize_linear, reduce, group_conv2d, matmul, fully_connected_rows,
    log_softmax."""
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.normal(0, .4, s).astype(np.float32)  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["a"], ["s"]),
        helper.make_node("Mul", ["a", "s"], ["m0"]),
        helper.make_node("GlobalAveragePool", ["m0"], ["g"]),                # squeeze-excite: the gate of each
        helper.make_node("HardSigmoid", ["g"], ["hs"], alpha=1 / 6),         # channel times every pixel
        helper.make_node("Mul", ["m0", "hs"], ["m"]),                        # (edgec_mul_bcast_s8)
        helper.make_node("LeakyRelu", ["a"], ["l"], alpha=0.1),
        helper.make_node("Concat", ["m", "l"], ["c"], axis=1),
        helper.make_node("Conv", ["c", "wg"], ["gc"], group=2, pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["gc", "", "scales"], ["r"], mode="linear"),
        helper.make_node("ReduceMean", ["r"], ["rm"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["r", "rm"], ["d"]),
        helper.make_node("MaxPool", ["d"], ["p"], kernel_shape=[4, 4], strides=[4, 4]),
        helper.make_node("Transpose", ["p"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["t", "wm"], ["mm"]),
        helper.make_node("Flatten", ["mm"], ["f"]),
        helper.make_node("Gemm", ["f", "wf"], ["y0"], transB=1),
        helper.make_node("LogSoftmax", ["y0"], ["y"], axis=1),
    ]
    inits = {"w1": f32(6, 3, 3, 3), "wg": f32(8, 6, 3, 3), "wm": f32(8, 3), "wf": f32(5, 2 * 2 * 3),
             "scales": np.array([1, 1, 2, 2], np.float32)}
    return make_model(nodes, ("x", [1, 3, 4, 4]), ("y", [1, 5]), inits)


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_every_runtime_file_is_warning_clean(cc, tmp_path):
    """Every .c of runtime_c/ (kernels, fast/ kernels, harness/), portable and with the DSP path emulated, -O2
    (gcc's flow warnings need it); with clang, the kernels also -Wshadow -Wcast-qual clean (the Cortex-M4 compile
    of every kernel is tests/kernels/test_compilers.py's)."""
    include = REPO / "boards" / "platforms" / "common"      # edgec_board.h for the link and the MLPerf runner
    sources = sorted((REPO / "runtime_c").rglob("*.c"))
    rel = {p.relative_to(REPO / "runtime_c").as_posix() for p in sources}
    assert {f for f in cheader.runtime_files() if f.endswith(".c")} | \
        {"harness/edgec_link.c", "harness/edgec_mlperf.c", "harness/edgec_guard.c", "harness/edgec_dataset.c",
         "harness/edgec_audio_frontend.c"} == rel
    assert len({p.name for p in sources}) == len(sources)   # no two share a name: object files and archives key on it
    for variant, flags in VARIANTS.items():   # runtime files: the run's shared objects of these flags (tests/hostcc.py)
        if cc == "clang":   # clang warns from its front end, at any -O: no code generated (a quarter of the time)
            for src in sources:     # the files a model library ships: -Wshadow -Wcast-qual clean too
                strict = () if "harness/" in src.relative_to(REPO / "runtime_c").as_posix() else STRICT_CLANG
                _run([host_compiler(cc), *WARN, *strict, "-O2", *flags, "-I", include, "-fsyntax-only", src])
            continue
        (tmp_path / variant).mkdir()
        hostcc.objects(sources, REPO / "runtime_c", host_compiler(cc), [*WARN, "-O2", *flags, "-I", include],
                       tmp_path / variant)
    # the headers are C++-clean too (extern "C"), for Arduino sketches and C++ firmware
    (tmp_path / "nn.cpp").write_text('#include "edgec_nn.h"\n#include "edgec_nn_support.h"\n')
    _run([host_compiler("g++" if cc == "gcc" else "clang++"), "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
          "-I", REPO / "runtime_c", tmp_path / "nn.cpp"])
