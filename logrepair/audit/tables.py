"""The audit's tables as columns and rows, one definition for Spark and for pyarrow.

`TABLES` names each Parquet table's columns and types; rows are plain tuples in that order, made
from the report (or, for `segments`, from the executors' summaries). spark.py turns a definition
into a Spark schema, `arrow_schema` into a pyarrow one, so the two writers cannot drift apart.
"""

from __future__ import annotations

from .model import AuditReport, SegmentSummary

# type names: string, int (32-bit), long, double, bool, and list<...> of those
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "segments": (
        ("log_dir", "string"),
        ("partition_dir", "string"),
        ("topic", "string"),
        ("partition", "int"),
        ("file", "string"),
        ("base_offset", "long"),
        ("size", "long"),
        ("batches", "long"),
        ("valid_end", "long"),
        ("first_offset", "long"),
        ("next_offset", "long"),
        ("defects", "int"),
        ("scan_error", "string"),
    ),
    "partitions": (
        ("path", "string"),
        ("log_dir", "string"),
        ("broker", "string"),
        ("topic", "string"),
        ("partition", "int"),
        ("state", "string"),
        ("log_start_offset", "long"),
        ("log_end_offset", "long"),
        ("recovery_point", "long"),
        ("high_watermark", "long"),
        ("unflushed_bytes", "long"),
        ("recovery_bytes", "long"),
        ("segments", "int"),
        ("bytes", "long"),
        ("batches", "long"),
        ("findings", "int"),
    ),
    "findings": (
        ("scope", "string"),
        ("where", "string"),
        ("kind", "string"),
        ("detail", "string"),
    ),
    "replicas": (
        ("topic", "string"),
        ("partition", "int"),
        ("paths", "list<string>"),
        ("brokers", "list<string>"),
        ("log_end_offsets", "list<long>"),
        ("high_watermarks", "list<long>"),
        ("diverged_at", "long"),
        ("diverged_paths", "list<string>"),
    ),
    "log_dirs": (
        ("path", "string"),
        ("broker", "string"),
        ("cluster_id", "string"),
        ("node_id", "int"),
        ("clean_shutdown", "bool"),
        ("partitions", "int"),
        ("unflushed_bytes", "long"),
        ("recovery_bytes", "long"),
        ("recovery_seconds", "double"),
        ("findings", "int"),
    ),
    "consumer_offsets": (
        ("group", "string"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "long"),
        ("log_start_offset", "long"),
        ("log_end_offset", "long"),
        ("source", "string"),
        ("status", "string"),
    ),
}


def segment_row(s: SegmentSummary) -> tuple:
    t = s.task
    return (
        t.log_dir,
        t.partition_dir,
        t.topic,
        t.partition,
        t.file,
        t.base_offset,
        t.size,
        s.batches,
        s.valid_end,
        s.first_offset,
        s.next_offset,
        len(s.defects),
        s.scan_error,
    )


def report_rows(report: AuditReport) -> dict[str, list[tuple]]:
    """Every table but `segments`, in the report's order."""
    return {
        "partitions": [
            (
                p.path,
                p.log_dir,
                p.broker,
                p.topic,
                p.partition,
                p.state,
                p.log_start_offset,
                p.log_end_offset,
                p.recovery_point,
                p.high_watermark,
                p.unflushed_bytes,
                p.recovery_bytes,
                p.segments,
                p.bytes,
                p.batches,
                len(p.findings),
            )
            for p in report.partitions
        ],
        "findings": [(scope, where, f.kind, f.detail) for scope, where, f in report.all_findings()],
        "replicas": [
            (
                r.topic,
                r.partition,
                r.paths,
                r.brokers,
                r.log_end_offsets,
                r.high_watermarks,
                r.diverged_at,
                r.diverged_paths,
            )
            for r in report.replicas
        ],
        "log_dirs": [
            (
                d.path,
                d.broker,
                d.cluster_id,
                d.node_id,
                d.clean_shutdown,
                d.partitions,
                d.unflushed_bytes,
                d.recovery_bytes,
                d.recovery_seconds,
                len(d.findings),
            )
            for d in report.log_dirs
        ],
        "consumer_offsets": [
            (
                c.group,
                c.topic,
                c.partition,
                c.offset,
                c.log_start_offset,
                c.log_end_offset,
                c.source,
                c.status,
            )
            for c in report.consumer_offsets
        ],
    }


def arrow_schema(name: str):
    import pyarrow as pa

    scalar = {
        "string": pa.string(),
        "int": pa.int32(),
        "long": pa.int64(),
        "double": pa.float64(),
        "bool": pa.bool_(),
    }

    def typ(t: str):
        if t.startswith("list<"):
            return pa.list_(scalar[t[5:-1]])
        return scalar[t]

    return pa.schema([(col, typ(t)) for col, t in TABLES[name]])
