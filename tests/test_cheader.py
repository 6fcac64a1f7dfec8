"""edgec/cheader.py's index of the runtime (which file defines which external name, what each file calls and
includes), checked against the objects a compiler makes of runtime_c/: the minimal runtime a model library
ships (files_called) defines every edgec_* name its files leave undefined."""
from __future__ import annotations

import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from conftest import host_compiler
from edgec import cheader


def _symbols(obj):
    """(global names defined, edgec_* names left undefined) of an object file."""
    with open(obj, "rb") as f:
        table = ELFFile(f).get_section_by_name(".symtab")
        symbols = list(table.iter_symbols())
    defined = {s.name for s in symbols if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    undefined = {s.name for s in symbols if s["st_shndx"] == "SHN_UNDEF" and s.name.startswith("edgec_")}
    return defined, undefined


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    out = tmp_path_factory.mktemp("runtime_objects")
    root, result = cheader.runtime_dir(), {}
    for f in (f for f in cheader.runtime_files() if f.endswith(".c")):
        obj = out / f.replace("/", "_").replace(".c", ".o")
        subprocess.run([host_compiler("gcc"), "-std=c99", "-O2", "-DEDGEC_EMULATE_DSP", "-c", str(root / f),
                        "-o", str(obj)], check=True, capture_output=True, text=True)
        result[f] = _symbols(obj)
    return result


def test_the_index_names_what_each_object_defines(objects):
    for f, (defined, _) in objects.items():
        index = cheader.defined_names(f)
        assert defined <= index, (f, defined - index)
        if not f.endswith("_mve.c"):     # Helium kernels compile to nothing without MVE
            assert index == defined, (f, index - defined)


def test_the_files_a_model_calls_define_everything_they_use(objects):
    for f in objects:
        name = next(iter(cheader.defined_names(f)))
        need = cheader.files_called([f"{name}();"])
        assert f in need and set(cheader.ALWAYS) <= set(need)
        provided = set().union(*(objects[g][0] for g in need if g.endswith(".c")))
        for g in need:
            if g.endswith(".c"):
                assert objects[g][1] <= provided, (f, g, objects[g][1] - provided)
        headers = {h for h in need if h.endswith(".h")}
        assert "edgec_nn_support.h" in headers or f == "edgec_runtime.c"


def test_a_header_name_pulls_in_no_kernel():
    """edgec_nn.h declares every kernel: a model that uses only its inline helpers ships no kernel file."""
    need = cheader.files_called(["edgec_quantize_f32_s8(x, q, 4, 0.5f, 0); /* edgec_conv2d_s8 */"])
    assert need == sorted(cheader.ALWAYS)
