"""Write a firmware into a board with the probe its profile names ([flash] probe) or `--probe`, and say
honestly what happened: "wrote N B with <tool> and verified", "... (not verified: ...)", or one line
naming the tool that failed and what to connect.

Methods (boards.PROBES): PlatformIO's upload target, OpenOCD, pyOCD, st-flash, a UF2 copy to an RP2040's
BOOTSEL drive, esptool, and any GDB server through gdb-multiarch (load, compare-sections, reset, detach).
Each method is a command line (`command`) run by `_run`; tests run them against fake tools on PATH.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from edgec import children
from edgec.device import image as elf_image
from edgec.device.serial_ports import AUTO, find_port
from edgec.errors import EdgecError
from edgec.targets.boards import PROBES, Board
from edgec.targets.firmware import env_name
from edgec.targets.pio import ensure_scons, pio_environ

TIMEOUT = 300.0
DEFAULT_GDB = "localhost:3333"          # OpenOCD's GDB port (pyOCD: 3333, st-util: 4242, J-Link: 2331)
INSTALL = {"openocd": "apt-get install openocd", "st-flash": "apt-get install stlink-tools",
           "gdb-multiarch": "apt-get install gdb-multiarch", "pyocd": "pip install pyocd",
           "esptool": "pip install esptool", "pio": "pip install platformio"}
# what each tool prints once it has read the flash back and compared it
VERIFIED = {"openocd": r"\*\* Verified OK \*\*", "st-flash": r"Flash written and verified",
            "esptool": r"Hash of data verified", "pio": r"\*\* Verified OK \*\*|Verify successful|Hash of data verified"}
# what a tool prints when no probe / board answers
NO_DEVICE = re.compile(r"open failed|No (J-Link|CMSIS-DAP|ST-?Link)|unable to find|Found 0 stlink|Couldn't find any|"
                       r"No (available|connected) debug probes|No connected|could not open port|"
                       r"Failed to connect|Connection refused|Connection timed out|LIBUSB_ERROR|No device found|"
                       r"not found a device|doesn't exist|no such file or directory", re.IGNORECASE)
UF2_MOUNT_ROOTS = ("/media", "/run/media", "/mnt")


@dataclass
class FlashResult:
    tool: str
    bytes: int
    verified: bool
    how: str = ""                      # where / how, e.g. "(board/st_nucleo_f4.cfg)"
    not_verified_because: str = ""
    output: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        text = f"wrote {self.bytes:,} B with {self.tool}{' ' + self.how if self.how else ''}"
        return text + (" and verified" if self.verified else f" (not verified: {self.not_verified_because})")

    def to_json(self) -> dict:
        return {"tool": self.tool, "bytes": self.bytes, "verified": self.verified, "message": self.message}


@dataclass
class Request:
    """What a flashing method needs: the board, the firmware and where its build is."""

    board: Board
    firmware: Path
    project: Path                      # the build's PlatformIO project (for `pio run -t upload`, .bin files)
    port: str | None = None            # serial port (esptool, pio's upload port); None / "auto": from USB IDs
    gdb: str = DEFAULT_GDB             # HOST:PORT of a GDB server
    drive: Path | None = None          # the RP2040's BOOTSEL drive; None: looked for
    pio_core: Path | None = None       # edgec's PlatformIO core (Settings.platformio_home), for `pio run -t upload`

    @property
    def work(self) -> Path:
        """Where edgec may write files a tool reads (the raw .bin): beside the firmware, in the build folder."""
        return Path(self.firmware).parent


def tool(name: str, probe: str) -> str:
    """Path of a flashing tool: on PATH, else beside this Python (a venv's pip-installed tools)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        raise EdgecError(f"{name} not found: install it ({INSTALL.get(name, name)}) to flash with --probe {probe}, "
                         f"or choose another probe (--probe {', '.join(p for p in PROBES if p != 'emulator')})")
    return found


def _serial_port(req: Request) -> str:
    return find_port(req.board, wait=2.0) if req.port in (None, "", AUTO) else req.port


def _gdb_script(req: Request, img: elf_image.Image) -> list[str]:
    vt = img.vector_table()
    return ["set pagination off", "set confirm off", f"file {req.firmware}", f"target remote {req.gdb}", "load",
            "compare-sections",
            "monitor reset halt",          # the server's reset (OpenOCD, pyOCD, J-Link); QEMU's stub has none
            # and a core reset any server takes: SP and PC from the vector table, Thumb state
            f"set $sp = *(unsigned int *)0x{vt:08x}", f"set $pc = *(unsigned int *)0x{vt + 4:08x} & 0xfffffffe",
            "set $xpsr = 0x01000000", "detach"]


def command(probe: str, req: Request) -> tuple[list[str], dict | None, Path | None]:
    """(argv, environment or None, working directory or None) of a method; prepares the files it reads."""
    board, elf = req.board, Path(req.firmware)
    if probe == "openocd":
        if not board.flash.openocd:
            raise EdgecError(f"board '{board.name}' has no OpenOCD configuration ([flash] openocd in {board.path})")
        argv = [tool("openocd", probe)]
        for cfg in board.flash.openocd:
            argv += ["-f", cfg]
        return argv + ["-c", f"program {{{elf}}} verify reset exit"], None, None
    if probe == "stlink":
        img = elf_image.read_elf(elf)
        binary = req.work / (elf.stem + ".bin")
        base = elf_image.write_binary(img, binary)
        return [tool("st-flash", probe), "--reset", "write", str(binary), f"0x{base:08x}"], None, None
    if probe == "pyocd":
        if not board.flash.pyocd_target:
            raise EdgecError(f"board '{board.name}' has no pyOCD target ([flash] pyocd_target in {board.path})")
        argv = [tool("pyocd", probe), "load", "-W", "-t", board.flash.pyocd_target, "--format", "elf", str(elf)]
        return argv, None, None      # -W: fail at once when no probe is connected (default: wait forever)
    if probe == "esptool":
        build = req.project / ".pio" / "build" / env_name(board)
        parts = [("0x0", build / "bootloader.bin"), ("0x8000", build / "partitions.bin"),
                 ("0x10000", build / "firmware.bin")]
        missing = [str(p) for _, p in parts if not p.is_file()]
        if missing:
            raise EdgecError(f"esptool needs {', '.join(missing)}, which PlatformIO's espressif32 build writes; "
                             "build this board with `edgec build` on a machine with that platform")
        argv = [tool("esptool", probe), "--chip", board.flash.esptool_chip or "auto", "--port", _serial_port(req),
                "--baud", "921600", "--before", "default-reset", "--after", "hard-reset", "write-flash"]
        for offset, path in parts:
            argv += [offset, str(path)]
        return argv, None, None
    if probe == "pio":
        if req.pio_core is None:
            raise ValueError("flashing with pio needs edgec's PlatformIO core (pio_core)")
        ensure_scons(req.pio_core)
        argv = [tool("pio", probe), "run", "-t", "upload", "-e", env_name(board)]
        if req.port not in (None, "", AUTO):
            argv += ["--upload-port", req.port]
        return argv, pio_environ(req.pio_core), req.project
    if probe == "gdb":
        img = elf_image.read_elf(elf)
        argv = [tool("gdb-multiarch", probe), "-nx", "-batch"]
        for line in _gdb_script(req, img):
            argv += ["-ex", line]
        return argv, None, None
    raise EdgecError(f"unknown probe '{probe}': choose one of {', '.join(p for p in PROBES if p != 'emulator')}")


def _run(argv: list[str], env: dict | None, cwd: Path | None) -> tuple[int, list[str]]:
    # its own process group (pio -> scons -> QEMU), killed whole on a timeout, an interrupt or edgec's death
    try:
        out, code = children.run(argv, timeout=TIMEOUT, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                 stderr=subprocess.STDOUT, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        raise EdgecError(f"{Path(argv[0]).name} did not finish within {TIMEOUT:.0f} s") from None
    except OSError as e:
        raise EdgecError(f"cannot start {argv[0]}: {e.strerror or e}") from None
    return code, [ln.strip() for ln in out.splitlines() if ln.strip()]


def _failure(name: str, lines: list[str], req: Request, probe: str) -> EdgecError:
    cause = next((ln for ln in lines if NO_DEVICE.search(ln)), None)
    last = cause or next((ln for ln in reversed(lines) if re.search(r"error|fail", ln, re.IGNORECASE)),
                         lines[-1] if lines else "no output")
    if probe == "gdb":
        what = (f"start a GDB server for the board at {req.gdb} (openocd, pyocd gdbserver, st-util, JLinkGDBServer) "
                "or give its address (--gdb HOST:PORT)")
    else:
        what = req.board.flash.connect or "connect the board and its probe"
    if cause is None:
        what = f"see the tool's message; {what}"
    return EdgecError(f"flashing with {name} failed ({last}): {what}")


def _gdb_result(lines: list[str], req: Request) -> FlashResult:
    sizes = [int(m.group(1), 16) for ln in lines if (m := re.match(r"Loading section \S+, size 0x([0-9a-f]+)", ln))]
    checked = [ln for ln in lines if re.match(r"Section \S+, range", ln)]
    bad = [ln for ln in checked if not ln.endswith("matched.")]
    if not sizes:
        raise _failure("gdb-multiarch", lines, req, "gdb")
    if bad:
        raise EdgecError(f"gdb-multiarch loaded the firmware through {req.gdb} but it reads back different: {bad[0]}")
    return FlashResult("gdb-multiarch", sum(sizes), bool(checked), f"through the GDB server at {req.gdb}",
                       "" if checked else "the server answered no compare-sections", lines)


def _uf2_drive(roots=UF2_MOUNT_ROOTS) -> Path | None:
    """A mounted RP2040 BOOTSEL drive: a folder with INFO_UF2.TXT naming an RPI-RP2 board."""
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for info in list(root.glob("*/INFO_UF2.TXT")) + list(root.glob("*/*/INFO_UF2.TXT")):
            try:
                if "RPI-RP2" in info.read_text(errors="replace"):
                    return info.parent
            except OSError:
                continue
    return None


def _bootsel_on_usb(usb_root: Path = Path("/sys/bus/usb/devices")) -> bool:
    """Is an RP2040 in BOOTSEL mode (USB 2e8a:0003) plugged in, mounted or not?"""
    for dev in usb_root.glob("*") if usb_root.is_dir() else ():
        try:
            ids = ((dev / "idVendor").read_text().strip(), (dev / "idProduct").read_text().strip())
        except OSError:
            continue
        if ids == ("2e8a", "0003"):
            return True
    return False


def _flash_uf2(req: Request, roots=UF2_MOUNT_ROOTS, usb_root: Path = Path("/sys/bus/usb/devices")) -> FlashResult:
    drive = req.drive or _uf2_drive(roots)
    if drive is None or not (Path(drive) / "INFO_UF2.TXT").is_file():
        where = str(drive) if drive else ", ".join(map(str, roots))
        if drive is None and _bootsel_on_usb(usb_root):
            raise EdgecError(f"UF2 copy: an RP2040 in BOOTSEL mode is on USB (2e8a:0003) but its drive RPI-RP2 is "
                             f"not mounted in {where}: mount it (e.g. udisksctl mount -b /dev/sdX1) or give its mount "
                             "point (--drive)")
        raise EdgecError(f"UF2 copy: no RP2040 in BOOTSEL mode found (no drive with INFO_UF2.TXT in {where}): "
                         f"{req.board.flash.connect or 'hold BOOTSEL while plugging the board in'}, or give its "
                         "mount point (--drive)")
    img = elf_image.read_elf(Path(req.firmware))
    dest = Path(drive) / (Path(req.firmware).stem + ".uf2")
    elf_image.write_uf2(img, dest)
    return FlashResult("a UF2 copy", img.size, False, f"to {drive}",
                       "a BOOTSEL drive cannot be read back; the RP2040 restarts into the firmware")


def flash_firmware(board: Board, firmware: Path, project: Path, probe: str | None = None, port: str | None = None,
                   gdb: str | None = None, drive: Path | None = None, log=None,
                   pio_core: Path | None = None) -> FlashResult:
    """Write `firmware` into `board` with `probe` (default: the profile's) and report what happened (pio_core:
    edgec's PlatformIO core, which the pio probe uploads with)."""
    probe = probe or board.flash.probe
    if probe == "emulator":
        raise EdgecError(f"board '{board.name}' is emulated: its emulator starts with the firmware (no probe needed); "
                         "--probe gdb loads it through the emulator's GDB stub")
    if probe not in PROBES:
        raise EdgecError(f"unknown probe '{probe}': choose one of {', '.join(p for p in PROBES if p != 'emulator')}")
    req = Request(board, Path(firmware), Path(project), port=port, gdb=gdb or DEFAULT_GDB, drive=drive,
                  pio_core=pio_core)
    if probe == "uf2":
        result = _flash_uf2(req)
    else:
        argv, env, cwd = command(probe, req)
        name = Path(argv[0]).name
        code, lines = _run(argv, env, cwd)
        if probe == "gdb":
            result = _gdb_result(lines, req)
            if code != 0 and not result.verified:
                raise _failure(name, lines, req, probe)
        elif code != 0:
            raise _failure(name, lines, req, probe)
        else:
            img_bytes = elf_image.read_elf(Path(firmware)).size
            marker = VERIFIED.get(name)
            verified = bool(marker and any(re.search(marker, ln) for ln in lines))
            why = ("pyOCD's load has no verify step" if probe == "pyocd" else f"{name} printed no verification")
            how = {"openocd": f"({' '.join(board.flash.openocd)})", "pio": "upload",
                   "pyocd": f"(target {board.flash.pyocd_target})"}.get(probe, "")
            result = FlashResult(name, img_bytes, verified, how, "" if verified else why, lines)
    if log:
        log(result.message)
    return result

