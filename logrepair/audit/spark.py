"""The fleet audit on Spark over shared mounts (spark_summaries.py: over scan summaries).

Discovery runs on the driver (it reads only directory listings and small root files). The scans run
on the executors, packed into tasks of about equal bytes: whole topic-partitions (every replica of
one together) while they are small, else single segments. Either way each segment is scanned by
`summarize_segment`, checked by `audit_partition` and compared by `compare_replicas`, the functions
the local audit runs; only the per-partition audits, the replica audits and the consumer commits
come back to the driver, which builds the report with the same `build_report`. Every executor must
see the PATHs at the same place (a shared mount) and have logrepair installed. pyspark is imported
here and in spark_summaries.py only.
"""

from __future__ import annotations

import heapq
import os
import sys
from collections.abc import Iterable
from functools import partial

from ..storage.osdisk import OsDisk
from . import tables
from .checks import PartitionResult, audit_partition
from .discovery import discover
from .fleet import CONSUMER_OFFSETS_TOPIC, build_report, compare_replicas, latest_commits
from .model import AuditReport, BatchDigests, SegmentSummary, SegmentTask
from .segments import summarize_segment

DEFAULT_MASTER = "local[*]"
BINS_PER_CORE = 3
"""Tasks per core: enough that a slow bin does not leave cores idle at the end, few enough that
Spark's per-task cost (~10-50 ms) stays small against the scan."""


def spark_session(master: str | None, *, app_name: str = "logrepair", shuffle_partitions: int = 8):
    """A session on `master`; None keeps the master spark-submit set, else local[*].

    Workers run this interpreter (PYSPARK_PYTHON), so local mode needs no set-up beyond pip."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None or not SparkConf().contains("spark.master"):
        builder = builder.master(master or DEFAULT_MASTER)
    spark = (
        builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")  # stderr is for one-line errors, not Spark's chatter
    return spark


def pack_bins(items: list, bins: int, size=lambda t: t.size) -> list[list]:
    """Longest-processing-time-first packing by bytes: each item into the lightest bin."""
    bins = max(1, min(bins, len(items)))
    heap = [(0, i) for i in range(bins)]
    out: list[list] = [[] for _ in range(bins)]
    for item in sorted(items, key=lambda t: -size(t)):
        load, i = heapq.heappop(heap)
        out[i].append(item)
        heapq.heappush(heap, (load + max(size(item), 1), i))
    return [b for b in out if b]


def audit_paths_spark(
    spark, paths: list[str], *, recovery_rate: int, out: str | None = None
) -> AuditReport:
    """The audit of `paths` on `spark`; with `out`, its tables written as Parquet there.

    One Spark job. When every topic-partition (all its replicas together) is small against a
    task's share of the bytes, a task takes whole topic-partitions: it scans their replicas, runs
    `audit_partition` on each and `compare_replicas` on them, and the job has no shuffle at all.
    Otherwise tasks are segments, a shuffle by partition dir brings each partition's summaries
    together for `audit_partition`, and a shuffle by topic-partition brings the replicas together
    for `compare_replicas`. Plans travel as a broadcast; batch digests never reach the driver."""
    plans = discover(OsDisk(), paths)
    sc = spark.sparkContext
    width = sc.defaultParallelism * BINS_PER_CORE
    by_path = {p.path: (p, d.broker, d.clean_shutdown) for d in plans for p in d.partitions}
    sizes = {path: sum(t.size for t in p.segments) for path, (p, _, _) in by_path.items()}
    share = sum(sizes.values()) / max(1, width)
    units: dict[tuple, list[str]] = {}
    for path, (p, _, _) in by_path.items():
        key = (p.topic, p.partition) if p.state == "live" else (path, -1)
        units.setdefault(key, []).append(path)
    plans_b = sc.broadcast(by_path)
    keep = out is not None

    def unit_size(unit: list[str]) -> int:
        return sum(sizes[p] for p in unit)

    if max(map(unit_size, units.values()), default=0) <= 2 * share:
        bins = pack_bins(list(units.values()), width, size=unit_size)
        scanned = sc.parallelize(bins, max(1, len(bins))).flatMap(
            partial(_audit_units, plans_b, keep=keep)
        )
    else:
        groups = max(1, min(width, len(by_path)))
        tasks = [t for p, _, _ in by_path.values() for t in p.segments]
        bins = pack_bins(tasks, width)
        summaries = sc.parallelize(bins, max(1, len(bins))).flatMap(_scan_bin)
        empty = [(path, None) for path, (p, _, _) in by_path.items() if not p.segments]
        scanned = (
            summaries.union(sc.parallelize(empty))
            .groupByKey(groups)
            .map(partial(_partition_result, plans_b, keep=keep))
            .map(lambda x: (_replica_key(x[0]), x))
            .groupByKey(groups)
            .flatMap(lambda kv: replica_rows(list(kv[1])))
        )
    if keep:
        scanned = scanned.cache()  # the segments table reads the summaries again
    rows = scanned.filter(lambda x: x[0] != "summary").collect()
    audits = [r for kind, r in rows if kind == "partition"]
    replicas = [r for kind, r in rows if kind == "replicas"]
    commits = latest_commits(r for kind, r in rows if kind == "commits")
    report = build_report(plans, audits, replicas, commits, recovery_rate=recovery_rate)
    if keep:
        summaries = scanned.filter(lambda x: x[0] == "summary").map(lambda x: x[1])
        segments = spark.createDataFrame(
            summaries.map(tables.segment_row), spark_schema("segments")
        )
        write_tables(spark, report, segments, out)
        scanned.unpersist()
    plans_b.unpersist()
    return report


def _scan_bin(tasks: Iterable[SegmentTask]) -> list[tuple[str, SegmentSummary]]:
    disk = OsDisk()
    return [(t.partition_dir, summarize_segment(disk, t)) for t in tasks]


def _audit_units(plans_b, units: Iterable[list[str]], *, keep: bool):
    """Whole topic-partitions in one task: scan and check each replica, then compare them."""
    disk = OsDisk()
    for unit in units:
        done = []
        for path in unit:
            plan, broker, clean_shutdown = plans_b.value[path]
            found = [summarize_segment(disk, t) for t in plan.segments]
            result = audit_partition(plan, found, broker=broker, clean_shutdown=clean_shutdown)
            done.append((result, _slim(found) if keep else []))
        yield from replica_rows(done)


def _partition_result(plans_b, item, *, keep: bool):
    path, summaries = item
    plan, broker, clean_shutdown = plans_b.value[path]
    found = [s for s in summaries if s is not None]
    result = audit_partition(plan, found, broker=broker, clean_shutdown=clean_shutdown)
    return result, _slim(found) if keep else []


def _slim(summaries: list[SegmentSummary]) -> list[SegmentSummary]:
    """Summaries for the segments table: their counts, not their digests."""
    for s in summaries:
        s.digests = BatchDigests()
    return summaries


def _replica_key(r: PartitionResult) -> tuple:
    """Live replicas meet by topic-partition; anything else stays alone under its path."""
    a = r.audit
    return (a.topic, a.partition) if a.state == "live" else (a.path, -1)


def replica_rows(done: list[tuple[PartitionResult, list[SegmentSummary]]]) -> list[tuple]:
    """What the driver needs from a topic-partition's replicas (kind, value): each partition's
    audit, the consumer commits when it is `__consumer_offsets`, the replica comparison, and the
    segment summaries when the segments table is wanted."""
    rows: list[tuple[str, object]] = []
    for r, summaries in done:
        rows.append(("partition", r.audit))
        if r.audit.topic == CONSUMER_OFFSETS_TOPIC:
            rows.append(("commits", PartitionResult(r.audit, BatchDigests(), r.commits)))
        rows += [("summary", s) for s in summaries]
    live = [r for r, _ in done if r.audit.state == "live"]
    if len(live) > 1:
        rows.append(("replicas", compare_replicas(live)))
    return rows


def write_tables(spark, report: AuditReport, segments, out: str) -> None:
    """`segments` (a DataFrame made on the executors), and partitions, findings, replicas,
    log_dirs and consumer_offsets (from the report) as Parquet directories under `out`.

    The writes are submitted from threads: each is a small Spark job whose time is mostly
    scheduling, and Spark runs concurrent jobs side by side."""
    from concurrent.futures import ThreadPoolExecutor

    frames = {"segments": segments}
    for name, rows in tables.report_rows(report).items():
        frames[name] = spark.createDataFrame(rows, spark_schema(name)).coalesce(1)
    with ThreadPoolExecutor(len(frames)) as pool:
        futures = [
            pool.submit(frame.write.mode("overwrite").parquet, os.path.join(out, name))
            for name, frame in frames.items()
        ]
        for f in futures:
            f.result()


def spark_schema(name: str):
    from pyspark.sql import types as T

    scalar = {
        "string": T.StringType(),
        "int": T.IntegerType(),
        "long": T.LongType(),
        "double": T.DoubleType(),
        "bool": T.BooleanType(),
    }

    def typ(t: str):
        return T.ArrayType(scalar[t[5:-1]]) if t.startswith("list<") else scalar[t]

    return T.StructType([T.StructField(col, typ(t), True) for col, t in tables.TABLES[name]])


def export_spark(spark, path: str, out: str, *, include_corrupt: bool = False) -> int:
    """The records of `path` as a Parquet dataset under `out`, written by the executors from
    `export.segment_records`, the local export's generator. Returns the segments exported."""
    from .export import SPARK_SCHEMA

    plans = discover(OsDisk(), [path])
    tasks = [t for d in plans for p in d.partitions if p.state == "live" for t in p.segments]
    sc = spark.sparkContext
    bins = pack_bins(tasks, sc.defaultParallelism * BINS_PER_CORE)
    rows = sc.parallelize(bins, max(1, len(bins))).flatMap(partial(_export_rows, include_corrupt))
    spark.createDataFrame(rows, SPARK_SCHEMA).write.mode("overwrite").parquet(out)
    return len(tasks)


def _export_rows(include_corrupt: bool, tasks: list[SegmentTask]):
    from datetime import UTC, datetime, timedelta

    from .export import ExportStats, segment_records

    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    disk = OsDisk()
    stats = ExportStats()
    for task in tasks:
        for row in segment_records(disk, task, include_corrupt=include_corrupt, stats=stats):
            ts = row[3]
            yield row[:3] + (None if ts is None else epoch + timedelta(milliseconds=ts),) + row[4:]
