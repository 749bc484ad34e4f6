"""Segment manager speed and memory: Log appends vs plain file writes, index rebuild vs shallow verify.

Baselines and targets:

- append: `Log.append_batches` (a follower's append: batches validated, CRCs checked, offsets
  checked, written through the Disk, indexes kept, segments rolled at `--segment-bytes`) against
  `os.write` of the same bytes to one file. Each append carries `--append-bytes` of batches, as a
  replica fetch does: ~16 KiB batches (a producer's default `batch.size`), then ~256 KiB ones.
  Target: >= 0.7x. The same appends from an idempotent producer (a producer id on every batch,
  Kafka's default since 3.0: producer state reads each) are reported beside it. Two more lines
  say where the time goes, in the same interleaved runs: the floor of any append that checks
  every batch's CRC as Kafka's does (`os.write` after a bare length + CRC-32C loop over the
  batches, in Python) and the follower's check alone (`log_append.follower_append`: the C append
  run over each append, no batch objects built; the `Walker` where the accelerator is not
  built). The leader path (`Log.append`, which also builds each batch of 64 records of ~220
  bytes) is reported in records/s, without a target: building is the format library's cost.
- index rebuild of one segment of `--size` bytes (`Segment.rebuild_indexes`: Kafka's recovery rule
  of `storage.index_builder` over `storage.scan` windows, real `.index`/`.timeindex` files
  written) against the shallow
  verify of the format bench (`bench.format_walk`: the walker's full validation over one reused
  window). Target: >= 0.8x.
- peak RSS of a child process after appending, and after rebuilding, 1/8 of `--size` and all of it:
  flat (the larger within 10 % + 4 MiB of the smaller).

Times are CPU seconds of this process (`time.process_time`, best of `--runs`), as in format_walk.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from bench.format_walk import MiB, WalkDriver, parse_size, windowed, write_file
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.crc import crc32c
from logrepair.storage.clock import ManualClock
from logrepair.storage.layout import TopicPartition
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.log_append import follower_append
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.segment import Segment

_BASE_OFFSET = struct.Struct(">q")
_LENGTH = struct.Struct(">i")


class Payloads:
    """Appends of ~`append_bytes` made of batches of ~`batch_bytes` with continuing offsets.

    A few batches are built once and reused; only each batch's base offset (outside the CRC) is
    rewritten, so making the next payload costs little and is not timed. With `producer_id`, every
    batch is an idempotent producer's (Kafka's default since 3.0), so producer state reads each."""

    def __init__(self, append_bytes: int, batch_bytes: int, producer_id: int = -1) -> None:
        rng = random.Random(batch_bytes)
        per_batch = max(1, batch_bytes // 240)
        self.batches = []
        for _ in range(4):
            records = [
                Record(
                    i,
                    1_700_000_000_000 + i,
                    rng.randbytes(16),
                    rng.randbytes(rng.randint(150, 250)),
                )
                for i in range(per_batch)
            ]
            batch = build_batch(
                records,
                base_offset=0,
                producer_id=producer_id,
                producer_epoch=0 if producer_id >= 0 else -1,
                base_sequence=0 if producer_id >= 0 else -1,
            )
            self.batches.append((bytearray(batch), per_batch))
        self.per_append = max(1, append_bytes // len(self.batches[0][0]))
        self.next_offset = 0

    def next(self) -> bytes:
        out = bytearray()
        for i in range(self.per_append):
            tmpl, count = self.batches[i % len(self.batches)]
            _BASE_OFFSET.pack_into(tmpl, 0, self.next_offset)
            out += tmpl
            self.next_offset += count
        return bytes(out)


def plain_writes(dir: str, total: int, append_bytes: int, batch_bytes: int) -> float:
    return _file_appends(dir, total, append_bytes, batch_bytes, None)


def crc_then_write(dir: str, total: int, append_bytes: int, batch_bytes: int) -> float:
    """The floor of a validating append: each batch's length read and CRC-32C computed (no other
    check, no object), then one `os.write` of the append."""
    return _file_appends(dir, total, append_bytes, batch_bytes, _check_crcs)


def _check_crcs(view: memoryview) -> None:
    unpack = _LENGTH.unpack_from
    pos, n = 0, len(view)
    while pos < n:
        end = pos + 12 + unpack(view, pos + 8)[0]
        if crc32c(view[pos + 21 : end]) != unpack(view, pos + 17)[0] & 0xFFFFFFFF:
            raise RuntimeError(f"CRC mismatch at {pos}")
        pos = end


def _file_appends(
    dir: str,
    total: int,
    append_bytes: int,
    batch_bytes: int,
    check: Callable[[memoryview], None] | None,
) -> float:
    """`os.write` of each append to one new file, after `check(append)` if given; CPU seconds."""
    payloads = Payloads(append_bytes, batch_bytes)
    path = os.path.join(dir, "plain.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    elapsed = 0.0
    written = 0
    try:
        while written < total:
            data = payloads.next()
            start = time.process_time()
            view = memoryview(data)
            if check is not None:
                check(view)
            while view:
                view = view[os.write(fd, view) :]
            elapsed += time.process_time() - start
            written += len(data)
    finally:
        os.close(fd)
    os.unlink(path)
    return elapsed


def check_only(total: int, append_bytes: int, batch_bytes: int) -> float:
    """The follower's check alone: what `Log.append_batches` runs over each append first."""
    payloads = Payloads(append_bytes, batch_bytes)
    tp = TopicPartition("bench", 0)
    elapsed = 0.0
    written = 0
    while written < total:
        data = payloads.next()
        start = time.process_time()
        appended = follower_append(data, tp)
        elapsed += time.process_time() - start
        if len(appended.data) != len(data):
            raise RuntimeError("payload defect")
        written += len(data)
    return elapsed


def log_appends(
    dir: str,
    total: int,
    append_bytes: int,
    segment_bytes: int,
    batch_bytes: int = 16 * 1024,
    producer_id: int = -1,
) -> float:
    payloads = Payloads(append_bytes, batch_bytes, producer_id)
    path = os.path.join(dir, "bench-0")
    lg = Log.open(OsDisk(), path, LogConfig(segment_bytes=segment_bytes), clock=ManualClock(0))
    elapsed = 0.0
    written = 0
    try:
        while written < total:
            data = payloads.next()
            start = time.process_time()
            lg.append_batches(data)
            elapsed += time.process_time() - start
            written += len(data)
        assert lg.log_end_offset == payloads.next_offset
    finally:
        lg.close()
        _remove_tree(path)
    return elapsed


def leader_appends(dir: str, total: int) -> tuple[int, float]:
    path = os.path.join(dir, "leader-0")
    lg = Log.open(OsDisk(), path, LogConfig(), clock=ManualClock(0))
    records = [ProducerRecord(os.urandom(16), os.urandom(200)) for _ in range(64)]
    n = 0
    start = time.process_time()
    try:
        while lg.size < total:
            lg.append(records)
            n += len(records)
        return n, time.process_time() - start
    finally:
        lg.close()
        _remove_tree(path)


def rebuild(dir: str) -> float:
    """Rebuilds the indexes of the segment `dir/…0.log`; returns CPU seconds."""
    seg = Segment.open_existing(OsDisk(), dir, 0, LogConfig(), ManualClock(0))
    try:
        start = time.process_time()
        defect = seg.rebuild_indexes()
        elapsed = time.process_time() - start
        assert defect is None, defect
        return elapsed
    finally:
        seg.close_handlers()


def _remove_tree(path: str) -> None:
    for name in os.listdir(path):
        os.unlink(os.path.join(path, name))
    os.rmdir(path)


def _peak_rss_kib() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
    except OSError:
        pass
    return peak


def _reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def rss_probe(mode: str, dir: str, size: int, args) -> int:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "storage_append",
            "--rss-probe",
            mode,
            "--dir",
            dir,
            "--size",
            str(size),
            "--append-bytes",
            str(args.append_bytes),
            "--segment-bytes",
            str(args.segment_bytes),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.strip())


def _probe(mode: str, dir: str, size: int, args) -> int:
    _reset_peak_rss()
    if mode == "append":
        log_appends(dir, size, args.append_bytes, args.segment_bytes)
    else:
        rebuild(dir)
    print(_peak_rss_kib())
    return 0


def compare(
    baseline: str, baseline_s: float, subject: str, subject_s: float, size: int, target: float
) -> bool:
    """Prints both speeds and their ratio; whether the subject reaches `target` x the baseline."""
    ratio = baseline_s / subject_s
    print(f"{baseline:<28} {size / baseline_s / MiB:8.0f} MiB/s")
    print(
        f"{subject:<28} {size / subject_s / MiB:8.0f} MiB/s   ratio {ratio:.2f}x (target >= {target}x)"
    )
    return ratio >= target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench storage_append", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--size", type=parse_size, default=parse_size("1G"), help="default 1G")
    parser.add_argument("--append-bytes", type=parse_size, default=MiB, help="bytes per append")
    parser.add_argument("--segment-bytes", type=parse_size, default=parse_size("1G"))
    parser.add_argument("--window", type=parse_size, default=16 * MiB, help="format_walk's window")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write the temp files")
    parser.add_argument("--no-rss", action="store_true")
    parser.add_argument("--rss-probe", choices=("append", "rebuild"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_probe:
        return _probe(args.rss_probe, args.dir, args.size, args)
    ok = True
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="storage_append-") as tmp:
        size = args.size
        for batch_bytes in (16 * 1024, 256 * 1024):
            print(
                f"== append: {size / MiB:.0f} MiB in appends of {args.append_bytes / MiB:.2f} MiB, "
                f"batches of {batch_bytes // 1024} KiB =="
            )
            # Interleaved, so writeback of one run's dirty pages burdens both sides alike.
            plains, floors, checks, logs, idempotent = [], [], [], [], []
            for _ in range(args.runs):
                plains.append(plain_writes(tmp, size, args.append_bytes, batch_bytes))
                floors.append(crc_then_write(tmp, size, args.append_bytes, batch_bytes))
                checks.append(check_only(size, args.append_bytes, batch_bytes))
                logs.append(
                    log_appends(tmp, size, args.append_bytes, args.segment_bytes, batch_bytes)
                )
                idempotent.append(
                    log_appends(tmp, size, args.append_bytes, args.segment_bytes, batch_bytes, 7)
                )
            plain, floor, check, appended = min(plains), min(floors), min(checks), min(logs)
            met = compare("plain os.write", plain, "Log.append_batches", appended, size, 0.7)
            ok = ok and met
            idem = min(idempotent)
            print(
                f"{'  idempotent producer':<28} {size / idem / MiB:8.0f} MiB/s   "
                f"ratio {plain / idem:.2f}x (every batch with a producer id)"
            )
            print(
                f"{'floor: CRC-32C + os.write':<28} {size / floor / MiB:8.0f} MiB/s   "
                f"ratio {plain / floor:.2f}x of plain; Log.append_batches {floor / appended:.2f}x "
                "of the floor"
            )
            print(
                f"{'of which the check':<28} {check:8.3f} s of {appended:.3f} s; "
                f"plain + check {plain + check:.3f} s"
            )
        leader_size = min(size, 256 * MiB)
        n, t = leader_appends(tmp, leader_size)
        print(
            f"Log.append (leader, builds)  {leader_size / t / MiB:8.0f} MiB/s   {n / t:12,.0f} records/s"
        )

        print(f"\n== index rebuild of one {size / MiB:.0f} MiB segment (16 KiB batches) ==")
        seg_dir = os.path.join(tmp, "rebuild-0")
        os.mkdir(seg_dir)
        path = os.path.join(seg_dir, "00000000000000000000.log")
        written, batches, _ = write_file(path, size, 16 * 1024)
        drivers: list[WalkDriver] = []

        def shallow() -> float:
            drivers.append(WalkDriver(written))
            return windowed(path, written, args.window, drivers[-1].validate)

        verify = min(shallow() for _ in range(args.runs))
        assert drivers[-1].defects == 0 and drivers[-1].batches == batches
        rebuilt = min(rebuild(seg_dir) for _ in range(args.runs))
        met = compare(
            "shallow verify (format_walk)", verify, "index rebuild", rebuilt, written, 0.8
        )
        ok = ok and met

        if not args.no_rss:
            print()
            small_dir = os.path.join(tmp, "rebuild-1")
            os.mkdir(small_dir)
            write_file(os.path.join(small_dir, "00000000000000000000.log"), written // 8, 16 * 1024)
            for mode, small_where, large_where in (
                ("append", tmp, tmp),
                ("rebuild", small_dir, seg_dir),
            ):
                small = rss_probe(mode, small_where, written // 8, args)
                large = rss_probe(mode, large_where, written, args)
                print(
                    f"peak RSS of {mode}: {small / 1024:.1f} MiB for {written // 8 / MiB:.0f} MiB, "
                    f"{large / 1024:.1f} MiB for {written / MiB:.0f} MiB"
                )
                ok = ok and large < small * 1.1 + 4 * 1024
    print("\nall targets met" if ok else "\nsome targets missed")
    return 0 if ok else 1
