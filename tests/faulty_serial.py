"""A pyserial-like wrapper that damages a byte stream (tests/test_link.py, test_bench_runner.py)."""
import random


class FaultySerial:
    """A pyserial-like wrapper that damages the byte stream both ways: flipped, dropped, duplicated and
    inserted garbage bytes at `rate` per byte (seeded), and, after `mute_after` replies' bytes, silence."""

    def __init__(self, inner, rate=0.01, seed=0, mute_after_bytes=None):
        self.inner = inner
        self.rate = rate
        self.rng = random.Random(seed)
        self.mute_after_bytes = mute_after_bytes
        self.delivered = 0
        self.faults = 0
        self.timeout = None

    def _damage(self, data: bytes) -> bytes:
        out = bytearray()
        for b in data:
            r = self.rng.random()
            if r < self.rate / 4:
                out.append(b ^ (1 << self.rng.randrange(8)))          # flipped bit
            elif r < self.rate / 2:
                pass                                                   # dropped
            elif r < 3 * self.rate / 4:
                out += bytes([b, b])                                   # duplicated
            elif r < self.rate:
                out += bytes([b, self.rng.randrange(256)])             # garbage inserted
            else:
                out.append(b)
                continue
            self.faults += 1
        return bytes(out)

    @property
    def in_waiting(self):
        return self.inner.in_waiting

    def write(self, data):
        self.inner.write(self._damage(data))
        return len(data)

    def read(self, n=1):
        data = self._damage(self.inner.read(n))
        if self.mute_after_bytes is not None:
            data = data[:max(0, self.mute_after_bytes - self.delivered)]
        self.delivered += len(data)
        return data

    def close(self):
        self.inner.close()
