"""The runtime ABI guard (runtime_c/edgec_nn.h EDGEC_RUNTIME_ABI_VERSION): a generated model compiled against
another version's runtime header fails to compile with both versions named; linked with another version's
runtime objects, its NAME_init() says so."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import EXAMPLES, WARN, host_compiler
from edgec import api, cheader
from edgec.codegen import cmodel


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = tmp_path_factory.mktemp("abi")
    _, graph, plan = api.compile_model(EXAMPLES / "cancer_conv1d" / "model.onnx", EXAMPLES / "cancer_conv1d" / "calib.npz")
    cmodel.generate(graph, plan, out / "lib", graph.name)
    return out, graph.name


def with_abi(src, dest, version: int):
    """A copy of a library folder whose edgec_nn.h claims another ABI version."""
    shutil.copytree(src, dest)
    header = dest / "edgec_nn.h"
    text, n = re.subn(r"#define EDGEC_RUNTIME_ABI_VERSION \d+", f"#define EDGEC_RUNTIME_ABI_VERSION {version}",
                      header.read_text())
    assert n == 1
    header.write_text(text)
    return dest


@pytest.mark.parametrize("other", [cheader.abi_version() + 1, cheader.abi_version() + 40])
def test_mismatched_runtime_header_fails_to_compile_naming_both_versions(library, other):
    out, name = library
    lib = with_abi(out / "lib", out / f"v{other}", other)
    proc = subprocess.run([host_compiler(), *WARN, "-c", str(lib / f"{name}.c"), "-I", str(lib), "-o", str(lib / "m.o")],
                          capture_output=True, text=True)
    ours = cheader.abi_version()
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "#error" in line or "error:" in line]
    assert len(errors) >= 1 and f"needs the edgec runtime ABI version {ours}" in errors[0]
    assert (f"is ABI version {other}" if other < ours + 9 else f"is ABI version {ours + 9} or later") in errors[0]


def test_header_without_a_version_fails_to_compile(library):
    out, name = library
    lib = out / "none"
    shutil.copytree(out / "lib", lib)
    header = lib / "edgec_nn.h"
    header.write_text(re.sub(r"#define EDGEC_RUNTIME_ABI_VERSION \d+\n", "", header.read_text()))
    proc = subprocess.run([host_compiler(), *WARN, "-c", str(lib / f"{name}.c"), "-I", str(lib), "-o", str(lib / "m.o")],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "has no ABI version" in proc.stderr


INIT_MAIN = """#include "%s.h"
int main(void) { return %s_init() == %s_ERROR_RUNTIME_ABI ? 7 : %s_init(); }
"""


def test_init_detects_runtime_objects_of_another_version(library):
    out, name = library
    other = with_abi(out / "lib", out / "objects", cheader.abi_version() + 1)
    main = out / "init_main.c"
    main.write_text(INIT_MAIN % (name, name, name.upper(), name))
    cc = host_compiler()
    results = {}
    kernels = [str(p) for p in sorted((out / "lib").glob("edgec_*.c")) if p.name != "edgec_runtime.c"]
    for label, runtime_dir in (("same", out / "lib"), ("other", other)):
        exe = out / f"init_{label}"
        subprocess.run([cc, *WARN, "-O1", str(main), str(out / "lib" / f"{name}.c"), *kernels,
                        *map(str, sorted((out / "lib" / "fast").glob("*.c"))), str(runtime_dir / "edgec_runtime.c"),
                        "-I", str(out / "lib"), "-o", str(exe), "-lm"], check=True, capture_output=True)
        results[label] = subprocess.run([str(exe)]).returncode
    assert results == {"same": 0, "other": 7}
