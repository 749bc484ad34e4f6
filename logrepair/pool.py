"""Partitions spread over worker processes (`--jobs N`): the one place logrepair starts processes.

A command that scans a log dir hands its per-partition work to a `Mapper`: `serial` runs it in
this process, item after item (the path of `--jobs 1`); `Pool.map` runs chunks of items in worker
processes and yields the results in the items' order, at most a few chunks ahead of the consumer,
so the parent never holds more than that of what it has not used yet. The work functions live
with the work (recovery/scan.py, audit/local.py), take `(context, item)` — the context (the Disk,
the settings) goes to each worker once — and return what one partition needs; everything after
them (the plan, the journal, the apply, the output) stays in this process, in partition order.

Workers start from a forkserver (a clean process that imported the work's module once), never by
forking a process that may hold threads and locks. A worker that dies (killed, out of memory)
becomes `WorkerDied`, one line; Ctrl-C stops the workers before the parent reports it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol, TypeVar

C = TypeVar("C")
T = TypeVar("T")
R = TypeVar("R")

AUTO_MIN_ITEMS = 512
"""With `--jobs` not given, fewer partitions than this are scanned in this process: starting the
forkserver and the workers (0.2-0.3 s) costs about what scanning a few hundred small partitions
(under 1 MiB each) does; at 128 of them `--jobs 2` was slower than `--jobs 1` here."""

_CHUNK_MAX = 32
_WINDOW_PER_JOB = 8


class Mapper(Protocol):
    def __call__(
        self, task: Callable[[C, T], R], context: C, items: Sequence[T]
    ) -> Iterator[R]: ...


class WorkerDied(OSError):
    """A worker process ended without returning its results (killed, out of memory)."""

    def __str__(self) -> str:
        return self.strerror


def serial(task: Callable[[C, T], R], context: C, items: Sequence[T]) -> Iterator[R]:
    """`task(context, item)` for each item in turn, in this process: the serial path."""
    for item in items:
        yield task(context, item)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13
    if count is not None:
        return count() or 1
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


def mapper(jobs: int | None) -> Mapper | None:
    """The mapper for `--jobs`: None (not given) is every available core for large log dirs; 1
    is None, the caller's own loop in this process (the serial path); N > 1 a pool of N."""
    if jobs is None:
        cores = available_cores()
        return Pool(cores, min_items=AUTO_MIN_ITEMS) if cores > 1 else None
    return Pool(jobs) if jobs > 1 else None


@dataclass(frozen=True, slots=True)
class Pool:
    """A pool of `jobs` worker processes for one map, stopped when the map ends however it ends.
    Fewer than `min_items` items (or one) run serially."""

    jobs: int
    min_items: int = 2

    def __call__(self, task: Callable[[C, T], R], context: C, items: Sequence[T]) -> Iterator[R]:
        if len(items) < max(2, self.min_items):
            return serial(task, context, items)
        return self._pooled(task, context, items)

    def _pooled(self, task: Callable[[C, T], R], context: C, items: Sequence[T]) -> Iterator[R]:
        size = max(1, min(_CHUNK_MAX, len(items) // (self.jobs * 8)))
        chunks = iter([items[i : i + size] for i in range(0, len(items), size)])
        workers = min(self.jobs, -(-len(items) // size))
        executor = ProcessPoolExecutor(
            workers, mp_context=_context(task), initializer=_start, initargs=(task, context)
        )
        window: deque[Future] = deque(
            executor.submit(_run, c) for c in islice(chunks, workers * _WINDOW_PER_JOB)
        )
        processes = list((executor._processes or {}).values())
        finished = False
        try:
            while window:
                try:
                    results = window.popleft().result()
                except BrokenProcessPool:
                    raise WorkerDied(0, _died(processes, self.jobs)) from None
                for chunk in islice(chunks, 1):
                    window.append(executor.submit(_run, chunk))
                yield from results
            finished = True
        finally:
            _stop(executor, window, abrupt=not finished)


def _died(processes: list, jobs: int) -> str:
    """What ended a worker: the first one's exit that the pool's own clean-up did not cause."""
    for process in processes:
        process.join(timeout=5)
    codes = [p.exitcode for p in processes if p.exitcode not in (None, 0, -signal.SIGTERM)]
    if codes and codes[0] < 0:
        how = f"was killed by {signal.Signals(-codes[0]).name} (out of memory, or by hand; "
    elif codes:
        how = f"exited with status {codes[0]} ("
    else:
        how = "ended without its results ("
    return f"a worker process of --jobs {jobs} {how}--jobs 1 scans without workers)"


def _context(task: Callable) -> Any:
    """A forkserver that has imported the task's module (spawn where there is no forkserver)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([task.__module__])
    return ctx


def _stop(executor: ProcessPoolExecutor, window: deque[Future], *, abrupt: bool) -> None:
    """Ends the workers: after the last result they exit on their own; when the map is abandoned
    (Ctrl-C, a worker died, the consumer failed) the others are terminated, not waited for."""
    for future in window:
        future.cancel()
    processes = list((executor._processes or {}).values()) if abrupt else []
    executor.shutdown(wait=not abrupt, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()


_work: tuple[Callable, Any] | None = None


def _start(task: Callable, context: Any) -> None:
    """A worker's set-up: the task and its context, once; Ctrl-C is the parent's to handle (the
    terminal sends SIGINT to the whole process group)."""
    global _work
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _work = (task, context)


def _run(chunk: Sequence) -> list:
    task, context = _work
    return [task(context, item) for item in chunk]
