"""Time for the segment manager: wall clock in production, a hand-driven clock in tests and logsim.

Roll-by-time, flush-by-time, retention and the delayed delete of `.deleted` files all read the
clock through here, so a simulated run is deterministic.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def milliseconds(self) -> int: ...


class SystemClock:
    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, now_ms: int = 0) -> None:
        self._now = now_ms
        self._lock = threading.Lock()

    def milliseconds(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        with self._lock:
            self._now += ms
            return self._now

    def set(self, now_ms: int) -> None:
        with self._lock:
            if now_ms < self._now:
                raise ValueError(f"a clock cannot go back (from {self._now} to {now_ms})")
            self._now = now_ms
