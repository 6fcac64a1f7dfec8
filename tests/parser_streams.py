"""Byte streams for the device-side parser harnesses (tests/fuzz/*_harness.c): random, and built from the
protocols' own commands with lengths and offsets at the edges of the stub model's buffers. Used by
tests/test_harness_parsers.py and, as libFuzzer's seed corpus, by scripts/fuzz_parsers.sh."""
from __future__ import annotations

import struct

import numpy as np

# the link harness's stub model (tests/fuzz/link_harness.c)
IN_BYTES, OUT_BYTES, ARENA_BYTES, LAYERS = 300, 10, 600, 3
EDGES = [0, 1, 2, 7, 9, 10, 11, 12, 13, 252, 255, 256, 257, 299, 300, 301, 589, 590, 591, 599, 600, 601,
         0x7FFFFFFF, 0x80000000, 0xFFFFFFF0, 0xFFFFFFFF]
COMMANDS = [1, 2, 3, 4, 5, 6, 7, 8]


def _edge(rng) -> int:
    return int(EDGES[int(rng.integers(len(EDGES)))]) if rng.random() < 0.8 else int(rng.integers(0, 1 << 32))


def link_request(rng) -> tuple[int, bytes]:
    """(type, payload) of one request, mostly a real command with arguments near the buffers' edges."""
    t = int(COMMANDS[int(rng.integers(len(COMMANDS)))]) if rng.random() < 0.9 else int(rng.integers(256))
    if t == 3:
        off, n = _edge(rng), int(rng.integers(0, 253))
        payload = struct.pack("<I", off) + bytes(rng.integers(0, 256, n, dtype=np.uint8))
    elif t == 5:
        payload = struct.pack("<IH", _edge(rng), _edge(rng) & 0xFFFF)
    elif t == 7:
        payload = struct.pack("<I", int(rng.integers(0, 5)) if rng.random() < 0.7 else _edge(rng))
    elif t == 8:
        payload = struct.pack("<BIH", int(rng.integers(0, 4)), _edge(rng), _edge(rng) & 0xFFFF)
    else:
        payload = bytes(rng.integers(0, 256, int(rng.integers(0, 8)), dtype=np.uint8))
    if rng.random() < 0.1:    # a wrong length
        payload = payload[:int(rng.integers(0, len(payload) + 1))] if rng.random() < 0.5 else payload + b"\x01"
    return t, payload


def link_framed(rng, requests: int) -> bytes:
    """A framed-mode input: [len][type][seq][payload][crc ok] records (the harness frames them)."""
    out = bytearray([1])
    seq = 0
    for _ in range(requests):
        t, payload = link_request(rng)
        if rng.random() < 0.8:
            seq = (seq + 1) & 0xFF      # otherwise: the same seq again (a repeated request)
        if rng.random() < 0.03:         # a payload over the 256-byte limit (len byte > 200, odd: +60)
            payload = bytes(rng.integers(1, 256, 281, dtype=np.uint8))
        payload = payload[:255 + 60]
        n = len(payload)
        len_byte = n if n <= 255 else n - 60
        out += bytes([len_byte, t, seq]) + payload + bytes([0 if rng.random() < 0.05 else 1])
    return bytes(out)


def link_raw(rng) -> bytes:
    """A raw-mode input: random bytes with zeros (frame ends) sprinkled in, sometimes long runs without."""
    n = int(rng.integers(0, 900))
    data = rng.integers(0, 256, n, dtype=np.uint8)
    data[rng.random(n) < rng.choice([0.0, 0.002, 0.02, 0.2])] = 0
    return bytes([0]) + data.tobytes()


MLPERF_WORDS = ["name", "profile", "timestamp", "help", "results", "db", "infer", "db load", "db print", "bogus",
                "db load 40", "db load 41", "db load 0", "db load 1", "db load 4294967295", "db load 100000001",
                "infer 1", "infer 3 2", "infer 0", "infer 2 0", "infer 1 99999999999", "infer x y", "db zz",
                "db 0", "db 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"]


def mlperf_stream(rng) -> bytes:
    """Runner commands ('%'-terminated), some with random words, hex, long or non-ASCII text."""
    parts = []
    for _ in range(int(rng.integers(1, 12))):
        r = rng.random()
        if r < 0.6:
            cmd = MLPERF_WORDS[int(rng.integers(len(MLPERF_WORDS)))]
        elif r < 0.8:
            cmd = "db " + "".join(f"{int(v):02x}" for v in rng.integers(0, 256, int(rng.integers(0, 45))))
        elif r < 0.9:
            cmd = "x" * int(rng.integers(70, 200))
        else:
            cmd = bytes(rng.integers(1, 256, int(rng.integers(0, 100)), dtype=np.uint8)).decode("latin-1")
        parts.append(cmd.encode("latin-1") + (b"%" if rng.random() < 0.95 else b"\r\n"))
    return b"".join(parts)


def pack(inputs: list[bytes]) -> bytes:
    """The harnesses' stdin format: [u32 LE length][bytes] per input."""
    return b"".join(struct.pack("<I", len(d)) + d for d in inputs)
