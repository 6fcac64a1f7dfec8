"""`edgec doctor`: is this machine ready for edgec? One line per component with a verdict.

    ok    found, and the version if it has one
    MISS  missing: what does not work without it, and how to install it (exit 1 if a required one misses)
    info  optional or informative (serial ports seen, Chromium for report screenshots)
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from edgec.settings import Settings

OK, MISS, INFO = "ok", "MISS", "info"

def usb_boards() -> dict[tuple[int, int], str]:
    """USB (VID, PID) -> the board profiles whose serial port has it ([flash] usb in boards/*.toml: the same
    table `--port auto` uses)."""
    from edgec.targets.boards import list_boards

    found: dict[tuple[int, int], list[str]] = {}
    for board in list_boards():
        for ids in board.flash.usb:
            vid, pid = (int(part, 16) for part in ids.split(":"))
            found.setdefault((vid, pid), []).append(board.name)
    return {key: ", ".join(names) for key, names in found.items()}


@dataclass(frozen=True)
class Check:
    verdict: str
    what: str
    detail: str
    required: bool = True

    def line(self) -> str:
        return f"[{self.verdict:^4}] {self.what}: {self.detail}"


def _version(argv: list[str]) -> str | None:
    """The first line of a tool's version output, or None when it cannot be run."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else "(no version output)"


def _tool(what: str, argv: list[str], needed_for: str, install: str, required: bool = True) -> Check:
    v = _version(argv)
    if v is None:
        return Check(MISS if required else INFO, what, f"not found ({needed_for}); install: {install}", required)
    return Check(OK, what, v, required)


def python_check() -> Check:
    from edgec import __version__
    ok = sys.version_info >= (3, 10)
    return Check(OK if ok else MISS, "Python", f"{sys.version.split()[0]} ({sys.executable}), edgec {__version__}"
                 + ("" if ok else "; edgec needs Python 3.10 or newer"))


def platformio_checks(core: Path) -> list[Check]:
    from edgec.errors import EdgecError
    from edgec.targets import pio

    try:
        import platformio
    except ImportError:
        return [Check(MISS, "PlatformIO core", "not installed in this Python; pip install 'platformio>=6.1,<7'")]
    checks = [Check(OK, "PlatformIO core", f"{platformio.__version__} (edgec's core dir {core})")]
    try:
        want = pio.scons_package_version()
    except EdgecError as e:
        return checks + [Check(MISS, "PlatformIO tool-scons", str(e))]
    have = core / "packages" / "tool-scons" / "package.json"
    try:
        import SCons
        scons = f"from the SCons {SCons.__version__} Python package"
    except ImportError:
        return checks + [Check(MISS, "PlatformIO tool-scons", "the scons Python package is missing; pip install scons")]
    state = "installed" if have.is_file() else "made on the first build"
    checks.append(Check(OK, "PlatformIO tool-scons", f"{want} (PlatformIO asks for it) {scons}, {state}"))
    return checks


def serial_checks() -> list[Check]:
    try:
        from serial.tools import list_ports
        ports = list(list_ports.comports())
    except Exception as e:          # pyserial's port scan reads /sys; any failure is only informative
        return [Check(INFO, "serial ports", f"cannot list them: {e}", required=False)]
    if not ports:
        return [Check(INFO, "serial ports", "none seen (emulated and host boards need none)", required=False)]
    checks = []
    boards = usb_boards()
    for p in ports:
        ids = f"{p.vid:04X}:{p.pid:04X}" if p.vid is not None and p.pid is not None else "no USB ids"
        board = boards.get((p.vid, p.pid))
        match = f"matches board profile {board}" if board else "no edgec board profile matches"
        checks.append(Check(INFO, f"serial port {p.device}", f"{ids} {p.description or ''}; {match}", required=False))
    return checks


def chromium_check() -> Check:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if shutil.which(name):
            return Check(OK, "Chromium", f"{_version([name, '--version']) or name} (report screenshots, optional)",
                         required=False)
    return Check(INFO, "Chromium", "not found: only needed to render report.html to PNG in tests "
                 "(apt-get install chromium)", required=False)


def run_checks(settings: Settings) -> list[Check]:
    checks = [python_check(),
              _tool("host C compiler", ["gcc", "--version"], "the host board and exported C", "apt-get install gcc"),
              _tool("Arm toolchain", ["arm-none-eabi-gcc", "--version"], "Cortex-M boards",
                    "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"),
              _tool("RISC-V toolchain", ["riscv64-unknown-elf-gcc", "--version"], "the qemu-riscv32 board",
                    "apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf", required=False),
              _tool("QEMU Arm", ["qemu-system-arm", "--version"], "the emulated Cortex-M boards",
                    "apt-get install qemu-system-arm"),
              _tool("QEMU RISC-V", ["qemu-system-riscv32", "--version"], "the qemu-riscv32 board",
                    "apt-get install qemu-system-misc", required=False),
              _tool("CMake", ["cmake", "--version"], "building cmake exports", "apt-get install cmake", required=False),
              *platformio_checks(settings.platformio_home), *serial_checks(), chromium_check()]
    return checks


def report(settings: Settings | None = None) -> tuple[list[str], int]:
    """The doctor's lines and its exit code: 1 when something required is missing (settings: the
    environment's, read here when not given)."""
    checks = run_checks(settings or Settings.from_environment())
    missing = [c for c in checks if c.verdict == MISS and c.required]
    verdict = (f"edgec doctor: {len(missing)} required component(s) missing" if missing
               else "edgec doctor: ready (every required component found)")
    return [c.line() for c in checks] + [verdict], 1 if missing else 0
