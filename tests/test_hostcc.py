"""tests/hostcc.py's object cache: a runtime file's key is its content and the content of the runtime headers it
includes (directly or through another), so libraries that copy different sets of headers share its object, and a
library whose copy of an included header differs gets its own."""
from __future__ import annotations

import shutil

import hostcc
from edgec import cheader


def _library(folder, headers):
    folder.mkdir()
    for f in ["fast/edgec_conv2d_window.c", *headers]:
        (folder / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cheader.runtime_dir() / f, folder / f)
    return folder


def test_a_runtime_objects_key_follows_the_headers_it_includes_only(tmp_path):
    src = "fast/edgec_conv2d_window.c"
    included = hostcc._included_headers(cheader.runtime_dir(), src, cheader.runtime_files())
    assert {"edgec_nn.h", "fast/edgec_fast_support.h"} <= set(included), included
    other = "fast/edgec_depthwise_conv2d_3x3_window.h"      # a header of another kernel, not included by src
    assert other not in included
    a = _library(tmp_path / "a", included)
    b = _library(tmp_path / "b", [*included, other])
    key = hostcc._runtime_key(a / src, a, "gcc", ["-O1", "-I", str(a)])
    assert key is not None and key == hostcc._runtime_key(b / src, b, "gcc", ["-O1", "-I", str(b)])
    with open(b / "edgec_nn.h", "a") as f:                  # an included header edited in one library's copy
        f.write("\n/* edited */\n")
    assert hostcc._runtime_key(b / src, b, "gcc", ["-O1", "-I", str(b)]) != key
    assert hostcc._runtime_key(a / src, a, "gcc", ["-O2", "-I", str(a)]) != key
