"""`edgec build --code-in-ram` (edgec/targets/code_ram.py): the runtime's kernels linked to run from the board's
code RAM (the NUCLEO-L4R5ZI's SRAM2 at 0x10000000; on qemu-cortex-m4 a stand-in window the cycle estimate weighs
as that SRAM2), loaded in flash and copied at startup; refused in one line where there is no code RAM or the
code does not fit it."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import EXAMPLES, require
from edgec import api
from edgec.errors import EdgecError
from edgec.resources import resource_dir
from edgec.targets import code_ram, elf
from edgec.targets.boards import load_board

CANCER = EXAMPLES / "cancer_conv1d"


def test_the_l4r5_code_ram_keeps_the_firmwares_ram_off_its_alias():
    """SRAM2 at 0x10000000 (64 KB) is also 0x20030000: with it in use the firmware's RAM is SRAM1 (192 KB), so
    STM32duino's stack top (_estack) and the stack painter's range end below the alias. The emulator's stand-in
    has no alias; a part without code RAM is refused."""
    l4 = load_board("nucleo-l4r5zi")
    r = code_ram.region(l4)
    assert (r.origin, r.size, r.alias) == (0x10000000, 65536, 0x20030000)
    assert code_ram.ram_limit(l4) == 192 * 1024
    m4 = load_board("qemu-cortex-m4")
    assert code_ram.region(m4).origin == 0x3F0000 and code_ram.ram_limit(m4) is None
    with pytest.raises(EdgecError, match=r"--code-in-ram: board nucleo-f446re lists no code RAM"):
        code_ram.region(load_board("nucleo-f446re"))


def test_the_code_ram_is_the_default_where_it_pays_and_fits():
    """The default (code_in_ram None): on for a board with a code RAM and flash wait states (the L4R5) when the
    code estimate fits the region and the RAM fits below its alias; else off, with one line saying why where the
    board has both but something does not fit, silently where it does not pay (the emulator's stand-in window: no
    wait states; the F446RE: no code RAM). --code-in-ram / --no-code-in-ram force it."""
    l4, m4, f4 = (load_board(b) for b in ("nucleo-l4r5zi", "qemu-cortex-m4", "nucleo-f446re"))
    assert code_ram.pays(l4) and not code_ram.pays(m4) and not code_ram.pays(f4)
    assert code_ram.decide(l4, None, "kws", 30_000, 97_748) == (True, "")
    assert code_ram.decide(l4, None, "kws", 65_536, 196_608) == (True, "")
    on, why = code_ram.decide(l4, None, "big", 65_537, 1000)
    assert not on and why == ("code RAM: big's kernels (about 65,537 B of code) do not fit nucleo-l4r5zi's SRAM2 "
                              "(65,536 B): they run from flash (--code-in-ram forces it)")
    on, why = code_ram.decide(l4, None, "vww", 30_000, 196_609)
    assert not on and why == ("code RAM: vww needs 196,609 B of RAM, more than the 196,608 B below SRAM2's alias "
                              "0x20030000: the kernels run from flash")
    assert code_ram.decide(m4, None, "kws", 30_000, 1000) == (False, "")
    assert code_ram.decide(f4, None, "kws", 30_000, 1000) == (False, "")
    assert code_ram.decide(l4, False, "kws", 30_000, 1000) == (False, "")
    assert code_ram.decide(m4, True, "kws", 10**6, 10**7) == (True, "")     # forced: the link checks the fit
    with pytest.raises(EdgecError, match=r"--code-in-ram: board nucleo-f446re lists no code RAM"):
        code_ram.decide(f4, True, "kws", 30_000, 1000)


def test_the_default_falls_back_in_one_logged_line(tmp_path, monkeypatch):
    """An L4R5 build whose RAM does not fit below the alias logs the one line (and goes on in flash: stopped here,
    before PlatformIO)."""
    lines = []
    monkeypatch.setattr(code_ram, "ram_limit", lambda board: 1000)
    with pytest.raises(_Stop):
        api.build(CANCER / "model.onnx", CANCER / "calib.npz", "nucleo-l4r5zi", tmp_path / "fw",
                  log=_stop_after_code_ram(lines), weights_in_ram=True)
    assert lines[-1].startswith("code RAM: cancer") and "more than the 1,000 B below SRAM2's alias" in lines[-1]


class _Stop(Exception):
    pass


def _stop_after_code_ram(lines):
    def log(line):
        lines.append(line)
        if line.startswith("code RAM"):
            raise _Stop
    return log


def _link(tmp_path, size: int):
    """A kernel file (edgec_kern.c, as the model library's runtime files are named) and a caller linked with
    edgec-qemu's linker script and the --code-in-ram script of a code RAM of `size` bytes."""
    require(shutil.which("arm-none-eabi-gcc") is not None, "arm-none-eabi-gcc", "bash scripts/setup.sh")
    (tmp_path / "edgec_kern.c").write_text(
        "int edgec_kern(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * a[i]; return s; }\n")
    (tmp_path / "model.c").write_text(
        "int edgec_kern(const int *a, int n); int data[4] = {1, 2, 3, 4};\n"
        "void Reset_Handler(void) { data[0] = edgec_kern(data, 4); for (;;) {} }\n")
    base = (resource_dir("boards") / "platforms" / "edgec-qemu" / "bsp" / "arm" / "link.ld.in").read_text()
    for k, v in {"flash_origin": "0x00000000", "flash_size": "4194304", "ram_origin": "0x20000000",
                 "ram_size": "4194304", "stack_size": "4096"}.items():
        base = base.replace("{%s}" % k, v)
    (tmp_path / "base.ld").write_text(base)
    board = load_board("qemu-cortex-m4")
    region = code_ram.region(board)
    small = board.__class__(**{**vars(board), "regions": (region.__class__(**{**vars(region), "size": size}),)})
    (tmp_path / "code.ld").write_text(code_ram.linker_script(small, code_ram.runtime_objects(tmp_path, "model")))
    objs = []
    for name in ("edgec_kern", "model"):
        subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-O2", "-ffunction-sections", "-c",
                        "-o", str(tmp_path / f"{name}.o"), str(tmp_path / f"{name}.c")], check=True)
        objs.append(str(tmp_path / f"{name}.o"))
    return small, subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-nostartfiles", "-nostdlib",
                                  "-T", str(tmp_path / "base.ld"), "-Wl,-T," + str(tmp_path / "code.ld"),
                                  "-o", str(tmp_path / "fw.elf"), *objs], capture_output=True, text=True)


def test_the_kernels_run_from_the_code_ram_and_load_from_flash(tmp_path):
    """The runtime file's text runs at the code RAM's address and is stored in flash after the .data image; the
    model's own file stays in flash."""
    _, link = _link(tmp_path, 65536)
    assert link.returncode == 0, link.stderr
    fw = tmp_path / "fw.elf"
    assert 0x3F0000 <= elf.code_address(fw, "edgec_kern") < 0x400000
    assert elf.code_address(fw, "Reset_Handler") < 0x1000
    sec = {s.name: s for s in elf.sections(fw)}
    placed, data = sec[code_ram.SECTION], sec[".data"]
    assert placed.vma == 0x3F0000 and placed.size > 0
    assert placed.lma == data.lma + data.size < 0x3F0000


def test_code_that_does_not_fit_the_code_ram_is_refused_in_one_line(tmp_path):
    board, link = _link(tmp_path, 16)
    assert link.returncode != 0
    with pytest.raises(EdgecError, match=r"^--code-in-ram: the model's kernels do not fit qemu-cortex-m4's code RAM "
                                         r".*: build with --no-code-in-ram$"):
        code_ram.check_link(link.stderr, board)


def test_a_board_without_code_ram_is_refused_before_any_work(tmp_path):
    with pytest.raises(EdgecError, match=r"--code-in-ram: board host lists no code RAM"):
        api.build(CANCER / "model.onnx", CANCER / "calib.npz", "host", tmp_path / "b", firmware=False,
                  code_in_ram=True)
    assert not (tmp_path / "b").exists()


def test_the_l4r5_refuses_what_does_not_fit_below_the_alias(tmp_path):
    """With SRAM2 holding the code, the L4R5's firmware has SRAM1's 192 KB: weights in RAM beyond it are refused."""
    with pytest.raises(EdgecError, match=r"--code-in-ram: .* needs [\d,]+ B of RAM, but .* has the 196,608 B below "
                                         r"0x20030000"):
        code_ram.check_ram(load_board("nucleo-l4r5zi"), "vww", 506_632)
    code_ram.check_ram(load_board("nucleo-l4r5zi"), "kws", 97_748)


def test_weights_in_ram_beyond_sram1_go_above_the_alias():
    """--weights-in-ram --code-in-ram on the L4R5: the largest weight arrays that fit go to SRAM3 (above SRAM2's
    alias, its own linker script, loaded after the code and copied by the same constructor), the rest stay in
    SRAM1's .data."""
    from edgec.codegen.cmodel import FAR_SECTION, far_weights
    l4 = load_board("nucleo-l4r5zi")
    assert code_ram.far_ram(l4) == (0x20040000, 384 * 1024) and code_ram.far_capacity(l4, False) == 0
    assert code_ram.far_ram(load_board("qemu-cortex-m4")) is None
    arrays = [{"ram": True, "bytes": 300_000, "section": ""}, {"ram": True, "bytes": 100_000, "section": ""},
              {"ram": True, "bytes": 80_000, "section": ""}, {"ram": False, "bytes": 10, "section": ""}]
    assert far_weights(arrays, code_ram.far_capacity(l4, True)) == 380_000
    assert [a["section"] for a in arrays] == [FAR_SECTION, "", FAR_SECTION, ""]
    script = code_ram.far_script(l4)
    assert "ORIGIN = 0x20040000, LENGTH = 393216" in script and "AT (LOADADDR(.edgec_code_ram)" in script
    assert "__edgec_far_start" in code_ram.copy_source(True) and "__edgec_far" not in code_ram.copy_source()


@pytest.mark.sweep
def test_a_code_in_ram_build_runs_bit_exact_on_qemu(tmp_path):
    """qemu-cortex-m4: the copied kernels run (device == reference) at the stand-in window's address."""
    out = tmp_path / "b"
    report = api.build(CANCER / "model.onnx", CANCER / "calib.npz", "qemu-cortex-m4", out, code_in_ram=True)
    assert report["memory"]["code_in_ram_bytes"] > 0
    fw = out / report["firmware"]
    sec = {s.name: s for s in elf.sections(fw)}
    assert sec[code_ram.SECTION].vma == 0x3F0000
    r = api.bench(out, CANCER / "calib.npz", limit=2, report_dir=None)
    assert r["agreement"]["device_vs_reference"] == 1.0


@pytest.mark.sweep
def test_the_nucleo_l4r5zi_links_its_kernels_into_sram2(stm32duino, tmp_path):
    """Compiled with STM32duino (not run: no board here): the kernels at 0x10000000, loaded from flash, the
    weights (--weights-in-ram) in SRAM3 above SRAM2's 0x20030000 alias, and the rest of the firmware's RAM,
    stack top included, below it."""
    out = tmp_path / "b"
    report = api.build(CANCER / "model.onnx", CANCER / "calib.npz", "nucleo-l4r5zi", out, code_in_ram=True,
                       weights_in_ram=True)
    fw = out / report["firmware"]
    sec = {s.name: s for s in elf.sections(fw)}
    placed = sec[code_ram.SECTION]
    assert placed.vma == 0x10000000 and 0x08000000 <= placed.lma < 0x08200000 and placed.size > 0
    with open(fw, "rb") as f:
        from elftools.elf.elffile import ELFFile
        [estack] = ELFFile(f).get_section_by_name(".symtab").get_symbol_by_name("_estack")
        assert estack["st_value"] == 0x20030000
    far = sec[".edgec_far_weights"]    # the model's weights (all fit SRAM3), loaded after the code
    assert far.vma == 0x20040000 and far.lma == placed.lma + placed.size and far.size > 0
    assert all(s.vma + s.size <= 0x20030000 for s in sec.values()
               if s.alloc and 0x20000000 <= s.vma < 0x30000000 and s is not far)


@pytest.mark.sweep
def test_the_nucleo_l4r5zi_default_build_runs_its_kernels_from_sram2(stm32duino, tmp_path):
    """No option on the L4R5 (flash wait states and a code RAM): the kernels at 0x10000000, the report saying so;
    --no-code-in-ram (False): none there, and the same model library byte for byte (what an export takes)."""
    on, off = tmp_path / "on", tmp_path / "off"
    report = api.build(CANCER / "model.onnx", CANCER / "calib.npz", "nucleo-l4r5zi", on)
    assert report["memory"]["code_in_ram"] is True and report["memory"]["code_in_ram_bytes"] > 0
    assert {s.name: s for s in elf.sections(on / report["firmware"])}[code_ram.SECTION].vma == 0x10000000
    flash = api.build(CANCER / "model.onnx", CANCER / "calib.npz", "nucleo-l4r5zi", off, code_in_ram=False)
    assert flash["memory"]["code_in_ram"] is False and code_ram.placed_bytes(off / flash["firmware"]) == 0
    for f in (on / "model").rglob("*"):
        if f.is_file():
            assert f.read_bytes() == (off / "model" / f.relative_to(on / "model")).read_bytes(), f
