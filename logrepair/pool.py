"""Partitions spread over processes (`--jobs N`): the one place logrepair starts processes.

A command that scans a log dir hands its per-partition work to a `Mapper`: `serial` runs it in
this process, item after item (the path of `--jobs 1`); a `Pool` of N runs it in this process and
N - 1 worker processes and yields the results in the items' order. The work functions live with
the work (recovery/scan.py, audit/local.py), take `(context, item)` — the context (the Disk, the
settings) and the items go to each worker once — and return what one partition needs; everything
after them (the plan, the journal, the apply, the output) stays in this process, in partition order.

The items go out in consecutive chunks, shrinking towards the end so that every process has work
until the last ones. Each worker has a few chunks asked of it ahead; whenever the next result due
is a worker's and has not come back yet, this process scans the next chunk itself instead of
waiting, so whatever else it does (taking results in, writing output as they come) is shared out
too, and it is never more than _AHEAD_MAX chunks ahead of what it has used. No threads: one
process reads every result, in order.

Workers start from a forkserver (a clean process that imported the work's module once; `prestart`
starts it before the command imports its own modules), never by forking a process that may hold
threads, locks or the log dir's `.lock`. A worker that dies (killed, out of memory) becomes
`WorkerDied`, one line; Ctrl-C stops the workers before the parent reports it.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Protocol, TypeVar

C = TypeVar("C")
T = TypeVar("T")
R = TypeVar("R")

AUTO_MIN_ITEMS = 512
"""With `--jobs` not given, fewer partitions than this are scanned in this process: starting the
forkserver and the workers (0.2-0.3 s) costs about what scanning a few hundred small partitions
(under 1 MiB each) does; at 128 of them `--jobs 2` was slower than `--jobs 1` here."""

_CHUNK_MAX = 32
_WINDOW_PER_JOB = 3
"""Chunks asked of a worker ahead: it never waits for this process to ask for the next one."""
_AHEAD_MAX = 64
"""Chunks handed out and not yet used: what this process holds while a worker's result is late."""
_RESULTS_PIPE = 1 << 20
"""A worker's results pipe (Linux: up to /proc/sys/fs/pipe-max-size, 1 MiB by default): room for
many chunks' results, so a worker goes on while this process is busy with a chunk of its own."""


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


def prestart(module: str) -> None:
    """Starts the forkserver now, with `module` (the work's) imported in it, so that it is ready
    (and its imports done beside this process's) when a pool needs workers."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        _context(module)
        from multiprocessing import forkserver

        forkserver.ensure_running()


@dataclass(frozen=True, slots=True)
class Pool:
    """This process and `jobs - 1` worker processes for one map, the workers stopped when the map
    ends however it ends. Fewer than `min_items` items (or one) run serially."""

    jobs: int
    min_items: int = 2

    def __call__(self, task: Callable[[C, T], R], context: C, items: Sequence[T]) -> Iterator[R]:
        if len(items) < max(2, self.min_items):
            return serial(task, context, items)
        return self._pooled(task, context, items)

    def _pooled(self, task: Callable[[C, T], R], context: C, items: Sequence[T]) -> Iterator[R]:
        spans = _spans(len(items), self.jobs)
        ctx = _context(task.__module__)
        workers: list[_Worker] = []
        finished = False
        try:
            for _ in range(min(self.jobs, len(items)) - 1):
                workers.append(_Worker.start(ctx, task, context, items))
            queue: deque[_Chunk] = deque()  # the chunks handed out, in the items' order
            while True:
                try:
                    for worker in workers:
                        while worker.asked < _WINDOW_PER_JOB and (span := next(spans, None)):
                            queue.append(worker.ask(span))
                except OSError:  # (a broken pipe: the worker is gone)
                    raise WorkerDied(0, _died(workers, self.jobs)) from None
                if not queue:
                    break
                head = queue[0]
                if head.worker and not head.worker.ready() and len(queue) < _AHEAD_MAX:
                    span = next(spans, None)
                    if span is not None:  # while the workers work, this process works too
                        queue.append(_Chunk(span, None))
                        queue[-1].run(task, context, items)
                        continue
                queue.popleft()
                if head.worker:
                    head.take_in(self.jobs, workers)
                yield from head.results()
            finished = True
        finally:
            _stop(workers, abrupt=not finished)


@contextmanager
def importing(module: str) -> Iterator[None]:
    """Imports `module` in a thread while the block runs, and waits for it at the end: a module
    the command needs only after a pooled map (pyarrow's 0.15-0.4 s) loads beside the workers
    instead of before them. The block's own work gets the interpreter whenever the import waits
    on the disk or the block on a read or a worker. A failed import is left for the command's own
    `import` to raise, in this thread."""

    def load() -> None:
        try:
            importlib.import_module(module)
        except BaseException:  # raised again by the caller's import, where it is reported
            pass

    thread = threading.Thread(target=load, name="logrepair-import", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _spans(count: int, jobs: int) -> Iterator[tuple[int, int]]:
    """Consecutive `[start, end)` chunks of the items, of up to _CHUNK_MAX, shrinking as the end
    nears, so that every process has work until the last items."""
    start = 0
    while start < count:
        size = max(1, min(_CHUNK_MAX, (count - start) // (jobs * 4)))
        yield start, start + size
        start += size


@dataclass(slots=True)
class _Worker:
    process: Any
    requests: Connection
    results: Connection
    asked: int = 0
    """Chunks asked of it whose results this process has not taken in yet."""

    @classmethod
    def start(cls, ctx: Any, task: Callable, context: Any, items: Sequence) -> _Worker:
        get_requests, requests = ctx.Pipe(duplex=False)
        results, put_results = ctx.Pipe(duplex=False)
        _widen(results)
        process = ctx.Process(
            target=_serve,
            args=(get_requests, put_results, task, context, items),
            name="logrepair-worker",
            daemon=True,
        )
        process.start()
        get_requests.close()  # its own ends are the worker's alone: it dies, reading here ends
        put_results.close()
        return cls(process, requests, results)

    def ask(self, span: tuple[int, int]) -> _Chunk:
        self.requests.send(span)
        self.asked += 1
        return _Chunk(span, self)

    def ready(self) -> bool:
        """Its next result (or its end) can be read without waiting."""
        return self.results.poll()


@dataclass(slots=True)
class _Chunk:
    """Items `span` of the map, asked of `worker` or run in this process (`worker` None): their
    results, and the error the serial path raises among them, raised when its turn comes."""

    span: tuple[int, int]
    worker: _Worker | None
    done: list = field(default_factory=list)
    error: Exception | None = None

    def run(self, task: Callable, context: Any, items: Sequence) -> None:
        self.done, self.error = _run(task, context, items, self.span)

    def take_in(self, jobs: int, workers: list[_Worker]) -> None:
        """The worker's results for this chunk, waiting for them if need be."""
        try:
            self.done, self.error = self.worker.results.recv()
        except (EOFError, OSError):
            raise WorkerDied(0, _died(workers, jobs)) from None
        self.worker.asked -= 1

    def results(self) -> Iterator:
        yield from self.done
        if self.error is not None:
            raise self.error


def _run(
    task: Callable, context: Any, items: Sequence, span: tuple[int, int]
) -> tuple[list, Exception | None]:
    """The results of items `span`, up to the first error (then with it), as the serial path."""
    done = []
    try:
        for item in items[span[0] : span[1]]:
            done.append(task(context, item))
    except Exception as e:
        return done, e
    return done, None


def _serve(
    requests: Connection, results: Connection, task: Callable, context: Any, items: Sequence
) -> None:
    """A worker: the chunks asked of it, in turn, until told to stop (None) or this process is
    gone. Ctrl-C is the parent's to handle (the terminal sends SIGINT to the whole group)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            span = requests.recv()
        except EOFError:
            return
        if span is None:
            return
        done, error = _run(task, context, items, span)
        try:
            results.send((done, error))
        except Exception:  # an error that does not pickle: what it says
            results.send((done, RuntimeError(f"{type(error).__name__}: {error}")))


def _widen(connection: Connection) -> None:
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, _RESULTS_PIPE)
    except (ImportError, AttributeError, OSError):  # not Linux, or a lower limit: as it is
        pass


def _died(workers: list[_Worker], jobs: int) -> str:
    """What ended a worker: the first one's exit that the pool's own clean-up did not cause."""
    processes = [w.process for w in workers]
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


def _context(module: str) -> Any:
    """A forkserver that imports `module` (spawn where there is no forkserver)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([module])
    return ctx


def _stop(workers: list[_Worker], *, abrupt: bool) -> None:
    """Ends the workers: after the last result they are told to stop; when the map is abandoned
    (Ctrl-C, a worker died, the consumer failed) they are terminated, not waited for."""
    for worker in workers:
        if abrupt:
            worker.process.terminate()
        else:
            try:
                worker.requests.send(None)
            except OSError:  # it is gone already
                worker.process.terminate()
    for worker in workers:
        worker.process.join()
        worker.requests.close()
        worker.results.close()
