"""`edgec export BUILD_DIR` (edgec/export_build.py): the benched build's model/ byte for byte, its model hash, the
compile flags recorded in its firmware carried in every layout; options that would make another model refused."""
from __future__ import annotations

import filecmp
import json

import pytest

from conftest import EXAMPLES, assert_clean_error, edgec
from edgec import api
from edgec.export_build import split_flags

CANCER = EXAMPLES / "cancer_conv1d"
M4 = "qemu-cortex-m4"


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("benched") / "b"
    report = api.build(CANCER / "model.onnx", CANCER / "calib.npz", M4, out, sensitivity_samples=0)
    return out, report


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("fmt", ["cmake", "platformio", "arduino", "c"])
def test_export_of_a_build_is_its_model_folder_byte_for_byte_with_its_flags(build, fmt, tmp_path):
    out, report = build
    lib = tmp_path / fmt
    m = api.export_build(out, fmt, lib)
    src = lib if fmt == "c" else lib / "src"
    model_files = _files(out / "model")
    assert set(model_files) <= set(_files(src))
    match, mismatch, errors = filecmp.cmpfiles(out / "model", src, model_files, shallow=False)
    assert not mismatch and not errors and len(match) == len(model_files)
    assert m["model_hash"] == report["model_hash"] and m["model"] == report["model"]
    assert m["compile_flags"][0] == report["memory"]["model_optimization"]     # the -O the firmware really used
    assert any(f.startswith("-mcpu=") for f in m["target_flags"])
    applied = " ".join(m["compile_flags"])
    if fmt == "cmake":
        top = (lib / "CMakeLists.txt").read_text()
        assert f"target_compile_options({report['model']} PRIVATE {applied})" in top
        assert f"target_compile_options(edgec_runtime PRIVATE {applied})" in top
        assert (lib / "zephyr" / "CMakeLists.txt").read_text().count(f"zephyr_library_compile_options({applied})") == 2
    elif fmt == "platformio":
        assert json.loads((lib / "library.json").read_text())["build"]["flags"] == m["compile_flags"]
    elif fmt == "arduino":
        assert applied in (lib / "library.properties").read_text().splitlines()[0]
    assert f"`{applied}`" in (lib / "README.md").read_text()


def test_split_flags_keeps_the_last_optimization_and_separates_the_target():
    words = ["GNU", "C99", "-mcpu=cortex-m4", "-mthumb", "-Os", "-g", "-O2", "-std=c99", "-ffunction-sections",
             "-fstack-usage", "-frecord-gcc-switches", "-DEDGEC_BUILD_ID=0x1ull", "-DNDEBUG", "-Wall", "-I", "src"]
    assert split_flags(words) == (["-O2", "-ffunction-sections", "-DNDEBUG"], ["-mcpu=cortex-m4", "-mthumb"])


def test_model_hash_does_not_depend_on_the_c_name(build, tmp_path):
    _, report = build
    m = api.export(CANCER / "model.onnx", CANCER / "calib.npz", M4, "c", tmp_path / "renamed", name="tumor",
                   sensitivity_samples=0)
    assert m["model"] == "tumor" and m["model_hash"] == report["model_hash"]


def test_options_that_would_make_another_model_are_refused(build, tmp_path):
    out, _ = build
    proc = edgec("export", out, "--format", "c", "-o", tmp_path / "x", "--calib", CANCER / "calib.npz")
    assert_clean_error(proc, "is a build", "--calib")
    proc = edgec("export", out, "--format", "c", "-o", tmp_path / "y", "--method", "percentile", "--name", "z")
    assert_clean_error(proc, "--name", "quantization options")
    proc = edgec("export", out, "--format", "c", "-o", tmp_path / "z", "--board", "qemu-cortex-m3")
    assert_clean_error(proc, "built for qemu-cortex-m4")
    assert not any((tmp_path / d).exists() for d in "xyz")
    proc = edgec("export", out, "--format", "c", "-o", tmp_path / "ok")
    assert proc.returncode == 0 and (tmp_path / "ok" / "edgec-export.json").is_file(), proc.stderr


@pytest.mark.parametrize("kind", ["link to a file", "link to a folder"])
def test_a_link_in_the_builds_model_folder_is_not_followed_into_the_export(build, tmp_path, kind):
    """A build folder someone handed over, with a link in model/ to a file or folder of the user's (an SSH key,
    a home folder): the export copied what the link pointed at into the library the user then ships. It is
    refused in one line and nothing is written."""
    import shutil
    out, _ = build
    copy = tmp_path / "b"
    shutil.copytree(out, copy, symlinks=True)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE KEY")
    link = copy / "model" / ("notes.h" if kind == "link to a file" else "more")
    link.symlink_to(secret / "id_rsa" if kind == "link to a file" else secret)
    proc = edgec("export", copy, "--format", "c", "-o", tmp_path / "lib")
    assert_clean_error(proc, "link")
    assert not (tmp_path / "lib").exists()
