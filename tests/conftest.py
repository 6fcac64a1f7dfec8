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

from edgec.codegen import cmodel
from edgec.frontend import loader
from edgec.plan import planner
from edgec.quant import reference, scheme

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
EXAMPLE_NAMES = ["digits_cnn", "cancer_conv1d"]
# next to the repository (a checkout in /work/main) or one level up (a worktree in /work/wt/<name>)
MLPERF = next((d / "shared" / "models" / "mlperf_tiny" for d in (REPO.parent, REPO.parent.parent)
               if (d / "shared" / "models" / "mlperf_tiny").is_dir()), REPO.parent / "shared" / "models" / "mlperf_tiny")


def require_mlperf(path: Path) -> None:
    """Skip a test whose MLPerf Tiny file is missing on a developer's machine; in CI (shared/ is always
    beside the clone there) a missing file is a failure, not a silent skip."""
    if path.exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{path} is missing: CI expects ../shared/models/mlperf_tiny beside the clone")
    pytest.skip(f"{path} not present")


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


def run_generated_c(lib_dir: Path, name: str, inputs: np.ndarray, out_bytes: int, cc: str = "gcc",
                    flags: tuple[str, ...] = ("-O2",)) -> np.ndarray:
    """Compile a generated model library with a stdin/stdout driver on the host and run all inputs."""
    driver = lib_dir / "driver_main.c"
    driver.write_text(DRIVER % {"name": name, "NAME": name.upper()})
    exe = lib_dir / f"driver_{Path(cc).name}"
    sources = library_sources(lib_dir)
    cmd = [host_compiler(cc), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *flags,
           "-I", str(lib_dir), *sources, "-o", str(exe), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
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
    got = run_generated_c(tmp_path, graph.name, xq.reshape(len(xq), -1), want.shape[1], cc=cc, flags=flags)
    mismatched = np.flatnonzero(np.any(got != want, axis=1))
    assert mismatched.size == 0, f"samples {mismatched[:10]} differ from the reference"


@pytest.fixture(scope="session")
def ck(tmp_path_factory):
    """The C runtime as one shared library behind ctypes (tests/ckernels.py), built once per session."""
    import ckernels
    return ckernels.CKernels(ckernels.build_library(tmp_path_factory.mktemp("ckernels")))


# ---- the MLPerf Tiny models, built once per session and board (tests/test_mlperf_models.py, test_fit.py) ----

MLPERF_MODELS = {"kws": "kws_dscnn_fp32", "vww": "vww_mobilenetv1_025_fp32", "ic": "ic_resnet8_fp32",
                 "ad": "ad_fc_autoencoder_fp32"}


def mlperf_samples(key: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The real samples of data/ for a model (NHWC float32) and their labels (None for AD).

    KWS: the reference submission's MFCC (both float and int8 models say 5 = "on") and marvin (11 =
    unknown); VWW: the person image (1); AD: the 196 log-mel windows x_t = a[t:t+5].reshape(640) of the
    normal clip; IC: the repository has no real CIFAR-10 image, so its golden (random) inputs."""
    data = MLPERF / "data"
    if key == "kws":
        x = np.concatenate([np.load(data / "kws_refsub_sample_fp32.npy"),
                            np.load(data / "kws_marvin_617de221_0_mfcc_fp32.npy")])
        return x.astype(np.float32), np.array([5, 11])
    if key == "vww":
        return np.load(data / "vww_person_gray96_rgb01.npy").astype(np.float32), np.array([1])
    if key == "ad":
        a = np.load(data / "ad_normal_id_01_00000000_logmel_200x128.npy")
        return np.stack([a[t:t + 5].reshape(640) for t in range(196)]).astype(np.float32), None
    return np.load(data / "golden_ic.npz")["x_fp32"][:4].astype(np.float32), None


def mlperf_calibration(key: str) -> np.ndarray:
    """All the data there is for a model: the golden inputs (real samples + random in-range ones) plus the
    real samples (the test samples themselves: nothing else exists for these models)."""
    golden = np.load(MLPERF / "data" / f"golden_{key}.npz")["x_fp32"].astype(np.float32)
    real, _ = mlperf_samples(key)
    return golden if key == "ic" else np.concatenate([golden, real])


def nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if x.ndim == 4 else x


@pytest.fixture(scope="session")
def mlperf_build(tmp_path_factory):
    """mlperf_build(key, board, nchw=False) -> (build report, build folder, test data .npz): each model
    variant built once per board for the whole session."""
    from edgec import api

    root = tmp_path_factory.mktemp("mlperf_builds")
    cache = {}

    def get(key: str, board: str, channels_first: bool = False):
        name = MLPERF_MODELS[key] + ("_nchw" if channels_first else "")
        if (name, board) not in cache:
            path = MLPERF / f"{name}.onnx"
            require_mlperf(path)
            prep = nchw if channels_first else (lambda a: a)
            calib, test = root / f"{name}-calib.npz", root / f"{name}-test.npz"
            if not calib.exists():
                np.savez(calib, x=prep(mlperf_calibration(key)))
                x, y = mlperf_samples(key)
                np.savez(test, x=prep(x), **({} if y is None else {"y": y}))
            out = root / f"{name}-{board}"
            cache[name, board] = (api.build(path, calib, board, out), out, test)
        return cache[name, board]
    return get


# ---- the CLI as a user runs it (tests/test_cli.py, test_fit.py, test_support.py) ----

def edgec(*args, cwd=None):
    import sys
    return subprocess.run([sys.executable, "-m", "edgec", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("edgec: error: ")
    for n in needles:
        assert n in err, err


# ---- the offline STM32duino framework (../shared/frameworks/stm32duino-offline.tar.xz) ----

STM32DUINO_BUNDLE = next((d / "shared" / "frameworks" / "stm32duino-offline.tar.xz"
                          for d in (REPO.parent, REPO.parent.parent)
                          if (d / "shared" / "frameworks" / "stm32duino-offline.tar.xz").is_file()),
                         REPO.parent / "shared" / "frameworks" / "stm32duino-offline.tar.xz")


# TEMP stand-in until issue-13a merges (their `stm32duino` fixture installs the bundle with
# edgec.targets.packages.install_bundle); this one unpacks it by hand as ../shared/frameworks/README.md says.
@pytest.fixture(scope="session")
def stm32duino():
    """The ststm32 platform + STM32duino framework installed in edgec's PlatformIO core (EDGEC_PLATFORMIO_HOME),
    with the toolchain package made from Debian's arm-none-eabi-gcc."""
    import json
    import tarfile
    import tempfile
    from edgec.targets.pio import core_dir, platforms_dir

    if not STM32DUINO_BUNDLE.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{STM32DUINO_BUNDLE} is missing: CI expects ../shared/frameworks beside the clone")
        pytest.skip(f"{STM32DUINO_BUNDLE} not present")
    core = core_dir()
    platforms = platforms_dir(core)
    if not (platforms / "ststm32" / "platform.json").is_file():
        with tempfile.TemporaryDirectory(dir=core.parent if core.parent.is_dir() else None) as tmp:
            with tarfile.open(STM32DUINO_BUNDLE) as tar:
                tar.extractall(tmp, filter="tar")
            for kind, dest in (("packages", core / "packages"), ("platforms", platforms)):
                dest.mkdir(parents=True, exist_ok=True)
                for item in (Path(tmp) / kind).iterdir():
                    if not (dest / item.name).exists():
                        shutil.move(str(item), dest / item.name)
    tool = core / "packages" / "toolchain-gccarmnoneeabi"
    if not (tool / ".piopm").is_file():
        version = "1.120301.0"
        (tool / "bin").mkdir(parents=True, exist_ok=True)
        for exe in Path("/usr/bin").glob("arm-none-eabi-*"):
            link = tool / "bin" / exe.name
            if not link.exists():
                link.symlink_to(exe)
        (tool / "package.json").write_text(json.dumps({"name": "toolchain-gccarmnoneeabi", "version": version,
                                                       "description": "Debian's arm-none-eabi-gcc", "system": "*"}))
        (tool / ".piopm").write_text(json.dumps({
            "type": "tool", "name": "toolchain-gccarmnoneeabi", "version": version,
            "spec": {"owner": "platformio", "id": None, "name": "toolchain-gccarmnoneeabi", "requirements": None,
                     "uri": None}}))
    return core
