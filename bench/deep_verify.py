"""Deep verify vs shallow verify vs kafka-python iterating the same records; shallow verify vs the
whole-file CRC loop (warm) and vs `cat` (cold).

Writes one partition of uncompressed v2 batches (`--size` bytes, `--batch-bytes` a batch, 200-byte
values, as bench/repair.py writes them) and measures, as CPU seconds of this process (best of
`--runs`):

- shallow verify: `scan_path` as `logrepair verify` runs it (batches framed and CRC-checked,
  indexes held against them, no record decoded);
- deep verify: the same with `--deep-iteration` (every record decoded and checked; in C when the
  accelerator is built, which the output says);
- kafka-python: `MemoryRecords` over the same `.log` bytes, every record iterated, as a consumer
  decodes them (on the first `--kafka-python-bytes`, scaled by records/s: it is slow).

The ratios are what `--deep-iteration` costs over the shallow scan, and how it compares with a
client library reading the same records.

Against the floor of any checker, on the same partition:

- warm: the whole-file CRC loop (8 MiB windows read with `preadv` into one buffer, CRC-32C of each
  window, nothing else), CPU seconds, best of `--runs`, against shallow verify's; and the index
  rebuild of the segment (`Segment.rebuild_indexes`, Kafka's recovery rule) against shallow verify;
- `--cold`: the file's pages evicted (`fdatasync`, then `posix_fadvise(DONTNEED)` on every file of
  the partition: no root needed) before each run, wall seconds of `cat FILE > /dev/null` against
  shallow verify's, and the CPU share of verify's run (checking overlapping reading keeps it low
  and the wall time near `cat`'s); and verify with each window read when the scan takes it (no
  reader thread), to see what the overlap gives in the same run.

`--dir` writes the partition there (or reuses it): 2 GiB belongs on a disk, not in a temp dir.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import subprocess
import tempfile
import time

from crc32c import crc32c

from logrepair.format.batch_runs import ACCELERATED as QUIET_ACCELERATED
from logrepair.format.record_codec import ACCELERATED
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.disk import DiskFile
from logrepair.storage.osdisk import OsDisk, OsFile

from .format_walk import kafka_python_records
from .repair import MiB, parse_size, write_partition
from .storage_append import rebuild


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def whole_file_crc(path: str, window: int = 8 << 20) -> None:
    """The floor of any checker: read the file window by window into one buffer, CRC each."""
    buf = bytearray(window)
    mv = memoryview(buf)
    fd = os.open(path, os.O_RDONLY)
    try:
        position = 0
        while n := os.preadv(fd, [mv], position):
            crc32c(mv[:n])
            position += n
    finally:
        os.close(fd)


def evict(pdir: str) -> None:
    """Drops the partition's pages from the page cache (written back first, so they can go)."""
    for name in os.listdir(pdir):
        fd = os.open(os.path.join(pdir, name), os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class InOrderDisk(OsDisk):
    """OsDisk whose files read each window when the scan takes it (`DiskFile.read_ahead`'s
    default, the simulator's way): what the reader thread's overlap is held against."""

    def open(self, path: str, *, write: bool = False, create: bool = False) -> OsFile:
        f = super().open(path, write=write, create=create)
        f.read_ahead = functools.partial(DiskFile.read_ahead, f)  # type: ignore[method-assign]
        return f


def cold(pdir: str, log: str, runs: int) -> None:
    """Wall time of `cat` and of shallow verify, each after evicting the partition's pages."""
    disk = OsDisk()

    def cat() -> None:
        with open(os.devnull, "wb") as null:
            subprocess.run(["cat", log], stdout=null, check=True)

    contenders = {
        "cat": cat,
        "whole-file CRC loop": lambda: whole_file_crc(log),
        "verify, no read ahead": lambda: scan_path(InOrderDisk(), pdir, Settings()),
        "shallow verify": lambda: scan_path(disk, pdir, Settings()),
    }
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, fn in contenders.items():
            evict(pdir)
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            timings[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    best = {name: min(t) for name, t in timings.items()}
    size = os.path.getsize(log)
    verify_wall = best["shallow verify"][0]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"cold (wall, best of {runs}; load average {load}):")
    for name, (wall, cpu) in best.items():
        cpu_share = f"{100 * cpu / wall:3.0f}% CPU" if name != "cat" else "        "
        print(
            f"  {name:<22} {wall:6.2f} s {size / MiB / wall:6.0f} MiB/s {cpu_share}  verify is "
            f"{wall / verify_wall:.2f}x it"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench deep_verify", description=__doc__)
    ap.add_argument("--size", type=parse_size, default=parse_size("64M"))
    ap.add_argument("--batch-bytes", type=int, default=16 * 1024)
    ap.add_argument("--kafka-python-bytes", type=parse_size, default=parse_size("8M"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", help="partition dir to write (or reuse); default a temp dir")
    ap.add_argument("--cold", action="store_true", help="also time verify and cat on evicted pages")
    ap.add_argument("--no-deep", action="store_true", help="skip deep verify and kafka-python")
    args = ap.parse_args(argv)
    disk = OsDisk()
    with contextlib.ExitStack() as stack:
        if args.dir:
            pdir = args.dir
        else:
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-deep-"))
            pdir = os.path.join(root, "t-0")
        log = os.path.join(pdir, layout.log_file_name(0))
        if args.dir and os.path.exists(log):
            step = len(_first_batch(log))
            count = os.path.getsize(log) // step
        else:
            count, step = write_partition(pdir, args.size, args.batch_bytes)
        size = count * step
        records = count * max(1, args.batch_bytes // 220)
        whole_file_crc(log)  # warm the page cache
        # (interleaved, so a change in the machine's load falls on both)
        shallow_runs, floor_runs = [], []
        for _ in range(args.runs):
            shallow_runs.append(_cpu(lambda: scan_path(disk, pdir, Settings())))
            floor_runs.append(_cpu(lambda: whole_file_crc(log)))
        shallow, floor = min(shallow_runs), min(floor_runs)
        print(
            f"warm: whole-file CRC loop {floor:.3f} s CPU, shallow verify {shallow:.3f} s: "
            f"{floor / shallow:.2f}x the loop ({size / MiB / shallow:.0f} MiB/s, best of "
            f"{args.runs}; C quiet runs {'on' if QUIET_ACCELERATED else 'off'})"
        )
        rebuilt = min(rebuild(pdir) for _ in range(args.runs))
        print(
            f"warm: index rebuild (Segment.rebuild_indexes) {rebuilt:.3f} s CPU: "
            f"{shallow / rebuilt:.2f}x shallow verify's speed"
        )
        if args.cold:
            cold(pdir, log, args.runs)
        if args.no_deep:
            return 0
        deep_settings = Settings(deep_iteration=True)
        scans = []
        deep = min(
            _cpu(lambda: scans.append(scan_path(disk, pdir, deep_settings)))
            for _ in range(args.runs)
        )
        assert all(s.clean for s in scans)
        kp = min(
            kafka_python_records(log, min(size, args.kafka_python_bytes))
            for _ in range(max(1, args.runs - 1))
        )
        kp_rate = kp[0] / kp[1]  # records/s
    rows = [
        ("shallow verify", shallow, records / shallow),
        (
            f"deep verify ({'C accelerator' if ACCELERATED else 'pure Python'})",
            deep,
            records / deep,
        ),
        ("kafka-python record iteration", records / kp_rate, kp_rate),
    ]
    print(
        f"{size / MiB:.0f} MiB, {count:,} batches of {step:,} bytes, {records:,} records "
        f"(kafka-python on the first {min(size, args.kafka_python_bytes) / MiB:.0f} MiB)"
    )
    for name, seconds, rate in rows:
        print(
            f"  {name:<34} {size / MiB / seconds:9.0f} MiB/s {rate / 1e6:8.2f} M records/s "
            f"{seconds / shallow:7.2f}x shallow time"
        )
    print(
        f"deep costs {deep / shallow:.2f}x shallow; deep reads records "
        f"{(records / deep) / kp_rate:.1f}x as fast as kafka-python"
    )
    return 0


def _first_batch(log: str) -> bytes:
    with open(log, "rb") as f:
        head = f.read(12)
        return head + f.read(int.from_bytes(head[8:12], "big"))
