"""Fleet audit from scan summaries: per-broker `--summaries-out` vs verify; the Spark join at scale.

Two parts (`--part broker`, `--part fleet`, default both):

broker: one log dir of `--size` bytes (default 1 GiB) of uncompressed 16 KiB v2 batches in
`--partitions` partitions, with the indexes and checkpoints Kafka writes. Each measured in a child
process (CPU seconds, wall seconds, peak RSS), best of `--runs`:
- `logrepair verify` of the log dir (the baseline);
- `audit --summaries-out` with every segment scanned (`--full-rescan`). Goal: >= 0.8x verify;
- `audit --summaries-out` again on the unchanged log dir (incremental: stamps only);
- the summary's size against the log's (goal < 1%), and peak RSS at 1/8 of the size (flat).

fleet: summaries of a synthetic fleet, `--brokers` (default 100) x `--replicas` (default 2,000)
partition replicas of `--batches` batches each (replication factor 3; one replica in 100 lags,
one in 1,000 diverges), written by the same `BrokerSummaryWriter` from generated digests, not by
scanning bytes; every broker's log dir is /var/lib/kafka/data, as in a real fleet. Then the fleet
audit (`audit_summaries_spark`) on Spark `local[1]` and `local[2]`, each in a child process: wall
time of the best run after one warm-up run (start-up apart), digest rows per second, the scaling
ratio, and the driver's peak memory: the Python driver's peak RSS, and the JVM's (in local mode
the JVM holds the executors too).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from array import array

from bench.audit_fleet import parse_size
from bench.repair import write_partition
from logrepair.storage import layout
from logrepair.storage.checkpoints import write_offsets
from logrepair.storage.layout import TopicPartition
from logrepair.storage.osdisk import OsDisk

MiB = 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
LOG_DIR = "/var/lib/kafka/data"
RECORDS = 16384 // 220  # records per 16 KiB batch of 200-byte values

BROKER_CHILD = r"""
import json, sys, time
from logrepair.storage.osdisk import OsDisk
what, path, dest = sys.argv[1], sys.argv[2], sys.argv[3]
t0, c0 = time.perf_counter(), time.process_time()
out = {}
if what == "verify":
    from logrepair.recovery.scan import scan_path
    from logrepair.recovery.settings import Settings
    out["clean"] = scan_path(OsDisk(), path, Settings()).clean
else:
    from logrepair.audit.summary_writer import write_summaries
    (w,) = write_summaries([path], dest, full_rescan=what == "full")
    out.update(w.to_json())
out["seconds"] = time.process_time() - c0
out["wall"] = time.perf_counter() - t0
with open("/proc/self/status") as f:  # not ru_maxrss: Linux keeps the parent's across exec
    out["rss_kib"] = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps(out))
"""

SPARK_CHILD = r"""
import json, sys, time
from logrepair.audit.spark import spark_session
from logrepair.audit.spark_summaries import audit_summaries_spark
master, src, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
spark = spark_session(master, app_name="bench-audit-summaries")
start_up = time.perf_counter() - t0
jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
times = []
for _ in range(runs + 1):  # the first run starts the Python workers: reported apart
    t = time.perf_counter()
    report = audit_summaries_spark(spark, [src], recovery_rate=100 * 2**20)
    times.append(time.perf_counter() - t)
def hwm(pid):  # peak RSS; not ru_maxrss, which Linux keeps from the parent across exec
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
jvm_hwm, driver_hwm = hwm(jvm), hwm("self")
spark.stop()
print(json.dumps({
    "start_up": start_up, "first": times[0], "best": min(times[1:]),
    "partitions": len(report.partitions), "replicas": len(report.replicas),
    "findings": len(report.all_findings()),
    "driver_rss_kib": driver_hwm, "jvm_hwm_kib": jvm_hwm,
}))
"""


def child(script: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} failed: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- broker --------------------------------------------------------------------------------------


def write_log_dir(log_dir: str, size: int, partitions: int) -> int:
    """`partitions` partitions of size/partitions bytes each, with indexes and checkpoints; every
    file's mtime an hour back (stamps of just-written files are not trusted)."""
    ends = {}
    for p in range(partitions):
        pdir = os.path.join(log_dir, f"bench-{p}")
        count, step = write_partition(pdir, size // partitions, 16384)
        distinct_crcs(os.path.join(pdir, layout.log_file_name(0)), step, seed=p)
        ends[TopicPartition("bench", p)] = count * RECORDS
    for name in (layout.RECOVERY_POINT_CHECKPOINT, layout.REPLICATION_CHECKPOINT):
        write_offsets(OsDisk(), os.path.join(log_dir, name), ends)
    hour_ago = time.time_ns() - 3600 * 10**9
    for folder, _, names in os.walk(log_dir):
        for name in names:
            os.utime(os.path.join(folder, name), ns=(hour_ago, hour_ago))
    return sum(os.path.getsize(os.path.join(f, n)) for f, _, ns in os.walk(log_dir) for n in ns)


def distinct_crcs(log: str, step: int, seed: int) -> None:
    """Gives every batch its own bytes (a counter in its last record's value) and CRC, as real
    data has: a summary of identical batches would compress to nothing."""
    import crc32c

    with open(log, "r+b") as f:
        data = bytearray(f.read())
        for n, at in enumerate(range(0, len(data), step)):
            data[at + step - 20 : at + step - 12] = (seed << 40 | n).to_bytes(8, "big")
            data[at + 17 : at + 21] = crc32c.crc32c(memoryview(data)[at + 21 : at + step]).to_bytes(
                4, "big"
            )
        f.seek(0)
        f.write(data)


def best(what: str, log_dir: str, dest: str, runs: int) -> dict:
    return min(
        (child(BROKER_CHILD, what, log_dir, dest) for _ in range(runs)), key=lambda r: r["seconds"]
    )


def bench_broker(root: str, size: int, partitions: int, runs: int) -> None:
    log_dir = os.path.join(root, "kafka-logs")
    total = write_log_dir(log_dir, size, partitions)
    dest = os.path.join(root, "summaries")
    verify = best("verify", log_dir, dest, runs)
    full = best("full", log_dir, dest, runs)
    again = best("incremental", log_dir, dest, runs)
    logs = sum(
        os.path.getsize(os.path.join(f, n))
        for f, _, ns in os.walk(log_dir)
        for n in ns
        if n.endswith(".log")
    )
    print(f"broker: {total / MiB:.0f} MiB in {partitions} partitions (16 KiB batches)")
    for name, r in (("verify", verify), ("--summaries-out", full), ("incremental", again)):
        print(
            f"  {name:<16} cpu {r['seconds']:6.2f} s ({logs / MiB / max(r['seconds'], 1e-9):6.0f}"
            f" MiB/s)  wall {r['wall']:6.2f} s  peak RSS {r['rss_kib'] / 1024:.0f} MiB"
        )
    ratio = verify["seconds"] / full["seconds"]
    print(f"  --summaries-out vs verify, whole command: {ratio:.2f}x")
    small = os.path.join(root, "kafka-logs-small")
    write_log_dir(small, size // 8, partitions)
    small_verify = best("verify", small, os.path.join(root, "small"), runs)
    small_full = best("full", small, os.path.join(root, "small"), runs)
    steady = (verify["seconds"] - small_verify["seconds"]) / (
        full["seconds"] - small_full["seconds"]
    )
    met = "met" if steady >= 0.8 else "NOT met"
    print(
        f"  --summaries-out vs verify, steady (CPU of the last 7/8 of the bytes, start-up "
        f"apart): {steady:.2f}x (goal 0.8x: {met})"
    )
    print(
        f"  incremental, unchanged: {again['segments_scanned']} of {again['segments']} segments "
        f"scanned, {again['wall']:.2f} s"
    )
    share = 100 * full["summary_bytes"] / logs
    print(
        f"  summary: {full['summary_bytes'] / 1024:.0f} KiB = {share:.3f}% of the log bytes "
        "(goal < 1%)"
    )
    print(
        f"  peak RSS of --summaries-out at 1/8 and full size: {small_full['rss_kib'] / 1024:.0f} "
        f"/ {full['rss_kib'] / 1024:.0f} MiB"
    )


# --- fleet ---------------------------------------------------------------------------------------


def write_fleet(dest: str, brokers: int, replicas: int, batches: int) -> tuple[int, int]:
    """Generated summaries; returns (digest rows, summary bytes)."""
    from logrepair.audit.model import (
        BatchDetails,
        BatchDigests,
        LogDirPlan,
        MetaProperties,
        PartitionPlan,
        SegmentSummary,
        SegmentTask,
    )
    from logrepair.audit.summary_store import open_location
    from logrepair.audit.summary_writer import BrokerSummaryWriter

    fs, root = open_location(dest)
    size = 16384
    n = batches
    base = array("q", range(0, n * RECORDS, RECORDS))
    last = array("q", (b + RECORDS - 1 for b in base))
    position = array("q", range(0, n * size, size))
    sizes = array("q", [size]) * n
    epochs = array("q", [0]) * n
    timestamps = array("q", (1_700_000_000_000 + b for b in last))
    producers = array("q", [-1]) * n
    topics = brokers * replicas // 3
    rows = written = 0
    for b in range(brokers):
        writer = BrokerSummaryWriter(fs, root, CLUSTER, f"node-{b}")
        plan = LogDirPlan(LOG_DIR, f"node-{b}", True, MetaProperties(1, CLUSTER, b, f"dir-{b:04d}"))
        mine = sorted(
            k * brokers + r
            for r in {b % brokers, (b - 1) % brokers, (b - 2) % brokers}
            for k in range(topics // brokers + 1)
            if k * brokers + r < topics
        )
        for t in mine:
            topic, partition = f"topic-{t // 50}", t % 50
            path = f"{LOG_DIR}/{topic}-{partition}"
            crc = array("q", array("I", random.Random(t).randbytes(4 * n)))
            count = n
            if (t * 7 + b) % 100 == 0:
                count = n // 2  # a lagging replica
            if (t * 13 + b) % 1000 == 0:
                crc[n // 3] ^= 1  # a diverged one
            end = count * RECORDS
            file = f"{path}/{layout.log_file_name(0)}"
            task = SegmentTask(LOG_DIR, path, topic, partition, file, 0, count * size, 0)
            summary = SegmentSummary(
                task,
                batches=count,
                valid_end=count * size,
                first_offset=0 if count else None,
                next_offset=end,
                digests=BatchDigests(base[:count], last[:count], crc[:count], position[:count]),
                epochs=[(0, 0)],
                details=BatchDetails(
                    sizes[:count], epochs[:count], timestamps[:count], producers[:count]
                ),
            )
            writer.add_segment(summary, (count * size, 1, 1, t))
            plan.partitions.append(
                PartitionPlan(
                    LOG_DIR,
                    path,
                    topic,
                    partition,
                    "live",
                    end,
                    None,
                    end,
                    None,
                    [(0, 0)],
                    segments=[task],
                )
            )
            rows += count
        writer.add_log_dir(plan)
        writer.stats.segments = len(plan.partitions)
        writer.commit()
        written += writer.stats.summary_bytes
    return rows, written


def bench_fleet(root: str, brokers: int, replicas: int, batches: int, runs: int) -> None:
    dest = os.path.join(root, "fleet-summaries")
    t = time.perf_counter()
    rows, written = write_fleet(dest, brokers, replicas, batches)
    print(
        f"fleet: {brokers} brokers x {replicas} replicas x {batches} batches = {rows:,} digest "
        f"rows; summaries {written / MiB:.1f} MiB ({written / rows:.1f} bytes a batch, "
        f"{100 * written / (rows * 16384):.3f}% of 16 KiB batches), written in "
        f"{time.perf_counter() - t:.0f} s"
    )
    results = {}
    for master in ("local[1]", "local[2]"):
        r = child(SPARK_CHILD, master, dest, str(runs))
        results[master] = r
        print(
            f"  spark {master}: {r['best']:6.1f} s  {rows / r['best']:10,.0f} rows/s  "
            f"{r['partitions']:,} partition audits, {r['replicas']:,} replica groups, "
            f"{r['findings']:,} findings; driver peak RSS {r['driver_rss_kib'] / 1024:.0f} MiB, "
            f"JVM peak {r['jvm_hwm_kib'] / 1024:.0f} MiB (start-up {r['start_up']:.1f} s, "
            f"first run {r['first']:.1f} s)"
        )
    ratio = results["local[1]"]["best"] / results["local[2]"]["best"]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"  local[2] vs local[1]: {ratio:.2f}x  (load average {load} on {os.cpu_count()} cores)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench audit_summaries", description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("broker", "fleet", "both"), default="both")
    p.add_argument("--size", default="1G", type=parse_size)
    p.add_argument("--partitions", default=8, type=int)
    p.add_argument("--brokers", default=100, type=int)
    p.add_argument("--replicas", default=2000, type=int)
    p.add_argument("--batches", default=50, type=int)
    p.add_argument("--runs", default=2, type=int)
    p.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = p.parse_args(argv)
    root = tempfile.mkdtemp(prefix="audit-summaries-", dir=args.dir)
    try:
        if args.part in ("broker", "both"):
            bench_broker(root, args.size, args.partitions, args.runs)
        if args.part in ("fleet", "both"):
            bench_fleet(root, args.brokers, args.replicas, args.batches, args.runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
