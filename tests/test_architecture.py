"""The layout the code promises (docs/design.md): imports point down the declared layers (shared code and TFLite's
fixed-point arithmetic at the bottom, the operator registry, the pipeline's stages in their order, the application
on top) and never in a cycle (module-level or inside functions), no module over 500 lines, no history names
(`_ext`), one home per operator (a canonical op kind's name appears as a string only in its own edgec/ops module or
package), one home per kernel (a C kernel's name appears as a string only in the family that declares its record,
and the records and runtime_c/ define the same kernels), and tests that mirror the code: no test module imports
another (shared helpers live in conftest.py or in modules named after what they hold: ckernels.py,
synthetic_models.py, faulty_serial.py)."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from edgec.ops.registry import FAMILY_OF_KERNEL, KERNELS, MODULES, REGISTRY

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PKG = REPO / "edgec"
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(REPO).with_suffix("").parts)
        mods[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in n.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != m and not (m.startswith(t + ".") and mods[t].name == "__init__.py"):
                    graph[m].add(t)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        stack.pop()
        state[v] = 2
        return None
    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


# The layers of edgec/, bottom first: a module may import modules of its own layer and of the layers below it,
# never of a layer above (a later stage of the pipeline, or the application). Every module belongs to one layer:
# a new module is placed here.
LAYERS = (
    ("shared", ("edgec", "edgec.errors", "edgec.ir", "edgec.settings", "edgec.limits", "edgec.progress",
                "edgec.resources", "edgec.cheader", "edgec.templating", "edgec.svgplot", "edgec.data",
                "edgec.children", "edgec.staging", "edgec.outputs")),
    ("fixed-point arithmetic", ("edgec.fixedpoint",)),
    ("model inputs and outputs", ("edgec.ports",)),
    ("operators and kernels", ("edgec.ops",)),
    ("load and canonicalize", ("edgec.frontend",)),
    ("quantize", ("edgec.quant",)),
    ("lower", ("edgec.lower",)),
    ("plan", ("edgec.plan",)),
    ("generate C", ("edgec.codegen",)),
    ("build", ("edgec.targets",)),
    ("device", ("edgec.device",)),
    ("bench", ("edgec.bench",)),
    ("application", ("edgec.pipeline", "edgec.api", "edgec.device_commands", "edgec.chain", "edgec.export", "edgec.export_build", "edgec.tune", "edgec.farm",
                     "edgec.matrix", "edgec.array_data", "edgec.board_fit", "edgec.host_reference",
                     "edgec.cli", "edgec.cli_parser", "edgec.cli_farm", "edgec.argtypes", "edgec.config",
                     "edgec.doctor", "edgec.testing", "edgec.pytest_plugin", "edgec.__main__")),
)


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a module (the longest declared prefix that names it or its package)."""
    best, length = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length and \
                    (prefix != "edgec" or module == "edgec"):
                best, length = i, len(prefix)
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a (layer) -> b (layer)' for every import of a module of a higher layer, and every undeclared module."""
    bad = [f"{m}: not in any layer of LAYERS" for m in sorted(graph) if layer_of(m) is None]
    for m in sorted(graph):
        for t in sorted(graph[m]):
            lm, lt = layer_of(m), layer_of(t)
            if lm is not None and lt is not None and lt > lm:
                bad.append(f"{m} ({LAYERS[lm][0]}) -> {t} ({LAYERS[lt][0]})")
    return bad


def test_imports_point_down_the_layers():
    bad = upward_imports(_imports(_modules()))
    assert not bad, "imports up the layers (tests/test_architecture.py LAYERS):\n" + "\n".join(bad)


def test_checker_finds_an_upward_import():
    assert upward_imports({"edgec.ops.conv": {"edgec.quant.ptq"}, "edgec.quant.ptq": {"edgec.ops.conv"}}) == \
        ["edgec.ops.conv (operators and kernels) -> edgec.quant.ptq (quantize)"]
    assert upward_imports({"edgec.nowhere": set()}) == ["edgec.nowhere: not in any layer of LAYERS"]


def test_no_import_cycles():
    cycle = _cycle(_imports(_modules()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_modules_are_short():
    long = {str(p.relative_to(REPO)): n for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_history_names():
    bad = [str(p.relative_to(REPO)) for d in ("edgec", "runtime_c", "tests", "templates") for p in (REPO / d).rglob("*")
           if re.search(r"_ext\b|_ext\.|_new\b|part2", p.name)]
    assert not bad, bad


def _family_files(module) -> set[Path]:
    """The files of a family: its module, or every module of its package."""
    path = Path(module.__file__).resolve()
    return set(path.parent.rglob("*.py")) if path.name == "__init__.py" else {path}


def test_one_home_per_operator():
    """A kind's string literal is named by its own family module (or package) only (stages ask the registry)."""
    home = {d.kind: _family_files(m) for m in MODULES for d in m.OPS}
    assert set(home) == set(REGISTRY)
    found = {}
    for p in PKG.rglob("*.py"):
        text = p.read_text()
        for kind, own in home.items():
            if p.resolve() not in own and re.search(rf"""["']{re.escape(kind)}["']""", text):
                found.setdefault(kind, []).append(str(p.relative_to(REPO)))
    assert not found, f"op kinds named outside their ops module: {found}"


KERNEL_NAME = re.compile(r"\bedgec_[a-z0-9_]*_s(?:4|8|16)\b")


def kernel_names_in(source: str) -> set[str]:
    """The C kernel names (edgec_..._s8, _s16, _s4) in a module's string literals, f-strings included; docstrings
    and comments do not count."""
    tree = ast.parse(source)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {name for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docstrings for name in KERNEL_NAME.findall(n.value)}


def test_one_home_per_kernel():
    """A C kernel's name appears as a string only in the family (module or package) that declares its record
    (edgec/ops/kernel.py): the stages ask edgec/ops/select.py, never dispatch on a kernel's name."""
    homes = {name: _family_files(sys.modules[module]) for name, module in FAMILY_OF_KERNEL.items()}
    found = {}
    for p in sorted(PKG.rglob("*.py")):
        for name in kernel_names_in(p.read_text()):
            if name not in homes or p.resolve() not in homes[name]:
                found.setdefault(name, []).append(str(p.relative_to(REPO)))
    assert not found, f"C kernels named outside the family that declares them (or declared by none): {found}"


def test_kernel_name_finder():
    """The finder itself: literals and f-strings count, docstrings and comments do not."""
    source = ('"""Runs edgec_conv2d_s8."""\ndef f(k):\n    """edgec_lut_s8"""\n    # edgec_add_s8\n'
              '    return f"edgec_requantize_s8_s16({k})", "edgec_fully_connected_packed_s4", "edgec_x"\n')
    assert kernel_names_in(source) == {"edgec_requantize_s8_s16", "edgec_fully_connected_packed_s4"}


# functions of runtime_c/ the Python side never emits a call to (a kernel's helpers)
# (and edgec_stage_copy: not a kernel, the copy of a layer's weights into its scratch before its kernel's call,
# edgec/lower/weight_staging.py)
NOT_KERNELS = {"edgec_recurrent_run", "edgec_recurrent_run16", "edgec_stage_copy"}


def runtime_functions() -> set[str]:
    """The functions runtime_c/*.c and runtime_c/fast/*.c define with external linkage."""
    names = set()
    for path in sorted((REPO / "runtime_c").glob("*.c")) + sorted((REPO / "runtime_c" / "fast").glob("*.c")):
        text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
        for m in re.finditer(r"^([A-Za-z_][\w \t*]*?)\b(edgec_\w+)\s*\([^;{]*\)\s*\{", text, flags=re.M):
            words = m.group(1).split()
            if "static" not in words and "EDGEC_INLINE" not in words:
                names.add(m.group(2))
    return names


def test_kernel_records_and_runtime_define_the_same_kernels():
    """Every kernel record names a function runtime_c/ defines, and every function runtime_c/ defines is a
    kernel record's (but the deliberate exceptions: helpers the generated code never calls)."""
    defined = runtime_functions()
    records = {n for k in KERNELS for n in (k.name, *k.entries)}     # entries: the loops a record's call names
    assert records - defined == set(), "kernel records with no function in runtime_c/"
    assert defined - records == NOT_KERNELS, "runtime_c/ functions with no kernel record (or NOT_KERNELS entry)"
    assert "edgec_conv2d_im2col_s8" in defined and "edgec_recurrent_run" in defined   # (the finder finds both)


def test_every_kind_has_its_family_kernel_file():
    """A kind's `family` names the C file of its kernels (runtime_c/edgec_<family>.c), declared in edgec_nn.h."""
    header = (REPO / "runtime_c" / "edgec_nn.h").read_text()
    for d in REGISTRY.values():
        assert (REPO / "runtime_c" / f"edgec_{d.family}.c").is_file(), (d.kind, d.family)
        assert f"edgec_{d.family}.c" in header, (d.kind, d.family)


def test_checker_finds_a_cycle():
    """The cycle finder itself: a made-up graph with a cycle through three modules is caught."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _test_module_imports(path: Path) -> list[str]:
    """'line N: module' for every import of a test_* module in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module] if node.module else [a.name for a in node.names]   # `from . import x`
        else:
            continue
        found += [f"line {node.lineno}: {n}" for n in names if n.split(".")[0].startswith("test_")]
    return found


def test_no_test_module_imports_another_test_module():
    offenders = {str(p.relative_to(TESTS)): hits for p in sorted(TESTS.rglob("*.py"))
                 if "__pycache__" not in p.parts and (hits := _test_module_imports(p))}
    assert offenders == {}, ("move shared helpers into a non-test module (conftest.py or a module named "
                             f"after what it holds) instead of importing a test module: {offenders}")


def test_checker_finds_a_test_module_import(tmp_path):
    bad = tmp_path / "helper.py"
    bad.write_text("import os\nfrom test_cli import edgec\nimport test_link as L\n")
    assert _test_module_imports(bad) == ["line 2: test_cli", "line 3: test_link"]
