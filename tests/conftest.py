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

from edgec import loader

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


def run_generated_c(lib_dir: Path, name: str, inputs: np.ndarray, out_bytes: int, cc: str = "gcc",
                    flags: tuple[str, ...] = ("-O2",)) -> np.ndarray:
    """Compile a generated model library with a stdin/stdout driver on the host and run all inputs."""
    driver = lib_dir / "driver_main.c"
    driver.write_text(DRIVER % {"name": name, "NAME": name.upper()})
    exe = lib_dir / f"driver_{Path(cc).name}"
    sources = sorted(str(p) for p in lib_dir.glob("*.c"))
    cmd = [host_compiler(cc), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *flags,
           "-I", str(lib_dir), *sources, "-o", str(exe), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    proc = subprocess.run([str(exe)], input=np.ascontiguousarray(inputs, np.int8).tobytes(), capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b"", proc.stderr.decode()
    return np.frombuffer(proc.stdout, np.int8).reshape(len(inputs), out_bytes)
