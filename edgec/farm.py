"""A labgrid board farm: acquire a place through labgrid's client API (a gRPC coordinator, labgrid >= 24),
find its serial port (a NetworkSerialPort an exporter serves over RFC2217 with ser2net, or a local one), flash
through the place's flashing resource when it has one, power-cycle it when it has a power resource, and
release the place always: on success, on errors, on Ctrl-C and SIGTERM (edgec/children.py turns those into
KeyboardInterrupt, which the `with` unwinds).

    with farm.acquired("lab-f446-1") as place:          # coordinator: --coordinator, else $LG_COORDINATOR
        place.url          # rfc2217://exporter-host:PORT
        place.board        # the place's tag board=PROFILE, or None

A place's board profile is its tag `board=NAME` (labgrid-client -p PLACE set-tags board=nucleo-f446re).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from edgec.errors import EdgecError
from edgec.settings import Settings

ENV_COORDINATOR = "LG_COORDINATOR"          # (read by edgec/settings.py)
SERIAL_RESOURCES = ("NetworkSerialPort", "RawSerialPort", "USBSerialPort")
# labgrid resource class -> the labgrid driver that uses it
POWER_DRIVERS = {"NetworkPowerPort": "NetworkPowerDriver", "PDUDaemonPort": "PDUDaemonDriver",
                 "YKUSHPowerPort": "YKUSHPowerDriver", "USBPowerPort": "USBPowerDriver",
                 "SiSPMPowerPort": "SiSPMPowerDriver", "NetworkYKUSHPowerPort": "YKUSHPowerDriver"}
FLASH_DRIVERS = {"USBDebugger": "OpenOCDDriver", "NetworkUSBDebugger": "OpenOCDDriver",
                 "AlteraUSBBlaster": "OpenOCDDriver", "NetworkAlteraUSBBlaster": "OpenOCDDriver",
                 "USBMassStorage": "USBStorageDriver", "NetworkUSBMassStorage": "USBStorageDriver"}
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def coordinator_address(coordinator: str | None = None) -> str:
    """The coordinator given (the command line and the build's profile resolve it with the environment's
    settings), else the environment's: $LG_COORDINATOR, else 127.0.0.1:20408 (a Python caller's default)."""
    return coordinator or Settings.from_environment().labgrid_coordinator


def _client():
    try:
        from labgrid.remote import client
    except ImportError:
        raise EdgecError("--labgrid needs labgrid: pip install 'edgec[farm]' (or pip install labgrid)") from None
    return client


@dataclass
class Place:
    name: str
    board: str | None                      # tag board=PROFILE
    url: str | None                        # serial port for pyserial (rfc2217://, socket://, /dev/...)
    resources: dict = field(default_factory=dict)     # {(name, class): labgrid resource}
    session: object = None

    def has(self, classes) -> list[str]:
        return [cls for (_, cls) in self.resources if cls in classes]

    @property
    def can_flash(self) -> bool:
        return bool(self.has(FLASH_DRIVERS))

    @property
    def can_power(self) -> bool:
        return bool(self.has(POWER_DRIVERS))


class Session:
    """A labgrid ClientSession on its own event loop.  One per coordinator and process, shared by the matrix's
    threads under a lock: gRPC shares one connection among a process's channels to one address, and the
    coordinator refuses a second client stream on it."""

    def __init__(self, coordinator: str | None = None):
        client = _client()
        self.address = coordinator_address(coordinator)
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)        # gRPC's aio channel binds to the thread's current loop
        args = argparse.Namespace(place=None, allow_unmatched=True, kick=False)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                self.client = client.start_session(self.address, extra={"args": args}, loop=self.loop)
        except Exception as e:       # grpc / labgrid's own errors: the coordinator is not there
            self.loop.close()
            raise EdgecError(f"cannot reach the labgrid coordinator at {self.address}: {e}; start it "
                             f"(labgrid-coordinator) or give its address (--coordinator or ${ENV_COORDINATOR})") from None

    def _call(self, coro_fn, place: str):
        try:
            with _LOCK, contextlib.redirect_stdout(io.StringIO()):
                self.client.args.place = place
                return self.loop.run_until_complete(coro_fn())
        except Exception as e:
            raise EdgecError(f"labgrid place '{place}': {e}") from None

    def place_info(self, name: str):
        try:
            with _LOCK:
                return self.client.get_place(name)
        except Exception as e:
            raise EdgecError(f"labgrid place '{name}': {e} (coordinator {self.address})") from None

    def acquire(self, name: str) -> None:
        self._call(self.client.acquire, name)

    def release(self, name: str) -> None:
        self._call(self.client.release, name)

    def resources(self, name: str) -> dict:
        info = self.place_info(name)
        with _LOCK:
            return self.client.get_target_resources(info)

    def close(self) -> None:
        """Drop one user of the shared session; the last one closes it."""
        with _LOCK:
            self.users -= 1
            if self.users > 0:
                return
            _SESSIONS.pop(self.address, None)
            self._close()

    def _close(self) -> None:
        try:
            self.loop.run_until_complete(self.client.stop())
            self.loop.run_until_complete(self.client.close())
        except Exception:      # closing a session whose coordinator went away: nothing left to do
            pass
        self.loop.close()


_LOCK = threading.RLock()
_SESSIONS: dict[str, Session] = {}


def session(coordinator: str | None = None) -> Session:
    """The process's session with this coordinator (close() it when done: it counts its users)."""
    address = coordinator_address(coordinator)
    with _LOCK:
        if address not in _SESSIONS:
            _SESSIONS[address] = Session(address)
            _SESSIONS[address].users = 0
        _SESSIONS[address].users += 1
        return _SESSIONS[address]


def serial_url(resources: dict) -> str | None:
    """The pyserial URL of a place's serial port resource."""
    for (_, cls), res in resources.items():
        if cls not in SERIAL_RESOURCES:
            continue
        args = res.args
        if cls == "NetworkSerialPort":
            if args.get("protocol", "rfc2217") != "rfc2217":
                return f"socket://{args['host']}:{args['port']}"
            # ser2net answers SET_CONTROL with values pyserial waits for in vain (labgrid's SerialDriver does the same)
            return f"rfc2217://{args['host']}:{args['port']}?ign_set_control"
        return args.get("port")
    return None


def place_boards(names: list[str], coordinator: str | None = None) -> dict[str, str | None]:
    """{place: its board tag} (an unknown place fails here, before anything is acquired)."""
    lab = session(coordinator)
    try:
        return {n: (lab.place_info(n).tags or {}).get("board") for n in names}
    finally:
        lab.close()


@contextlib.contextmanager
def acquired(name: str, coordinator: str | None = None, log: Log = _quiet) -> Iterator[Place]:
    """Acquire the place, yield what edgec needs of it, release it whatever happens."""
    lab = session(coordinator)
    try:
        lab.acquire(name)
        try:
            log(f"labgrid: acquired place {name}")
            info = lab.place_info(name)
            resources = lab.resources(name)
            url = serial_url(resources)
            if url is None:
                raise EdgecError(f"labgrid place '{name}' has no serial port resource (NetworkSerialPort, "
                                 "RawSerialPort or USBSerialPort); add one to its exporter and match it")
            yield Place(name, (info.tags or {}).get("board"), url, resources, lab)
        finally:
            lab.release(name)
            log(f"labgrid: released place {name}")
    finally:
        lab.close()


def _driver(place: Place, classes: dict):
    """A labgrid driver for the first of the place's resources in `classes`, on a Target bound to the place."""
    from labgrid import Target, driver as drivers
    from labgrid.resource.remote import RemotePlace, RemotePlaceManager

    manager = RemotePlaceManager.get()
    manager.session, manager.loop = place.session.client, place.session.loop
    target = Target(place.name, env=None)
    RemotePlace(target, name=place.name)
    cls = place.has(classes)[0]
    drv = getattr(drivers, classes[cls])(target, name=None)
    target.activate(drv)
    return drv


def flash_place(place: Place, firmware: Path, image_dir: Path, log: Log = _quiet) -> dict:
    """Write the firmware through the place's flashing resource: OpenOCD (a debug probe) loads the ELF, a UF2
    board's USB drive (USBMassStorage) gets the .uf2 file."""
    if not place.can_flash:
        raise EdgecError(f"labgrid place '{place.name}' has no flashing resource (USBDebugger for OpenOCD, "
                         "USBMassStorage for UF2): the firmware must already be on the board; give --no-flash")
    drv = _driver(place, FLASH_DRIVERS)
    try:
        if type(drv).__name__ == "USBStorageDriver":
            from edgec.device.image import read_elf, write_uf2
            uf2 = image_dir / f"{firmware.stem}.uf2"
            write_uf2(read_elf(firmware), uf2)
            drv.write_files([str(uf2)], "/", 1)       # the BOOTSEL drive: one FAT partition
            tool = "labgrid USBStorageDriver (UF2)"
        else:
            drv.load(str(firmware))
            tool = "labgrid OpenOCDDriver"
    except Exception as e:
        raise EdgecError(f"labgrid place '{place.name}': flashing failed: {e}") from None
    log(f"labgrid: flashed {firmware.name} into place {place.name} with {tool}")
    return {"tool": tool, "place": place.name}


def power_cycle(place: Place, log: Log = _quiet) -> bool:
    """Power-cycle the place when it has a power resource; False when it has none."""
    if not place.can_power:
        return False
    try:
        _driver(place, POWER_DRIVERS).cycle()
    except Exception as e:
        raise EdgecError(f"labgrid place '{place.name}': power cycle failed: {e}") from None
    log(f"labgrid: power-cycled place {place.name}")
    return True


def bench_on_place(name: str, build: Path, data: Path, coordinator: str | None = None, bench=None,
                   log: Log = _quiet, flash: bool = True, **bench_options) -> dict:
    """Acquire the place, check its board, flash (or require flash=False), power-cycle, bench, release."""
    from edgec import api
    from edgec.targets.build_folder import load_build

    bench = bench or api.bench
    _, board, firmware = load_build(build)
    with acquired(name, coordinator, log) as place:
        if place.board and place.board != board.name:
            raise EdgecError(f"labgrid place '{name}' carries board '{place.board}' but {build} is built for "
                             f"'{board.name}'; pick a place with tag board={board.name}")
        record = None
        if flash:
            record = flash_place(place, firmware, Path(build), log)
        elif not place.can_flash:
            log(f"labgrid: place {name} has no flashing resource: the firmware must already be on the board")
        power_cycle(place, log)
        r = bench(build, data, port=place.url, flash=False, log=lambda m: log(f"[{name}] {m}"), **bench_options)
        r["labgrid"] = {"place": name, "port": place.url, "flashed": record}
        return r


def flash_on_place(name: str, build: Path, coordinator: str | None = None, log: Log = _quiet) -> dict:
    """`edgec flash --labgrid PLACE`: acquire, flash through the place's resource, power-cycle, check that the
    board answers with this build's model, release."""
    from edgec.device.device import open_device
    from edgec.targets.build_folder import check_hello, load_build

    report, board, firmware = load_build(build)
    with acquired(name, coordinator, log) as place:
        if place.board and place.board != board.name:
            raise EdgecError(f"labgrid place '{name}' carries board '{place.board}' but {build} is built for "
                             f"'{board.name}'; pick a place with tag board={board.name}")
        record = flash_place(place, firmware, Path(build), log)
        power_cycle(place, log)
        with open_device(board, None, place.url) as dev:
            hello = dev.link.hello()
            check_hello(hello, report, build)
    return {**hello, "flashed": record}
