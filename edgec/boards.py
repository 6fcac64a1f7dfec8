"""Board profiles: one TOML file per board in the boards/ data folder (or a user's own file).

A profile says what the board is (CPU, memory), how PlatformIO builds for it, how edgec reaches its
serial port, what a tick of its timer means, and for emulated boards how to start the emulator.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from edgec.errors import EdgecError
from edgec.resources import resource_dir

# How edgec finds the serial port of a board ([serial] port):
#   "emulator": QEMU serves the UART on a loopback TCP port (read from QEMU's stderr)
#   "program":  the host program prints "EDGEC_SERIAL socket://127.0.0.1:PORT"
#   "":         a real board: the user names the port (e.g. --port /dev/ttyACM0)
#   otherwise:  a default port name or pyserial URL for a real board
PORT_EMULATOR = "emulator"
PORT_PROGRAM = "program"

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@dataclass(frozen=True)
class Board:
    """A board profile (see boards/*.toml)."""

    name: str
    description: str
    cpu: str
    fpu: str
    dsp: bool
    clock_hz: int
    ram_bytes: int
    flash_bytes: int
    emulated: bool
    pio_platform: str               # folder in boards/platforms/ or a PlatformIO platform spec
    pio_board: str                  # PlatformIO board id
    build_flags: tuple[str, ...]
    pio_options: tuple[tuple[str, str], ...]   # extra platformio.ini options ([platformio.options])
    serial_baud: int
    serial_port: str                # "emulator", "program", "" or a default port name / URL
    timing_unit: str                # "emulated instructions", "ns", "cycles", ...
    tick_hz: int                    # rate of the device's tick counter
    units_per_tick: float           # timing units per tick (QEMU: emulated instructions per tick)
    emulator_command: tuple[str, ...] = ()   # argv without -serial/-kernel; empty if not emulated
    path: Path = field(default=Path(), compare=False)

    @property
    def local_platform_dir(self) -> Path | None:
        """The platform folder shipped with edgec (boards/platforms/<platform>), if this board uses one."""
        folder = resource_dir("boards") / "platforms" / self.pio_platform
        return folder if (folder / "platform.json").is_file() else None

    def ticks_to_units(self, ticks: int) -> float:
        """Convert a device tick count into the board's timing unit (see `timing_unit`)."""
        return ticks * self.units_per_tick


def _boards_dir() -> Path:
    return resource_dir("boards")


def _known_names() -> list[str]:
    return sorted(p.stem for p in _boards_dir().glob("*.toml"))


def _get(table: dict, key: str, kind: type | tuple, where: str, path: Path, default=None):
    """table[key] checked against `kind`; missing or wrong -> EdgecError naming file and field."""
    if key not in table:
        if default is not None:
            return default
        raise EdgecError(f"board profile {path}: missing field '{where}{key}'")
    value = table[key]
    ok = isinstance(value, kind) and not (kind in (int, (int, float)) and isinstance(value, bool))
    if not ok:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise EdgecError(f"board profile {path}: field '{where}{key}' must be a {names}, got {value!r}")
    return value


def _str_list(table: dict, key: str, where: str, path: Path) -> tuple[str, ...]:
    value = _get(table, key, list, where, path, default=[])
    if not all(isinstance(v, str) for v in value):
        raise EdgecError(f"board profile {path}: field '{where}{key}' must be a list of strings")
    return tuple(value)


def _options(pio: dict, path: Path) -> tuple[tuple[str, str], ...]:
    options = _get(pio, "options", dict, "platformio.", path, default={})
    for key, value in options.items():
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise EdgecError(f"board profile {path}: field 'platformio.options.{key}' must be a string or integer")
    return tuple((k, str(v)) for k, v in options.items())


def _parse(data: dict, path: Path) -> Board:
    pio = _get(data, "platformio", dict, "", path)
    serial = _get(data, "serial", dict, "", path)
    timing = _get(data, "timing", dict, "", path)
    emulated = _get(data, "emulated", bool, "", path)
    emulator = _get(data, "emulator", dict, "", path, default={}) if emulated else {}
    name = _get(data, "name", str, "", path)
    if not _NAME_RE.match(name):
        raise EdgecError(f"board profile {path}: field 'name' must be lower-case letters, digits, '.', '_' "
                         f"or '-', got {name!r}")
    board = Board(
        name=name,
        description=_get(data, "description", str, "", path),
        cpu=_get(data, "cpu", str, "", path),
        fpu=_get(data, "fpu", str, "", path),
        dsp=_get(data, "dsp", bool, "", path),
        clock_hz=_get(data, "clock_hz", int, "", path),
        ram_bytes=_get(data, "ram_bytes", int, "", path),
        flash_bytes=_get(data, "flash_bytes", int, "", path),
        emulated=emulated,
        pio_platform=_get(pio, "platform", str, "platformio.", path),
        pio_board=_get(pio, "board", str, "platformio.", path),
        build_flags=_str_list(pio, "build_flags", "platformio.", path),
        pio_options=_options(pio, path),
        serial_baud=_get(serial, "baud", int, "serial.", path),
        serial_port=_get(serial, "port", str, "serial.", path),
        timing_unit=_get(timing, "unit", str, "timing.", path),
        tick_hz=_get(timing, "tick_hz", int, "timing.", path),
        units_per_tick=float(_get(timing, "units_per_tick", (int, float), "timing.", path)),
        emulator_command=_str_list(emulator, "command", "emulator.", path) if emulated else (),
        path=path,
    )
    for attr, key in (("ram_bytes", "ram_bytes"), ("flash_bytes", "flash_bytes"), ("tick_hz", "timing.tick_hz"),
                      ("serial_baud", "serial.baud")):
        if getattr(board, attr) <= 0:
            raise EdgecError(f"board profile {path}: field '{key}' must be positive")
    if board.units_per_tick <= 0:
        raise EdgecError(f"board profile {path}: field 'timing.units_per_tick' must be positive")
    if emulated and not board.emulator_command:
        raise EdgecError(f"board profile {path}: an emulated board needs 'emulator.command' (the emulator's argv)")
    return board


def load_board_file(path: Path) -> Board:
    """Read and check one board profile file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise EdgecError(f"cannot read board profile {path}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise EdgecError(f"board profile {path} is not valid TOML: {e}") from None
    return _parse(data, path)


def load_board(name_or_path: str) -> Board:
    """A board by name (boards/<name>.toml) or by the path of a user's .toml profile."""
    text = str(name_or_path)
    if text.endswith(".toml") or "/" in text or "\\" in text:
        path = Path(text).expanduser()
        if not path.is_file():
            raise EdgecError(f"board profile {path} does not exist")
        return load_board_file(path.resolve())
    path = _boards_dir() / f"{text}.toml"
    if not _NAME_RE.match(text) or not path.is_file():
        known = ", ".join(_known_names())
        raise EdgecError(f"unknown board '{text}': known boards are {known} (see `edgec boards`)")
    return load_board_file(path)


def list_boards() -> list[Board]:
    """Every board profile shipped with edgec, sorted by name."""
    return [load_board_file(p) for p in sorted(_boards_dir().glob("*.toml"))]
