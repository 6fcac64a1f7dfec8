"""Dataset-in-flash: test sets too big for the serial link.

The link moves about 20 kB/s (QEMU's UART model, or 115,200 baud through a probe's virtual COM port): 1,000
VWW-size inputs (27 MB) would take 25 minutes before any compute.  Instead the inputs go into the firmware
image, a chunk at a time: edgec builds a dataset firmware once (runtime_c/harness/edgec_dataset.c,
templates/dataset_main.c.j2) with a blob in flash as large as the board's free flash allows, then for each
chunk writes the chunk's samples into a copy of the ELF (edgec.device.image.patch_symbol: the constant's bytes
replaced, no recompilation), flashes or starts it, and reads back only the outputs and the ticks of each run.
Chunks are spread over `units` devices (emulators, or the units of a board farm) that run in parallel.

    result = dataset_flash.run(outdir, board, report, xq, units=2, settings=settings)   # -> outputs, ticks, phases
"""
from __future__ import annotations

import json
import queue
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import serial

from edgec.device.image import patch_symbol
from edgec.errors import EdgecError
from edgec.settings import Settings
from edgec.targets.boards import PORT_EMULATOR, PORT_PROGRAM, Board

BLOB_SYMBOL = "edgec_dataset_blob"
BLOB_HEADER = 16             # "EDS1" count chunk input_bytes (edgec_dataset.h)
STREAM_HEAD = 40             # "EDGECDS1" count chunk output_bytes tick_hz model hash
RECORD_HEAD = 12             # status i32, ticks u64
TAIL = 6                     # "DONE" crc16
FLASH_MARGIN = 16 * 1024     # flash kept free beside the blob (the dataset firmware's own growth, alignment)
STALL_SECONDS = 120.0        # no byte from the device for this long: it hangs
FOLDER = "dataset-firmware"  # inside the build folder (edgec's own)

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE, as edgec_dataset.c computes it over the records."""
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def io_bytes(report: dict, kind: str) -> int:
    """The bytes of one sample's inputs ("input") or outputs ("output") in the images and the stream: the one
    port's, or all ports' of a model with several (edgec_dataset.c writes and sends them one after the other)."""
    if "ports" in report:
        return sum(p["bytes"] for p in report["ports"][f"{kind}s"])
    return report[kind]["bytes"]


def chunk_samples(board: Board, report: dict, max_samples: int | None = None) -> int:
    """How many inputs one image holds: the board's flash beside the bench firmware, less a margin."""
    in_bytes = io_bytes(report, "input")
    used = report["memory"].get("flash_bytes") or 0
    free = board.flash_bytes - used - FLASH_MARGIN - BLOB_HEADER
    n = free // in_bytes
    if n < 1:
        raise EdgecError(f"board '{board.name}' has {max(free, 0):,} B of flash beside the firmware: not one "
                         f"{in_bytes:,}-byte input fits; bench over the serial link (without --dataset-in-flash)")
    return int(min(n, max_samples)) if max_samples else int(n)


def build(outdir: Path, board: Board, report: dict, per_chunk: int, settings: Settings, log: Log = _quiet) -> Path:
    """The dataset firmware of a build folder, built once per blob size (kept in OUTDIR/dataset-firmware)."""
    from edgec.targets import firmware as fw

    blob = BLOB_HEADER + per_chunk * io_bytes(report, "input")
    project = Path(outdir) / FOLDER
    if project.is_symlink() or (project.exists() and not project.is_dir()):     # write_project empties its src/
        raise EdgecError(f"{project} is a link or a file, not the folder edgec keeps the dataset firmware in; "
                         f"remove it or build {outdir} again")
    stamp = project / "dataset.json"
    want = {"model_hash": report["model_hash"], "board": board.name, "blob_bytes": blob}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        elf = project / ("firmware.elf" if (project / "firmware.elf").is_file() else "firmware")
        if elf.is_file():
            return elf
    log(f"building the dataset-in-flash firmware for {board.name}: {per_chunk} inputs ({blob:,} B) per image")
    fw.write_project(project, board, Path(outdir) / "model", report["model"], "dataset", dataset_bytes=blob,
                     core=settings.platformio_home)
    result = fw.build_firmware(project, board, settings, log=log)
    stamp.write_text(json.dumps(want))
    return result.elf


@dataclass
class Phases:
    """Wall seconds per phase, summed over chunks (units overlap them)."""
    image: float = 0.0        # writing the chunk into a copy of the ELF
    load: float = 0.0         # flashing / starting the device until it answers
    run: float = 0.0          # 'G' sent until the last record: the device computing and streaming results
    result_bytes: int = 0     # bytes the device sent back
    chunks: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"image_s": round(self.image, 3), "load_s": round(self.load, 3), "run_s": round(self.run, 3),
                "result_bytes": self.result_bytes, "per_chunk": self.chunks}


def _read_exact(ser, n: int, what: str, cancel: threading.Event | None = None) -> bytes:
    out = bytearray()
    last = time.monotonic()
    while len(out) < n:
        if cancel is not None and cancel.is_set():
            raise EdgecError(f"{what}: stopped (edgec was interrupted)")
        try:
            got = ser.read(n - len(out))
        except (serial.SerialException, OSError) as e:
            raise EdgecError(f"{what}: the link was lost after {len(out)} of {n} bytes ({e})") from None
        if got:
            out += got
            last = time.monotonic()
        elif time.monotonic() - last > STALL_SECONDS:
            raise EdgecError(f"{what}: the device sent nothing for {STALL_SECONDS:.0f} s "
                             f"({len(out)} of {n} bytes received); it hangs or runs another firmware")
    return bytes(out)


def read_stream(ser, count: int, chunk: int, out_bytes: int, model_hash: str, what: str,
                cancel: threading.Event | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Send 'G' and read one chunk's results: (outputs int8 (count, out_bytes), ticks int64 (count,));
    a set `cancel` stops the wait."""
    ser.write(b"G")
    head = _read_exact(ser, STREAM_HEAD, what, cancel)
    magic, n, c, ob, _hz, hash_ = struct.unpack("<8sIIII16s", head)
    if magic != b"EDGECDS1":
        raise EdgecError(f"{what}: the device does not run a dataset firmware (answered {head[:8]!r})")
    if (n, c, ob) != (count, chunk, out_bytes) or hash_.decode("ascii", "replace") != model_hash:
        raise EdgecError(f"{what}: the image holds chunk {c} with {n} inputs of model {hash_!r}; expected chunk "
                         f"{chunk} with {count} of {model_hash}")
    body = _read_exact(ser, count * (RECORD_HEAD + out_bytes) + TAIL, what, cancel)
    if body[-TAIL:-2] != b"DONE" or struct.unpack("<H", body[-2:])[0] != crc16(body[:-TAIL]):
        raise EdgecError(f"{what}: the results arrived corrupted (CRC mismatch)")
    rec = np.frombuffer(body[:-TAIL], np.uint8).reshape(count, RECORD_HEAD + out_bytes)
    status = rec[:, :4].copy().view("<i4")[:, 0]
    if status.any():
        bad = int(np.flatnonzero(status)[0])
        raise EdgecError(f"{what}: the model returned {status[bad]} on input {bad} of the chunk")
    ticks = rec[:, 4:12].copy().view("<u8")[:, 0].astype(np.int64)
    return rec[:, RECORD_HEAD:].copy().view(np.int8), ticks


def _open_unit(board: Board, image: Path, port: str | None, settings: Settings, log: Log):
    """Start (emulated/host) or flash and open (real board) one unit running `image`."""
    from edgec.device.device import open_serial

    if board.serial_port in (PORT_EMULATOR, PORT_PROGRAM) and port in (None, "auto"):
        return open_serial(board, image)
    from edgec.device import flash as flashing
    flashing.flash_firmware(board, image, image.parent, board.flash.probe, port=port, log=log,
                            pio_core=settings.platformio_home)
    return open_serial(board, None, port)


def run(outdir: str | Path, board: Board, report: dict, xq: np.ndarray, units: int = 1,
        ports: list[str | None] | None = None, max_chunk: int | None = None, log: Log = _quiet, *,
        settings: Settings, cancel: threading.Event | None = None) -> dict:
    """Run every input of xq (each as the bytes the device takes, (n, bytes): ports.sample_rows) on `units`
    devices, a chunk per image.  ports: one serial port per unit for real boards (None: start emulators);
    settings: the application's (the firmware's PlatformIO core and build timeout); cancel: set by the caller on
    an interrupt, no further chunk starts (the caller kills the running ones' processes,
    edgec.children.kill_all).  Returns outputs, ticks, chunk size, image and phases."""
    outdir = Path(outdir)
    n = len(xq)
    per_chunk = chunk_samples(board, report, max_chunk)
    per_chunk = min(per_chunk, max(1, -(-n // max(1, units))))     # every unit gets work
    elf = build(outdir, board, report, chunk_samples(board, report, max_chunk), settings, log)
    starts = list(range(0, n, per_chunk))
    out_bytes = io_bytes(report, "output")
    outputs = np.zeros((n, out_bytes), np.int8)
    ticks = np.zeros(n, np.int64)
    phases = Phases()
    lock = threading.Lock()
    todo: queue.Queue = queue.Queue()
    for i, s in enumerate(starts):
        todo.put((i, s))
    errors: list[str] = []
    ports = ports or [None] * units
    flat = xq.reshape(n, -1)
    cancel = cancel or threading.Event()

    def worker(unit: int) -> None:
        image = outdir / FOLDER / f"chunk-unit{unit}{elf.suffix}"
        while not errors and not cancel.is_set():
            try:
                chunk, start = todo.get_nowait()
            except queue.Empty:
                return
            samples = flat[start:start + per_chunk]
            what = f"board '{board.name}' unit {unit}, chunk {chunk} (inputs {start}..{start + len(samples) - 1})"
            t0 = time.monotonic()
            blob = struct.pack("<4sIII", b"EDS1", len(samples), chunk, flat.shape[1]) + samples.tobytes()
            patch_symbol(elf, BLOB_SYMBOL, blob, image)
            t1 = time.monotonic()
            try:
                ser, process = _open_unit(board, image, ports[unit], settings, log)
                try:
                    t2 = time.monotonic()
                    out, tk = read_stream(ser, len(samples), chunk, out_bytes, report["model_hash"], what, cancel)
                finally:
                    ser.close()
                    if process is not None:
                        process.kill()
            except EdgecError as e:
                with lock:
                    errors.append(str(e))
                return
            t3 = time.monotonic()
            with lock:
                outputs[start:start + len(samples)] = out
                ticks[start:start + len(samples)] = tk
                phases.image += t1 - t0
                phases.load += t2 - t1
                phases.run += t3 - t2
                phases.result_bytes += STREAM_HEAD + len(samples) * (RECORD_HEAD + out_bytes) + TAIL
                phases.chunks.append({"chunk": chunk, "unit": unit, "first": start, "samples": len(samples),
                                      "run_s": round(t3 - t2, 3)})
                log(f"dataset-in-flash: chunk {chunk + 1}/{len(starts)} ({len(samples)} inputs) done on unit {unit} "
                    f"in {t3 - t0:.1f} s")

    threads = [threading.Thread(target=worker, args=(u,), daemon=True) for u in range(min(units, len(starts)))]
    t_start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if cancel.is_set():
        raise KeyboardInterrupt
    if errors:
        raise EdgecError(errors[0])
    phases.chunks.sort(key=lambda c: c["chunk"])
    return {"outputs": outputs, "ticks": ticks, "chunk_samples": per_chunk, "chunks": len(starts),
            "units": len(threads), "firmware": str(elf), "wall_s": time.monotonic() - t_start, "phases": phases}
