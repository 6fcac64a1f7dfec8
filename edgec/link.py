"""Host side of the edgec serial link (device side: runtime_c/edgec_link.c).

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

from edgec.errors import EdgecError

MAX_PAYLOAD = 256
PROTOCOL_VERSION = 1

SYNC = 0x01          # nonce u32                        -> nonce u32
HELLO = 0x02         # -                                -> see Link.hello()
WRITE_INPUT = 0x03   # offset u32, data                 -> offset u32, length u16
INVOKE = 0x04        # -                                -> status i32, ticks u64
READ_OUTPUT = 0x05   # offset u32, length u16           -> data
REPLY = 0x80         # reply type = request type | REPLY
NAK = 0xEE           # code u8, rejected type u8

NAK_CODES = {1: "corrupted frame (CRC or framing)", 2: "unknown command", 3: "bad arguments (offset/length)",
             4: "frame too long"}
WRITE_CHUNK = MAX_PAYLOAD - 4


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


class Link:
    """The host end of the link over any pyserial-like object (read, write, timeout, in_waiting)."""

    def __init__(self, ser, timeout: float = 2.0, retries: int = 5, invoke_timeout: float = 600.0,
                 describe: str = "device"):
        self.ser = ser
        self.timeout = timeout
        self.retries = retries
        self.invoke_timeout = invoke_timeout
        self.describe = describe        # for error messages, e.g. "board qemu-cortex-m4"
        self.info: dict | None = None
        self.retransmissions = 0
        self._seq = 0
        self._rx = bytearray()
        self.ser.timeout = 0.05          # short reads; deadlines are kept here

    # ---- framing ----
    def _read_frame(self, deadline: float) -> bytes | None:
        """The next raw frame (without delimiter) or None at the deadline."""
        while True:
            end = self._rx.find(0)
            if end >= 0:
                frame = bytes(self._rx[:end])
                del self._rx[:end + 1]
                if frame:
                    return frame
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            waiting = getattr(self.ser, "in_waiting", 0) or 0
            chunk = self.ser.read(max(1, min(waiting, 65536)))
            if chunk:
                self._rx += chunk

    def _request(self, ftype: int, payload: bytes = b"", timeout: float | None = None) -> bytes:
        """Send a request and return the payload of its reply; resend on timeout, NAK or garbage."""
        self._seq = (self._seq + 1) & 0xFF
        frame = b"\x00" + encode_frame(ftype, self._seq, payload)
        timeout = self.timeout if timeout is None else timeout
        problem = "no answer"
        for attempt in range(self.retries + 1):
            if attempt:
                self.retransmissions += 1
            self.ser.write(frame)
            deadline = time.monotonic() + timeout
            while True:
                raw = self._read_frame(deadline)
                if raw is None:
                    break
                try:
                    rtype, rseq, rpayload = decode_frame(raw)
                except ValueError as e:
                    problem = f"corrupted reply ({e})"
                    break
                if rtype == NAK:
                    code = rpayload[0] if rpayload else 0
                    if code == 3:
                        raise EdgecError(f"{self.describe} rejected command 0x{ftype:02x}: {NAK_CODES[3]}")
                    problem = f"NAK: {NAK_CODES.get(code, f'code {code}')}"
                    break
                if rseq == self._seq and rtype == ftype | REPLY:
                    return rpayload
                # a stale reply to an earlier (retried) request: keep reading
        raise EdgecError(f"{self.describe} did not answer command 0x{ftype:02x} after {self.retries + 1} tries "
                         f"({problem}); check that the right firmware runs on it and restart it")

    # ---- commands ----
    def sync(self, attempts: int = 100, interval: float = 0.1) -> None:
        """Wait until the firmware answers (bytes sent before it is ready may be lost)."""
        for _ in range(attempts):
            nonce = os.urandom(4)
            self._seq = (self._seq + 1) & 0xFF
            self.ser.write(b"\x00" + encode_frame(SYNC, self._seq, nonce))
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
        """Board and model identity: board, model, model_hash, input_bytes, output_bytes, tick_hz."""
        p = self._request(HELLO)
        if len(p) < 13:
            raise EdgecError(f"{self.describe} sent a malformed HELLO reply; rebuild and reflash the firmware")
        version, in_bytes, out_bytes, tick_hz = struct.unpack_from("<BIII", p)
        if version != PROTOCOL_VERSION:
            raise EdgecError(f"{self.describe} speaks link protocol v{version}, this edgec speaks "
                             f"v{PROTOCOL_VERSION}: rebuild and reflash the firmware")
        strings = p[13:].split(b"\x00")
        if len(strings) < 3:
            raise EdgecError(f"{self.describe} sent a malformed HELLO reply; rebuild and reflash the firmware")
        board, model, model_hash = (s.decode("utf-8", "replace") for s in strings[:3])
        self.info = dict(board=board, model=model, model_hash=model_hash, input_bytes=in_bytes,
                         output_bytes=out_bytes, tick_hz=tick_hz)
        return dict(self.info)

    def write_input(self, data: bytes, offset: int = 0) -> None:
        for pos in range(0, len(data), WRITE_CHUNK):
            chunk = data[pos:pos + WRITE_CHUNK]
            self._request(WRITE_INPUT, struct.pack("<I", offset + pos) + chunk)

    def invoke(self) -> tuple[int, int]:
        """Run the model once on the device: (status, ticks)."""
        status, ticks = struct.unpack("<iQ", self._request(INVOKE, timeout=self.invoke_timeout))
        return status, ticks

    def read_output(self, length: int, offset: int = 0) -> bytes:
        out = bytearray()
        while len(out) < length:
            n = min(MAX_PAYLOAD, length - len(out))
            out += self._request(READ_OUTPUT, struct.pack("<IH", offset + len(out), n))
        return bytes(out)

    def run(self, input: bytes) -> tuple[bytes, int]:
        """Write the quantized input, invoke the model, read the output: (output bytes, ticks)."""
        info = self.info or self.hello()
        if len(input) != info["input_bytes"]:
            raise EdgecError(f"input has {len(input)} bytes but model '{info['model']}' on {self.describe} "
                             f"expects {info['input_bytes']}")
        self.write_input(bytes(input))
        status, ticks = self.invoke()
        if status != 0:
            raise EdgecError(f"model '{info['model']}' failed on {self.describe} with status {status}")
        return self.read_output(info["output_bytes"]), ticks

    def close(self) -> None:
        try:
            self.ser.close()
        except Exception:
            pass
