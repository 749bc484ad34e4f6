"""`logrepair export`: the records of a log dir as Parquet, for the analyst's tools.

One generator turns one segment into rows (`segment_records`). The local export streams them, as
Arrow record batches, into one Parquet file per partition with pyarrow; the Spark export runs the
same generator on the executors and lets Spark write the rows. Memory stays bounded by one Kafka
batch plus `ROWS_PER_CHUNK` rows, whatever the size of the log.

Records of batches whose CRC fails are left out unless asked (`include_corrupt`): then they are
decoded where their bytes still frame, and flagged `corrupt`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from ..format.batch import RecordBatch
from ..format.errors import Defect, FormatError
from ..format.legacy import LegacyBatch
from ..storage.disk import Disk
from ..storage.scan import LogScan
from .model import SegmentTask

ROWS_PER_CHUNK = 8192
MAX_CORRUPT_BATCH = 64 << 20
"""A damaged batch's declared length is not trusted beyond this (bytes read to decode it)."""
MAX_RECORDS_OUTPUT = 256 << 20
"""Cap on one batch's decompressed size: a compression bomb becomes a skipped batch."""


def arrow_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("ms", tz="UTC")),
            ("key", pa.binary()),
            ("value", pa.binary()),
            (
                "headers",
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            ),
            ("corrupt", pa.bool_()),
        ]
    )


SPARK_SCHEMA = (
    "topic string, partition int, offset long, timestamp timestamp, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>, corrupt boolean"
)
"""The same columns for Spark (its timestamps are microseconds; rows carry datetimes)."""


@dataclass(slots=True)
class ExportStats:
    """Records written, and batches skipped because their records could not be decoded."""

    records: int = 0
    skipped_batches: int = 0


def segment_records(
    disk: Disk, task: SegmentTask, *, include_corrupt: bool = False, stats: ExportStats
) -> Iterator[tuple]:
    """The records of one `.log` as row tuples in `arrow_schema()`'s column order (timestamp in
    milliseconds, None when the record has none)."""
    for item in LogScan(disk, task.file, resync=True):
        corrupt = False
        if isinstance(item, Defect):
            if not (include_corrupt and item.kind == "crc_mismatch"):
                continue
            batch = _reframe(disk, task.file, item)
            if batch is None:
                stats.skipped_batches += 1
                continue
            corrupt = True
        else:
            batch = item
        try:
            records = (
                batch.records(MAX_RECORDS_OUTPUT, check_crcs=False)
                if corrupt and isinstance(batch, LegacyBatch)
                else batch.records(MAX_RECORDS_OUTPUT)
            )
        except FormatError:
            stats.skipped_batches += 1
            continue
        stats.records += len(records)
        for r in records:
            yield (
                task.topic,
                task.partition,
                r.offset,
                r.timestamp if r.timestamp is not None and r.timestamp >= 0 else None,
                r.key,
                r.value,
                [{"key": k, "value": v} for k, v in r.headers],
                corrupt,
            )


def segment_record_batches(
    disk: Disk, task: SegmentTask, *, include_corrupt: bool = False, stats: ExportStats
) -> Iterator:
    """`segment_records` as pyarrow RecordBatches of at most `ROWS_PER_CHUNK` rows."""
    import pyarrow as pa

    schema = arrow_schema()
    rows = segment_records(disk, task, include_corrupt=include_corrupt, stats=stats)
    while chunk := list(islice(rows, ROWS_PER_CHUNK)):
        columns = list(zip(*chunk, strict=True))
        yield pa.record_batch(
            [pa.array(col, f.type) for col, f in zip(columns, schema, strict=True)], schema=schema
        )


def _reframe(disk: Disk, file: str, defect: Defect) -> RecordBatch | LegacyBatch | None:
    """The batch at the start of a `crc_mismatch` region, framed without its CRC check."""
    with disk.open(file) as f:
        data = f.read_at(defect.position, min(defect.length, MAX_CORRUPT_BATCH))
    try:
        if len(data) > 16 and data[16] == 2:
            return RecordBatch.parse(data, 0, file_position=defect.position)
        return LegacyBatch.parse(data, 0, file_position=defect.position)
    except FormatError:
        return None


def export_local(
    disk: Disk, path: str, out: str, *, include_corrupt: bool = False
) -> tuple[int, ExportStats]:
    """One `<partition dir>.parquet` per live partition under `out` (under `out/<broker>/` when
    PATH holds several log dirs); returns (files written, stats)."""
    import pyarrow.parquet as pq

    from .discovery import discover

    os.makedirs(out, exist_ok=True)
    stats = ExportStats()
    files = 0
    plans = discover(disk, [path])
    for d in plans:
        folder = out if len(plans) == 1 else os.path.join(out, _safe(d.broker))
        os.makedirs(folder, exist_ok=True)
        for p in d.partitions:
            if p.state != "live":
                continue
            target = os.path.join(folder, os.path.basename(p.path) + ".parquet")
            with pq.ParquetWriter(target, arrow_schema()) as writer:
                for task in p.segments:
                    for batch in segment_record_batches(
                        disk, task, include_corrupt=include_corrupt, stats=stats
                    ):
                        writer.write_batch(batch)
            files += 1
    return files, stats


def _safe(label: str) -> str:
    return label.strip("/").replace("/", "_") or "broker"
