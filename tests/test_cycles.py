"""The cycle-estimate QEMU plugin (boards/platforms/edgec-qemu/plugins/edgec_cycles.c, edgec/bench/cycles.py) on a
tiny hand-written Cortex-M4 firmware whose estimate follows by hand from the timing rules the plugin states
(Arm's Cortex-M3/M4 TRM instruction timings), and its place in a bench report."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import require
from edgec.bench import cycles
from edgec.settings import Settings

# Between two calls of `mark` (the window): the first `mark` call's `bx lr`, a 10-iteration loop of two loads
# and a store, a PUSH and a POP of 3 registers, and the call of `mark` that closes the window.
FIRMWARE = r"""
    .syntax unified
    .thumb
    .section .vectors, "a"
    .word 0x20010000
    .word _start + 1
    .text
    .thumb_func
    .global _start
_start:
    bl start
    bl mark
    movs r0, #10
    ldr r1, =0x20000100     @ not a MOV immediate: a literal load
loop:
    ldr r2, [r1]
    ldr r3, [r1, #4]
    str r2, [r1, #8]
    subs r0, #1
    bne loop
    push {r4, r5, r6}
    pop {r4, r5, r6}
    bl mark
    movs r0, #0x18          @ semihosting SYS_EXIT, ADP_Stopped_ApplicationExit
    ldr r1, =0x20026
    bkpt 0xab
    .thumb_func
start:
    bx lr
    .thumb_func
mark:
    bx lr
    .pool
"""


def expected(ws: int) -> tuple[int, int]:
    """(instructions, cycles) of the window, from the rules: data processing 1; a load/store single 2, or 1
    right after another one (pipelined); PUSH/POP 1 + registers; a taken branch 2 more (pipeline refill) plus
    the wait states, paid by the instruction it lands on; a literal load also pays the wait states. So the
    opening `bl mark`'s refill is in the window (it lands on `mark`), the closing one's is not."""
    taken = 2 + ws
    mark = taken + 1                                     # refill, bx lr
    first = taken + 1 + (2 + ws) + 1 + 1 + 1 + 1 + 1     # refill, movs, ldr literal, ldr ldr str (pipelined), subs, bne
    again = 9 * (taken + 2 + 1 + 1 + 1 + 1)              # bne taken 9 times: ldr (after a branch: 2), ldr, str,
    #                                                      subs, bne
    tail = (1 + 3) + (1 + 3) + 1                         # push, pop (3 registers each), bl
    insns = 1 + 7 + 9 * 5 + 3
    return insns, mark + first + again + tail


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    require(shutil.which("arm-none-eabi-gcc") is not None, "arm-none-eabi-gcc", "bash scripts/setup.sh")
    require(shutil.which("qemu-system-arm") is not None, "qemu-system-arm", "bash scripts/setup.sh")
    d = tmp_path_factory.mktemp("cycles")
    (d / "fw.S").write_text(FIRMWARE)
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-Wl,--section-start=.vectors=0x0",
                    "-Wl,-Ttext=0x100", "-o", str(d / "fw.elf"), str(d / "fw.S")],
                   check=True)
    return d / "fw.elf"


def run(elf, tmp_path, ws: int, core: str = "m4", extra: str = "", window: str = "") -> list[tuple[int, ...]]:
    plugin = cycles.build_plugin(Settings.from_environment())
    assert plugin is not None, "no host C compiler for the plugin"
    out = tmp_path / f"windows-{ws}-{core}-{len(extra)}.txt"
    start, mark = cycles.symbol_address(elf, "start"), cycles.symbol_address(elf, "mark")
    window = window or f"start={start:#x},mark={mark:#x}"
    subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-display", "none", "-monitor", "none", "-nodefaults",
                    "-semihosting-config", "enable=on,target=native", "-icount", "shift=0", "-kernel", str(elf),
                    "-plugin", f"{plugin},out={out},{window},core={core},ws={ws}{extra}"],
                   check=True, timeout=60, capture_output=True)
    return cycles.read_windows(out)


@pytest.mark.parametrize("ws", [0, 3])
def test_known_loop_estimate(firmware, tmp_path, ws):
    assert run(firmware, tmp_path, ws) == [expected(ws)]


def test_m7_dual_issue(firmware, tmp_path):
    """core=m7: loads/stores 1, taken branches +1, and a single-cycle instruction pairs with the one before unless
    both access memory or both multiply (or the first was paired, or is a branch). mark: refill 1 + bx 1; the
    first pass: refill 1, movs 1 + ldr literal 0 (paired), ldr 1, ldr 1 (two loads do not pair), str 1,
    subs 0 (paired with str), bne 1; 9 loops: refill 1 + ldr ldr str 3 + subs 0 + bne 1; push 1 + 2, pop 1 + 2
    (two registers a cycle), bl 1."""
    cycles_m7 = 2 + (1 + 1 + 0 + 1 + 1 + 1 + 0 + 1) + 9 * (1 + 3 + 0 + 1) + (3 + 3 + 1)
    assert run(firmware, tmp_path, 0, core="m7") == [(expected(0)[0], cycles_m7)]


# Memory timings (mem=LO:HI:LINE:IMISS:DMISS:PREFETCH:IBYTES:IWAYS:DBYTES:DWAYS), all on the firmware above at
# 0x100 (-Ttext): _start's `bl start` at 0x100, `bl mark` 0x104, movs 0x108, the literal load 0x10a, the loop
# 0x10c-0x115, push 0x116, pop 0x118, `bl mark` 0x11a, start 0x124, mark 0x126, the literal pool 0x128.
def test_memory_timing_one_line_buffer(firmware, tmp_path):
    """Lines of 8 bytes, no cache, no prefetch, 3 cycles a line: a miss each time the fetch moves to another
    line: mark (0x120 line), 0x108, 0x110 and 2 a loop (0x108, 0x110) 9 times, then 0x118: 22; data reads of
    RAM cost nothing, the one of flash (the literal) is a miss of the data side, 0 cycles here."""
    [(insns, base, timed)] = run(firmware, tmp_path, 0, extra=",mem=0:400000:8:3:0:0:0:0:0:0")
    assert (insns, base) == expected(0) and timed == base + 3 * 22
    # one 4 KB line holds all the code: no instruction miss; the literal is the one data miss (5 cycles)
    assert run(firmware, tmp_path, 0, extra=",mem=0:400000:4096:7:5:0:0:0:0:0") == [expected(0) + (base + 5,)]


def test_memory_timing_cache_and_prefetch(firmware, tmp_path):
    """With a 1 KB instruction cache only the lines first run in the window miss (0x108, 0x110, 0x118: the
    mark line ran before it); with prefetch instead of a cache the sequential misses are hidden by the line
    before them where it ran long enough: 0x110 after 0x108's movs + ldr literal + 2 loads (1 + 2 + 1 + 1 = 5
    cycles, enough for 3), 0x118 after the loop's last pass; the others pay in full (mark, 0x108, and 0x108
    after each taken bne)."""
    [(_, base, cached)] = run(firmware, tmp_path, 0, extra=",mem=0:400000:8:3:0:0:1024:4:0:0")
    assert cached == base + 3 * 3
    [(_, base, prefetched)] = run(firmware, tmp_path, 0, extra=",mem=0:400000:8:3:0:1:0:0:0:0")
    assert prefetched == base + 3 * (1 + 1 + 9)
    # two timings weighed in one run give the same figures as each alone
    both = run(firmware, tmp_path, 0, extra=",mem=0:400000:8:3:0:0:1024:4:0:0,mem=0:400000:8:3:0:1:0:0:0:0")
    assert both == [expected(0) + (cached, prefetched)]


def test_memory_timing_code_ram(firmware, tmp_path):
    """Two more fields name a code RAM of the part (the L4R5's SRAM2 on the I-code bus, `--code-in-ram`):
    fetches and data reads there are zero-wait-state and leave the flash line buffer as it was. With [0x100,
    0x120) as code RAM, `mark` (line 0x120) is still in the buffer from `start`, run just before from the same
    line: no instruction miss; the literal at 0x128 stays a flash data miss (5). With [0x100, 0x130) the whole
    firmware is code RAM: no extra cycle. Without the fields: 22 line misses (above)."""
    [(insns, base, timed)] = run(firmware, tmp_path, 0, extra=",mem=0:400000:8:3:5:0:0:0:0:0:100:120")
    assert (insns, base) == expected(0) and timed == base + 5
    assert run(firmware, tmp_path, 0, extra=",mem=0:400000:8:3:5:0:0:0:0:0:100:130") == [expected(0) + (base,)]


def test_open_close_window(firmware, tmp_path):
    """A peer's window (open=, close=: TFLM's bench_mark_start/stop): from the call of `start` to the next call
    of `mark`: start (refill 2 + bx lr 1), then `bl mark` (refill 2 + 1)."""
    start, mark = cycles.symbol_address(firmware, "start"), cycles.symbol_address(firmware, "mark")
    assert run(firmware, tmp_path, 0, window=f"open={start:#x},close={mark:#x}")[0] == (2, 6)


def test_real_parts_of_an_emulated_core():
    """An emulated board is weighed with the memory timing of every real part of its core (each a mem=
    argument over its flash), in the same run."""
    from edgec.targets.boards import load_board
    m4, m7 = load_board("qemu-cortex-m4"), load_board("qemu-cortex-m7")
    assert [n for n, _ in cycles.memory_models(m4)] == ["nucleo-f446re", "nucleo-l4r5zi"]
    assert [m.name for _, m in cycles.memory_models(m7)] == ["caches-off", "caches-on"]
    l4 = dict(cycles.memory_models(m4))["nucleo-l4r5zi"]
    assert cycles.mem_arg(l4, m4.flash_bytes) == "mem=0:400000:8:5:5:1:1024:4:256:4"
    # qemu-cortex-m4's code-ram window (`--code-in-ram`) is weighed as the L4R5's SRAM2; the F446RE has none
    assert cycles.mem_args(m4).endswith(",mem=0:400000:8:5:5:1:1024:4:256:4:3f0000:400000")
    assert cycles.mem_args(m4).count(":3f0000:400000") == 1
    s = cycles.summary([(100, 250, 300, 400), (100, 260, 310, 410), (100, 270, 320, 420)], 3, m4)
    assert [(p["board"], p["median"]) for p in s["parts"]] == [("nucleo-f446re", 310), ("nucleo-l4r5zi", 410)]
    assert s["parts"][1]["ms"] == pytest.approx(410 / 120e6 * 1e3)


M55_FIRMWARE = r"""
    .syntax unified
    .thumb
    .section .vectors, "a"
    .word 0x20010000
    .word _start + 1
    .text
    .thumb_func
    .global _start
_start:
    ldr r0, =0xE000ED88     @ CPACR: CP10/CP11 full access (the FPU and Helium)
    ldr r1, [r0]
    orr r1, r1, #0xF00000
    str r1, [r0]
    dsb
    isb
    ldr r1, =0x20000100
    bl start
    bl mark
    vldrw.u32 q0, [r1]
    vadd.i32 q1, q0, q0
    vadd.i32 q2, q1, q1
    vstrw.32 q2, [r1]
    bl mark
    movs r0, #0x18
    ldr r1, =0x20026
    bkpt 0xab
    .thumb_func
start:
    bx lr
    .thumb_func
mark:
    bx lr
    .pool
"""


def test_m55_beats_overlap_between_memory_and_arithmetic(tmp_path):
    """core=m55: a Helium instruction takes two beats (2 cycles), 1 when it follows one of the other class (a
    load or store after arithmetic, or the reverse): vldrw 2 (after a branch), vadd 1, vadd 2, vstrw 1; around
    them mark's refill 2 + bx 1, the refill 2 into the Helium block and the closing bl 1."""
    require(shutil.which("arm-none-eabi-gcc") is not None, "arm-none-eabi-gcc", "bash scripts/setup.sh")
    (tmp_path / "m55.S").write_text(M55_FIRMWARE)
    elf = tmp_path / "m55.elf"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-nostdlib",
                    "-Wl,--section-start=.vectors=0x0", "-Wl,-Ttext=0x100", "-o", str(elf), str(tmp_path / "m55.S")],
                   check=True)
    plugin = cycles.build_plugin(Settings.from_environment())
    out = tmp_path / "w.txt"
    start, mark = cycles.symbol_address(elf, "start"), cycles.symbol_address(elf, "mark")
    subprocess.run(["qemu-system-arm", "-M", "mps3-an547", "-display", "none", "-monitor", "none", "-nodefaults",
                    "-semihosting-config", "enable=on,target=native", "-icount", "shift=0", "-kernel", str(elf),
                    "-plugin", f"{plugin},out={out},start={start:#x},mark={mark:#x},core=m55,ws=0"],
                   check=True, timeout=60, capture_output=True)
    assert cycles.read_windows(out) == [(6, (2 + 1) + 2 + (2 + 1 + 2 + 1) + 1)]


def test_summary_takes_the_plain_invokes_first():
    s = cycles.summary([(100, 250), (100, 260), (100, 270), (5, 9)], 3)
    assert s["median"] == 260 and s["cycles_per_instruction"] == 2.6 and "estimate" in s["model"]
    assert cycles.summary([(100, 250)], 2) is None


def test_cells_building_the_plugin_at_once_each_get_it(tmp_path):
    """Matrix cells start their emulators at once in one process, each building the plugin when the cache has
    none: their temporary files had one name (the pid), so the second rename failed and its cell with it. A
    compiler that ends only once the other one has written its output makes them overlap every time."""
    import dataclasses
    import threading

    cc = tmp_path / "cc"
    cc.write_text(f"""#!/bin/sh
out=""; while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
echo plugin > "$out"; touch "{tmp_path}/written.$$"
i=0; while [ $(ls "{tmp_path}" | grep -c '^written\\.') -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
""")
    cc.chmod(0o755)
    settings = dataclasses.replace(Settings.from_environment(), cache_root=tmp_path / "cache", c_compiler=str(cc))
    got, errors = [], []

    def build():
        try:
            got.append(cycles.build_plugin(settings))
        except Exception as e:           # noqa: BLE001 - what the cell would have failed with
            errors.append(repr(e))
    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and got == [cycles.plugin_path(settings)] * 2
    assert got[0].read_text() == "plugin\n"
    assert [p.name for p in got[0].parent.iterdir()] == [got[0].name]      # no temporary file left
