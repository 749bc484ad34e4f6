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

`--jobs N` times each command instead with `--jobs 1` and `--jobs N` back to back (wall time: the
work of a pool is in its workers), best of `--runs` each, and prints serial / pooled (goal >= 1.8x
with N = 2 on two cores), with `audit --summaries-out` too, and the load average before and after.
Wall time needs free cores: with the kernel's autogroup scheduling (one share of the CPUs per login
session), a pool run while other sessions keep the cores busy gets the one share the serial run
gets. So it also prints the CPU of both runs (the workers' too) and the load-independent estimate
serial CPU / (pooled CPU here + workers' CPU / N): what the pool gives on idle cores if nothing
in the parent overlaps the workers (a chunk of imbalance and the forkserver's start aside). These
runs import logrepair from cached bytecode, as an installed one does.
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
import contextlib, io, resource, sys, time
from multiprocessing import forkserver
from logrepair.cli import main
if __name__ == "__main__":
    c0, w0 = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(sys.argv[1:])
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    # the workers' CPU: they are the forkserver's children; stopping it (a private method, kept
    # for CPython's own tests) reaps it, and with it the CPU of the children it reaped
    forkserver._forkserver._stop()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(cpu, wall, children.ru_utime + children.ru_stime, code)
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


def child_run(code: str, *args: str, bytecode: bool = False) -> tuple[float, float, float]:
    """CPU, wall and worker CPU seconds of one child run. The code runs from a file, as a
    program's main module: a pool's workers import it again (as `__mp_main__`), as they would
    the `logrepair` script. `bytecode`: modules imported from cached bytecode, as an installed
    logrepair's are (PYTHONDONTWRITEBYTECODE, set here, makes every process compile every module
    it imports: ~0.3 s in each run and again in a pool's forkserver)."""
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
    if len(rest) < 3:  # the bare loop: CPU only
        return float(cpu), float(cpu), 0.0
    wall, workers, status = rest
    if status not in ("0", "1"):
        raise RuntimeError(f"{args} exited {status}")
    return float(cpu), float(wall), float(workers)


def compare_jobs(path: str, jobs: int, runs: int, only: list[str] | None) -> None:
    """Each command with `--jobs 1` and `--jobs JOBS`, alternately, best wall time of `runs`:
    (CPU here, wall, CPU in the workers) of the best run of each."""
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
            serial, pooled = (min(r, key=lambda run: run[1]) for r in tried.values())
            # with free cores, the pooled run takes about its own CPU plus its workers' shared
            # out: the serial CPU over that is what the pool gives where nothing else runs
            bound = serial[0] / (pooled[0] + pooled[2] / jobs)
            print(
                f"{name:<24} wall --jobs 1 {serial[1]:6.2f} s, --jobs {jobs} {pooled[1]:6.2f} s "
                f"= {serial[1] / pooled[1]:4.2f}x; CPU {serial[0]:5.2f} s vs {pooled[0]:5.2f} s "
                f"here + {pooled[2]:5.2f} s in the workers (free cores: ~{bound:4.2f}x)"
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
