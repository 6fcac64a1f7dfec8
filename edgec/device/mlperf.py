"""Host side of the MLPerf Tiny runner protocol (device side: runtime_c/harness/edgec_mlperf.c, which documents the
commands and what they are based on).  MlperfClient talks to a firmware built with `--protocol mlperf`
the way mlcommons/tiny's runner does (benchmark/runner/device_under_test.py): commands end with '%',
replies are lines ending with "m-ready".

    with open_mlperf(board, firmware) as dut:
        dut.client.load(input_bytes)
        r = dut.client.infer(10, 1)        # {"results": [...], "elapsed_us": ..., "lines": [...]}
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from edgec.targets.boards import Board
from edgec.errors import EdgecError

DB_CHUNK = 31                   # bytes per `db` command, as the runner sends them without a power manager
_RESULTS_RE = re.compile(r"^m-results-\[([^]]*)\]$")
_LAP_RE = re.compile(r"^m-lap-us-([0-9]+)$")
STREAM_CHUNK = 512              # bytes per `db` command on the streaming path (stream_wav_uart.py: 1,028 characters)
_STREAM_RE = re.compile(r"^m-(features|activations|hop-ticks)-\[([^]]*)\]$")


class MlperfClient:
    """The runner's side of the protocol over a pyserial-like object."""

    def __init__(self, ser, timeout: float = 10.0, describe: str = "device"):
        self.ser = ser
        self.timeout = timeout
        self.describe = describe
        self._rx = bytearray()
        self.ser.timeout = 0.05

    def _line(self, deadline: float) -> str | None:
        while True:
            end = self._rx.find(b"\n")
            if end >= 0:
                raw = bytes(self._rx[:end])
                del self._rx[:end + 1]
                return raw.decode("utf-8", "replace").strip("\r\0")
            if time.monotonic() > deadline:
                return None
            waiting = getattr(self.ser, "in_waiting", 0) or 0
            chunk = self.ser.read(max(1, min(waiting, 65536)))
            if chunk:
                self._rx += chunk

    def _until_ready(self, what: str, timeout: float | None = None) -> list[str]:
        deadline = time.monotonic() + (timeout or self.timeout)
        lines = []
        while (line := self._line(deadline)) is not None:
            if line:
                lines.append(line)
            if "m-ready" in line:
                return lines
        raise EdgecError(f"{self.describe} did not answer {what!r} with m-ready within {timeout or self.timeout:.0f} s"
                         f" (got: {lines[-3:] or 'nothing'}); is the --protocol mlperf firmware running?")

    def sync(self, timeout: float = 10.0) -> None:
        """Skip whatever came before (the start-up lines may or may not have been read: opening a port
        drops what already arrived) up to the reply of a `name` command."""
        self.ser.write(b"name%")
        deadline = time.monotonic() + timeout
        named = False
        while (line := self._line(deadline)) is not None:
            named = named or line.startswith("m-name-")
            if named and "m-ready" in line:
                return
        raise EdgecError(f"{self.describe} did not answer 'name' within {timeout:.0f} s; is the --protocol mlperf "
                         "firmware running on it?")

    def command(self, text: str, timeout: float | None = None) -> list[str]:
        """Send one command; its reply lines up to and including m-ready.  e-[...] lines raise."""
        self.ser.write(text.encode() + b"%")
        lines = self._until_ready(text, timeout)
        errors = [ln for ln in lines if ln.startswith("e-[")]
        if errors:
            raise EdgecError(f"{self.describe} refused {text!r}: {errors[0]}")
        return lines

    def name(self) -> str:
        for line in self.command("name"):
            if m := re.match(r"^m-name-dut-\[([^]]+)\]$", line):
                return m.group(1)
        raise EdgecError(f"{self.describe} sent no m-name line")

    def profile(self) -> dict:
        out = {}
        for line in self.command("profile"):
            if m := re.match(r"^m-(model|profile)-\[([^]]+)\]$", line):
                out[m.group(1)] = m.group(2)
        return out

    def load(self, data: bytes) -> None:
        """db load N, then the bytes in hex, DB_CHUNK per command; the last reply says m-load-done."""
        self.command(f"db load {len(data)}")
        lines: list[str] = []
        for i in range(0, len(data), DB_CHUNK):
            lines = self.command("db " + data[i:i + DB_CHUNK].hex())
        if "m-load-done" not in lines:
            raise EdgecError(f"{self.describe} did not confirm the input (no m-load-done)")

    def infer(self, n: int = 1, warmups: int = 0, timeout: float | None = None) -> dict:
        """Run N timed inferences after W warm-ups: results (floats), elapsed_us between the two laps."""
        lines = self.command(f"infer {n} {warmups}", timeout)
        return parse_infer(lines)

    def stream_hop(self, samples) -> dict:
        """sww01: one hop of int16 samples as the runner's streaming path sends it (db load, hex db commands of
        512 bytes, extract_uart_stream): {"features": [...], "activations": [...], "ticks": [front end, model]}."""
        data = b"".join(int(v).to_bytes(2, "little", signed=True) for v in samples)
        self.command(f"db load {len(data)}")
        for i in range(0, len(data), STREAM_CHUNK):
            lines = self.command("db " + data[i:i + STREAM_CHUNK].hex())
        if "m-load-done" not in lines:
            raise EdgecError(f"{self.describe} did not confirm the hop (no m-load-done)")
        out = {}
        for line in self.command("extract_uart_stream"):
            if m := _STREAM_RE.match(line):
                out[m.group(1)] = [int(v) for v in m.group(2).split(",")]
        if set(out) != {"features", "activations", "hop-ticks"}:
            raise EdgecError(f"{self.describe} did not answer extract_uart_stream with features and activations")
        return {"features": out["features"], "activations": out["activations"], "ticks": out["hop-ticks"]}

    def results(self) -> list[float]:
        return parse_infer(self.command("results"))["results"]

    def close(self) -> None:
        try:
            self.ser.close()
        except Exception:
            pass


def parse_infer(lines: list[str]) -> dict:
    """What the runner's _gather_infer_results takes from an infer reply."""
    out: dict = {"lines": lines}
    laps = []
    for line in lines:
        if m := _RESULTS_RE.match(line):
            out["results"] = [float(v) for v in m.group(1).split(",") if v.strip()]
        elif m := _LAP_RE.match(line):
            laps.append(int(m.group(1)))
    if len(laps) >= 2:
        out["elapsed_us"] = laps[-1] - laps[-2]
    return out


def wait_for_banner(ser, timeout: float = 20.0) -> list[str]:
    """Read a freshly started firmware's boot lines up to its first m-ready and return them.  Under QEMU
    the firmware starts only when the port is first opened, so its banner would otherwise land in the
    reply to the runner's first command (a real board has sent it before the port is opened)."""
    client = MlperfClient(ser, timeout=timeout, describe="the emulated board")
    return client._until_ready("boot", timeout)


def open_for_runner(board: Board, firmware: Path | None, baud: int | None = None, emulator_args=()):
    """Start the firmware of an emulated (or host) board for another program, e.g. the MLCommons runner:
    (pyserial URL, started process).  The boot banner is read and the port closed again, so the runner
    that opens the URL next finds the board as a real one: booted, m-ready already sent."""
    from edgec.device.device import open_serial

    ser, process = open_serial(board, firmware, None, baud=baud, emulator_args=tuple(emulator_args))
    try:
        wait_for_banner(ser)
        url = ser.portstr
    except BaseException:
        if process is not None:
            process.kill()
        raise
    finally:
        ser.close()
    return url, process


def open_mlperf(board: Board, firmware: Path | None, port: str | None = None, baud: int | None = None,
                emulator_args=()):
    """Start a --protocol mlperf firmware and return a Device whose .client is an MlperfClient."""
    from edgec.device.device import Device, open_serial

    ser, process = open_serial(board, firmware, port, baud=baud, emulator_args=tuple(emulator_args))
    client = MlperfClient(ser, describe=f"board '{board.name}'")
    dev = Device(board, client, process)
    dev.client = client
    try:
        client.sync()
    except BaseException:
        dev.close()
        raise
    return dev
