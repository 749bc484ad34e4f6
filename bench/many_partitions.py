"""A broker-sized log dir of many small partitions: verify, repair dry run, audit, index rebuild.

Writes `--partitions` partition dirs (default 1,000) with the project's own storage `Log` through a
`LogDir`, closed cleanly (so the root checkpoints and the clean-shutdown marker are the broker's):
each partition gets 1–3 segments of 64 KiB–1 MiB (seeded, so runs compare), of batches of one of
several codecs (none, gzip, snappy, lz4, zstd), with their indexes, leader-epoch checkpoint and
producer snapshots. Then times, each in a child process over a warm page cache, best of `--runs`:

- the bare loop: open every `.log` and CRC-32C the whole file (the floor any checker pays);
- `logrepair verify --json`, `repair --mode kafka --dry-run`, `audit --json`,
  `rebuild-index --dry-run` and `audit --summaries-out`, each with `--jobs 1` (one core), importing logrepair from cached
  bytecode, as an installed one does (not compiling every module on every run).

Ratios are the bare loop's time over each command's (1.00x = as fast as the bare loop); the goal
of issue 16 is >= 0.5x. `--dir` keeps the log dir (reused by a later run with the same options).

`--jobs N` times each command instead with `--jobs 1` and `--jobs N` back to back (wall time),
best of `--runs` each, and prints serial / pooled (goal >= 1.8x with N = 2 on two cores), with
`audit --summaries-out` too, and the load average before and after. Wall time needs free cores:
with the kernel's autogroup scheduling (one share of the CPUs per login session), a pool run while
other sessions keep the cores busy gets the one share the serial run gets. So it also prints where
the CPU of both runs went — the pooled run's before its pool began and after it ended (it does
that alone), the forkserver's (started with the command, beside its imports) and the workers' —
and the load-independent estimate serial CPU / free-core wall, that wall being the pooled run's
CPU before and after its pool plus the rest of its CPU and the workers' (less the forkserver's
share that ran beside its start) shared over the N processes: what the pool gives on idle cores,
as the process that started the pool scans too whenever a worker's result is not back (a last
chunk of imbalance aside). These runs import logrepair from cached bytecode, as an installed one
does.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.compression import Codec
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log_config import LogConfig
from logrepair.storage.logdir import LogDir
from logrepair.storage.osdisk import OsDisk

KiB = 1024
CODECS = (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD)
TOPICS = 40


def batch_template(codec: int, rng: random.Random) -> bytes:
    """One batch of ~16 KiB of half-compressible values; base offset and leader epoch lie outside
    the CRC, so stamping them keeps the batch valid."""
    words = [b"order", b"user", b"click", b"view", b"cart", b"pay", b"ship", b"refund"]
    records = []
    for i in range(64):
        value = b" ".join(rng.choice(words) for _ in range(20)) + rng.randbytes(120)
        records.append(Record(i, 1_700_000_000_000 + i, b"key-%06d" % rng.randrange(10**6), value))
    return build_batch(records, base_offset=0, codec=codec)


def write_log_dir(path: str, partitions: int, seed: int = 16) -> int:
    """The log dir; returns the bytes of `.log` written."""
    rng = random.Random(seed)
    templates = {codec: batch_template(codec, rng) for codec in CODECS}
    disk = OsDisk()
    total = 0
    logdir = LogDir.open(disk, path, create=True)
    try:
        for n in range(partitions):
            tp = TopicPartition(f"topic-{n % TOPICS}", n // TOPICS)
            segment_bytes = rng.randint(64 * KiB, 1024 * KiB)
            segments = rng.randint(1, 3)
            log = logdir.create_log(tp, LogConfig(segment_bytes=segment_bytes))
            template = bytearray(templates[CODECS[n % len(CODECS)]])
            per_append = max(1, segment_bytes // len(template))  # one append fills a segment
            count = per_append * segments
            offset = 0
            for first in range(0, count, per_append):
                chunk = bytearray()
                for _ in range(min(per_append, count - first)):
                    template[0:8] = offset.to_bytes(8, "big")
                    template[12:16] = (n % 3).to_bytes(4, "big")  # partition leader epoch
                    chunk += template
                    offset += 64
                log.append_batches(bytes(chunk))
                total += len(chunk)
            log.close()  # its file handles: thousands of open logs pass the open-file limit
    finally:
        logdir.close()
    return total


BARE = r"""
import os, sys, time
from logrepair.format.crc import crc32c
c0 = time.process_time()
n = 0
for entry in os.scandir(sys.argv[1]):
    if entry.is_dir():
        for name in os.listdir(entry.path):
            if name.endswith(".log"):
                with open(os.path.join(entry.path, name), "rb") as f:
                    crc32c(f.read())
                n += 1
print(time.process_time() - c0)
"""

TIMED = r"""
import contextlib, io, os, resource, sys, time
from multiprocessing import forkserver
from logrepair import pool
from logrepair.cli import main

span = []  # this process's CPU when the first map of a pool began and when the last one ended
pooled = pool.Pool._pooled

def timed(*args):
    span[:1] = span[:1] or [time.process_time()]
    yield from pooled(*args)
    span[1:] = [time.process_time()]

if __name__ == "__main__":
    pool.Pool._pooled = timed
    c0, w0 = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(sys.argv[1:])
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    # the workers' CPU: they are the forkserver's children; stopping it (a private method, kept
    # for CPython's own tests) reaps it, and with it the CPU of the children it reaped. The
    # forkserver's own CPU (its start and imports, beside this process's) from /proc first.
    server, own = forkserver._forkserver._forkserver_pid, 0.0
    if server is not None:
        with open(f"/proc/{server}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        forkserver._forkserver._stop()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, after = (span[0] - c0, cpu - (span[1] - c0)) if len(span) == 2 else (cpu, 0.0)
    print(cpu, wall, children.ru_utime + children.ru_stime, before, after, own, code)
"""

WARM = "from logrepair.cli import build_parser\nbuild_parser()\nprint(0)\n"

COMMANDS = {
    "verify --json": ["verify", "--json"],
    "repair --mode kafka --dry-run": ["repair", "--mode", "kafka", "--dry-run"],
    "audit --json": ["audit", "--json"],
    "rebuild-index --dry-run": ["rebuild-index", "--dry-run"],
}


def with_summaries(dest: str) -> dict[str, list[str]]:
    """COMMANDS and `audit --summaries-out` into `dest` (every segment scanned again each run)."""
    return {
        **COMMANDS,
        "audit --summaries-out": ["audit", "--summaries-out", dest, "--full-rescan"],
    }


def cpu_seconds(code: str, *args: str, bytecode: bool = False) -> float:
    """CPU seconds of one child run (`time.process_time`, so other load disturbs it less)."""
    return child_run(code, *args, bytecode=bytecode)[0]


class Run(NamedTuple):
    """One child run, in seconds."""

    cpu: float
    wall: float
    workers: float
    """CPU of the pool's forkserver and workers."""
    before: float
    """CPU before the pool began (all of it without a pool)."""
    after: float
    """CPU after the pool ended."""
    forkserver: float
    """CPU of the forkserver itself, started (`pool.prestart`) as the run began."""


def child_run(code: str, *args: str, bytecode: bool = False) -> Run:
    """CPU, wall and worker CPU seconds of one child run, and where the CPU went. The code runs
    from a file, as a program's main module: a pool's workers import it again (as `__mp_main__`),
    as they would the `logrepair` script. `bytecode`: modules imported from cached bytecode, as an
    installed logrepair's are (PYTHONDONTWRITEBYTECODE, set here, makes every process compile
    every module it imports: ~0.3 s in each run and again in a pool's forkserver)."""
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
        script.write(code)
        script.flush()
        proc = subprocess.run(
            [sys.executable, script.name, *args], capture_output=True, text=True, env=env
        )
    if proc.returncode != 0:
        raise RuntimeError(f"{args} failed: {proc.stderr[-2000:]}")
    cpu, *rest = proc.stdout.split()
    if len(rest) < 6:  # the bare loop: CPU only
        return Run(float(cpu), float(cpu), 0.0, float(cpu), 0.0, 0.0)
    *numbers, status = rest
    if status not in ("0", "1"):
        raise RuntimeError(f"{args} exited {status}")
    return Run(float(cpu), *map(float, numbers))


def free_cores_wall(run: Run, jobs: int) -> float:
    """The wall time of a pooled run where nothing else runs: what it does alone before its
    pool begins (the forkserver starting beside it) and after it ends, plus the rest of its
    CPU and all of its workers' shared out over the N processes (this one scans too, whenever
    a worker's result is not back yet)."""
    beside = min(run.forkserver, run.before)
    shared = run.cpu - run.before - run.after + run.workers - beside
    return run.before + run.after + shared / jobs


def compare_jobs(path: str, jobs: int, runs: int, only: list[str] | None) -> None:
    """Each command with `--jobs 1` and `--jobs JOBS`, alternately, `runs` times: the best wall
    time of each, and the CPU figures of each side's least disturbed run (the serial run's least
    CPU, the pooled run's least free-core wall time)."""
    dest = tempfile.mkdtemp(prefix="bench-many-summaries-")
    commands = with_summaries(dest)
    child_run(TIMED, "verify", "--jobs", "2", path, bytecode=True)  # caches the bytecode
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        for name in only or commands:
            tried: dict[str, list] = {"1": [], str(jobs): []}
            for _ in range(runs):  # alternately, so that a change of load hits both
                for n, results in tried.items():
                    command = [*commands[name], "--jobs", n, path]
                    results.append(child_run(TIMED, *command, bytecode=True))
            walls = [min(run.wall for run in r) for r in tried.values()]
            # the CPU figures of each side's least disturbed run (load inflates CPU time too)
            serial = min(tried["1"], key=lambda run: run.cpu)
            pooled = min(tried[str(jobs)], key=lambda run: free_cores_wall(run, jobs))
            print(
                f"{name:<24} wall --jobs 1 {walls[0]:6.2f} s, --jobs {jobs} {walls[1]:6.2f} "
                f"s = {walls[0] / walls[1]:4.2f}x; CPU {serial.cpu:5.2f} s vs "
                f"{pooled.cpu:5.2f} s here ({pooled.before:4.2f} s before its pool, "
                f"{pooled.after:4.2f} s after) + {pooled.workers:5.2f} s in the forkserver "
                f"({pooled.forkserver:4.2f} s) and workers (free cores: "
                f"~{serial.cpu / free_cores_wall(pooled, jobs):4.2f}x)"
            )
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench many_partitions", description=__doc__.splitlines()[0]
    )
    p.add_argument("--partitions", type=int, default=1000, help="partition dirs (default 1000)")
    p.add_argument("--runs", type=int, default=2, help="best of this many runs (default 2)")
    p.add_argument("--dir", help="log dir to write (or reuse); default a temp dir, removed after")
    p.add_argument(
        "--only",
        action="append",
        choices=[*COMMANDS, "audit --summaries-out"],
        help="time only these commands",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="compare each command's --jobs 1 with --jobs N (wall time) instead of the bare loop",
    )
    args = p.parse_args(argv)
    keep = args.dir is not None
    dest = tempfile.mkdtemp(prefix="bench-many-summaries-")
    path = args.dir or os.path.join(tempfile.mkdtemp(prefix="bench-many-"), "kafka-logs")
    try:
        if not os.path.exists(os.path.join(path, "recovery-point-offset-checkpoint")):
            t0 = time.perf_counter()
            size = write_log_dir(path, args.partitions)
            print(
                f"wrote {args.partitions} partitions, {size / 2**30:.2f} GiB of .log "
                f"in {time.perf_counter() - t0:.0f} s"
            )
        cpu_seconds(BARE, path)  # warm the page cache
        if args.jobs is not None:
            compare_jobs(path, args.jobs, args.runs, args.only)
            return 0
        bare = min(cpu_seconds(BARE, path) for _ in range(args.runs))
        print(f"{'bare loop (open + CRC-32C every .log)':<36} {bare:7.2f} s   1.00x")
        child_run(WARM, bytecode=True)  # caches the bytecode of every command's modules
        commands = with_summaries(dest)
        for name in args.only or commands:
            command = [*commands[name], "--jobs", "1", path]  # one core: its CPU is the time
            seconds = min(cpu_seconds(TIMED, *command, bytecode=True) for _ in range(args.runs))
            print(f"{name:<36} {seconds:7.2f} s   {bare / seconds:4.2f}x")
    finally:
        shutil.rmtree(dest, ignore_errors=True)
        if not keep:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
