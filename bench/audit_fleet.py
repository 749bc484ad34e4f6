"""Fleet audit speed: one process vs Spark local[1] vs local[2], Spark's start-up cost apart.

Writes a fleet (`--size` bytes in all, default 2 GiB, over `--partitions` partition dirs, default
240: 120 topic-partitions with two replicas each, on `--brokers` brokers) of uncompressed v2 batches
of `--batch-size` bytes in segments of `--segment-size`, then audits it:

- single process: `audit_paths` (the `logrepair audit` code path);
- Spark local[1] and local[2]: `audit_paths_spark`; the session start and a first trivial job
  (JVM, Python workers) are timed apart as the fixed cost.

Every run reads from the page cache (the fleet is read once before timing), takes the best of
`--runs` wall-clock times, and checks that the Spark report equals the single-process one. A
control runs the same segment scans in 1 and 2 plain processes: on a shared machine it shows how
much a second worker can gain at all at that moment.
Goal: local[2] at least 1.6x as fast as local[1]; the load average is printed because on a shared
machine the second core is not always free. `--size 256M` is the quick mode.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import tempfile
import time

from logrepair.audit.local import audit_paths
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.storage import layout
from logrepair.storage.checkpoints import write_offsets
from logrepair.storage.layout import TopicPartition
from logrepair.storage.osdisk import OsDisk

MiB = 1 << 20
_BASE_OFFSET = struct.Struct(">q")


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": MiB, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def template(batch_bytes: int) -> tuple[bytes, int]:
    """One batch of about `batch_bytes` and its record count. Base offset and partition leader
    epoch lie outside the CRC, so stamping a new base offset keeps the batch valid."""
    n = max(1, batch_bytes // 220)
    records = [Record(i, 1_700_000_000_000 + i, b"key-%08d" % i, bytes(200)) for i in range(n)]
    return build_batch(records, base_offset=0), n


def write_fleet(root: str, size: int, partitions: int, brokers: int, batch: int, seg: int) -> int:
    """The fleet under `root/<broker>`; returns the bytes written."""
    disk = OsDisk()
    data, count = template(batch)
    per_partition = max(len(data), size // partitions)
    batches = per_partition // len(data)
    per_segment = max(1, seg // len(data))
    topics = partitions // 2
    written = 0
    placement: dict[str, list[TopicPartition]] = {f"b{i + 1}": [] for i in range(brokers)}
    for i in range(topics):
        tp = TopicPartition(f"topic{i % 8}", i // 8)
        for r in range(2):
            placement[f"b{(i + r) % brokers + 1}"].append(tp)
    chunk = bytearray(len(data) * per_segment)
    for broker, tps in placement.items():
        log_dir = os.path.join(root, broker)
        ends: dict[TopicPartition, int] = {}
        for tp in tps:
            pdir = os.path.join(log_dir, str(tp))
            os.makedirs(pdir, exist_ok=True)
            offset = 0
            for first in range(0, batches, per_segment):
                n = min(per_segment, batches - first)
                view = memoryview(chunk)[: n * len(data)]
                for k in range(n):
                    view[k * len(data) : (k + 1) * len(data)] = data
                    _BASE_OFFSET.pack_into(view, k * len(data), offset + k * count)
                with open(os.path.join(pdir, layout.log_file_name(offset)), "wb") as f:
                    f.write(view)
                written += len(view)
                offset += n * count
            ends[tp] = offset
        for name in (layout.RECOVERY_POINT_CHECKPOINT, layout.REPLICATION_CHECKPOINT):
            write_offsets(disk, os.path.join(log_dir, name), ends)
    return written


def warm(root: str) -> None:
    buf = bytearray(8 * MiB)
    for folder, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb", buffering=0) as f:
                while f.readinto(buf):
                    pass


def timed(fn, runs: int) -> tuple[list[float], object]:
    """Wall-clock seconds of each run, and the last result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench audit_fleet", description=__doc__.splitlines()[0])
    p.add_argument("--size", default="2G", type=parse_size)
    p.add_argument("--partitions", default=240, type=int)
    p.add_argument("--brokers", default=3, type=int)
    p.add_argument("--batch-size", default="16K", type=parse_size)
    p.add_argument("--segment-size", default="4M", type=parse_size)
    p.add_argument("--runs", default=2, type=int)
    p.add_argument("--dir", default=None, help="where to write the fleet (default: a temp dir)")
    args = p.parse_args(argv)

    root = tempfile.mkdtemp(prefix="audit-fleet-", dir=args.dir)
    try:
        t = time.perf_counter()
        size = write_fleet(
            root, args.size, args.partitions, args.brokers, args.batch_size, args.segment_size
        )
        print(
            f"fleet: {size / MiB:.0f} MiB, {args.partitions} partition dirs, {args.brokers} "
            f"brokers, written in {time.perf_counter() - t:.1f} s"
        )
        warm(root)
        times, reference = timed(lambda: audit_paths([root]), args.runs)
        single = min(times)
        print(f"single process: {single:6.2f} s  {size / MiB / single:7.0f} MiB/s")
        control = process_control(root, args.runs)
        print(
            f"control, the same scans in plain processes: 1 process {control[1]:.2f} s, "
            f"2 processes {control[2]:.2f} s ({control[1] / control[2]:.2f}x: what this machine "
            "gives a second worker now)"
        )
        rows = {}
        for master in ("local[1]", "local[2]"):
            start_up, first, elapsed = run_spark(master, root, args.runs, reference)
            rows[master] = elapsed
            print(
                f"spark {master}: {elapsed:6.2f} s  {size / MiB / elapsed:7.0f} MiB/s  "
                f"(fixed: start-up {start_up:.1f} s; first run {first:.2f} s, workers starting)"
            )
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"load average at the end: {load} on {os.cpu_count()} cores")
        ratio = rows["local[1]"] / rows["local[2]"]
        verdict = "met" if ratio >= 1.6 else "NOT met"
        print(f"local[2] vs local[1]: {ratio:.2f}x (goal 1.6x: {verdict})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def _scan_all(tasks) -> None:
    from logrepair.audit.segments import summarize_segment

    disk = OsDisk()
    for t in tasks:
        summarize_segment(disk, t)


def process_control(root: str, runs: int) -> dict[int, float]:
    """Best wall-clock time of the fleet's segment scans split over 1 and 2 plain processes
    (balanced by bytes): the parallelism the machine offers, whatever Spark does."""
    from multiprocessing import get_context

    from logrepair.audit.discovery import discover
    from logrepair.audit.spark import pack_bins

    tasks = [t for d in discover(OsDisk(), [root]) for p in d.partitions for t in p.segments]
    out = {}
    for n in (1, 2):
        with get_context("fork").Pool(n) as pool:
            pool.map(abs, range(n))  # start the workers before timing
            times, _ = timed(lambda n=n, pool=pool: pool.map(_scan_all, pack_bins(tasks, n)), runs)
        out[n] = min(times)
    return out


def run_spark(master: str, root: str, runs: int, reference) -> tuple[float, float, float]:
    """(start-up, first run, best later run) in seconds."""
    from logrepair.audit.spark import audit_paths_spark, spark_session

    start = time.perf_counter()
    spark = spark_session(master, app_name="bench-audit-fleet")
    cores = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(cores), cores).map(lambda x: x).count()
    start_up = time.perf_counter() - start
    try:
        times, report = timed(
            lambda: audit_paths_spark(spark, [root], recovery_rate=reference.recovery_rate),
            runs + 1,  # the first run starts the Python workers: reported apart
        )
    finally:
        spark.stop()
    if report.to_json() != reference.to_json():
        raise SystemExit(f"spark {master}: the report differs from the single-process one")
    return start_up, times[0], min(times[1:])


if __name__ == "__main__":
    raise SystemExit(main())
