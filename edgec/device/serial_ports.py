"""Find a real board's serial port from the USB VID:PID its profile lists ([flash] usb), with pyserial's port
list.  `--port auto` (the default for real boards) picks the one port that matches; none or several is a
one-line error listing what was seen."""
from __future__ import annotations

import time

from edgec.errors import EdgecError
from edgec.targets.boards import Board

AUTO = "auto"
# USB devices a person may have plugged in, to name what a port is in messages
KNOWN_USB = {
    "0483:374b": "ST-LINK/V2-1", "0483:374e": "STLINK-V3E", "0483:374f": "STLINK-V3", "0483:3753": "STLINK-V3",
    "0483:3754": "STLINK-V3", "0d28:0204": "CMSIS-DAP (DAPLink)", "2e8a:000c": "Raspberry Pi Debug Probe (CMSIS-DAP)",
    "1366:0105": "J-Link", "1366:1015": "J-Link", "1366:1051": "J-Link", "1d50:6018": "Black Magic Probe",
    "2341:805a": "Arduino Nano 33 BLE", "2341:005a": "Arduino Nano 33 BLE (bootloader)",
    "2e8a:00c0": "Raspberry Pi Pico (Arduino mbed core)", "2e8a:000a": "Raspberry Pi Pico (Pico SDK / earlephilhower)",
    "2e8a:0003": "RP2040 in BOOTSEL mode", "303a:1001": "ESP32-S3 native USB", "10c4:ea60": "CP210x USB-UART",
    "1a86:55d3": "CH343 USB-UART", "1a86:7523": "CH340 USB-UART",
}


def usb_id(vid: int | None, pid: int | None) -> str | None:
    return None if vid is None or pid is None else f"{vid:04x}:{pid:04x}"


def list_ports() -> list[tuple[str, str | None, str]]:
    """(device, 'vvvv:pppp' or None, description) of every serial port pyserial sees."""
    from serial.tools import list_ports as lp

    return [(p.device, usb_id(p.vid, p.pid), p.description or "") for p in lp.comports()]


def _describe(port: tuple[str, str | None, str]) -> str:
    device, vidpid, desc = port
    if vidpid is None:
        return device
    return f"{device} ({vidpid} {KNOWN_USB.get(vidpid, desc or 'unknown USB device')})"


def find_port(board: Board, ports: list[tuple[str, str | None, str]] | None = None, wait: float = 0.0) -> str:
    """The serial port of `board` among `ports` (default: the system's, polled for up to `wait` seconds while
    none matches: a board's USB port comes back a moment after a reset)."""
    wanted = {u.lower() for u in board.flash.usb}
    if not wanted:
        raise EdgecError(f"board '{board.name}' lists no USB VID:PID for its serial port ([flash] usb in "
                         f"{board.path}); give the port (--port, e.g. /dev/ttyACM0)")
    deadline = time.monotonic() + wait
    while True:
        seen = list_ports() if ports is None else ports
        matches = [p for p in seen if p[1] in wanted]
        if matches or ports is not None or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    if len(matches) == 1:
        return matches[0][0]
    listing = ", ".join(_describe(p) for p in seen) or "no serial ports at all"
    expected = ", ".join(f"{u} {KNOWN_USB.get(u, '')}".strip() for u in sorted(wanted))
    if not matches:
        raise EdgecError(f"no serial port of board '{board.name}' found (looked for USB {expected}; seen: "
                         f"{listing}): {board.flash.connect or 'connect the board'}, or give the port (--port)")
    raise EdgecError(f"{len(matches)} ports match board '{board.name}' ({', '.join(_describe(p) for p in matches)}); "
                     "choose one with --port")
