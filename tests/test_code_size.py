"""What a `--optimize size` firmware links and how its code is accounted (edgec/targets/code_size.py): only the
kernels the model calls (no int4 entry point, no speed variant, nothing else of the runtime), the benchmark
harness compiled for size while the model keeps the board's -O2, and the code split into the part an
application embeds (model + runtime) and the part only the benchmark firmware has. One small build."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import EXAMPLES
from edgec import api
from edgec.bench.report import memory_rows
from edgec.targets import code_size, fit
from edgec.targets.code_size import summary_line

DIGITS = EXAMPLES / "digits_cnn"


@pytest.fixture(scope="module")
def size_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("code_size") / "digits-size"
    report = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", "qemu-cortex-m4", out, optimize="size",
                       tuning_log=out.parent / "no-tuning.json")
    build_dir = next(d for d in (out / "project" / ".pio" / "build").iterdir() if d.is_dir())
    return report, out, build_dir


def _objects(build_dir, part, model):
    return [o for o in build_dir.rglob("*.o") if code_size.part_of_object(code_size._object_stem(o), model) == part]


def test_size_build_links_only_the_kernels_the_model_calls(size_build):
    report, out, build_dir = size_build
    model = report["model"]
    calls = set(re.findall(r"\b(edgec_\w+)\s*\(", (out / "model" / f"{model}.c").read_text()))
    linked = {name for name, _, _ in code_size.functions(out / report["firmware"])}
    # the runtime's entry points (its global functions) that made it into the firmware
    runtime_globals = set()
    for obj in _objects(build_dir, "runtime", model):
        out_text = subprocess.run(["arm-none-eabi-readelf", "-sW", str(obj)], check=True, capture_output=True,
                                  text=True).stdout
        for line in out_text.splitlines():
            f = line.split()
            if len(f) >= 8 and f[3] == "FUNC" and f[4] == "GLOBAL" and f[6] != "UND":
                runtime_globals.add(f[7])
    unused = {n for n in runtime_globals if n.endswith("_s4") or re.search(r"_(blocked|wide|fused)_", n)}
    assert unused and unused.isdisjoint(calls)    # the whole runtime was compiled, int4 and speed variants too
    in_firmware = runtime_globals & linked
    assert in_firmware and in_firmware <= calls, f"linked but not called by the model: {in_firmware - calls}"
    assert not in_firmware & unused
    assert set(report["optimize"]["variants"]) == {"generic"}


def test_harness_is_compiled_for_size_and_the_model_is_not(size_build):
    report, _, build_dir = size_build
    model = report["model"]
    link = [o for o in _objects(build_dir, "harness", report["model"]) if o.name.startswith("edgec_link")]
    assert link and fit.optimization_level(link[0]) == "-Os"
    assert report["memory"]["model_optimization"] == "-O2"
    assert all(fit.optimization_level(o) == "-O2" for o in _objects(build_dir, "runtime", model))


def test_code_is_reported_by_part(size_build):
    report, out, _ = size_build
    code = report["memory"]["code"]
    assert all(code[p] > 0 for p in code_size.PARTS)
    assert code["total"] == sum(code[p] for p in code_size.PARTS)
    assert code["model_and_runtime"] == code["model"] + code["runtime"]
    # every function of the firmware counted once: the sum of its distinct addresses' sizes
    sizes = {addr: n for _, addr, n in code_size.functions(out / report["firmware"])}
    assert code["total"] == sum(sizes.values())
    # the weights are constants, not code
    assert code["total"] < report["memory"]["flash_bytes"] - report["memory"]["weights_bytes"]
    rows = {what: value for what, value, _ in memory_rows(report["memory"])}
    assert rows["code (functions) of the model library + runtime"] == f"{code['model_and_runtime']:,} B"
    assert summary_line(code).startswith(f"code {code['total']:,} B: model + runtime {code['model_and_runtime']:,} B")


def test_the_size_middleware_covers_every_protocol_harness():
    """The PlatformIO script compiles at -Os exactly the protocols' harness sources (edgec/targets/firmware.py)."""
    import ast

    from edgec.resources import resource_dir
    from edgec.targets.firmware import HARNESS_SIZE_SCRIPT, PROTOCOLS

    script = resource_dir("boards") / "platforms" / "common" / HARNESS_SIZE_SCRIPT
    tree = ast.parse(script.read_text())
    listed = next(ast.literal_eval(n.value) for n in tree.body
                  if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "HARNESS_SOURCES")
    assert set(listed) == {f for _, files in PROTOCOLS.values() for f in files if f.endswith(".c")}
