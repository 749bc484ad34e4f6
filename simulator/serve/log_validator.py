"""The leader's validation of a produced batch and its offset assignment (Kafka's `LogValidator`).

For magic 2 with the producer's own compression (`compression.type=producer`), Kafka validates every
record and then assigns offsets in place: the base offset and partition leader epoch are set, the
max timestamp (and the timestamp type bit) set for LogAppendTime topics, and the CRC recomputed. The
records' bytes are kept as the producer wrote them.
"""

from __future__ import annotations

import struct

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_layout import ATTRIBUTES_OFFSET, CRC_OFFSET, TIMESTAMP_TYPE_MASK
from logrepair.format.crc import crc32c
from logrepair.format.errors import FormatError
from logrepair.protocol.errors import ErrorCode

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_MAX_TIMESTAMP_OFFSET = 35
_PARTITION_LEADER_EPOCH_OFFSET = 12


class InvalidBatch(Exception):
    """A produce the leader refuses; `error` is the code the partition's response carries."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def validate(data: bytes | memoryview, max_message_bytes: int) -> RecordBatch:
    """The one v2 batch of a produce request's partition data, checked as Kafka's leader does."""
    data = bytes(data)
    try:
        batch = RecordBatch.parse(data)
    except FormatError as e:
        if e.kind == "bad_magic":  # ProduceRequest.validateRecords: v3+ carries magic 2 only
            raise InvalidBatch(
                ErrorCode.INVALID_RECORD,
                f"Produce requests with version 3 or later must use "
                f"magic 2 record batches: {e.detail}",
            ) from None
        raise InvalidBatch(ErrorCode.CORRUPT_MESSAGE, f"{e.kind}: {e.detail}") from None
    if batch.size != len(data):
        raise InvalidBatch(
            ErrorCode.INVALID_RECORD,
            "Produce requests with version 3 or later must contain exactly one record batch "
            f"(found {len(data) - batch.size} bytes after the first)",
        )
    if batch.size > max_message_bytes:
        raise InvalidBatch(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The record batch size {batch.size} bytes exceeds the maximum configured value "
            f"({max_message_bytes} bytes)",
        )
    if not batch.crc_valid:
        raise InvalidBatch(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record is corrupt (stored crc = {batch.crc}, computed crc = {batch.computed_crc()})",
        )
    if batch.is_control:
        raise InvalidBatch(
            ErrorCode.INVALID_RECORD, "Clients are not allowed to write control records"
        )
    if batch.count <= 0 or batch.count != batch.last_offset_delta + 1:
        raise InvalidBatch(
            ErrorCode.INVALID_RECORD,
            f"Record count {batch.count} does not match the last offset delta "
            f"{batch.last_offset_delta}",
        )
    try:
        records = batch.records()
    except FormatError as e:
        raise InvalidBatch(ErrorCode.CORRUPT_MESSAGE, f"{e.kind}: {e.detail}") from None
    for i, record in enumerate(records):
        if record.offset - batch.base_offset != i:
            raise InvalidBatch(
                ErrorCode.INVALID_RECORD,
                f"Record {i} has offset delta {record.offset - batch.base_offset}, expected {i}",
            )
    return batch


def assign_offsets(
    batch: RecordBatch, base_offset: int, leader_epoch: int, log_append_time: int | None
) -> bytes:
    """The batch's bytes as the leader appends them (offsets in place, CRC recomputed)."""
    out = bytearray(batch.raw)
    _INT64.pack_into(out, 0, base_offset)
    _INT32.pack_into(out, _PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    if log_append_time is not None:
        attributes = _INT16.unpack_from(out, ATTRIBUTES_OFFSET)[0] | TIMESTAMP_TYPE_MASK
        _INT16.pack_into(out, ATTRIBUTES_OFFSET, attributes)
        _INT64.pack_into(out, _MAX_TIMESTAMP_OFFSET, log_append_time)
    _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)
