"""Flashing real boards (edgec/device/flash.py, image.py, ports.py) without a board: every method's exact command
line against fake tools on PATH, what edgec reports from their output, the UF2 and raw images against binutils,
serial-port auto-detection, and `edgec flash` on a real-board profile with no probe attached (the real OpenOCD)."""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

from conftest import assert_clean_error, edgec
from edgec.device import flash as flashing
from edgec.device import image as elf_image
from edgec.settings import Settings
from edgec.device.serial_ports import find_port
from edgec.errors import EdgecError
from edgec.targets.boards import load_board

TINY_C = r"""
void reset(void);
int counter = 5;                  /* .data: loaded from flash */
void reset(void) { for (;;) counter++; }
__attribute__((section(".isr_vector"), used)) void *const vectors[2] = {(void *)0x20004000, (void *)reset};
"""
TINY_LD = """
MEMORY { FLASH (rx) : ORIGIN = 0x08000000, LENGTH = 64K
         RAM (rwx)  : ORIGIN = 0x20000000, LENGTH = 16K }
SECTIONS {
  .isr_vector : { KEEP(*(.isr_vector)) . = ALIGN(256); } > FLASH
  .text : { *(.text*) *(.rodata*) } > FLASH
  .data : { *(.data*) } > RAM AT > FLASH
  .bss (NOLOAD) : { *(.bss*) } > RAM
}
"""
FAKE = """#!/bin/sh
python3 -c 'import json, os, sys; open(os.environ["FAKE_LOG"], "a").write(json.dumps([os.path.basename(sys.argv[1]), os.getcwd()] + sys.argv[2:]) + "\\n")' "$0" "$@"
printf '%s\\n' "$FAKE_OUTPUT"
exit ${FAKE_EXIT:-0}
"""
TOOLS = ("openocd", "st-flash", "pyocd", "esptool", "pio", "gdb-multiarch")


@pytest.fixture(scope="module")
def tiny_elf(tmp_path_factory):
    """A minimal Cortex-M firmware: vector table at 0x08000000, code, and .data loaded from flash."""
    d = tmp_path_factory.mktemp("tiny")
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        pytest.fail("arm-none-eabi-gcc is not installed; scripts/setup.sh installs it")
    (d / "tiny.c").write_text(TINY_C)
    (d / "tiny.ld").write_text(TINY_LD)
    subprocess.run([gcc, "-mcpu=cortex-m4", "-mthumb", "-O1", "-nostdlib", "-T", str(d / "tiny.ld"),
                    str(d / "tiny.c"), "-o", str(d / "firmware.elf")], check=True, capture_output=True, text=True)
    return d / "firmware.elf"


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    """Fake flashing tools first on PATH; returns (read the logged calls, set the tools' output and exit code)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    for name in TOOLS:
        (bin_dir / name).write_text(FAKE)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(log))

    def calls():
        return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []

    def respond(output: str, code: int = 0):
        monkeypatch.setenv("FAKE_OUTPUT", output)
        monkeypatch.setenv("FAKE_EXIT", str(code))
    respond("")
    return calls, respond, bin_dir


def test_image_matches_binutils(tiny_elf, tmp_path):
    img = elf_image.read_elf(tiny_elf)
    assert img.vector_table() == 0x08000000
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "--gap-fill", "0xff", str(tiny_elf),
                    str(tmp_path / "objcopy.bin")], check=True)
    base, data = img.binary()
    assert base == 0x08000000 and data == (tmp_path / "objcopy.bin").read_bytes()
    vectors = struct.unpack_from("<II", data)
    assert vectors[0] == 0x20004000 and vectors[1] & 1 and 0x08000000 < vectors[1] < 0x08000000 + len(data)
    sizes = subprocess.run(["arm-none-eabi-size", "-A", "-d", str(tiny_elf)], capture_output=True, text=True,
                           check=True).stdout
    loaded = sum(int(ln.split()[1]) for ln in sizes.splitlines() if ln.split()[:1] in ([".isr_vector"], [".text"],
                                                                                       [".data"]))
    assert img.size == loaded


def test_uf2_blocks_carry_the_image(tiny_elf, tmp_path):
    img = elf_image.read_elf(tiny_elf)
    n = elf_image.write_uf2(img, tmp_path / "fw.uf2")
    raw = (tmp_path / "fw.uf2").read_bytes()
    assert len(raw) == 512 * n
    got = {}
    for i in range(n):
        block = raw[512 * i:512 * (i + 1)]
        m0, m1, flags, addr, size, index, total, family = struct.unpack_from("<IIIIIIII", block)
        assert (m0, m1, struct.unpack_from("<I", block, 508)[0]) == (0x0A324655, 0x9E5D5157, 0x0AB16F30)
        assert flags == 0x2000 and family == 0xE48BFF56 and (index, total) == (i, n)
        got[addr] = block[32:32 + size]
    for seg in img.segments:
        assert b"".join(got[a] for a in sorted(got) if seg.address <= a < seg.address + len(seg.data)) == seg.data


def _flash(board_name, tiny_elf, tmp_path, probe=None, **kw):
    return flashing.flash_firmware(load_board(board_name), tiny_elf, tmp_path / "project", probe,
                                   pio_core=Settings.from_environment().platformio_home, **kw)


def test_openocd_program_verify_reset(fakes, tiny_elf, tmp_path):
    calls, respond, _ = fakes
    respond("Info : STLINK V2J39M27\n** Programming Finished **\n** Verify Started **\n** Verified OK **")
    r = _flash("nucleo-f446re", tiny_elf, tmp_path)           # the profile's default probe
    assert calls()[0][0:1] + calls()[0][2:] == ["openocd", "-f", "board/st_nucleo_f4.cfg", "-c",
                                                f"program {{{tiny_elf}}} verify reset exit"]
    size = elf_image.read_elf(tiny_elf).size
    assert r.verified and r.message == f"wrote {size:,} B with openocd (board/st_nucleo_f4.cfg) and verified"


def test_openocd_without_verification_is_not_called_verified(fakes, tiny_elf, tmp_path):
    _, respond, _ = fakes
    respond("** Programming Finished **")
    r = _flash("nucleo-h743zi2", tiny_elf, tmp_path)
    assert not r.verified and "not verified: openocd printed no verification" in r.message


def test_st_flash_writes_the_raw_image_at_its_base(fakes, tiny_elf, tmp_path):
    calls, respond, _ = fakes
    respond("Flash written and verified! jolly good!")
    r = _flash("nucleo-l4r5zi", tiny_elf, tmp_path, probe="stlink")
    binary = tiny_elf.with_suffix(".bin")
    assert calls()[0][0:1] + calls()[0][2:] == ["st-flash", "--reset", "write", str(binary), "0x08000000"]
    assert binary.read_bytes() == elf_image.read_elf(tiny_elf).binary()[1]
    assert r.verified and r.tool == "st-flash"


def test_pyocd_load_says_it_does_not_verify(fakes, tiny_elf, tmp_path):
    calls, _, _ = fakes
    r = _flash("nucleo-h743zi2", tiny_elf, tmp_path, probe="pyocd")
    assert calls()[0][0:1] + calls()[0][2:] == ["pyocd", "load", "-W", "-t", "stm32h743zitx", "--format", "elf",
                                                str(tiny_elf)]
    assert not r.verified and "pyOCD's load has no verify step" in r.message


def test_esptool_writes_bootloader_partitions_and_app(fakes, tiny_elf, tmp_path):
    calls, respond, _ = fakes
    build = tmp_path / "project" / ".pio" / "build" / "esp32-s3"
    build.mkdir(parents=True)
    for name in ("bootloader.bin", "partitions.bin", "firmware.bin"):
        (build / name).write_bytes(b"\0" * 16)
    respond("Wrote 16 bytes at 0x00010000\nHash of data verified.")
    r = _flash("esp32-s3", tiny_elf, tmp_path, port="/dev/ttyUSB7")
    assert calls()[0][0:1] + calls()[0][2:] == [
        "esptool", "--chip", "esp32s3", "--port", "/dev/ttyUSB7", "--baud", "921600", "--before", "default-reset",
        "--after", "hard-reset", "write-flash", "0x0", str(build / "bootloader.bin"), "0x8000",
        str(build / "partitions.bin"), "0x10000", str(build / "firmware.bin")]
    assert r.verified


def test_pio_upload_runs_in_the_project_with_the_profiles_protocol(fakes, tiny_elf, tmp_path):
    calls, respond, _ = fakes
    (tmp_path / "project").mkdir()
    respond("Verify successful")
    r = _flash("nano33ble", tiny_elf, tmp_path, port="/dev/ttyACM3")
    call = calls()[0]
    assert call[0:1] + call[2:] == ["pio", "run", "-t", "upload", "-e", "nano33ble", "--upload-port", "/dev/ttyACM3"]
    assert call[1] == str(tmp_path / "project") and r.verified
    assert dict(load_board("nano33ble").pio_options)["upload_protocol"] == "sam-ba"


def test_gdb_loads_verifies_resets_from_the_vector_table_and_detaches(fakes, tiny_elf, tmp_path):
    calls, respond, _ = fakes
    respond("Loading section .isr_vector, size 0x100 lma 0x8000000\nLoading section .text, size 0x1c lma 0x8000100\n"
            "Section .isr_vector, range 0x8000000 -- 0x8000100: matched.\n"
            "Section .text, range 0x8000100 -- 0x800011c: matched.")
    r = _flash("nucleo-f446re", tiny_elf, tmp_path, probe="gdb", gdb="10.0.0.2:2331")
    script = calls()[0][2:]
    assert script[:2] == ["-nx", "-batch"] and script[2::2] == ["-ex"] * (len(script[2:]) // 2)
    assert script[3::2] == ["set pagination off", "set confirm off", f"file {tiny_elf}", "target remote 10.0.0.2:2331",
                            "load", "compare-sections", "monitor reset halt", "set $sp = *(unsigned int *)0x08000000",
                            "set $pc = *(unsigned int *)0x08000004 & 0xfffffffe", "set $xpsr = 0x01000000", "detach"]
    assert r.bytes == 0x11c and r.verified
    assert r.message == "wrote 284 B with gdb-multiarch through the GDB server at 10.0.0.2:2331 and verified"


def test_gdb_mismatch_and_no_server_are_errors(fakes, tiny_elf, tmp_path):
    _, respond, _ = fakes
    respond("Loading section .text, size 0x10 lma 0x8000000\nSection .text, range 0x8000000 -- 0x8000010: "
            "MIS-MATCHED!")
    with pytest.raises(EdgecError, match="reads back different: Section .text"):
        _flash("nucleo-f446re", tiny_elf, tmp_path, probe="gdb")
    respond("localhost:3333: Connection refused.", 1)
    with pytest.raises(EdgecError, match=r"flashing with gdb-multiarch failed \(localhost:3333: Connection refused.\): "
                                         r"start a GDB server for the board at localhost:3333"):
        _flash("nucleo-f446re", tiny_elf, tmp_path, probe="gdb")


def test_no_probe_names_the_tool_and_what_to_connect(fakes, tiny_elf, tmp_path):
    _, respond, _ = fakes
    respond("Error: open failed\n** OpenOCD init failed **", 1)
    with pytest.raises(EdgecError) as e:
        _flash("nucleo-f446re", tiny_elf, tmp_path)
    assert str(e.value) == ("flashing with openocd failed (Error: open failed): connect the NUCLEO-F446RE's ST-LINK "
                            "USB connector (CN1) to this computer (udev rule: docs/hardware.md, Flashing)")


def test_missing_tool_says_how_to_install_it(fakes, tiny_elf, tmp_path):
    (fakes[2] / "st-flash").unlink()
    os.environ["PATH"] = str(fakes[2])        # restored by monkeypatch
    with pytest.raises(EdgecError, match=r"st-flash not found: install it \(apt-get install stlink-tools\)"):
        _flash("nucleo-f446re", tiny_elf, tmp_path, probe="stlink")


def test_uf2_copy_finds_the_bootsel_drive(tiny_elf, tmp_path):
    drive = tmp_path / "media" / "user" / "RPI-RP2"
    drive.mkdir(parents=True)
    assert flashing._uf2_drive([tmp_path / "media"]) is None
    (drive / "INFO_UF2.TXT").write_text("UF2 Bootloader v3.0\nModel: Raspberry Pi RP2\nBoard-ID: RPI-RP2\n")
    assert flashing._uf2_drive([tmp_path / "media"]) == drive
    r = _flash("rpi-pico", tiny_elf, tmp_path, drive=drive)
    uf2 = (drive / "firmware.uf2").read_bytes()
    assert len(uf2) % 512 == 0 and struct.unpack_from("<I", uf2, 28)[0] == 0xE48BFF56
    assert not r.verified and r.message.startswith(f"wrote {elf_image.read_elf(tiny_elf).size:,} B with a UF2 copy")
    with pytest.raises(EdgecError, match="no RP2040 in BOOTSEL mode found .*hold the Pico's BOOTSEL button"):
        _flash("rpi-pico", tiny_elf, tmp_path, drive=tmp_path)


def test_bootsel_device_on_usb_without_its_drive_mounted(tiny_elf, tmp_path):
    usb = tmp_path / "usb"
    for name, ids in (("1-1", ("0483", "374b")), ("1-2", ("2e8a", "0003"))):
        (usb / name).mkdir(parents=True)
        (usb / name / "idVendor").write_text(ids[0] + "\n")
        (usb / name / "idProduct").write_text(ids[1] + "\n")
    req = flashing.Request(load_board("rpi-pico"), tiny_elf, tmp_path)
    with pytest.raises(EdgecError, match=r"an RP2040 in BOOTSEL mode is on USB \(2e8a:0003\) but its drive RPI-RP2 is "
                                         "not mounted"):
        flashing._flash_uf2(req, roots=[tmp_path / "media"], usb_root=usb)
    (usb / "1-2" / "idProduct").write_text("00c0\n")       # the firmware running, not BOOTSEL
    with pytest.raises(EdgecError, match="no RP2040 in BOOTSEL mode found"):
        flashing._flash_uf2(req, roots=[tmp_path / "media"], usb_root=usb)


def test_port_auto_detection_from_usb_ids():
    board = load_board("nucleo-f446re")
    seen = [("/dev/ttyS0", None, "n/a"), ("/dev/ttyACM0", "0483:374b", "STM32 STLink"),
            ("/dev/ttyUSB0", "10c4:ea60", "CP2102N")]
    assert find_port(board, seen) == "/dev/ttyACM0"
    with pytest.raises(EdgecError) as e:
        find_port(board, seen[:1] + seen[2:])
    assert "no serial port of board 'nucleo-f446re' found (looked for USB 0483:374b ST-LINK/V2-1; seen: " \
           "/dev/ttyS0, /dev/ttyUSB0 (10c4:ea60 CP210x USB-UART))" in str(e.value)
    with pytest.raises(EdgecError, match=r"2 ports match board 'nucleo-f446re' \(/dev/ttyACM0 .*, /dev/ttyACM1 .*\); "
                                         "choose one with --port"):
        find_port(board, seen + [("/dev/ttyACM1", "0483:374b", "STM32 STLink")])


def _fake_build(tiny_elf, tmp_path, board="nucleo-f446re"):
    out = tmp_path / "build"
    (out / "project").mkdir(parents=True)
    shutil.copy2(tiny_elf, out / "project" / "firmware.elf")
    (out / "build-report.json").write_text(json.dumps({"board": board, "model": "m", "model_hash": "0",
                                                       "firmware": "project/firmware.elf", "protocol": "edgec"}))
    return out


def test_bench_flashes_first_unless_told_not_to(fakes, tiny_elf, tmp_path):
    calls, respond, _ = fakes
    respond("Error: open failed", 1)
    out = _fake_build(tiny_elf, tmp_path)
    data = tmp_path / "d.npz"
    np.savez(data, x=np.zeros((1, 4), np.float32))
    assert_clean_error(edgec("bench", out, "--data", data), "flashing with openocd failed")
    assert [c[0] for c in calls()] == ["openocd"]
    skipped = edgec("bench", out, "--data", data, "--no-flash", "--port", "socket://127.0.0.1:1")
    assert skipped.returncode == 2 and "openocd" not in skipped.stderr and len(calls()) == 1


def test_edgec_flash_with_no_probe_attached(tiny_elf, tmp_path):
    """The real OpenOCD (scripts/setup.sh installs it) finds no ST-LINK here: one line, the tool and what to connect."""
    if shutil.which("openocd") is None:
        pytest.fail("openocd is not installed; scripts/setup.sh installs it")
    proc = edgec("flash", _fake_build(tiny_elf, tmp_path))
    assert_clean_error(proc, "flashing with openocd failed", "connect the NUCLEO-F446RE's ST-LINK USB connector (CN1)")


@pytest.mark.parametrize("old,new,needle", [
    ('usb = ["0483:374b"]', 'usb = ["374b"]', "'flash.usb' entry '374b' must be a USB VID:PID"),
    ('probe = "openocd"', 'probe = "jtag"', "field 'flash.probe' is 'jtag'; it must be one of"),
])
def test_flash_table_of_a_profile_is_checked(old, new, needle, tmp_path):
    text = load_board("nucleo-f446re").path.read_text()
    assert old in text
    (tmp_path / "b.toml").write_text(text.replace(old, new))
    with pytest.raises(EdgecError, match=re.escape(needle)):
        load_board(str(tmp_path / "b.toml"))


def test_a_real_board_profile_without_a_probe_uploads_with_platformio(tmp_path):
    """A user's own real-board profile with no [flash] table keeps working: PlatformIO's upload target."""
    text = load_board("nucleo-f446re").path.read_text()
    head = text[:text.index("[flash]")]
    (tmp_path / "b.toml").write_text(head)
    board = load_board(str(tmp_path / "b.toml"))
    assert board.flash.probe == "pio" and board.flash.usb == ()


def test_emulator_deviations_are_named_ones(tmp_path):
    text = load_board("qemu-stm32f405").path.read_text()
    (tmp_path / "b.toml").write_text(text.replace('"polled-tx"', '"no-uart"'))
    with pytest.raises(EdgecError, match="'emulator.deviations' has 'no-uart'; a framework harness knows reset-clock, "
                                         "polled-tx"):
        load_board(str(tmp_path / "b.toml"))


def test_flash_step_on_an_emulated_board(tiny_elf, tmp_path):
    """Emulated: no probe -> the emulator starts with the firmware; --probe gdb alone -> edgec starts it halted and
    loads through its stub (a loader for open_device); --gdb of an emulator you started needs its serial port."""
    from edgec import api
    out = _fake_build(tiny_elf, tmp_path, board="qemu-cortex-m4")
    assert api.flash_step(out) == ({}, None)
    record, gdb_load = api.flash_step(out, probe="gdb")
    assert record == {} and callable(gdb_load)
    with pytest.raises(EdgecError, match="with --probe gdb give the serial port of the emulator you started"):
        api.flash_step(out, probe="gdb", gdb="127.0.0.1:1234")
