"""A dependency-free progress line with ETA, written to stderr when it is a terminal."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, total: int, stream=None, enabled: bool | None = None):
        self.label, self.total, self.start = label, max(total, 1), time.monotonic()
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._last = 0.0

    def __call__(self, done: int, total: int | None = None) -> None:
        if total:
            self.total = total
        now = time.monotonic()
        if not self.enabled or (done < self.total and now - self._last < 0.2):
            return
        self._last = now
        elapsed = now - self.start
        eta = elapsed / done * (self.total - done) if done else 0.0
        width = 30
        fill = int(width * done / self.total)
        self.stream.write(f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {done}/{self.total} "
                          f"{elapsed:5.1f}s elapsed, ETA {eta:5.1f}s ")
        if done >= self.total:
            self.stream.write("\n")
        self.stream.flush()
