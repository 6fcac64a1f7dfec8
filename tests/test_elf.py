"""edgec/targets/elf.py, the one ELF reader (pyelftools): on a built Cortex-M4 firmware, its objects and a host
program it reads what binutils prints (objdump -h, readelf -s, nm, size -B), here the oracle."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import EXAMPLES
from edgec import api
from edgec.errors import EdgecError
from edgec.targets import elf, fit

CANCER = EXAMPLES / "cancer_conv1d"


def _text(*argv) -> str:
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def firmware(example_build):
    """The cancer example on the emulated M4, once per run (conftest.example_build, shared with test_examples.py)."""
    report, out = example_build("cancer_conv1d", "qemu-cortex-m4")
    build_dir = next(d for d in (out / "project" / ".pio" / "build").iterdir() if d.is_dir())
    return out / report["firmware"], sorted(build_dir.rglob("*.o")), report


def test_sections_as_objdump(firmware):
    program, _, _ = firmware
    want = {}
    for line in _text("arm-none-eabi-objdump", "-h", "-w", program).splitlines():
        p = line.split()
        if len(p) >= 7 and p[0].isdigit():
            want[p[1]] = (int(p[2], 16), int(p[3], 16), int(p[4], 16), "ALLOC" in line, "LOAD" in line)
    got = {s.name: (s.size, s.vma, s.lma, s.alloc, s.load) for s in elf.sections(program) if s.name in want}
    assert got == want and any(v[1] != v[2] for v in want.values())      # the .data image: lma != vma


def test_functions_as_readelf(firmware):
    program, objects, _ = firmware
    found = {}
    for path in [program, *objects[:6]]:      # (an object may define no function: a runtime file of data only)
        want = set()
        for line in _text("arm-none-eabi-readelf", "-sW", path).splitlines():
            f = line.split()
            if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND" and int(f[2], 0):
                want.add((f[7], int(f[1], 16), int(f[2], 0)))
        assert set(elf.functions(path)) == want
        found[path] = len(want)
    assert found[program] and sum(found.values()) > found[program]


def test_symbols_as_nm(firmware):
    program, objects, report = firmware
    want = {}
    for line in _text("arm-none-eabi-nm", "-S", "-t", "d", program).splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "bBdDcC":
            want[p[3]] = int(p[1])
    assert elf.ram_symbols(program) == want and "static_arena" in want
    text = {p[2]: int(p[0], 16) & ~1 for p in (ln.split() for ln in _text("arm-none-eabi-nm", program).splitlines())
            if len(p) == 3 and p[1] in "tT"}
    for name in ("main", "edgec_ticks", "edgec_ticks_align"):
        assert elf.code_address(program, name) == text[name]
    assert elf.code_address(program, "static_arena") is None
    for obj in objects:
        names = {p[2] for p in (ln.split() for ln in _text("arm-none-eabi-nm", obj).splitlines())
                 if len(p) == 3 and p[1] not in "Uuw"}
        assert elf.defined_names(obj) == names
    assert report["memory"]["model_ram_symbols"] == ["static_arena"]
    assert report["memory"]["model_optimization"] == "-O2"
    assert fit.optimization_level(next(o for o in objects if o.stem.startswith(report["model"]))) == "-O2"


def test_host_program_as_size(example_build):
    report, out = example_build("cancer_conv1d", "host")       # (the build tests/test_examples.py benches)
    program = out / report["firmware"]
    text, data, bss = (int(v) for v in _text("size", "-B", "-d", program).splitlines()[1].split()[:3])
    assert elf.berkeley_sizes(program) == (text, data, bss)
    assert (report["memory"]["flash_bytes"], report["memory"]["ram_bytes"]) == (text + data, data + bss)


def test_not_an_elf_is_one_line(tmp_path):
    junk = tmp_path / "firmware.elf"
    junk.write_bytes(b"not an elf")
    with pytest.raises(EdgecError, match="cannot read it as an ELF file"):
        elf.sections(Path(junk))
