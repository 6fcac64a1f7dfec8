"""The C runtime as Python sees it: the parameter structs and scratch sizes of its public header and the files a
model library ships.

runtime_c/edgec_nn.h is the one source of the kernels' parameter layouts: `struct_fields` reads its
`typedef struct { int32_t a, b, c[EDGEC_RANK]; ... } name;` definitions (with the header's `#define`
constants) into ordered field lists, for the generated C's initializers (edgec/ops/cemit.py) and the tests' ctypes
structures. `library_files` lists the runtime files a model library carries: those the generated model calls
(`files_called`: the runtime files defining the edgec_* names its C uses, the files those call in turn, the
headers they include, and always edgec_nn.h and edgec_runtime.c, the ABI version NAME_init checks), plus harness
files the caller names (the arena guard), copied flat. The firmware harness (serial link,
MLPerf runner, arena guard) lives in runtime_c/harness/ and is never part of a model library otherwise.

edgec_nn.h is also the one source of the kernels' scratch sizes: each kernel that takes a scratch buffer has a
`static inline int32_t edgec_<kernel>_get_buffer_size(const <params> *p) { return <expression>; }`, and
`buffer_size` evaluates that expression for a params dict (the planner's scratch_bytes), so the Python side never
restates a formula. tests/kernels/test_buffer_size.py checks it against the compiled C functions.
"""
from __future__ import annotations

import ast
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
_BUFFER = re.compile(r"static\s+inline\s+int32_t\s+(\w+)_get_buffer_size\s*\(\s*const\s+(\w+)\s*\*\s*p\s*\)\s*"
                     r"\{\s*return\s+([^;{}]+);\s*\}")
_KERNEL = re.compile(r"^(?:void|int)\s+(edgec_\w+)\s*\(", re.M)     # int: a kernel returning a status


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


_ABI = re.compile(r"^#define\s+EDGEC_RUNTIME_ABI_VERSION\s+(\d+)\s*$", re.M)


def abi_version() -> int:
    """The runtime's ABI version (EDGEC_RUNTIME_ABI_VERSION of edgec_nn.h), which every generated model checks."""
    return int(_ABI.search((runtime_dir() / HEADER).read_text()).group(1))


def runtime_files() -> list[str]:
    """The runtime files every model library ships, as paths relative to runtime_c/ and to the library folder
    (the same relative path in both): edgec_nn.h, edgec_nn_support.h, the kernel family files, fast/."""
    root = runtime_dir()
    files = [p for folder in (root, root / FAST_DIR) for p in folder.iterdir() if p.suffix in (".c", ".h")]
    return sorted(p.relative_to(root).as_posix() for p in files)


def library_files(harness: tuple[str, ...] | list[str] = (), files: list[str] | None = None) -> list[tuple[Path, str]]:
    """(source file, path inside the model library) of the runtime files a model library ships: `files` (paths
    relative to runtime_c/, e.g. files_called(...); default every one of runtime_files()) plus the named files of
    runtime_c/harness/ (e.g. guard.RUNTIME_FILES), copied flat."""
    root = runtime_dir()
    return [(root / f, f) for f in (runtime_files() if files is None else files)] + \
        [(root / HARNESS_DIR / f, f) for f in harness]


# ---------------------------------------------------------------- the runtime files a model calls
ALWAYS = ("edgec_nn.h", "edgec_runtime.c")     # the API header and the runtime's ABI version (NAME_init reads it)
# an external definition at file scope: `void edgec_x(`, `const int32_t edgec_y =` (static ones are not matched)
_DEFINITION = re.compile(r"^(?:const\s+)?\w+\s*\**\s*(edgec_\w+)\s*[(=\[]", re.M)
_NAME = re.compile(r"\bedgec_\w+")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


@lru_cache(maxsize=None)
def _runtime_index(root: Path) -> tuple[dict[str, str], dict[str, frozenset[str]], dict[str, tuple[str, ...]]]:
    """(external name -> the runtime .c defining it, file -> the edgec_* names its code uses, file -> the runtime
    files it includes), comments left out."""
    defined, uses, includes = {}, {}, {}
    for f in runtime_files():
        text = _COMMENT.sub(" ", (root / f).read_text())
        if f.endswith(".c"):
            for name in _DEFINITION.findall(text):
                defined.setdefault(name, f)
        uses[f] = frozenset(_NAME.findall(text))
        here = Path(f).parent
        includes[f] = tuple(sorted({Path(here, inc).as_posix().replace("fast/../", "") for inc in _INCLUDE.findall(text)}))
    return defined, uses, includes


def defined_names(f: str) -> set[str]:
    """The external names a runtime .c file defines (as files_called reads them)."""
    defined = _runtime_index(runtime_dir())[0]
    return {name for name, where in defined.items() if where == f}


def files_called(sources: list[str]) -> list[str]:
    """The runtime files (relative to runtime_c/) a model library needs, given its generated C (texts): the .c
    files defining the edgec_* names it uses, the files their code calls in turn, the headers all of them include,
    and ALWAYS; sorted as runtime_files(). The headers' own names are declarations (edgec_nn.h declares every
    kernel) and pull in nothing; tests/test_export.py links minimal libraries and checks the index against the
    compiled objects' symbols."""
    defined, uses, includes = _runtime_index(runtime_dir())
    need, todo = set(), list(ALWAYS)
    names = {n for text in sources for n in _NAME.findall(_COMMENT.sub(" ", text))}
    todo += [defined[n] for n in names if n in defined]
    while todo:
        f = todo.pop()
        if f in need:
            continue
        need.add(f)
        calls = uses[f] if f.endswith(".c") else ()     # a header's names are declarations, not calls
        todo += [defined[n] for n in calls if n in defined] + [i for i in includes[f] if i in uses]
    return sorted(need)


# ---------------------------------------------------------------- scratch sizes
@lru_cache(maxsize=None)
def _buffer_functions(header: Path) -> tuple[dict[str, tuple[str, str]], frozenset[str], dict[str, int]]:
    """(kernel -> (params struct, C expression) of its _get_buffer_size, every kernel the header declares, the
    header's #define constants)."""
    text = _COMMENT.sub(" ", header.read_text())
    functions = {m.group(1): (m.group(2), " ".join(m.group(3).split())) for m in _BUFFER.finditer(text)}
    defines = {name: int(value) for name, value in _DEFINE.findall(text)}
    return functions, frozenset(_KERNEL.findall(text)), defines


def buffer_functions() -> dict[str, tuple[str, str]]:
    """Every edgec_<kernel>_get_buffer_size of edgec_nn.h: kernel -> (params struct, its return expression)."""
    return dict(_buffer_functions(runtime_dir() / HEADER)[0])


def buffer_size(kernel: str, params: dict) -> int:
    """The scratch bytes `kernel` needs for these params: its edgec_<kernel>_get_buffer_size(&params) of
    edgec_nn.h, evaluated here (0 for a kernel the header declares without one). `params` needs only the fields
    the expression reads. Refuses (ValueError) anything but integer + - * / % ( ), EDGEC_MAX and calls of other
    buffer-size functions with the same p, division or remainder of a negative value, and a result that
    would overflow the C function's int32_t."""
    functions, kernels, defines = _buffer_functions(runtime_dir() / HEADER)
    if kernel not in functions:
        if kernel in kernels:
            return 0
        raise KeyError(f"{HEADER} declares no kernel {kernel}")
    return evaluate(functions[kernel][1], params, defines, kernel)


def evaluate(expr: str, params: dict, defines: dict[str, int], kernel: str = "") -> int:
    """The value of one buffer-size expression of C (fields p->x from params), as the C function computes it."""
    try:
        tree = _parsed(expr)
    except SyntaxError:
        raise ValueError(f"{kernel}_get_buffer_size: cannot evaluate '{expr}' (only + - * / % ( ), EDGEC_MAX, "
                         f"integer fields of p and #define constants)") from None
    return _evaluate(tree.body, kernel, expr, params, defines)


@lru_cache(maxsize=None)
def _parsed(expr: str) -> ast.Expression:
    """A buffer-size expression as a Python expression tree (p->x read as the name _p_x), parsed once per
    expression: the planner asks for every op of every build."""
    return ast.parse(re.sub(r"\bp\s*->\s*(\w+)", r"_p_\1", expr), mode="eval")


_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


def _evaluate(node, kernel: str, expr: str, params: dict, defines: dict[str, int]) -> int:
    def refuse(what: str):
        raise ValueError(f"{kernel}_get_buffer_size: {what} in '{expr}'")

    def ev(n) -> int:
        if isinstance(n, ast.Constant) and type(n.value) is int:
            v = n.value
        elif isinstance(n, ast.Name) and n.id.startswith("_p_"):
            field = n.id[3:]
            if field not in params:
                raise KeyError(f"{kernel}_get_buffer_size reads p->{field}: missing from the params")
            v = int(params[field])
        elif isinstance(n, ast.Name) and n.id in defines:
            v = defines[n.id]
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = -ev(n.operand) if isinstance(n.op, ast.USub) else ev(n.operand)
        elif isinstance(n, ast.BinOp) and type(n.op) in _BINARY:
            a, b = ev(n.left), ev(n.right)
            if isinstance(n.op, (ast.Div, ast.Mod)) and (a < 0 or b <= 0):   # C truncates; floor = trunc here
                refuse(f"{'division' if isinstance(n.op, ast.Div) else 'remainder'} of {a} by {b}")
            v = _BINARY[type(n.op)](a, b)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
            name, args = n.func.id, n.args
            if name == "EDGEC_MAX" and len(args) == 2:
                v = max(ev(args[0]), ev(args[1]))
            elif name.endswith("_get_buffer_size") and len(args) == 1 and isinstance(args[0], ast.Name) \
                    and args[0].id == "p":
                v = buffer_size(name[:-len("_get_buffer_size")], params)
            else:
                refuse(f"a call of {name}")
        else:
            refuse(f"'{ast.unparse(n)}'")
        if not -2 ** 31 <= v < 2 ** 31:
            refuse(f"a value outside int32_t ({v})")
        return v

    return ev(node)
