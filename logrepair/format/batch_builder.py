"""Kafka's v2 batch writer (spec fmt §2.8): `build_batch` writes exactly what `MemoryRecordsBuilder`
writes for the same inputs (same field order and sentinels, attributes' high byte 0, CRC last), and
the empty, control and end-transaction batches built on it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from . import compression
from .batch_layout import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_MASK,
    HEADER,
    INT32_MAX,
    LOG_OVERHEAD,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Record,
)
from .control import ControlType, EndTransactionMarker, encode_control_key
from .crc import crc32c
from .record_codec import encode_record


def _attributes(
    codec: int, timestamp_type: str, is_transactional: bool, is_control: bool, delete_horizon: bool
) -> int:
    if timestamp_type not in ("create", "append"):
        raise ValueError(f"timestamp_type must be 'create' or 'append', not {timestamp_type!r}")
    return (
        codec
        | (TIMESTAMP_TYPE_MASK if timestamp_type == "append" else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
        | (DELETE_HORIZON_MASK if delete_horizon else 0)
    )


def _check_producer(
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    is_transactional: bool,
    is_control: bool,
) -> None:
    """The constructor checks of `MemoryRecordsBuilder`."""
    if is_transactional and producer_id < 0:
        raise ValueError("Cannot write transactional messages without a valid producer ID")
    if producer_id != NO_PRODUCER_ID:
        if producer_epoch < 0:
            raise ValueError(f"Invalid negative producer epoch: {producer_epoch}")
        if base_sequence < 0 and not is_control:
            raise ValueError(f"Invalid negative sequence number used: {base_sequence}")


def _finish(header_fields: tuple, body: bytes) -> bytes:
    """Packs the header, then the CRC over [21, end) last, as `DefaultRecordBatch.writeHeader`."""
    out = bytearray(HEADER.size + len(body))
    HEADER.pack_into(out, 0, *header_fields)
    out[RECORD_BATCH_OVERHEAD:] = body
    struct.pack_into(">I", out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int,
    codec: int = 0,
    compression_level: int | None = None,
    timestamp_type: str = "create",
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    delete_horizon_ms: int | None = None,
    last_offset: int | None = None,
) -> bytes:
    """One v2 batch as `MemoryRecordsBuilder` writes it; no records gives no bytes, as in Kafka.

    Records keep their absolute `offset` and `timestamp` (the record's `sequence` is ignored: it is
    derived from `base_sequence`). `last_offset` overrides the batch's last offset as the log
    cleaner does (`overrideLastOffset`), so a compacted batch can end past its last record.
    `log_append_time` is required for `timestamp_type='append'` and becomes maxTimestamp.
    """
    records = list(records)
    if not records:
        return b""
    _check_producer(producer_id, producer_epoch, base_sequence, is_transactional, is_control)
    if timestamp_type == "append" and log_append_time is None:
        raise ValueError("timestamp_type 'append' needs log_append_time")
    base_timestamp = records[0].timestamp if delete_horizon_ms is None else delete_horizon_ms
    max_timestamp = NO_TIMESTAMP
    previous: int | None = None
    parts: list[bytes] = []
    for record in records:
        if previous is not None and record.offset <= previous:
            raise ValueError(
                f"Illegal offset {record.offset} following previous offset {previous} "
                "(Offsets must increase monotonically)."
            )
        if record.offset < base_offset or record.offset - base_offset > INT32_MAX:
            raise ValueError(f"offset {record.offset} does not fit a batch based at {base_offset}")
        if record.timestamp < 0 and record.timestamp != NO_TIMESTAMP:
            raise ValueError(f"Invalid negative timestamp {record.timestamp}")
        previous = record.offset
        max_timestamp = max(max_timestamp, record.timestamp)
        parts.append(
            encode_record(
                record.offset - base_offset,
                record.timestamp - base_timestamp,
                record.key,
                record.value,
                record.headers,
            )
        )
    if timestamp_type == "append":
        max_timestamp = log_append_time
    if last_offset is None:
        last_offset = previous
    elif last_offset < previous:
        raise ValueError(f"last_offset {last_offset} is below the last record's offset {previous}")
    body = b"".join(parts)
    if codec:
        body = compression.compress(
            compression.Codec(codec), body, magic=2, level=compression_level
        )
    header = (
        base_offset,
        RECORD_BATCH_OVERHEAD + len(body) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC,
        0,
        _attributes(
            codec, timestamp_type, is_transactional, is_control, delete_horizon_ms is not None
        ),
        last_offset - base_offset,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    return _finish(header, body)


def build_empty_batch(
    *,
    base_offset: int,
    last_offset: int,
    max_timestamp: int,
    timestamp_type: str = "create",
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """`DefaultRecordBatch.writeEmptyHeader`: the 61-byte batch compaction leaves to keep producer state."""
    header = (
        base_offset,
        RECORD_BATCH_OVERHEAD - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC,
        0,
        _attributes(0, timestamp_type, is_transactional, is_control, False),
        last_offset - base_offset,
        NO_TIMESTAMP,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        0,
    )
    return _finish(header, b"")


def build_control_batch(
    control_type: ControlType,
    value: bytes,
    *,
    base_offset: int,
    timestamp: int,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    is_transactional: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A control batch of one record (`MemoryRecordsBuilder.appendControlRecord`)."""
    record = Record(base_offset, timestamp, encode_control_key(control_type), value)
    return build_batch(
        [record],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=is_transactional,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def build_end_txn_marker(
    marker: EndTransactionMarker,
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """`MemoryRecords.withEndTransactionMarker`: the 78-byte COMMIT/ABORT batch."""
    if producer_id < 0:
        raise ValueError("End transaction marker requires a valid producerId")
    return build_control_batch(
        marker.control_type,
        marker.value(),
        base_offset=base_offset,
        timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        partition_leader_epoch=partition_leader_epoch,
    )
