"""Start a firmware (QEMU, host program, or an already flashed real board) and open its link.

QEMU serves the board's UART on a loopback TCP port it picks itself (port 0) and prints; the host
program prints `EDGEC_SERIAL socket://127.0.0.1:PORT`.  Both are opened with pyserial's socket://,
like a real board's port.  Started processes run in their own process group, which close() kills.
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import socket
import subprocess
import threading
import weakref
from pathlib import Path

import serial

from edgec.targets.boards import PORT_EMULATOR, PORT_PROGRAM, Board
from edgec import children
from edgec.errors import EdgecError
from edgec.device.link import Link
from edgec.device.serial_ports import AUTO, find_port

_QEMU_PORT_RE = re.compile(r"tcp:[\d.]+:(\d+)")
_PROGRAM_RE = re.compile(r"^EDGEC_SERIAL (\S+)")
STARTUP_TIMEOUT = 20.0


class _Process:
    """A child process in its own group whose output a thread keeps draining (a full pipe blocks it)."""

    def __init__(self, argv: list[str], pattern: re.Pattern, what: str, env: dict | None = None):
        self.what = what
        self.tail: collections.deque[str] = collections.deque(maxlen=50)
        self._found = threading.Event()
        self._match: re.Match | None = None
        try:
            # its own process group, which dies with edgec even when edgec is SIGKILLed
            self.proc = children.spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, env=env)
        except OSError as e:
            raise EdgecError(f"cannot start {what} ({argv[0]}): {e.strerror or e}") from None
        self._finalizer = weakref.finalize(self, children.kill_group, self.proc)
        threading.Thread(target=self._drain, args=(pattern,), daemon=True).start()

    def _drain(self, pattern: re.Pattern) -> None:
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            if self._match is None and (m := pattern.search(line)):
                self._match = m
                self._found.set()
        self._found.set()                       # EOF: the process ended

    def wait_for_match(self, timeout: float) -> re.Match:
        self._found.wait(timeout)
        if self._match is None:
            self.kill()
            last = self.tail[-1] if self.tail else "no output"
            state = "exited" if self.proc.poll() is not None else f"printed no port within {timeout:.0f} s"
            raise EdgecError(f"{self.what} {state}: {last}")
        return self._match

    def kill(self) -> None:
        self._finalizer()


class Device:
    """A running firmware and its link (`.link`); use as a context manager or call close()."""

    def __init__(self, board: Board, link: Link, process: _Process | None = None):
        self.board = board
        self.link = link
        self._process = process

    def process_output(self) -> list[str]:
        """The last lines the started emulator or host program printed (not the UART)."""
        return list(self._process.tail) if self._process is not None else []

    def close(self) -> None:
        self.link.close()
        if self._process is not None:
            self._process.kill()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_qemu(board: Board, firmware: Path, gdb_port: int | None = None,
                extra: tuple[str, ...] = ()) -> tuple[_Process, str]:
    """QEMU running `firmware`, or with gdb_port: halted, with an empty flash and its GDB stub on that port
    (extra: more QEMU arguments, e.g. edgec/bench/cycles.py's plugin)."""
    argv = list(board.emulator_command) + list(extra)
    if shutil.which(argv[0]) is None:
        raise EdgecError(f"{argv[0]} not found: install QEMU (e.g. apt-get install qemu-system-arm) "
                         f"to run board '{board.name}'")
    if "-icount" not in argv:
        argv += ["-icount", "shift=0"]          # exact emulated-instruction timing
    argv += ["-serial", "tcp:127.0.0.1:0,server=on,wait=on,nodelay=on"]
    argv += ["-kernel", str(firmware)] if gdb_port is None else ["-S", "-gdb", f"tcp:127.0.0.1:{gdb_port}"]
    proc = _Process(argv, re.compile(r"waiting for connection on: .*" + _QEMU_PORT_RE.pattern),
                    f"QEMU for board '{board.name}'")
    port = proc.wait_for_match(STARTUP_TIMEOUT).group(1)
    return proc, f"socket://127.0.0.1:{port}"


def _start_program(board: Board, firmware: Path) -> tuple[_Process, str]:
    env = dict(os.environ, EDGEC_PORT="0")
    proc = _Process([str(firmware)], _PROGRAM_RE, f"the host firmware {firmware}", env=env)
    return proc, proc.wait_for_match(STARTUP_TIMEOUT).group(1)


def open_serial(board: Board, firmware: Path | None, port: str | None = None, gdb_load=None, baud: int | None = None,
                emulator_args: tuple[str, ...] = ()):
    """Run `firmware` for `board` (or, with `port`, use a board already flashed) and open its serial port:
    (pyserial object, started process or None).  The caller closes both (Device does).
    A real board's port "auto" (or none) is found from the profile's USB IDs (edgec/device/serial_ports.py).
    gdb_load(address): on an emulated board, start the emulator halted with an empty flash and its GDB stub,
    and let gdb_load write the firmware through that stub before the board runs.
    baud: instead of the profile's serial.baud (an MLPerf firmware's own rate).
    emulator_args: more arguments for a QEMU board's emulator."""
    process = None
    try:
        local = board.serial_port in (PORT_EMULATOR, PORT_PROGRAM)
        url = None if port == AUTO and local else port
        url = url or (None if local else board.serial_port) or None
        if url is None or (url == AUTO and not local):
            if not local:
                url = find_port(board, wait=5.0)
            else:
                firmware = Path(firmware) if firmware else None
                if firmware is None or not firmware.is_file():
                    raise EdgecError(f"firmware {firmware} does not exist; build it first (edgec build)")
                if gdb_load is not None and board.serial_port == PORT_EMULATOR:
                    gdb_port = _free_tcp_port()
                    process, url = _start_qemu(board, firmware, gdb_port, tuple(emulator_args))
                else:
                    if board.serial_port == PORT_EMULATOR:
                        process, url = _start_qemu(board, firmware, extra=tuple(emulator_args))
                    else:
                        process, url = _start_program(board, firmware)
                    gdb_load = None
        try:
            ser = serial.serial_for_url(url, baudrate=baud or board.serial_baud, timeout=0.05)
        except (serial.SerialException, OSError, ValueError) as e:
            raise EdgecError(f"cannot open serial port {url} of board '{board.name}': {e}") from None
        if process is not None and gdb_load is not None:
            try:
                gdb_load(f"127.0.0.1:{gdb_port}")      # QEMU listens once its serial client is connected
            except BaseException:
                ser.close()
                raise
        return ser, process
    except BaseException:
        if process is not None:
            process.kill()
        raise


def open_device(board: Board, firmware: Path | None, port: str | None = None, timeout: float = 2.0,
                gdb_load=None, emulator_args: tuple[str, ...] = ()) -> Device:
    """Run `firmware` for `board` (or, with `port`, talk to a board already flashed) and sync the link
    (gdb_load, emulator_args: see open_serial)."""
    ser, process = open_serial(board, firmware, port, gdb_load, emulator_args=emulator_args)
    try:
        link = Link(ser, timeout=timeout, describe=f"board '{board.name}'")
        try:
            link.sync()
        except EdgecError as e:
            if process is not None and process.tail:
                raise EdgecError(f"{e} (last output of {process.what}: {process.tail[-1]})") from None
            raise
        return Device(board, link, process)
    except BaseException:
        ser.close()
        if process is not None:
            process.kill()
        raise
