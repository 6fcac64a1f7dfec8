"""The header's statement of where inputs and outputs live (edgec/codegen/iolife.py), checked against the
compiled library: the byte ranges it states are where the accessors point, an input it says overlaps an output
does destroy that output when written, and an output it says is not overlapped survives writing every input."""
from __future__ import annotations

import ctypes
import re

import numpy as np

import hostcc
from conftest import EXAMPLES, WARN, host_compiler, library_sources
from edgec import api, ports
from edgec.codegen import cmodel

RANGE = re.compile(r"(\w+)\(\): bytes \[(\d+), (\d+)\)")


def test_stated_places_and_overlaps_hold_in_the_compiled_library(tmp_path):
    _, graph, plan = api.compile_model(EXAMPLES / "diabetes_multitask" / "model.onnx",
                                       EXAMPLES / "diabetes_multitask" / "calib.npz")
    name = graph.name
    cmodel.generate(graph, plan, tmp_path, name)
    header = (tmp_path / f"{name}.h").read_text()
    stated = {fn: (int(a), int(b)) for fn, a, b in RANGE.findall(header)}
    ins = [f"{name}_input_{p.c_name}" for p in ports.inputs(graph)]
    outs = [f"{name}_output_{p.c_name}" for p in ports.outputs(graph)]
    assert set(stated) == set(ins + outs)
    lib_path = hostcc.build(library_sources(tmp_path), tmp_path, tmp_path / "model.so", host_compiler(),
                            [*WARN, "-O1", "-fPIC", "-I", str(tmp_path)], link_flags=("-shared",))
    lib = ctypes.CDLL(str(lib_path))
    for fn in ["arena", *[f[len(name) + 1:] for f in ins + outs]]:
        getattr(lib, f"{name}_{fn}").restype = ctypes.c_void_p
    arena = getattr(lib, f"{name}_arena")()
    for fn, (start, end) in stated.items():
        assert getattr(lib, fn)() - arena == start, fn

    def view(fn):
        start, end = stated[fn]
        return (ctypes.c_int8 * (end - start)).from_address(getattr(lib, fn)())

    overlapping = {(i, o) for i in ins for o in outs if f"{i}() OVERLAPS" in header
                   and o + "()" in header.split(f"{i}() OVERLAPS")[1].split("\n")[0]}
    expected = {(i, o) for i in ins for o in outs
                if stated[i][0] < stated[o][1] and stated[o][0] < stated[i][1]}
    assert overlapping == expected and overlapping, "the model of this test has an input on an output's bytes"
    rng = np.random.default_rng(0)
    for i in ins:
        view(i)[:] = rng.integers(-128, 128, len(view(i))).tolist()
    assert lib[f"{name}_invoke"]() == 0
    before = {o: bytes(view(o)) for o in outs}
    for i in ins:                        # the next input, different from every output byte it may cover
        view(i)[:] = [(~b) & 0x7F for b in view(i)]
    for o in outs:
        touched = any((i, o) in overlapping for i in ins)
        assert (bytes(view(o)) != before[o]) == touched, o
    assert "overlaps no output: an output stays valid" in header
