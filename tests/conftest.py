"""Shared test helpers: repository paths, tiny ONNX model factories, a host C runner."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import hostcc
from edgec.codegen import cmodel
from edgec.frontend import loader
from edgec.plan import planner
from edgec.quant import reference
from edgec.fixedpoint import scheme

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
EXAMPLE_NAMES = ["digits_cnn", "cancer_conv1d"]
# $EDGEC_MLPERF_DIR, or next to the repository (a checkout in /work/main) or one level up (a worktree in
# /work/wt/<name>); tests/fuzzcases.py looks in the same places
MLPERF = Path(os.environ["EDGEC_MLPERF_DIR"]) if os.environ.get("EDGEC_MLPERF_DIR") else next(
    (d / "shared" / "models" / "mlperf_tiny" for d in (REPO.parent, REPO.parent.parent)
     if (d / "shared" / "models" / "mlperf_tiny").is_dir()), REPO.parent / "shared" / "models" / "mlperf_tiny")


MLPERF_FILES = [f"{m}{v}.onnx" for m in ("kws_dscnn_fp32", "vww_mobilenetv1_025_fp32", "ic_resnet8_fp32")
                for v in ("", "_nchw")] + ["ad_fc_autoencoder_fp32.onnx"] + [
    f"data/{f}" for f in ("golden_kws.npz", "golden_vww.npz", "golden_ic.npz", "golden_ad.npz",
                          "kws_refsub_sample_fp32.npy", "kws_marvin_617de221_0_mfcc_fp32.npy",
                          "vww_person_gray96_rgb01.npy", "ad_normal_id_01_00000000_logmel_200x128.npy")]


def in_ci() -> bool:
    """CI=true (set by .ci/run, passed through by scripts/test.sh, and by CI services): missing test material
    and tools the setup installs are failures there, not skips."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(present: bool, what: str, how: str) -> None:
    """The one way a test depends on something outside the repository (../shared, clang, chromium): if it is
    missing, skip on a developer's machine, fail in CI. `what` names it, `how` says how to get it."""
    if present:
        return
    if in_ci():
        pytest.fail(f"{what} is missing (CI=true: a failure, not a skip); {how}", pytrace=False)
    pytest.skip(f"{what} is missing; {how}")


def require_mlperf(path: Path) -> None:
    """A test's MLPerf Tiny file (../shared/models/mlperf_tiny beside the clone)."""
    require(path.exists(), str(path), "put ../shared (the MLPerf Tiny models, models/mlperf_tiny) beside the clone")


def missing_test_material() -> list[str]:
    """The files of ../shared the suite reads that are not there."""
    return [str(MLPERF / f) for f in MLPERF_FILES if not (MLPERF / f).is_file()]


def run_root(tmp_path_factory, worker_id) -> Path:
    """The run's temporary root, shared by the xdist workers (each worker's own basetemp is a folder in it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if worker_id != "master" else root


@pytest.fixture(scope="session", autouse=True)
def _runtime_object_cache(tmp_path_factory, worker_id):
    """tests/hostcc.py's object cache, in the run's temporary root (shared by the xdist workers)."""
    hostcc.use_cache(run_root(tmp_path_factory, worker_id) / "runtime-objects")


def made_once_per_run(root: Path, key: str, make) -> Path:
    """The folder root/shared/key, made once in the whole run: make(folder) runs in the first xdist worker to ask,
    under a file lock; a worker asking meanwhile waits for it, then both read the same folder (whichever file of
    the suite comes first pays for a build, e.g. an MLPerf model on the emulated M4 or a vendor-framework
    firmware, and the other files reuse it).  Tests only read such a folder (and bench it without report_dir).
    A failed make leaves nothing marked made: the next to ask tries again (and fails with its own message)."""
    import fcntl
    shared = root / "shared"
    shared.mkdir(parents=True, exist_ok=True)
    folder, done = shared / key, shared / f"{key}.made"
    with open(shared / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def example_build(tmp_path_factory, worker_id):
    """example_build(example, board) -> (build report, build folder): examples/<example> built for the board once
    per run, shared by every test file and worker that asks (made_once_per_run): read it, bench it, never
    rebuild or write into it."""
    import json
    from edgec import api

    root, cache = run_root(tmp_path_factory, worker_id), {}

    def get(example: str, board: str):
        if (example, board) not in cache:
            model = EXAMPLES / example
            out = made_once_per_run(root, f"example-{example}-{board}", lambda folder: api.build(
                model / "model.onnx", model / "calib.npz", board, folder))
            cache[example, board] = (json.loads((out / "build-report.json").read_text()), out)
        return cache[example, board]
    return get


def pytest_sessionstart(session):
    """In CI, stop before running anything if test material is missing, and say what (instead of a run whose
    MLPerf tests all fail one by one, or, without CI=true, skip)."""
    missing = missing_test_material()
    if in_ci() and missing:
        shown = (f"the folder {MLPERF}" if not MLPERF.is_dir() else
                 ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else ""))
        pytest.exit(f"CI=true and the suite's test material is missing: {shown}. Put ../shared (with "
                    f"models/mlperf_tiny) beside the clone, or unset CI to skip the tests that need it.",
                    returncode=3)


DURATIONS = REPO / "tests" / "durations.json"


def file_weights() -> dict:
    """tests/durations.json (written by scripts/test_durations.py): {"files": {test file as in node ids: seconds it
    took in a measured whole run}, "seconds_per_test": that run's mean}; empty if the file is absent."""
    import json
    return json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}


def heaviest_files_first(items: list, weights: dict) -> None:
    """Sort items (in place) by their file's measured seconds, heaviest first; a file not measured (a new one)
    counts as its number of tests times the mean seconds per test.  A file's tests keep their order, files of
    equal weight theirs."""
    counts: dict[str, int] = {}
    for item in items:
        f = item.nodeid.split("::", 1)[0]
        counts[f] = counts.get(f, 0) + 1
    files, per_test = weights.get("files", {}), weights.get("seconds_per_test", 1.0)
    items.sort(key=lambda item: -files.get(f := item.nodeid.split("::", 1)[0], counts[f] * per_test))


def pytest_collection_modifyitems(config, items):
    """The heaviest test files first.  scripts/test.sh runs `--dist loadfile --no-loadscope-reorder`: xdist then
    hands whole files to its workers in this order (longest first), so a long file (a new one too) is not left for
    the end of the run while the other worker idles; xdist's own order, by number of tests, puts the long
    few-test files last (docs/development.md, "Test time": on main's durations it still balanced within 8 s)."""
    heaviest_files_first(items, file_weights())


def make_model(nodes, inp, out, inits, opset=13, value_info=()):
    """A checked ONNX model from nodes, (name, shape) input/output and {name: array} initializers."""
    graph = helper.make_graph(
        nodes, "test", [helper.make_tensor_value_info(inp[0], TensorProto.FLOAT, inp[1])],
        [helper.make_tensor_value_info(out[0], TensorProto.FLOAT, out[1])],
        [numpy_helper.from_array(np.asarray(v, np.float32) if np.asarray(v).dtype.kind == "f" else np.asarray(v), k)
         for k, v in inits.items()], value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return loader.prepare(model)


def save(model, tmp_path: Path, name="model.onnx") -> Path:
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def host_compiler(cc: str = "gcc") -> str:
    path = shutil.which(cc)
    if path is None:
        pytest.fail(f"{cc} is not installed; the README's setup command installs it")
    return path


DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include "%(name)s.h"
int main(void)
{
    for (;;) {
        size_t got = fread(%(name)s_input(), 1, %(NAME)s_INPUT_BYTES, stdin);
        if (got == 0) return 0;
        if (got != %(NAME)s_INPUT_BYTES) return 3;
        if (%(name)s_invoke() != 0) return 4;
        fwrite(%(name)s_output(), 1, %(NAME)s_OUTPUT_BYTES, stdout);
    }
}
"""


def library_sources(lib_dir: Path) -> list[str]:
    """The .c files of a model library folder (or a firmware's src/), the runtime's fast/ subfolder included."""
    return sorted(str(p) for p in lib_dir.glob("*.c")) + sorted(str(p) for p in lib_dir.glob("fast/*.c"))


WARN = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")
# ASan + UBSan, every report fatal; every sanitized host build uses exactly these, so tests/hostcc.py's cached
# runtime objects serve them all. -O0: every load and store is instrumented (none optimized away), and the fast
# kernels' unrolled files compile in a tenth of -O1's time (edgec_conv2d_window.c: 15 s with clang at -O1, 1.4 s);
# gcc's flow warnings are checked at -O2 (check_generated_c, test_cmodel_sanitizers' runtime warning test)
SANITIZE = ("-O0", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")


def run_generated_c(lib_dir: Path, name: str, inputs: np.ndarray, out_bytes: int, cc: str = "gcc",
                    flags: tuple[str, ...] = ("-O2",)) -> np.ndarray:
    """Compile a generated model library with a stdin/stdout driver on the host and run all inputs."""
    driver = lib_dir / "driver_main.c"
    driver.write_text(DRIVER % {"name": name, "NAME": name.upper()})
    exe = lib_dir / f"driver_{Path(cc).name}"
    hostcc.build(library_sources(lib_dir), lib_dir, exe, host_compiler(cc), [*WARN, *flags, "-I", str(lib_dir)])
    proc = subprocess.run([str(exe)], input=np.ascontiguousarray(inputs, np.int8).tobytes(), capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b"", proc.stderr.decode()
    return np.frombuffer(proc.stdout, np.int8).reshape(len(inputs), out_bytes)


def check_generated_c(graph, x_float, tmp_path: Path, cc: str = "gcc", flags: tuple[str, ...] = ("-O2",)) -> None:
    """Plan and generate a quantized graph's model library into tmp_path, run it on the host over x_float
    (quantized) and assert it is bit-exact with the NumPy reference."""
    plan = planner.plan(graph)
    cmodel.generate(graph, plan, tmp_path, graph.name)
    xq = scheme.quantize_input(graph.tensors[graph.input], x_float)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    want = np.ascontiguousarray(want).view(np.int8)       # (int16 ports: their bytes, as the driver moves them)
    got = run_generated_c(tmp_path, graph.name, np.ascontiguousarray(xq.reshape(len(xq), -1)).view(np.int8),
                          want.shape[1], cc=cc, flags=flags)
    mismatched = np.flatnonzero(np.any(got != want, axis=1))
    assert mismatched.size == 0, f"samples {mismatched[:10]} differ from the reference"


@pytest.fixture(scope="session")
def ck(tmp_path_factory):
    """The C runtime as one shared library behind ctypes (tests/ckernels.py), built once per session."""
    import ckernels
    return ckernels.CKernels(ckernels.build_library(tmp_path_factory.mktemp("ckernels")))


@pytest.fixture(scope="session")
def ck_dsp(tmp_path_factory):
    """The same library with the fast kernels' Arm DSP path (intrinsics emulated in C), built once per session."""
    import ckernels
    return ckernels.CKernels(ckernels.build_library(tmp_path_factory.mktemp("ckernels_dsp"), ("-DEDGEC_EMULATE_DSP",)))


# ---- the MLPerf Tiny models, built once per session and board (tests/test_mlperf_models.py, test_fit.py) ----

MLPERF_MODELS = {"kws": "kws_dscnn_fp32", "vww": "vww_mobilenetv1_025_fp32", "ic": "ic_resnet8_fp32",
                 "ad": "ad_fc_autoencoder_fp32"}


AD_SPLIT = 100      # AD: windows of frames 0..99 calibrate, windows starting at frame 100 or later evaluate


def check_generated_c_gcc_and_clang(graph, x_float, folder: Path) -> None:
    """check_generated_c twice: gcc -O2 (in folder/gcc) and clang under ASan + UBSan (folder/clang)."""
    check_generated_c(graph, x_float, folder / "gcc")
    check_generated_c(graph, x_float, folder / "clang", cc="clang", flags=SANITIZE)


def snr_against_ort(path: Path, x, cols=slice(None)):
    """snr(calibration result) -> dB of api.reference's outputs against ONNX Runtime's float ones, on the samples x
    (each x[i] one input "x" with its batch axis), over the columns `cols` of every output flattened and
    concatenated."""
    import onnxruntime as ort
    from edgec import api
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.stack([np.concatenate([v.reshape(-1) for v in sess.run(None, {"x": xi})]) for xi in x])
    want = want.astype(np.float64)[:, cols]

    def snr(result) -> float:
        got = np.stack([np.asarray(api.reference(result, xi).y, np.float64).reshape(-1) for xi in x])[:, cols]
        return 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2))
    return snr


def golden_rows(key: str) -> tuple[np.ndarray, list[str]]:
    """The golden inputs of a model (NHWC float32) and what each row is ("real:..." or "random #k")."""
    with np.load(MLPERF / "data" / f"golden_{key}.npz") as d:
        return d["x_fp32"].astype(np.float32), [str(r) for r in d["rows"]]


def ad_windows() -> np.ndarray:
    """The 196 log-mel windows x_t = a[t:t+5].reshape(640) of the AD normal clip."""
    a = np.load(MLPERF / "data" / "ad_normal_id_01_00000000_logmel_200x128.npy")
    return np.stack([a[t:t + 5].reshape(640) for t in range(a.shape[0] - 4)]).astype(np.float32)


def mlperf_samples(key: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The evaluation samples of a model (NHWC float32) and their labels (None for AD and IC); none of them,
    nor any frame of them, is in mlperf_calibration(key).

    KWS: the reference submission's MFCC (both float and int8 models say 5 = "on") and marvin (11 =
    unknown); VWW: the person image (1); AD: the windows of the normal clip from frame AD_SPLIT on; IC: the
    repository has no real CIFAR-10 image, so the first 4 golden (random) inputs, for bit-exactness only."""
    data = MLPERF / "data"
    if key == "kws":
        x = np.concatenate([np.load(data / "kws_refsub_sample_fp32.npy"),
                            np.load(data / "kws_marvin_617de221_0_mfcc_fp32.npy")])
        return x.astype(np.float32), np.array([5, 11])
    if key == "vww":
        return np.load(data / "vww_person_gray96_rgb01.npy").astype(np.float32), np.array([1])
    if key == "ad":
        return ad_windows()[AD_SPLIT:], None
    return golden_rows("ic")[0][:4], None


def mlperf_calibration(key: str) -> np.ndarray:
    """Calibration data apart from the evaluation samples: the golden inputs that are random in-range ones
    (KWS, VWW: the real samples are the evaluation set; IC: the last 4), for AD the golden rows plus the
    clip's windows that end before frame AD_SPLIT."""
    x, rows = golden_rows(key)
    if key == "ad":
        return np.concatenate([x, ad_windows()[:AD_SPLIT - 4]])
    if key == "ic":
        return x[4:]
    return x[[i for i, r in enumerate(rows) if r.startswith("random")]]


def nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if x.ndim == 4 else x


@pytest.fixture(scope="session")
def mlperf_build(tmp_path_factory, worker_id):
    """mlperf_build(key, board, nchw=False) -> (build report, build folder, test data .npz): each model
    variant built once per board for the whole run, shared by the test files and xdist workers that ask
    (made_once_per_run: tests/test_mlperf_models.py, test_fit.py and test_tflite.py build the same models on the
    emulated Cortex-M4).  Read it, bench it, never write into it."""
    import json
    from edgec import api

    root, cache = run_root(tmp_path_factory, worker_id), {}

    def get(key: str, board: str, channels_first: bool = False):
        name = MLPERF_MODELS[key] + ("_nchw" if channels_first else "")
        if (name, board) not in cache:
            path = MLPERF / f"{name}.onnx"
            require_mlperf(path)
            prep = nchw if channels_first else (lambda a: a)

            def make(folder: Path) -> None:
                folder.mkdir()
                np.savez(folder / "calib.npz", x=prep(mlperf_calibration(key)))
                x, y = mlperf_samples(key)
                np.savez(folder / "test.npz", x=prep(x), **({} if y is None else {"y": y}))
                api.build(path, folder / "calib.npz", board, folder / "build")
            folder = made_once_per_run(root, f"mlperf-{name}-{board}", make)
            out = folder / "build"
            cache[name, board] = (json.loads((out / "build-report.json").read_text()), out, folder / "test.npz")
        return cache[name, board]
    return get


# ---- the vendor framework (STM32duino + PlatformIO's ststm32, offline: ../shared/frameworks/README.md) ----

FRAMEWORKS = MLPERF.parent.parent / "frameworks"
STM32DUINO_BUNDLE = FRAMEWORKS / "stm32duino-offline.tar.xz"


@pytest.fixture(scope="session")
def stm32duino():
    """The STM32duino bundle installed into edgec's PlatformIO core (idempotent), once per session: the
    NUCLEO profiles (and qemu-stm32f405) then build offline.  Returns the bundle's path.  Missing bundle:
    a failure in CI, a skip elsewhere."""
    from edgec.settings import Settings
    from edgec.targets.packages import install_bundle

    bundle = require_stm32duino_bundle()
    install_bundle(bundle, Settings.from_environment().platformio_home)
    return bundle


def require_stm32duino_bundle() -> Path:
    """The STM32duino bundle's path; missing: a failure in CI, a skip with the reason elsewhere."""
    if not STM32DUINO_BUNDLE.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{STM32DUINO_BUNDLE} is missing: CI expects ../shared/frameworks beside the clone")
        pytest.skip(f"{STM32DUINO_BUNDLE} not present: the vendor-framework builds need it")
    return STM32DUINO_BUNDLE


# ---- the CLI as a user runs it (tests/test_cli.py, test_fit.py, test_support.py) ----

def edgec(*args, cwd=None, env=None):
    """Run the CLI; env: variables to set on top of this process's environment."""
    import sys
    return subprocess.run([sys.executable, "-m", "edgec", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env={**os.environ, **env} if env else None)


def bench_report(model, calib_x, x, tmp_path: Path, board: str = "qemu-cortex-m4") -> dict:
    """`edgec build MODEL --calib` (calib_x) for `board`, then `edgec bench --json` on x, as a user runs them: the
    bench report (each command asserted to succeed)."""
    import json
    np.savez(tmp_path / "calib.npz", x=calib_x)
    np.savez(tmp_path / "x.npz", x=x)
    proc = edgec("build", model, "--calib", tmp_path / "calib.npz", "--board", board, "-o", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    proc = edgec("bench", tmp_path / "b", "--data", tmp_path / "x.npz", "--json", "-", "--no-report")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)



def runs_bit_exact_on_the_board(model, rng, tmp_path: Path, samples: int = 8,
                                board: str = "qemu-cortex-m4") -> tuple[str, Path]:
    """A small ONNX model (the kernel tests' awkward shapes) built for an emulated `board` from 64 random normal
    calibration samples, with no tuning log (the selector's own choices), and its device output equal to the
    NumPy reference on `samples` more: (the generated model C, the build folder)."""
    from edgec import api
    onnx.checker.check_model(model)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim][1:]
    path = save(model, tmp_path)
    np.savez(tmp_path / "calib.npz", x=rng.normal(0, 1, (64, *shape)).astype(np.float32))
    np.savez(tmp_path / "test.npz", x=rng.normal(0, 1, (samples, *shape)).astype(np.float32))
    out = tmp_path / "build"
    report = api.build(path, tmp_path / "calib.npz", board, out, tuning_log=tmp_path / "none.json")
    r = api.bench(out, tmp_path / "test.npz")
    assert r["samples"] == samples and r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]
    return (out / "model" / f"{report['model']}.c").read_text(), out

def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("edgec: error: ")
    for n in needles:
        assert n in err, err
