"""The link protocol on the host side: COBS, CRC, framing, and Link against an in-memory device."""
import os
import random
import struct
import time

import pytest

from edgec.device import link as L
from edgec.errors import EdgecError
from faulty_serial import FaultySerial


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00", b"abc", b"a\x00b\x00", bytes(range(256)) * 3,
                                  b"\x01" * 254, b"\x01" * 255, b"\x01" * 254 + b"\x00", os.urandom(1000)])
def test_cobs_round_trip(data):
    enc = L.cobs_encode(data)
    assert 0 not in enc
    assert len(enc) <= len(data) + len(data) // 254 + 1
    assert L.cobs_decode(enc) == data


def test_cobs_rejects_malformed():
    with pytest.raises(ValueError, match="malformed COBS data"):
        L.cobs_decode(b"\x05ab")          # block runs past the end
    with pytest.raises(ValueError, match="malformed COBS data"):
        L.cobs_decode(b"\x02a\x00")       # a zero inside encoded data


def test_crc16_ccitt_false_check_value():
    assert L.crc16(b"123456789") == 0x29B1


def test_frame_round_trip_and_corruption():
    wire = L.encode_frame(L.WRITE_INPUT, 7, b"\x00\x01payload\x00")
    assert wire.endswith(b"\x00") and wire.count(0) == 1
    assert L.decode_frame(wire[:-1]) == (L.WRITE_INPUT, 7, b"\x00\x01payload\x00")
    for i in range(len(wire) - 1):
        bad = bytearray(wire[:-1])
        bad[i] ^= 0x10
        if 0 in bad:
            continue
        with pytest.raises(ValueError, match="CRC mismatch|frame too short|malformed COBS data"):
            L.decode_frame(bytes(bad))
    with pytest.raises(ValueError, match=f"payload of {L.MAX_PAYLOAD + 1} bytes exceeds {L.MAX_PAYLOAD}"):
        L.encode_frame(L.WRITE_INPUT, 0, bytes(L.MAX_PAYLOAD + 1))


class FakeDevice:
    """A Python model of runtime_c/harness/edgec_link.c behind a pyserial-like interface.

    The "model" has two layers: layer 0 = x ^ 0xAA, layer 1 (the output) = layer 0 ^ 0xFF = x ^ 0x55."""

    def __init__(self, in_bytes=600, out_bytes=600, corrupt_replies=(), corrupt_requests=(), mute=False,
                 ignore_writes=()):
        self.input = bytearray(in_bytes)
        self.output = bytearray(out_bytes)
        self.arena = bytearray(in_bytes + 2 * out_bytes)
        self.rx = bytearray()                # host -> device bytes not yet framed
        self.tx = bytearray()                # device -> host bytes not yet read
        self.timeout = None
        self.replies = 0
        self.requests = 0
        self.invokes = 0
        self.writes = 0
        self.corrupt_replies = set(corrupt_replies)    # indices of replies to damage
        self.corrupt_requests = set(corrupt_requests)  # indices of requests to damage
        self.ignore_writes = set(ignore_writes)        # WRITE_INPUTs acknowledged but not done (a device bug)
        self.mute = mute
        self.last = None                     # (seq, type, wire) of the last reply
        self.closed = False
        self.ticks = 1234                    # what INVOKE reports

    # pyserial-like surface
    @property
    def in_waiting(self):
        return len(self.tx)

    def read(self, n=1):
        out = bytes(self.tx[:n])
        del self.tx[:n]
        return out

    def write(self, data):
        for b in data:
            if b:
                self.rx.append(b)
                continue
            if self.rx:
                frame = bytes(self.rx)
                self.rx.clear()
                if self.requests in self.corrupt_requests:
                    frame = bytes([frame[0]]) + bytes([frame[1] ^ 0x40 or 1]) + frame[2:]
                self.requests += 1
                self._frame(frame)
        return len(data)

    def close(self):
        self.closed = True

    def _send(self, ftype, seq, payload):
        wire = bytearray(L.encode_frame(ftype, seq, payload))
        if self.replies in self.corrupt_replies:
            wire[len(wire) // 2] ^= 0x08 if wire[len(wire) // 2] != 0x08 else 0x01
        self.replies += 1
        if not self.mute:
            self.tx += wire
        return bytes(L.encode_frame(ftype, seq, payload))

    def _layers(self):
        l0 = bytes(b ^ 0xAA for b in self.input)
        return [l0, bytes(b ^ 0xFF for b in l0[:len(self.output)])]

    def _run(self, upto=None):
        self.invokes += 1
        layers = self._layers()[:None if upto is None else upto + 1]
        n = len(self.input)
        for i, data in enumerate(layers):
            off = n + i * len(self.output)
            self.arena[off:off + len(data)] = data
        if upto is None:
            self.output[:] = layers[-1]
        return layers

    def _frame(self, raw):
        try:
            ftype, seq, p = L.decode_frame(raw)
        except ValueError:
            self._send(L.NAK, 0, bytes([1, 0]))
            return
        if ftype != L.SYNC and self.last and self.last[:2] == (seq, ftype):
            if not self.mute:
                self.tx += self.last[2]
            return
        if ftype == L.SYNC:
            self._send(ftype | L.REPLY, seq, p)
            self.last = None
            return
        if ftype == L.HELLO:
            payload = struct.pack("<BIIIIII", 2, len(self.input), len(self.output), 25_000_000,
                                  len(self.arena), 2, 0)
            payload += b"fake-board\x00fake\x000123456789abcdef\x00"
        elif ftype == L.WRITE_INPUT:
            off = struct.unpack_from("<I", p)[0]
            data = p[4:]
            if off + len(data) > len(self.input):
                self._send(L.NAK, seq, bytes([3, ftype]))
                return
            if self.writes not in self.ignore_writes:
                self.input[off:off + len(data)] = data
            self.writes += 1
            payload = struct.pack("<IH", off, len(data))
        elif ftype in (L.INVOKE, L.PROFILE):
            in_crc = L.crc16(bytes(self.input))
            self._run()
            payload = struct.pack("<iQHHi", 0, self.ticks, in_crc, L.crc16(bytes(self.output)), -1)
        elif ftype == L.CAPTURE:
            layer = struct.unpack("<I", p)[0]
            in_crc = L.crc16(bytes(self.input))
            data = self._run(upto=layer)[layer]
            off = len(self.input) + layer * len(self.output)
            payload = struct.pack("<iHIIH", 0, in_crc, off, len(data), L.crc16(data))
        elif ftype in (L.READ_OUTPUT, L.READ):
            region, off, n = (0, *struct.unpack("<IH", p)) if ftype == L.READ_OUTPUT else struct.unpack("<BIH", p)
            mem = {0: self.output, 1: self.arena, 2: struct.pack("<II", 1000, 234)}[region]
            payload = bytes(mem[off:off + n])
        else:
            self._send(L.NAK, seq, bytes([2, ftype]))
            return
        self.last = (seq, ftype, self._send(ftype | L.REPLY, seq, payload))


def test_link_run_against_fake_device():
    dev = FakeDevice()
    link = L.Link(dev, timeout=0.2)
    link.sync()
    info = link.hello()
    assert info == dict(board="fake-board", model="fake", model_hash="0123456789abcdef",
                        input_bytes=600, output_bytes=600, tick_hz=25_000_000, arena_bytes=1800,
                        layer_count=2, stack_bytes=0)
    x = os.urandom(600)
    out, ticks = link.run(x)
    assert out == bytes(b ^ 0x55 for b in x) and ticks == 1234
    assert link.retransmissions == 0 and dev.invokes == 1
    link.close()
    assert dev.closed


def test_corrupted_reply_is_retried_without_running_twice():
    dev = FakeDevice()
    link = L.Link(dev, timeout=0.2)
    link.sync()
    link.hello()
    dev.corrupt_replies = {dev.replies + 3}    # the INVOKE reply (after 3 WRITE_INPUT acks)
    x = os.urandom(600)
    out, _ = link.run(x)
    assert out == bytes(b ^ 0x55 for b in x)
    assert link.retransmissions == 1 and dev.invokes == 1   # answered from the device's cached reply


def test_corrupted_request_gets_nak_and_retry():
    dev = FakeDevice()
    link = L.Link(dev, timeout=0.2)
    link.sync()
    dev.corrupt_requests = {dev.requests}
    assert link.hello()["model"] == "fake"
    assert link.retransmissions == 1


def test_silent_device_raises_after_bounded_retries():
    dev = FakeDevice(mute=True)
    link = L.Link(dev, timeout=0.02, retries=2)
    with pytest.raises(EdgecError, match="did not answer the link sync"):
        link.sync(attempts=3, interval=0.01)
    with pytest.raises(EdgecError, match=r"stopped answering: no valid reply to HELLO \(0x02\) after 3 tries"):
        link.hello()
    assert dev.requests == 3 + 3


def test_wrong_input_size_and_bad_offset():
    dev = FakeDevice()
    link = L.Link(dev, timeout=0.2)
    link.sync()
    with pytest.raises(EdgecError, match="expects 600"):
        link.run(b"\x00" * 10)
    with pytest.raises(EdgecError, match="bad arguments"):
        link.write_input(b"\x00" * 10, offset=595)


def test_garbage_before_sync_is_ignored():
    dev = FakeDevice()
    dev.tx += b"\xff\x13garbage\x00\x02\x99\x00"      # a half-booted device's noise
    link = L.Link(dev, timeout=0.2)
    link.sync()
    assert link.hello()["board"] == "fake-board"


def expected(x):
    return bytes(b ^ 0x55 for b in x)


def test_run_checked_profile_and_capture():
    dev = FakeDevice()
    link = L.Link(dev, timeout=0.2)
    link.sync()
    x = os.urandom(600)
    r = link.run_checked(x, profile=True)
    assert r["output"] == expected(x) and r["ticks"] == 1234 and r["stack"] is None
    assert r["layer_ticks"] == [1000, 234]
    assert link.capture(x, 0) == bytes(b ^ 0xAA for b in x)
    assert link.capture(x, 1) == expected(x)
    s = link.stats.to_json(baud=115200)
    assert s["payload_bytes"] >= 3 * 600 and s["throughput_bytes_per_s"] > 0
    assert s["line_bytes_per_s"] == 11520.0


def test_acknowledged_but_lost_input_is_caught_by_the_input_crc():
    """A device that acks a WRITE_INPUT chunk without storing it would run on a stale input: the
    input CRC in the INVOKE reply catches it and the sample is run again."""
    dev = FakeDevice(ignore_writes={1})
    link = L.Link(dev, timeout=0.2)
    link.sync()
    x = os.urandom(600)
    assert link.run(x)[0] == expected(x)
    assert link.stats.sample_retries == 1 and dev.invokes == 2


@pytest.mark.parametrize("seed", range(4))
def test_noisy_link_never_yields_a_wrong_sample(seed):
    """Flipped, dropped, duplicated and inserted bytes both ways (0.2% per byte: about one large frame
    in three is damaged): every sample either comes back right or the link gives up with an
    EdgecError; a wrong output is never returned."""
    dev = FakeDevice()
    ser = FaultySerial(dev, rate=0.002, seed=seed)
    link = L.Link(ser, timeout=0.03, retries=12)
    link.sync(attempts=200, interval=0.03)
    rng = random.Random(seed)
    good = failed = 0
    for _ in range(25):
        x = bytes(rng.randrange(256) for _ in range(600))
        try:
            out, _ = link.run(x)
        except EdgecError:
            failed += 1
            continue
        assert out == expected(x)
        good += 1
    assert ser.faults > 50 and link.retransmissions > 0
    assert good >= 20, (good, failed)


def test_duplicated_and_stale_replies_are_ignored():
    """Every reply arrives twice: the duplicates (stale seq) are skipped, nothing runs twice."""
    class Doubling(FakeDevice):
        def _send(self, ftype, seq, payload):
            wire = super()._send(ftype, seq, payload)
            self.tx += wire
            return wire
    dev = Doubling()
    link = L.Link(dev, timeout=0.2)
    link.sync()
    for _ in range(3):
        x = os.urandom(600)
        assert link.run(x)[0] == expected(x)
    assert dev.invokes == 3 and link.retransmissions == 0


def test_device_that_stops_answering_mid_run_fails_fast_and_clearly():
    dev = FakeDevice()
    ser = FaultySerial(dev, rate=0.0)
    link = L.Link(ser, timeout=0.05, retries=3)
    link.sync()
    x = os.urandom(600)
    link.run(x)
    ser.mute_after_bytes = ser.delivered + 20       # cut off in the middle of the next exchange
    t0 = time.monotonic()
    with pytest.raises(EdgecError, match=r"board|device.*stopped answering.*after 4 tries.*restart"):
        link.run(x)
    assert time.monotonic() - t0 < 2.0


def test_garbage_flood_without_delimiters_is_dropped():
    dev = FakeDevice()
    link = L.Link(dev, timeout=0.2)
    link.sync()
    dev.tx += bytes(range(1, 256)) * 40             # 10 KB of noise without a single 0x00
    x = os.urandom(600)
    assert link.run(x)[0] == expected(x)
    assert len(link._rx) <= L.RX_LIMIT


def test_values_the_device_reports_are_checked_against_the_build():
    """CRC-correct but impossible values: a huge tick count, an output size or layer count that is not the
    build's. Each is one line naming the firmware, never a crash or a 4 GiB read."""
    from edgec.errors import EdgecError
    from edgec.targets.build_folder import check_hello
    dev = FakeDevice()
    dev.ticks = (1 << 64) - 1
    link = L.Link(dev, timeout=0.2)
    link.sync()
    link.hello()
    with pytest.raises(EdgecError, match="ticks for one inference"):
        link.run(os.urandom(600))
    report = {"model": "fake", "model_hash": "0123456789abcdef", "ops": 2,
              "input": {"bytes": 600}, "output": {"bytes": 600}}
    hello = dict(model="fake", model_hash="0123456789abcdef", input_bytes=600, output_bytes=600, layer_count=2)
    check_hello(hello, report, "build")
    for key, value in (("output_bytes", 0xFFFFFFFF), ("input_bytes", 7), ("layer_count", 1 << 31)):
        with pytest.raises(EdgecError, match="flash"):
            check_hello({**hello, key: value}, report, "build")


class RandomReplyDevice(FakeDevice):
    """A device whose replies are well framed and CRC-correct but whose payloads are drawn at random: the right
    type and sequence number with random bytes of a random length, or the right struct sizes with random values."""

    def __init__(self, draw):
        super().__init__()
        self.draw = draw

    def _frame(self, raw):
        ftype, seq, p = L.decode_frame(raw)
        if ftype == L.SYNC:                 # the sync is answered: the link reaches the commands under test
            return super()._frame(raw)
        if ftype == L.HELLO and self.draw(2) == 0:      # a sane HELLO now and then, so run() is reached too
            return super()._frame(raw)
        n = self.draw(64)
        payload = bytes(self.draw(256) for _ in range(n))
        self.tx += L.encode_frame(ftype | L.REPLY, seq, payload)


@pytest.mark.parametrize("seed", range(40))
def test_random_crc_correct_replies_are_one_line_errors_or_right(seed):
    """Whatever a (broken or hostile) firmware answers in well-formed frames, the link either returns an output of
    the model's size or stops with one EdgecError line: never another exception, a hang or a huge read."""
    rng = random.Random(seed)
    dev = RandomReplyDevice(lambda n: rng.randrange(n))
    link = L.Link(dev, timeout=0.05, retries=2)
    link.sync()
    start = time.monotonic()
    try:
        info = link.hello()
        out, _ = link.run(os.urandom(info["input_bytes"] if 0 < info.get("input_bytes", 0) <= 4096 else 600))
        assert len(out) == info["output_bytes"]
    except EdgecError as e:
        assert "\n" not in str(e) and str(e)
    assert time.monotonic() - start < 20
