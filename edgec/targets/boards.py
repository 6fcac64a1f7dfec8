"""Board profiles: one TOML file per board in the boards/ data folder (or a user's own file).

A profile says what the board is (CPU, memory), how PlatformIO builds for it, how edgec reaches its
serial port, what a tick of its timer means, and for emulated boards how to start the emulator.
"""
from __future__ import annotations

import re
try:
    import tomllib
except ImportError:             # Python 3.10
    import tomli as tomllib
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

# cpu -> the FPU variants it can have ("none" = soft float)
CPUS = {
    "cortex-m0": ("none",), "cortex-m0plus": ("none",), "cortex-m3": ("none",),
    "cortex-m4": ("none", "fpv4-sp-d16"), "cortex-m7": ("none", "fpv5-sp-d16", "fpv5-d16"),
    "cortex-m33": ("none", "fpv5-sp-d16"), "cortex-m55": ("none", "fp+mve"),
    "riscv32": ("none",), "xtensa-lx7": ("none", "sp"), "host": ("host",),
}
# how a board counts time ([timing] method)
TIMING_METHODS = {
    "systick-icount": "SysTick under QEMU -icount shift=0: exact emulated instruction counts",
    "mcycle-icount": "RISC-V mcycle under QEMU -icount shift=0: exact emulated instruction counts",
    "host-clock": "CLOCK_MONOTONIC of the host",
    "dwt-cyccnt": "the DWT cycle counter of a real Cortex-M3/M4/M7/M33/M55",
    "rp2040-timer": "the RP2040's 64-bit 1 MHz timer (its Cortex-M0+ cores have no cycle counter)",
    "ccount": "the Xtensa CCOUNT cycle register",
}
# the counters boards/platforms/common/edgec_ticks_mcu.c reads for a framework harness
MCU_TIMING_METHODS = ("dwt-cyccnt", "rp2040-timer", "ccount")
# what a vendor-framework firmware must do differently under an emulator ([emulator] deviations); each is one
# -DEDGEC_EMULATOR_<NAME> block of templates/<framework>_main.cpp.j2
EMULATOR_DEVIATIONS = {
    "reset-clock": "the emulator has no clock controller (RCC): keep the reset clock instead of configuring the PLL",
    "polled-tx": "the emulator's UART raises no TX-empty interrupt: write by polling instead of the interrupt-driven buffer",
}
FRAMEWORKS = ("", "arduino")   # "" = edgec's own local platform (no vendor framework)
_TOP_KEYS = {"name", "description", "cpu", "fpu", "dsp", "clock_hz", "ram_bytes", "flash_bytes", "emulated",
             "tested_on_hardware", "cpu_flags", "reserved_ram_bytes", "reserved_flash_bytes", "memory",
             "platformio", "serial", "timing", "emulator", "flash", "mlperf", "labgrid", "cycle_model"}
_TABLE_KEYS = {"platformio": {"platform", "board", "framework", "build_flags", "options"},
               "serial": {"baud", "port"}, "timing": {"method", "unit", "tick_hz", "units_per_tick"},
               "emulator": {"command", "deviations"},
               "flash": {"probe", "usb", "openocd", "pyocd_target", "esptool_chip", "connect"},
               "mlperf": {"baud", "timestamp_pin"}, "labgrid": {"place", "coordinator"}}
# how edgec writes a firmware into a board ([flash] probe, or `--probe`); edgec/device/flash.py runs them
PROBES = {
    "emulator": "start the emulator with the firmware (emulated boards)",
    "pio": "PlatformIO's upload target with the profile's upload_protocol",
    "openocd": "OpenOCD: program, verify, reset (ST-LINK, CMSIS-DAP, J-Link ... per [flash] openocd)",
    "pyocd": "pyOCD (CMSIS-DAP, ST-LINK, J-Link) for the [flash] pyocd_target",
    "stlink": "st-flash (stlink-tools) over an ST-LINK",
    "uf2": "copy a UF2 file to the RP2040's BOOTSEL drive",
    "esptool": "esptool over the ESP32's serial port",
    "gdb": "any GDB server (--gdb HOST:PORT): gdb-multiarch loads, verifies, resets and detaches",
}
_REGION_KEYS = {"name", "kind", "origin", "size", "note", "speed", "section", "alias"}
_CYCLE_KEYS = {"name", "flash_wait_states", "line_bytes", "miss_cycles", "prefetch", "icache_bytes",
               "icache_ways", "dcache_bytes", "dcache_ways", "note"}
_SECTION_RE = re.compile(r"^\.edgec_[a-z0-9_]+$")


@dataclass(frozen=True)
class Region:
    """A memory region of a board; the first of each kind is where the build puts code / data."""

    name: str
    kind: str          # "flash", "ram" or "code-ram" (a zero-wait-state RAM the core fetches code from on its
    #                    I-code bus: `edgec build --code-in-ram` runs the model's kernels there, edgec/targets/code_ram.py)
    origin: int
    size: int
    note: str = ""
    speed: int = 0     # RAM: relative speed, bigger = faster (the planner puts the hottest buffers there)
    section: str = ""  # RAM after the first: the linker section edgec places an arena piece in ("" = unused)
    alias: int = 0     # code-ram: where the same memory also appears among the data RAM (0 = nowhere): the build
    #                    keeps the firmware's RAM below it


@dataclass(frozen=True)
class CycleModel:
    """A real part's memory timing for the cycle estimate ([[cycle_model]]; edgec/bench/cycles.py): code and
    constants in flash read line_bytes at a time behind a one-line buffer, an optional prefetch of the next
    line and optional LRU caches; a line that none of them holds costs miss_cycles core cycles more than a
    zero-wait-state access (default: the wait states)."""

    name: str
    flash_wait_states: int
    line_bytes: int
    miss_cycles: int
    prefetch: bool
    icache_bytes: int = 0
    icache_ways: int = 0
    dcache_bytes: int = 0
    dcache_ways: int = 0
    note: str = ""


@dataclass(frozen=True)
class FlashSettings:
    """How a firmware gets onto the board ([flash] in a profile)."""

    probe: str = "emulator"                  # the default flashing method, a key of PROBES
    usb: tuple[str, ...] = ()                # USB "vvvv:pppp" of the board's serial port (for --port auto)
    openocd: tuple[str, ...] = ()            # OpenOCD config files (e.g. board/st_nucleo_f4.cfg)
    pyocd_target: str = ""                   # pyOCD target name (e.g. stm32f446retx)
    esptool_chip: str = ""                   # esptool --chip (e.g. esp32s3)
    connect: str = ""                        # what a person connects, for error messages


@dataclass(frozen=True)
class Board:
    """A board profile (see boards/*.toml)."""

    name: str
    description: str
    cpu: str                        # a key of CPUS
    fpu: str                        # one of CPUS[cpu]
    dsp: bool                       # Arm DSP (SIMD) extension / similar
    clock_hz: int                   # core clock (0 = not meaningful, e.g. the host)
    ram_bytes: int                  # RAM the build may use for data, arena and stack
    flash_bytes: int                # flash the build may use for code and constants
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
    emulator_deviations: tuple[str, ...] = ()   # keys of EMULATOR_DEVIATIONS the framework harness applies
    framework: str = ""             # PlatformIO framework of the harness ("" = edgec's local platform)
    timing_method: str = ""         # a key of TIMING_METHODS
    tested_on_hardware: bool = False   # has edgec's output run on this real board? (never claimed untested)
    cpu_flags: tuple[str, ...] = ()    # compiler flags selecting the core (Arm / RISC-V gcc)
    reserved_ram_bytes: int = 0     # RAM the framework and harness take before the model (estimate)
    reserved_flash_bytes: int = 0   # flash the framework and harness take before the model (estimate)
    regions: tuple[Region, ...] = ()
    flash: FlashSettings = FlashSettings()
    mlperf_baud: int = 0            # [mlperf] baud: the MLPerf Tiny performance-mode baud (0 = serial.baud)
    mlperf_timestamp_pin: str = ""  # [mlperf] timestamp_pin: the EEMBC energy-mode timestamp GPIO (e.g. "D7")
    labgrid_place: str = ""         # [labgrid] place: the board farm place bench/flash acquire (edgec/farm.py)
    labgrid_coordinator: str = ""   # [labgrid] coordinator: HOST:PORT (default $LG_COORDINATOR)
    cycle_models: tuple[CycleModel, ...] = ()   # [[cycle_model]]: the part's memory timing (real boards)
    path: Path = field(default=Path(), compare=False)

    @property
    def local_platform_dir(self) -> Path | None:
        """The platform folder shipped with edgec (boards/platforms/<platform>), if this board uses one."""
        folder = resource_dir("boards") / "platforms" / self.pio_platform
        return folder if (folder / "platform.json").is_file() else None

    @property
    def arch(self) -> str:
        """"arm", "riscv", "xtensa" or "host"."""
        return {"riscv32": "riscv", "xtensa-lx7": "xtensa", "host": "host"}.get(self.cpu, "arm")

    @property
    def toolchain_prefix(self) -> str | None:
        """The GNU toolchain prefix for this core that Debian packages, or None (host, Xtensa)."""
        return {"arm": "arm-none-eabi-", "riscv": "riscv64-unknown-elf-"}.get(self.arch)

    def region(self, kind: str) -> Region | None:
        """The region the build puts code ("flash") or data ("ram") in, if the profile lists regions."""
        return next((r for r in self.regions if r.kind == kind), None)

    def arena_regions(self) -> tuple[Region, ...]:
        """The RAM regions the model's arena may use: the first (the firmware's data) and every later one with a
        linker section."""
        first = self.region("ram")
        return tuple(r for r in self.regions if r.kind == "ram" and (r is first or r.section))

    def ticks_to_units(self, ticks: int) -> float:
        """Convert a device tick count into the board's timing unit (see `timing_unit`)."""
        return ticks * self.units_per_tick


def default_cpu_flags(cpu: str, fpu: str) -> tuple[str, ...]:
    """gcc flags for a core: -mcpu/-mthumb/-mfpu/-mfloat-abi on Arm, -march/-mabi on RV32."""
    if cpu == "riscv32":
        return ("-march=rv32imac", "-mabi=ilp32", "-misa-spec=2.2")
    if not cpu.startswith("cortex-"):
        return ()
    flags = (f"-mcpu={cpu}", "-mthumb")
    if fpu == "none":
        return flags + ("-mfloat-abi=soft",)
    return flags + (f"-mfpu={'auto' if fpu == 'fp+mve' else fpu}", "-mfloat-abi=hard")


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


def _choice(table: dict, key: str, choices, where: str, path: Path, default=None) -> str:
    value = _get(table, key, str, where, path, default)
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise EdgecError(f"board profile {path}: field '{where}{key}' is {value!r}; it must be one of {listed}")
    return value


def _str_list(table: dict, key: str, where: str, path: Path) -> tuple[str, ...]:
    value = _get(table, key, list, where, path, default=[])
    if not all(isinstance(v, str) for v in value):
        raise EdgecError(f"board profile {path}: field '{where}{key}' must be a list of strings")
    return tuple(value)


def _check_keys(table: dict, allowed: set, where: str, path: Path) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise EdgecError(f"board profile {path}: unknown field '{where}{unknown[0]}' (known: "
                         f"{', '.join(sorted(allowed))})")


def _options(pio: dict, path: Path) -> tuple[tuple[str, str], ...]:
    options = _get(pio, "options", dict, "platformio.", path, default={})
    for key, value in options.items():
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise EdgecError(f"board profile {path}: field 'platformio.options.{key}' must be a string or integer")
        if key in ("platform", "board", "framework", "build_flags"):
            raise EdgecError(f"board profile {path}: 'platformio.options.{key}' duplicates 'platformio.{key}'; "
                             "set it there")
    return tuple((k, str(v)) for k, v in options.items())


def _regions(data: dict, path: Path) -> tuple[Region, ...]:
    regions = []
    for i, r in enumerate(_get(data, "memory", list, "", path, default=[])):
        where = f"memory[{i}]."
        if not isinstance(r, dict):
            raise EdgecError(f"board profile {path}: 'memory' must be an array of tables ([[memory]])")
        _check_keys(r, _REGION_KEYS, where, path)
        region = Region(name=_get(r, "name", str, where, path), kind=_choice(r, "kind", ("flash", "ram", "code-ram"), where, path),
                        origin=_get(r, "origin", int, where, path), size=_get(r, "size", int, where, path),
                        note=_get(r, "note", str, where, path, default=""),
                        speed=_get(r, "speed", int, where, path, default=0),
                        section=_get(r, "section", str, where, path, default=""),
                        alias=_get(r, "alias", int, where, path, default=0))
        if region.alias and region.kind != "code-ram":
            raise EdgecError(f"board profile {path}: region '{region.name}' has an 'alias'; only a code-ram region "
                             "names where its memory also appears among the data RAM")
        if region.size <= 0 or region.origin < 0:
            raise EdgecError(f"board profile {path}: region '{region.name}' needs a positive size and origin >= 0")
        if region.section and (region.kind != "ram" or not _SECTION_RE.match(region.section)
                               or not any(r.kind == "ram" for r in regions)):
            raise EdgecError(f"board profile {path}: region '{region.name}' has section {region.section!r}; a "
                             "section ('.edgec_' and lower-case letters, digits or '_', like '.edgec_dtcm') is for a RAM region after the first, which holds the "
                             "firmware's own data")
        regions.append(region)
    names = [r.section for r in regions if r.section]
    if len(set(names)) != len(names):
        raise EdgecError(f"board profile {path}: two RAM regions name the same section; give each its own")
    return tuple(regions)


def _cycle_models(data: dict, path: Path) -> tuple[CycleModel, ...]:
    models = []
    for i, t in enumerate(_get(data, "cycle_model", list, "", path, default=[])):
        where = f"cycle_model[{i}]."
        if not isinstance(t, dict):
            raise EdgecError(f"board profile {path}: 'cycle_model' must be an array of tables ([[cycle_model]])")
        _check_keys(t, _CYCLE_KEYS, where, path)
        ws = _get(t, "flash_wait_states", int, where, path)
        ints = {k: _get(t, k, int, where, path, default=0) for k in
                ("icache_bytes", "icache_ways", "dcache_bytes", "dcache_ways")}
        m = CycleModel(name=_get(t, "name", str, where, path), flash_wait_states=ws,
                       line_bytes=_get(t, "line_bytes", int, where, path),
                       miss_cycles=_get(t, "miss_cycles", int, where, path, default=ws),
                       prefetch=_get(t, "prefetch", bool, where, path), note=_get(t, "note", str, where, path,
                                                                                default=""), **ints)
        line = m.line_bytes
        if ws < 0 or line <= 0 or line & (line - 1) or m.miss_cycles < 0 or min(ints.values()) < 0 or any(
                b and (not w or b % (line * w)) for b, w in ((m.icache_bytes, m.icache_ways),
                                                            (m.dcache_bytes, m.dcache_ways))):
            raise EdgecError(f"board profile {path}: cycle model '{m.name}' needs wait states >= 0, a power-of-two "
                             "line_bytes, and cache sizes that are a multiple of line_bytes x ways")
        models.append(m)
    return tuple(models)


def _flash_settings(data: dict, local: bool, path: Path) -> FlashSettings:
    """[flash]; emulated boards and the host start their program ("emulator"); a real board without a probe
    (e.g. a user's own profile) uploads with PlatformIO's upload target and its upload_protocol ("pio")."""
    table = _get(data, "flash", dict, "", path, default={})
    _check_keys(table, _TABLE_KEYS["flash"], "flash.", path)
    usb = _str_list(table, "usb", "flash.", path)
    for u in usb:
        if not re.match(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$", u):
            raise EdgecError(f"board profile {path}: 'flash.usb' entry {u!r} must be a USB VID:PID like '0483:374b'")
    default = "emulator" if local else "pio"
    return FlashSettings(probe=_choice(table, "probe", tuple(PROBES), "flash.", path, default=default),
                         usb=tuple(u.lower() for u in usb), openocd=_str_list(table, "openocd", "flash.", path),
                         pyocd_target=_get(table, "pyocd_target", str, "flash.", path, default=""),
                         esptool_chip=_get(table, "esptool_chip", str, "flash.", path, default=""),
                         connect=_get(table, "connect", str, "flash.", path, default=""))


def _parse(data: dict, path: Path) -> Board:
    _check_keys(data, _TOP_KEYS, "", path)
    pio = _get(data, "platformio", dict, "", path)
    serial = _get(data, "serial", dict, "", path)
    timing = _get(data, "timing", dict, "", path)
    emulated = _get(data, "emulated", bool, "", path)
    emulator = _get(data, "emulator", dict, "", path, default={}) if emulated else {}
    mlperf = _get(data, "mlperf", dict, "", path, default={})
    labgrid = _get(data, "labgrid", dict, "", path, default={})
    for key, table in (("platformio", pio), ("serial", serial), ("timing", timing), ("emulator", emulator),
                       ("mlperf", mlperf), ("labgrid", labgrid)):
        _check_keys(table, _TABLE_KEYS[key], key + ".", path)
    name = _get(data, "name", str, "", path)
    if not _NAME_RE.match(name):
        raise EdgecError(f"board profile {path}: field 'name' must be lower-case letters, digits, '.', '_' "
                         f"or '-', got {name!r}")
    cpu = _choice(data, "cpu", tuple(CPUS), "", path)
    fpu = _choice(data, "fpu", CPUS[cpu], "", path)
    cpu_flags = _str_list(data, "cpu_flags", "", path) or default_cpu_flags(cpu, fpu)
    board = Board(
        name=name,
        description=_get(data, "description", str, "", path),
        cpu=cpu,
        fpu=fpu,
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
        emulator_deviations=_str_list(emulator, "deviations", "emulator.", path) if emulated else (),
        framework=_choice(pio, "framework", FRAMEWORKS, "platformio.", path, default=""),
        timing_method=_choice(timing, "method", tuple(TIMING_METHODS), "timing.", path),
        tested_on_hardware=_get(data, "tested_on_hardware", bool, "", path, default=False),
        cpu_flags=cpu_flags,
        reserved_ram_bytes=_get(data, "reserved_ram_bytes", int, "", path, default=0),
        reserved_flash_bytes=_get(data, "reserved_flash_bytes", int, "", path, default=0),
        regions=_regions(data, path),
        flash=_flash_settings(data, emulated or serial.get("port") in (PORT_EMULATOR, PORT_PROGRAM), path),
        mlperf_baud=_get(mlperf, "baud", int, "mlperf.", path, default=0),
        mlperf_timestamp_pin=_get(mlperf, "timestamp_pin", str, "mlperf.", path, default=""),
        labgrid_place=_get(labgrid, "place", str, "labgrid.", path, default=""),
        labgrid_coordinator=_get(labgrid, "coordinator", str, "labgrid.", path, default=""),
        cycle_models=_cycle_models(data, path),
        path=path,
    )
    _check(board, path)
    return board


def _check(board: Board, path: Path) -> None:
    """Consistency rules between fields (each failure names the field to fix)."""
    for attr, key in (("ram_bytes", "ram_bytes"), ("flash_bytes", "flash_bytes"), ("tick_hz", "timing.tick_hz"),
                      ("serial_baud", "serial.baud")):
        if getattr(board, attr) <= 0:
            raise EdgecError(f"board profile {path}: field '{key}' must be positive")
    if board.units_per_tick <= 0:
        raise EdgecError(f"board profile {path}: field 'timing.units_per_tick' must be positive")
    if board.clock_hz < 0 or board.reserved_ram_bytes < 0 or board.reserved_flash_bytes < 0:
        raise EdgecError(f"board profile {path}: 'clock_hz' and 'reserved_*_bytes' must not be negative")
    if board.reserved_ram_bytes >= board.ram_bytes or board.reserved_flash_bytes >= board.flash_bytes:
        raise EdgecError(f"board profile {path}: 'reserved_ram_bytes' / 'reserved_flash_bytes' leave nothing "
                         "for the model; they must be smaller than 'ram_bytes' / 'flash_bytes'")
    if board.emulated and not board.emulator_command:
        raise EdgecError(f"board profile {path}: an emulated board needs 'emulator.command' (the emulator's argv)")
    for deviation in board.emulator_deviations:
        if deviation not in EMULATOR_DEVIATIONS or not board.framework:
            raise EdgecError(f"board profile {path}: 'emulator.deviations' has {deviation!r}; a framework harness "
                             f"knows {', '.join(EMULATOR_DEVIATIONS)}")
    if board.emulated and board.tested_on_hardware:
        raise EdgecError(f"board profile {path}: 'tested_on_hardware' is for real boards; this one is emulated")
    if not board.emulated and board.local_platform_dir is None and board.framework == "":
        raise EdgecError(f"board profile {path}: a real board needs 'platformio.framework' (edgec has a serial "
                         f"harness for: {', '.join(f for f in FRAMEWORKS if f)})")
    if board.framework and board.timing_method not in MCU_TIMING_METHODS:
        raise EdgecError(f"board profile {path}: 'timing.method' {board.timing_method!r} is not available in a "
                         f"{board.framework} harness; use one of {', '.join(MCU_TIMING_METHODS)}")
    if board.timing_method == "dwt-cyccnt" and board.cpu in ("cortex-m0", "cortex-m0plus"):
        raise EdgecError(f"board profile {path}: a {board.cpu} has no DWT cycle counter; set 'timing.method' "
                         "to a timer the chip has (e.g. rp2040-timer)")
    for kind, size_field in (("flash", "flash_bytes"), ("ram", "ram_bytes")):
        region = board.region(kind)
        if region is not None and region.size != getattr(board, size_field):
            raise EdgecError(f"board profile {path}: '{size_field}' ({getattr(board, size_field)}) must equal the "
                             f"size of the first {kind} region '{region.name}' ({region.size}), where the build "
                             f"puts {'code' if kind == 'flash' else 'data'}")


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
