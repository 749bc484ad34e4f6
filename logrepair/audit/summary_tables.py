"""The scan summaries' tables: Arrow schemas, and plans and segment summaries to and from them.

One broker's summary is four Parquet files under `DEST/cluster=<id>/broker=<label>/`:
`broker.parquet` (one row: format version, when and by what it was written, counts),
`log_dirs.parquet` (per log dir: clean-shutdown marker, meta.properties, its findings and the root
checkpoints as read), `partitions.parquet` (per partition dir: state, its offsets in each root
checkpoint, leader-epoch-checkpoint, its findings) and `segments.parquet` (per `.log`: the file's
stamp, what the scan found, the `__consumer_offsets` commits, and the batch digests as list
columns, one element per valid batch). The cluster and broker are the directory names only (Hive
partitioning), so a table read over many brokers gets them as columns.

Everything the fleet checks need is here, in the form `audit_partition` takes: reading a row back
gives the plan or `SegmentSummary` the direct audit would have made, so both audits run the same
checks on the same values and agree.
"""

from __future__ import annotations

from array import array
from urllib.parse import quote

import pyarrow as pa

from .model import (
    BatchDigests,
    Finding,
    LogDirPlan,
    MetaProperties,
    PartitionPlan,
    SegmentSummary,
    SegmentTask,
)

# pyarrow asks whether each Python list given to `pa.array` is pandas', importing pandas (where it
# is installed: 0.2 s of CPU) the first time: done as this module loads, which `audit
# --summaries-out --jobs` does beside its workers (`pool.importing`), not when the first rows of
# the summary are written
pa.array([], pa.int64())

FORMAT_VERSION = 1
"""Raised whenever a table's columns or their meaning change; a reader refuses any other."""

TABLES = ("broker", "log_dirs", "partitions", "segments")

_FINDINGS = pa.list_(pa.struct([("kind", pa.string()), ("detail", pa.string())]))
_COMMIT = [
    ("group", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("at", pa.int64()),
    ("offset", pa.int64()),
]

SCHEMAS: dict[str, pa.Schema] = {
    "broker": pa.schema(
        [
            ("format_version", pa.int32()),
            ("logrepair_version", pa.string()),
            ("written_at", pa.timestamp("ms", tz="UTC")),
            ("stamped_at", pa.timestamp("ms", tz="UTC")),
            ("log_dirs", pa.int32()),
            ("partitions", pa.int32()),
            ("segments", pa.int64()),
            ("segments_scanned", pa.int64()),
            ("log_bytes", pa.int64()),
            ("summary_bytes", pa.int64()),
        ]
    ),
    "log_dirs": pa.schema(
        [
            ("path", pa.string()),
            ("clean_shutdown", pa.bool_()),
            ("has_meta", pa.bool_()),
            ("meta_version", pa.int32()),
            ("cluster_id", pa.string()),
            ("node_id", pa.int32()),
            ("directory_id", pa.string()),
            ("findings", _FINDINGS),
            (
                "checkpoints",
                pa.list_(
                    pa.struct(
                        [
                            ("file", pa.string()),
                            ("topic", pa.string()),
                            ("partition", pa.int32()),
                            ("offset", pa.int64()),
                        ]
                    )
                ),
            ),
        ]
    ),
    "partitions": pa.schema(
        [
            ("log_dir", pa.string()),
            ("path", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("state", pa.string()),
            ("recovery_point", pa.int64()),
            ("log_start_checkpoint", pa.int64()),
            ("high_watermark", pa.int64()),
            ("cleaner_offset", pa.int64()),
            (
                "leader_epochs",
                pa.list_(pa.struct([("epoch", pa.int32()), ("start_offset", pa.int64())])),
            ),
            ("leader_epochs_malformed", pa.bool_()),
            ("findings", _FINDINGS),
        ]
    ),
    "segments": pa.schema(
        [
            ("log_dir", pa.string()),
            ("partition_dir", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("file", pa.string()),
            ("base_offset", pa.int64()),
            ("size", pa.int64()),
            ("consumer_offsets", pa.bool_()),
            ("mtime_ns", pa.int64()),
            ("ctime_ns", pa.int64()),
            ("inode", pa.uint64()),
            ("batches", pa.int64()),
            ("valid_end", pa.int64()),
            ("first_offset", pa.int64()),
            ("next_offset", pa.int64()),
            ("scan_error", pa.string()),
            (
                "defects",
                pa.list_(
                    pa.struct(
                        [
                            ("kind", pa.string()),
                            ("file", pa.string()),
                            ("position", pa.int64()),
                            ("length", pa.int64()),
                            ("offset", pa.int64()),
                            ("detail", pa.string()),
                        ]
                    )
                ),
            ),
            ("epochs", pa.list_(pa.struct([("epoch", pa.int32()), ("offset", pa.int64())]))),
            ("commits", pa.list_(pa.struct(_COMMIT))),
            (
                "open_transactions",
                pa.list_(pa.struct([("producer_id", pa.int64()), *_COMMIT])),
            ),
            (
                "transaction_ends",
                pa.list_(pa.struct([("producer_id", pa.int64()), ("committed", pa.bool_())])),
            ),
            ("batch_base_offset", pa.list_(pa.int64())),
            ("batch_last_offset", pa.list_(pa.int64())),
            ("batch_position", pa.list_(pa.int64())),
            ("batch_crc", pa.list_(pa.int64())),
            ("batch_size", pa.list_(pa.int64())),
            ("batch_leader_epoch", pa.list_(pa.int64())),
            ("batch_max_timestamp", pa.list_(pa.int64())),
            ("batch_producer_id", pa.list_(pa.int64())),
        ]
    ),
}

DIGEST_COLUMNS = {
    "batch_base_offset": "base",
    "batch_last_offset": "last",
    "batch_position": "position",
    "batch_crc": "crc",
}
DETAIL_COLUMNS = {
    "batch_size": "size",
    "batch_leader_epoch": "leader_epoch",
    "batch_max_timestamp": "max_timestamp",
    "batch_producer_id": "producer_id",
}
STAMP_COLUMNS = ("size", "mtime_ns", "ctime_ns", "inode")
"""What says a segment file is unchanged since its summary (see summary_writer.file_stamp)."""


def broker_dir(root: str, cluster: str, broker: str) -> str:
    """`root/cluster=<cluster>/broker=<broker>`, each value %-escaped as Hive and Spark expect."""
    return f"{root.rstrip('/')}/cluster={quote(cluster, safe='')}/broker={quote(broker, safe='')}"


# --- writing -----------------------------------------------------------------------------------


def log_dir_row(d: LogDirPlan) -> dict:
    meta = d.meta or MetaProperties()
    return {
        "path": d.path,
        "clean_shutdown": d.clean_shutdown,
        "has_meta": d.meta is not None,
        "meta_version": meta.version,
        "cluster_id": meta.cluster_id,
        "node_id": meta.node_id,
        "directory_id": meta.directory_id,
        "findings": _findings_out(d.findings),
        "checkpoints": [
            {"file": name, "topic": tp[0], "partition": tp[1], "offset": offset}
            for name, entries in sorted(d.checkpoints.items())
            for tp, offset in sorted(entries.items())
        ],
    }


def partition_row(p: PartitionPlan) -> dict:
    return {
        "log_dir": p.log_dir,
        "path": p.path,
        "topic": p.topic,
        "partition": p.partition,
        "state": p.state,
        "recovery_point": p.recovery_point,
        "log_start_checkpoint": p.log_start_checkpoint,
        "high_watermark": p.high_watermark,
        "cleaner_offset": p.cleaner_offset,
        "leader_epochs": None
        if p.leader_epochs is None
        else [{"epoch": e, "start_offset": o} for e, o in p.leader_epochs],
        "leader_epochs_malformed": p.leader_epochs_malformed,
        "findings": _findings_out(p.findings),
    }


class SegmentRows:
    """Segment summaries gathered column by column for one Parquet row group; the digest arrays
    are appended as they are (no Python object per batch)."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.lists: dict[str, array] = {c: array("q") for c in (*DIGEST_COLUMNS, *DETAIL_COLUMNS)}
        self.offsets = array("i", [0])

    @property
    def batches(self) -> int:
        return self.offsets[-1]

    def add(self, s: SegmentSummary, stamp: tuple[int, int, int, int]) -> None:
        t = s.task
        if s.details is None:
            raise ValueError(f"{t.file}: summarized without batch details")
        self.rows.append(
            {
                "log_dir": t.log_dir,
                "partition_dir": t.partition_dir,
                "topic": t.topic,
                "partition": t.partition,
                "file": t.file,
                "base_offset": t.base_offset,
                "consumer_offsets": t.consumer_offsets,
                **dict(zip(STAMP_COLUMNS, stamp, strict=True)),
                "batches": s.batches,
                "valid_end": s.valid_end,
                "first_offset": s.first_offset,
                "next_offset": s.next_offset,
                "scan_error": s.scan_error,
                "defects": s.defects,
                "epochs": [{"epoch": e, "offset": o} for e, o in s.epochs],
                "commits": [_commit(k, at, off) for k, (at, off) in s.commits.items()],
                "open_transactions": [
                    {"producer_id": pid, **_commit(k, at, off)}
                    for pid, pending in s.open_transactions.items()
                    for k, at, off in pending
                ],
                "transaction_ends": [
                    {"producer_id": pid, "committed": c} for pid, c in s.transaction_ends.items()
                ],
            }
        )
        for column, part in DIGEST_COLUMNS.items():
            self.lists[column].extend(getattr(s.digests, part))
        for column, part in DETAIL_COLUMNS.items():
            self.lists[column].extend(getattr(s.details, part))
        self.offsets.append(self.offsets[-1] + len(s.digests))

    def table(self) -> pa.Table:
        schema = SCHEMAS["segments"]
        scalar = [f.name for f in schema if f.name not in self.lists]
        columns = {c: pa.array([r[c] for r in self.rows], schema.field(c).type) for c in scalar}
        offsets = pa.array(self.offsets, pa.int32())
        for column, values in self.lists.items():
            flat = pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])
            columns[column] = pa.ListArray.from_arrays(offsets, flat)
        return pa.table([columns[f.name] for f in schema], schema=schema)


def _commit(key: tuple, at: int, offset: int | None) -> dict:
    group, topic, partition = key
    return {"group": group, "topic": topic, "partition": partition, "at": at, "offset": offset}


def _findings_out(findings: list[Finding]) -> list[dict]:
    return [{"kind": f.kind, "detail": f.detail} for f in findings]


# --- reading -----------------------------------------------------------------------------------


def log_dir_plan(row: dict, broker: str, path: str) -> LogDirPlan:
    """A log dir as discovery left it (without its partitions); `path` may be qualified."""
    meta = None
    if row["has_meta"]:
        meta = MetaProperties(
            row["meta_version"], row["cluster_id"], row["node_id"], row["directory_id"]
        )
    return LogDirPlan(
        path=path,
        broker=broker,
        clean_shutdown=row["clean_shutdown"],
        meta=meta,
        findings=_findings_in(row["findings"]),
    )


def partition_plan(row: dict, qualify) -> PartitionPlan:
    epochs = row["leader_epochs"]
    return PartitionPlan(
        log_dir=qualify(row["log_dir"]),
        path=qualify(row["path"]),
        topic=row["topic"],
        partition=row["partition"],
        state=row["state"],
        recovery_point=row["recovery_point"],
        log_start_checkpoint=row["log_start_checkpoint"],
        high_watermark=row["high_watermark"],
        cleaner_offset=row["cleaner_offset"],
        leader_epochs=None if epochs is None else [(e["epoch"], e["start_offset"]) for e in epochs],
        leader_epochs_malformed=row["leader_epochs_malformed"],
        findings=_findings_in(row["findings"]),
    )


def segment_rows(data: pa.Table | pa.RecordBatch) -> list[tuple[dict, BatchDigests]]:
    """Each row of `data` (segments columns, maybe among others) as a dict of its columns but the
    batch lists, and the digests of its batches; one conversion for all the rows."""
    names = [c for c in data.column_names if c not in DIGEST_COLUMNS and c not in DETAIL_COLUMNS]
    rows = data.select(names).to_pylist()
    lists = {part: _int64_lists(data.column(c)) for c, part in DIGEST_COLUMNS.items()}
    return [
        (row, BatchDigests(**{part: lists[part][i] for part in lists}))
        for i, row in enumerate(rows)
    ]


def segment_summaries(rows: list[tuple[dict, BatchDigests]], qualify) -> list[SegmentSummary]:
    """The summaries of one partition dir's segment rows, numbered by base offset as discovery
    numbers them; `qualify` maps each path as the report shows it."""
    out = []
    for index, (r, digests) in enumerate(sorted(rows, key=lambda rd: rd[0]["base_offset"])):
        file = qualify(r["file"])
        task = SegmentTask(
            log_dir=qualify(r["log_dir"]),
            partition_dir=qualify(r["partition_dir"]),
            topic=r["topic"],
            partition=r["partition"],
            file=file,
            base_offset=r["base_offset"],
            size=r["size"],
            index=index,
            consumer_offsets=r["consumer_offsets"],
        )
        open_txns: dict[int, list] = {}
        for c in r["open_transactions"]:
            open_txns.setdefault(c["producer_id"], []).append(
                ((c["group"], c["topic"], c["partition"]), c["at"], c["offset"])
            )
        out.append(
            SegmentSummary(
                task=task,
                batches=r["batches"],
                valid_end=r["valid_end"],
                first_offset=r["first_offset"],
                next_offset=r["next_offset"],
                defects=[{**d, "file": file} for d in r["defects"]],
                digests=digests,
                epochs=[(e["epoch"], e["offset"]) for e in r["epochs"]],
                commits={
                    (c["group"], c["topic"], c["partition"]): (c["at"], c["offset"])
                    for c in r["commits"]
                },
                open_transactions=open_txns,
                transaction_ends={t["producer_id"]: t["committed"] for t in r["transaction_ends"]},
                scan_error=r["scan_error"],
            )
        )
    return out


def _int64_lists(column: pa.Array | pa.ChunkedArray) -> list[array]:
    """A list<int64> column as one `array('q')` per row, copied from Arrow's buffers (a null
    list, as in rows of another table, is empty)."""
    out: list[array] = []
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        values = chunk.flatten()
        flat = array("q")
        if len(values):
            buf = values.buffers()[1]
            flat.frombytes(memoryview(buf)[values.offset * 8 : (values.offset + len(values)) * 8])
        offsets = chunk.offsets.to_pylist()
        base = offsets[0] if offsets else 0
        out += [flat[a - base : b - base] for a, b in zip(offsets, offsets[1:], strict=False)]
    return out


def _findings_in(rows: list[dict] | None) -> list[Finding]:
    return [Finding(f["kind"], f["detail"]) for f in rows or ()]
