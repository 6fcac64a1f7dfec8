"""The C runtime as Python sees it: the parameter structs of its one public header and the files a model
library ships.

runtime_c/edgec_nn.h is the one source of the kernels' parameter layouts: `struct_fields` reads its
`typedef struct { int32_t a, b, c[EDGEC_RANK]; ... } name;` definitions (with the header's `#define`
constants) into ordered field lists, for the generated C's initializers (edgec/ops/cemit.py) and the tests' ctypes
structures. `library_files` lists the runtime files a model library carries: edgec_nn.h, every kernel family
file (int8 and int16 kernels together; the linker drops what a model does not call) and the fast kernels in
fast/, plus harness files the caller names (the arena guard), copied flat. The firmware harness (serial link,
MLPerf runner, arena guard) lives in runtime_c/harness/ and is never part of a model library otherwise.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from edgec.resources import resource_dir

HEADER = "edgec_nn.h"
# The fast kernels: a subfolder of runtime_c/ and of every model library, each file named after the kernel(s) it
# holds (fast/edgec_conv2d_im2col.c: edgec_conv2d_im2col_s8 and _s4). Base names are unique across runtime_c/:
# archivers name members by base name (arduino-cli adds a dot_a_linkage library's objects one `ar rcs` at a time,
# so a second edgec_conv.c.o would replace the first).
FAST_DIR = "fast"
HARNESS_DIR = "harness"     # the firmware harness, apart from the model kernels

_DEFINE = re.compile(r"^\s*#define\s+(\w+)\s+(\d+)\b", re.M)
_STRUCT = re.compile(r"typedef\s+struct\s*\{(?P<body>[^{}]*)\}\s*(?P<name>\w+)\s*;")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_FIELD = re.compile(r"^(\w+)(?:\[(\w+)\])?$")


def runtime_dir() -> Path:
    return resource_dir("runtime_c")


@lru_cache(maxsize=None)
def _structs(header: Path) -> dict[str, tuple[tuple[str, int], ...]]:
    text = _COMMENT.sub(" ", header.read_text())
    defines = {name: int(value) for name, value in _DEFINE.findall(text)}
    structs = {}
    for m in _STRUCT.finditer(text):
        fields = []
        for decl in (d.strip() for d in m.group("body").split(";")):
            if not decl:
                continue
            ctype, names = decl.split(None, 1)
            if ctype != "int32_t":
                raise ValueError(f"{header.name}: {m.group('name')} has a {ctype} field; only int32_t is supported")
            for item in names.split(","):
                fm = _FIELD.match(re.sub(r"\s+", "", item))
                if fm is None:
                    raise ValueError(f"{header.name}: cannot read field '{item.strip()}' of {m.group('name')}")
                count = fm.group(2)
                fields.append((fm.group(1), 1 if count is None else int(defines.get(count, count))))
        structs[m.group("name")] = tuple(fields)
    return structs


def structs() -> dict[str, tuple[tuple[str, int], ...]]:
    """Every parameter struct of edgec_nn.h: name -> ((field, count), ...) in declaration order
    (count 1 for a scalar, n for an int32_t[n] array)."""
    return _structs(runtime_dir() / HEADER)


def struct_fields(name: str) -> tuple[tuple[str, int], ...]:
    """The ordered (field, count) list of one parameter struct, e.g. struct_fields("edgec_pool_params")."""
    try:
        return structs()[name]
    except KeyError:
        raise KeyError(f"{HEADER} defines no struct {name}") from None


def field_names(name: str) -> list[str]:
    return [field for field, _ in struct_fields(name)]


def runtime_files() -> list[str]:
    """The runtime files every model library ships, as paths relative to runtime_c/ and to the library folder
    (the same relative path in both): edgec_nn.h, the kernel family files, fast/."""
    root = runtime_dir()
    files = [p for folder in (root, root / FAST_DIR) for p in folder.iterdir() if p.suffix in (".c", ".h")]
    return sorted(p.relative_to(root).as_posix() for p in files)


def library_files(harness: tuple[str, ...] | list[str] = ()) -> list[tuple[Path, str]]:
    """(source file, path inside the model library) of every runtime file a model library ships: runtime_files()
    plus the named files of runtime_c/harness/ (e.g. guard.RUNTIME_FILES), copied flat."""
    root = runtime_dir()
    return [(root / f, f) for f in runtime_files()] + [(root / HARNESS_DIR / f, f) for f in harness]
