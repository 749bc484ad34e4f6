"""The v2 record batch's layout (spec fmt §2): its header fields and their offsets, the attribute
bits, Kafka's sentinels, and `Record`, what a batch holds; the `Batch` read interface that v2
batches (`batch.RecordBatch`) and legacy entries (`legacy.LegacyBatch`) share.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, Protocol, runtime_checkable

from . import compression

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount.
HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
LOG_OVERHEAD = 12
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAGIC = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1


def codec_name(codec: int) -> str:
    """The dump's codec name; ids 5-7 are not a codec (Kafka: `Unknown compression type id`)."""
    name = compression.CODEC_NAMES.get(codec)
    return f"unknown({codec})" if name is None else name


def increment_sequence(sequence: int, increment: int) -> int:
    """`DefaultRecordBatch.incrementSequence`: sequences wrap past Int.MAX to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


class Record(NamedTuple):
    """One record as a consumer sees it: absolute offset, effective timestamp, header key as text."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    sequence: int = NO_SEQUENCE


@runtime_checkable
class Batch(Protocol):
    """The read interface shared by v2 batches and legacy (magic 0/1) entries."""

    position: int

    @property
    def size(self) -> int: ...
    @property
    def magic(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def codec(self) -> int: ...
    @property
    def crc(self) -> int: ...
    @property
    def crc_valid(self) -> bool: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def partition_leader_epoch(self) -> int | None: ...
    @property
    def timestamp_type(self) -> str | None: ...
    @property
    def first_timestamp(self) -> int | None: ...
    @property
    def max_timestamp(self) -> int | None: ...
    @property
    def raw(self) -> memoryview: ...
    def records(self, max_output: int | None = None) -> list[Record]: ...
    def to_json(self, deep: bool = False) -> dict: ...
