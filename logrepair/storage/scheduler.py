"""One-shot delayed tasks (Kafka's `delete-file`, `delete-producer-snapshot`, `flush-log`).

Kafka runs them on a background scheduler thread. Here they wait in a queue until someone calls
`run_pending(now)` — a test or the crash simulator, deterministically — or until the optional
background thread does, which is what a long-running process wants.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable

from .clock import Clock


class Scheduler:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._queue: list[tuple[int, int, str, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def schedule(self, name: str, delay_ms: int, task: Callable[[], None]) -> None:
        due = self.clock.milliseconds() + max(0, delay_ms)
        with self._lock:
            heapq.heappush(self._queue, (due, next(self._seq), name, task))

    def run_pending(self, now: int | None = None) -> int:
        """Runs, in due order, every task due at `now` (default: the clock); returns how many ran.

        A task that raises stays run (Kafka logs and drops it); the error propagates after the
        tasks before it completed, so the caller sees the first failure."""
        now = self.clock.milliseconds() if now is None else now
        ran = 0
        while True:
            with self._lock:
                if not self._queue or self._queue[0][0] > now:
                    return ran
                _, _, _, task = heapq.heappop(self._queue)
            task()
            ran += 1

    def start(self, interval_s: float = 0.1) -> None:
        """Runs due tasks on a daemon thread until `stop()`."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval_s):
                self.run_pending()

        self._thread = threading.Thread(target=loop, name="logrepair-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
