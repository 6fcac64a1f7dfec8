"""Host side of the edgec serial link (device side: runtime_c/harness/edgec_link.c).

Every frame is COBS-encoded and ends with a 0x00 byte.  Decoded, a frame is

    [type u8][seq u8][payload 0..256 bytes][crc16 u16 little-endian]

where crc16 is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) over type, seq and payload.  The host
sends a request, the device answers with type | 0x80 and the same seq, or with NAK.  The host
resends a request (same seq) on timeout or NAK; the device answers a repeated seq from its cached
reply without running the command again, so INVOKE is never executed twice.
Integers are little-endian.
"""
from __future__ import annotations

import binascii
import os
import struct
import time

import serial

from edgec.errors import EdgecError
from edgec.plan.guard import describe_status

MAX_PAYLOAD = 256
PROTOCOL_VERSION = 2

SYNC = 0x01          # nonce u32                        -> nonce u32
HELLO = 0x02         # -                                -> see Link.hello()
WRITE_INPUT = 0x03   # offset u32, data                 -> offset u32, length u16
INVOKE = 0x04        # -                                -> status i32, ticks u64, input crc16, output crc16,
                     #                                     stack used i32 (-1: not measured)
READ_OUTPUT = 0x05   # offset u32, length u16           -> data
PROFILE = 0x06       # -                                -> as INVOKE; per-layer ticks in region LAYER_TICKS
CAPTURE = 0x07       # layer u32                        -> status i32, input crc16, offset u32, bytes u32,
                     #                                     crc16 of that layer's output (run stopped after it)
READ = 0x08          # region u8, offset u32, length u16 -> data
RESET = 0x09         # -                                -> - (the model's state as after init; NAK: no state)
REPLY = 0x80         # reply type = request type | REPLY
NAK = 0xEE           # code u8, rejected type u8

REGION_OUTPUT, REGION_ARENA, REGION_LAYER_TICKS = 0, 1, 2
COMMAND_NAMES = {SYNC: "SYNC", HELLO: "HELLO", WRITE_INPUT: "WRITE_INPUT", INVOKE: "INVOKE",
                 READ_OUTPUT: "READ_OUTPUT", PROFILE: "PROFILE", CAPTURE: "CAPTURE", READ: "READ"}
NAK_CODES = {1: "corrupted frame (CRC or framing)", 2: "unknown command", 3: "bad arguments (offset/length)",
             4: "frame too long"}
WRITE_CHUNK = MAX_PAYLOAD - 4
RX_LIMIT = 4 * (MAX_PAYLOAD + 16)    # more bytes than this without a delimiter: garbage, dropped
RUN_COMMANDS = (INVOKE, PROFILE, CAPTURE)


class Stats:
    """What went over the link: payload and wire bytes, the time spent moving data, retransmissions."""

    def __init__(self) -> None:
        self.payload_sent = self.payload_received = self.wire_sent = self.wire_received = 0
        self.io_seconds = 0.0           # time in data-moving requests (not INVOKE/PROFILE/CAPTURE)
        self.retransmissions = 0        # frames sent again (timeout, NAK, corrupted reply)
        self.sample_retries = 0         # samples run again because an end-to-end CRC disagreed

    def to_json(self, baud: int | None = None) -> dict:
        moved = self.payload_sent + self.payload_received
        out = {"payload_bytes": moved, "wire_bytes": self.wire_sent + self.wire_received,
               "io_seconds": round(self.io_seconds, 4),
               "throughput_bytes_per_s": moved / self.io_seconds if self.io_seconds > 0 else None,
               "retransmissions": self.retransmissions, "sample_retries": self.sample_retries}
        line = baud / 10.0 if baud else None          # 8N1: 10 bits per byte
        out["line_bytes_per_s"] = line                # None: a socket, no baud rate (emulated/host boards)
        out["fraction_of_line_rate"] = (out["throughput_bytes_per_s"] / line
                                        if line and out["throughput_bytes_per_s"] else None)
        return out


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor)."""
    return binascii.crc_hqx(data, 0xFFFF)


def cobs_encode(data: bytes) -> bytes:
    """Consistent Overhead Byte Stuffing: the result contains no 0x00 byte."""
    out = bytearray()
    block = bytearray()
    for b in data:
        if b == 0:
            out.append(len(block) + 1)
            out += block
            block.clear()
        else:
            block.append(b)
            if len(block) == 254:
                out.append(255)
                out += block
                block.clear()
    out.append(len(block) + 1)
    out += block
    return bytes(out)


def cobs_decode(data: bytes) -> bytes:
    """Inverse of cobs_encode; ValueError on malformed input."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        code = data[i]
        if code == 0 or i + code > n:
            raise ValueError("malformed COBS data")
        out += data[i + 1:i + code]
        i += code
        if code < 255 and i < n:
            out.append(0)
    return bytes(out)


def encode_frame(ftype: int, seq: int, payload: bytes = b"") -> bytes:
    """One wire frame: COBS(type, seq, payload, crc16) + 0x00."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    body = bytes([ftype & 0xFF, seq & 0xFF]) + payload
    return cobs_encode(body + struct.pack("<H", crc16(body))) + b"\x00"


def decode_frame(encoded: bytes) -> tuple[int, int, bytes]:
    """(type, seq, payload) of one frame without its 0x00 delimiter; ValueError if corrupted."""
    body = cobs_decode(encoded)
    if len(body) < 4:
        raise ValueError("frame too short")
    if crc16(body[:-2]) != struct.unpack("<H", body[-2:])[0]:
        raise ValueError("CRC mismatch")
    return body[0], body[1], body[2:-2]


MAX_TICKS = 1 << 53      # a tick count beyond this is not a measurement (and not exact as a float)


class Link:
    """The host end of the link over any pyserial-like object (read, write, timeout, in_waiting).

    Every request is resent (same seq) on timeout, NAK or a corrupted reply, at most `retries` times;
    then EdgecError says the device stopped answering.  A sample is only accepted when the device's
    CRC of the input it ran on and of the output it produced match what the host sent and read."""

    def __init__(self, ser, timeout: float = 2.0, retries: int = 5, invoke_timeout: float = 600.0,
                 describe: str = "device"):
        self.ser = ser
        self.timeout = timeout
        self.retries = retries
        self.invoke_timeout = invoke_timeout
        self.describe = describe        # for error messages, e.g. "board 'qemu-cortex-m4'"
        self.info: dict | None = None
        self.layer_names: list[str] | None = None   # set by the bench: names a failing layer in errors
        self.stats = Stats()
        self._seq = 0
        self._rx = bytearray()
        self.ser.timeout = 0.05          # short reads; deadlines are kept here

    @property
    def retransmissions(self) -> int:
        return self.stats.retransmissions

    # ---- framing ----
    def _read_frame(self, deadline: float) -> bytes | None:
        """The next raw frame (without delimiter) or None at the deadline."""
        while True:
            end = self._rx.find(0)
            if end >= 0:
                frame = bytes(self._rx[:end])
                del self._rx[:end + 1]
                self.stats.wire_received += end + 1
                if frame:
                    return frame
                continue
            if len(self._rx) > RX_LIMIT:            # a flood of garbage: no frame can be this long
                self.stats.wire_received += len(self._rx)
                self._rx.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                waiting = getattr(self.ser, "in_waiting", 0) or 0
                chunk = self.ser.read(max(1, min(waiting, 65536)))
            except (OSError, serial.SerialException) as e:
                raise self._lost(e) from None
            if chunk:
                self._rx += chunk

    def _lost(self, e: Exception) -> EdgecError:
        return EdgecError(f"the connection to {self.describe} was lost ({e}); the board was reset, unplugged or "
                          "its emulator/program ended: restart it")

    def _write(self, frame: bytes) -> None:
        try:
            self.ser.write(frame)
        except (OSError, serial.SerialException) as e:
            raise self._lost(e) from None
        self.stats.wire_sent += len(frame)

    def _request(self, ftype: int, payload: bytes = b"", timeout: float | None = None,
                 reply_len: int | None = None) -> bytes:
        """Send a request and return the payload of its reply; resend on timeout, NAK or garbage."""
        self._seq = (self._seq + 1) & 0xFF
        frame = b"\x00" + encode_frame(ftype, self._seq, payload)
        timeout = self.timeout if timeout is None else timeout
        problem = "no answer"
        t_start = time.monotonic()
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats.retransmissions += 1
            self._write(frame)
            deadline = time.monotonic() + timeout
            while True:
                raw = self._read_frame(deadline)
                if raw is None:
                    problem = "no answer"
                    break
                try:
                    rtype, rseq, rpayload = decode_frame(raw)
                except ValueError as e:
                    problem = f"corrupted reply ({e})"
                    break
                if rtype == NAK:
                    code = rpayload[0] if rpayload else 0
                    if code == 3 and rseq == self._seq:
                        raise EdgecError(f"{self.describe} rejected command {_name(ftype)}: {NAK_CODES[3]}; "
                                         "the firmware does not match this edgec: rebuild it (edgec build)")
                    problem = f"NAK: {NAK_CODES.get(code, f'code {code}')}"
                    break
                if rseq == self._seq and rtype == ftype | REPLY:
                    if reply_len is not None and len(rpayload) != reply_len:
                        raise EdgecError(f"{self.describe} answered {_name(ftype)} with {len(rpayload)} bytes "
                                         f"instead of {reply_len}; rebuild and reflash the firmware")
                    if ftype not in RUN_COMMANDS:
                        self.stats.io_seconds += time.monotonic() - t_start
                        self.stats.payload_sent += len(payload)
                        self.stats.payload_received += len(rpayload)
                    return rpayload
                # a stale reply to an earlier (retried) request: keep reading
        waited = time.monotonic() - t_start
        raise EdgecError(f"{self.describe} stopped answering: no valid reply to {_name(ftype)} after "
                         f"{self.retries + 1} tries in {waited:.1f} s (last: {problem}); the firmware may have "
                         "crashed or hung, or it is not the edgec benchmark firmware: restart the board")

    # ---- commands ----
    def sync(self, attempts: int = 100, interval: float = 0.1) -> None:
        """Wait until the firmware answers (bytes sent before it is ready may be lost)."""
        for _ in range(attempts):
            nonce = os.urandom(4)
            self._seq = (self._seq + 1) & 0xFF
            self._write(b"\x00" + encode_frame(SYNC, self._seq, nonce))
            deadline = time.monotonic() + interval
            while (raw := self._read_frame(deadline)) is not None:
                try:
                    rtype, _, rpayload = decode_frame(raw)
                except ValueError:
                    continue
                if rtype == SYNC | REPLY and rpayload == nonce:
                    self._rx.clear()
                    return
        raise EdgecError(f"{self.describe} did not answer the link sync within {attempts * interval:.0f} s; "
                         "is the edgec benchmark firmware running on it?")

    def hello(self) -> dict:
        """Board and model identity: board, model, model_hash, input_bytes, output_bytes, tick_hz,
        arena_bytes, layer_count (0: no per-layer commands), stack_bytes (0: unknown)."""
        p = self._request(HELLO)
        if len(p) < 1 or p[0] != PROTOCOL_VERSION:
            version = p[0] if p else "?"
            raise EdgecError(f"{self.describe} speaks link protocol v{version}, this edgec speaks "
                             f"v{PROTOCOL_VERSION}: rebuild and reflash the firmware")
        if len(p) < 25:
            raise EdgecError(f"{self.describe} sent a malformed HELLO reply; rebuild and reflash the firmware")
        _, in_bytes, out_bytes, tick_hz, arena, layers, stack = struct.unpack_from("<BIIIIII", p)
        strings = p[25:].split(b"\x00")
        if len(strings) < 3:
            raise EdgecError(f"{self.describe} sent a malformed HELLO reply; rebuild and reflash the firmware")
        board, model, model_hash = (s.decode("utf-8", "replace") for s in strings[:3])
        self.info = dict(board=board, model=model, model_hash=model_hash, input_bytes=in_bytes,
                         output_bytes=out_bytes, tick_hz=tick_hz, arena_bytes=arena, layer_count=layers,
                         stack_bytes=stack)
        return dict(self.info)

    def write_input(self, data: bytes, offset: int = 0) -> None:
        for pos in range(0, len(data), WRITE_CHUNK):
            chunk = data[pos:pos + WRITE_CHUNK]
            ack = self._request(WRITE_INPUT, struct.pack("<I", offset + pos) + chunk, reply_len=6)
            if struct.unpack("<IH", ack) != (offset + pos, len(chunk)):
                raise EdgecError(f"{self.describe} acknowledged the wrong input chunk; restart the board")

    def _run(self, ftype: int) -> tuple[int, int, int, int, int]:
        """INVOKE or PROFILE: (status, ticks, input crc16, output crc16, stack used or -1)."""
        return struct.unpack("<iQHHi", self._request(ftype, timeout=self.invoke_timeout, reply_len=20))

    def invoke(self) -> tuple[int, int]:
        """Run the model once on the device: (status, ticks)."""
        status, ticks, _, _, _ = self._run(INVOKE)
        return status, ticks

    def reset(self) -> None:
        """Set the model's state back to its initial values (NAME_reset(): a model with state only)."""
        self._request(RESET, reply_len=0)

    def read(self, region: int, length: int, offset: int = 0) -> bytes:
        out = bytearray()
        while len(out) < length:
            n = min(MAX_PAYLOAD, length - len(out))
            out += self._request(READ, struct.pack("<BIH", region, offset + len(out), n), reply_len=n)
        return bytes(out)

    def read_output(self, length: int, offset: int = 0) -> bytes:
        return self.read(REGION_OUTPUT, length, offset)

    def _identity(self) -> dict:
        return self.info or self.hello()

    def _check_input(self, input: bytes) -> dict:
        info = self._identity()
        if len(input) != info["input_bytes"]:
            raise EdgecError(f"input has {len(input)} bytes but model '{info['model']}' on {self.describe} "
                             f"expects {info['input_bytes']}")
        return info

    def run_checked(self, input: bytes, profile: bool = False) -> dict:
        """Write the input, run the model (PROFILE: with per-layer ticks), read the output; accepted only
        when the device's CRCs of the input it ran on and of its output match.  Returns output, ticks,
        stack (bytes or None) and, when profiling, layer_ticks."""
        info = self._check_input(input)
        input = bytes(input)
        if profile and not info["layer_count"]:
            raise EdgecError(f"the firmware on {self.describe} cannot profile layers; rebuild it (edgec build)")
        problem = ""
        for _ in range(self.retries + 1):
            self.write_input(input)
            status, ticks, in_crc, out_crc, stack = self._run(PROFILE if profile else INVOKE)
            if ticks >= MAX_TICKS:
                raise EdgecError(f"{self.describe} reported {ticks:,} ticks for one inference, which no run takes; "
                                 "the firmware is damaged: flash it again")
            if status != 0:
                raise EdgecError(f"model '{info['model']}' failed on {self.describe}: "
                                 f"{describe_status(status, self.layer_names)}")
            if in_crc != crc16(input):
                problem = "the input the device ran on differs from the one sent"
            else:
                out = self.read_output(info["output_bytes"])
                if crc16(out) == out_crc:
                    result = {"output": out, "ticks": ticks, "stack": stack if stack >= 0 else None}
                    if profile:
                        raw = self.read(REGION_LAYER_TICKS, 4 * info["layer_count"])
                        result["layer_ticks"] = list(struct.unpack(f"<{info['layer_count']}I", raw))
                    return result
                problem = "the output read back differs from the device's"
            self.stats.sample_retries += 1
        raise EdgecError(f"{self.describe}: {problem} after {self.retries + 1} tries; the serial link is "
                         "too unreliable: check the cable and baud rate")

    def run(self, input: bytes) -> tuple[bytes, int]:
        """Write the quantized input, invoke the model, read the output: (output bytes, ticks)."""
        r = self.run_checked(input)
        return r["output"], r["ticks"]

    def capture(self, input: bytes, layer: int) -> bytes:
        """The output tensor of one layer (execution order) for this input, read from the device's arena."""
        info = self._check_input(input)
        input = bytes(input)
        for _ in range(self.retries + 1):
            self.write_input(input)
            status, in_crc, offset, size, crc = struct.unpack(
                "<iHIIH", self._request(CAPTURE, struct.pack("<I", layer), timeout=self.invoke_timeout,
                                        reply_len=16))
            if status != 0:
                raise EdgecError(f"model '{info['model']}' failed on {self.describe} before layer {layer} "
                                 f"(status {status})")
            if in_crc == crc16(input):
                data = self.read(REGION_ARENA, size, offset)
                if crc16(data) == crc:
                    return data
            self.stats.sample_retries += 1
        raise EdgecError(f"{self.describe}: layer {layer}'s output could not be read back intact after "
                         f"{self.retries + 1} tries; check the serial link")

    def close(self) -> None:
        try:
            self.ser.close()
        except Exception:
            pass


def _name(ftype: int) -> str:
    return f"{COMMAND_NAMES.get(ftype, 'command')} (0x{ftype:02x})"
