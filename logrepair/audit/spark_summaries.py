"""`logrepair audit --spark [MASTER] --from-summaries SRC...`: the fleet audit over scan summaries.

The brokers' summaries (summary_writer.py) are read as Spark DataFrames; no executor touches a
broker's disk. The driver reads only the small tables (one manifest row per broker, one row per log
dir). The `partitions` and `segments` rows of all brokers meet in one shuffle by topic-partition,
sorted by it within each task, and stream through Arrow into `_audit_sorted` on the executors,
which runs the direct audit's own functions on each topic-partition in turn (`audit_partition` on
each replica, `compare_replicas` across them), holding one topic-partition's digests at a time.
Only the per-partition audits, the replica audits and the consumer commits come back to the
driver, which builds the report with the same `build_report`; digests never leave the executors.

Paths are the brokers' own. Where two brokers have a log dir at the same path (every broker's
`/var/lib/kafka/data`), every path of the report is prefixed with its broker, `node-1:/var/...`
(with its cluster as well, `<cluster>/node-1:`, when broker labels repeat across clusters).
"""

from __future__ import annotations

import os
import pickle
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from functools import partial, reduce

import pyarrow as pa

from .checks import audit_partition
from .errors import SummaryError
from .fleet import build_report, latest_commits
from .model import AuditReport, BatchDigests
from .spark import BINS_PER_CORE, replica_rows, spark_schema, write_tables
from .summary_store import read_manifests, split_source
from .summary_tables import (
    DETAIL_COLUMNS,
    log_dir_plan,
    partition_plan,
    segment_rows,
    segment_summaries,
)

_RESULT_SCHEMA = "kind string, value binary"
_NOT_SHIPPED = {"mtime_ns", "ctime_ns", "inode", *DETAIL_COLUMNS}
"""Segment columns the checks do not read: pruned before the shuffle."""


def audit_summaries_spark(
    spark, sources: list[str], *, recovery_rate: int, out: str | None = None
) -> AuditReport:
    """The fleet audit of the summaries under `sources`; with `out`, its tables as Parquet."""
    from pyspark.sql import functions as F

    read_manifests(sources)  # refuses other format versions before Spark reads anything
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    roots = [s if "://" in s else os.path.abspath(s) for s in sources]
    dirs = [r.asDict(recursive=True) for r in _read(spark, roots, "log_dirs").collect()]
    prefix = _prefix_rule(dirs)
    plans = [
        log_dir_plan(d, d["broker"], _qualify(prefix, d["cluster"], d["broker"], d["path"]))
        for d in dirs
    ]
    clean = {(d["cluster"], d["broker"], d["path"]): d["clean_shutdown"] for d in dirs}

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "1024")
    spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(64 << 20))
    partitions = _read(spark, roots, "partitions").withColumn("row", F.lit("partition"))
    segments = _read(spark, roots, "segments")
    shipped = segments.select(
        *[c for c in segments.columns if c not in _NOT_SHIPPED], F.lit("segment").alias("row")
    )
    width = max(1, spark.sparkContext.defaultParallelism * BINS_PER_CORE)
    results = (
        partitions.unionByName(shipped, allowMissingColumns=True)
        .repartition(width, "topic", "partition")
        .sortWithinPartitions("topic", "partition")
        .mapInArrow(partial(_audit_sorted, prefix, clean), _RESULT_SCHEMA)
    )
    found = _decode(results.collect())
    report = build_report(
        plans,
        found["partition"],
        found["replicas"],
        latest_commits(found["commits"]),
        recovery_rate=recovery_rate,
    )
    if out is not None:
        write_tables(spark, report, _segments_table(segments, prefix), out)
    return report


def _segments_table(segments, prefix: str | None):
    """The audit's `segments` table, straight from the summaries' rows (paths prefixed by
    `_qualify`'s rule, in Spark SQL: no Python involved)."""
    from pyspark.sql import functions as F

    def path(column: str):
        if prefix is None:
            return F.col(column)
        label = [F.col("broker")]
        if prefix != "broker":
            label = [F.col("cluster"), F.lit("/"), *label]
        return F.concat(*label, F.lit(":"), F.col(column))

    columns = {
        "log_dir": path("log_dir"),
        "partition_dir": path("partition_dir"),
        "file": path("file"),
        "defects": F.size("defects"),
    }
    return segments.select(
        [
            columns.get(f.name, F.col(f.name)).cast(f.dataType).alias(f.name)
            for f in spark_schema("segments").fields
        ]
    )


def _decode(rows: list) -> dict[str, list]:
    """The executors' results by kind, each row freed as it is decoded and the strings that repeat
    across partitions (log dir, broker, topic, state) shared: the driver holds the report's
    objects, not their pickles besides."""
    found: dict[str, list] = {"partition": [], "replicas": [], "commits": []}
    while rows:
        row = rows.pop()
        value = pickle.loads(row.value)
        audit = value.audit if row.kind == "commits" else value
        if row.kind != "replicas":
            audit.log_dir, audit.broker = sys.intern(audit.log_dir), sys.intern(audit.broker)
            audit.state = sys.intern(audit.state)
        else:
            audit.brokers = [sys.intern(b) for b in audit.brokers]
        audit.topic = sys.intern(audit.topic)
        found[row.kind].append(value)
    return found


def _read(spark, roots: list[str], table: str):
    """One table over every broker under `roots`, with `cluster` and `broker` as columns."""
    from pyspark.errors import AnalysisException

    frames = []
    for source in roots:
        root, clusters = split_source(source)
        pattern = f"{root}/{clusters}/broker=*/{table}.parquet"
        try:
            frames.append(spark.read.option("basePath", root).parquet(pattern))
        except AnalysisException:
            raise SummaryError(
                f"{root}: no summaries there (looked for {pattern}, as `logrepair audit "
                "--summaries-out` writes them)"
            ) from None
    return reduce(lambda a, b: a.unionByName(b), frames)


def _prefix_rule(dirs: list[dict]) -> str | None:
    """None when every log dir path is unique across the fleet, else how paths are prefixed."""
    owners = defaultdict(set)
    for d in dirs:
        owners[d["path"]].add((d["cluster"], d["broker"]))
    if all(len(o) == 1 for o in owners.values()):
        return None
    labels = {(d["cluster"], d["broker"]) for d in dirs}
    clusters_of = Counter(broker for _, broker in labels)
    return "broker" if all(n == 1 for n in clusters_of.values()) else "cluster/broker"


def _qualify(prefix: str | None, cluster: str, broker: str, path: str) -> str:
    if prefix is None:
        return path
    return f"{broker}:{path}" if prefix == "broker" else f"{cluster}/{broker}:{path}"


def _audit_sorted(prefix: str | None, clean: dict, batches) -> Iterator[pa.RecordBatch]:
    """On an executor: rows sorted by topic-partition, audited one topic-partition at a time."""
    parts: list[dict] = []
    segments: list[tuple[dict, BatchDigests]] = []
    key = None
    for batch in batches:
        out: list[tuple[str, object]] = []
        for row, digests in segment_rows(batch):
            if (row["topic"], row["partition"]) != key:
                if parts:
                    out += _audit_topic_partition(prefix, clean, parts, segments)
                parts, segments, key = [], [], (row["topic"], row["partition"])
            if row["row"] == "partition":
                parts.append(row)
            else:
                segments.append((row, digests))
        if out:
            yield _result_batch(out)
    if parts:
        yield _result_batch(_audit_topic_partition(prefix, clean, parts, segments))


def _result_batch(rows: list[tuple[str, object]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "kind": pa.array([k for k, _ in rows], pa.string()),
            "value": pa.array([pickle.dumps(v, protocol=5) for _, v in rows], pa.binary()),
        }
    )


def _audit_topic_partition(
    prefix: str | None,
    clean: dict,
    parts: list[dict],
    segments: list[tuple[dict, BatchDigests]],
) -> list[tuple]:
    """Every replica of one topic-partition, from its rows to its audit."""
    of_dir: dict[tuple, list] = defaultdict(list)
    for row, digests in segments:
        of_dir[(row["cluster"], row["broker"], row["partition_dir"])].append((row, digests))
    done = []
    for row in parts:
        cluster, broker = row["cluster"], row["broker"]
        qualify = partial(_qualify, prefix, cluster, broker)
        result = audit_partition(
            partition_plan(row, qualify),
            segment_summaries(of_dir[(cluster, broker, row["path"])], qualify),
            broker=broker,
            clean_shutdown=clean[(cluster, broker, row["log_dir"])],
        )
        done.append((result, []))
    return replica_rows(done)
