"""RecordBatch magic 2 (spec fmt §2): a lazy read view over a memoryview.

Reading never copies the batch: the 61-byte header is one `struct` unpack from the caller's buffer, the
CRC is computed on first use over a zero-copy slice, and records are decoded only when asked. Every
check of spec §2.9 raises `FormatError` with Kafka's own message in the detail, so an operator can match
what logrepair says to what the broker logged.

The layout and `Record` are `batch_layout`'s, the records' decoding `record_codec`'s (in C where it is
built), the writer `batch_builder`'s.
"""

from __future__ import annotations

import base64

from . import compression
from .batch_layout import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    HEADER,
    LOG_OVERHEAD,
    MAGIC,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Record,
    codec_name,
    increment_sequence,
)
from .control import ControlType, EndTransactionMarker, parse_control_key
from .crc import crc32c
from .errors import FormatError
from .record_codec import check_records, decode_records


class RecordBatch:
    """A v2 batch over `raw` (exactly the batch's bytes); `position` is where it starts in its file.

    Header fields are plain attributes, read once; the CRC check and the records are computed on
    first use and cached.
    """

    __slots__ = (
        "raw",
        "position",
        "base_offset",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "count",
        "_crc_valid",
        "_records",
    )

    def __init__(
        self,
        raw: memoryview,
        position: int = 0,
        header: tuple | None = None,
        crc_valid: bool | None = None,
    ) -> None:
        if header is None:
            header = HEADER.unpack_from(raw, 0)
        self.raw = raw
        self.position = position
        (
            self.base_offset,
            _,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.count,
        ) = header
        # Kafka casts the int16 to a byte: the high byte is never read.
        self.attributes = attributes & 0xFF
        self._crc_valid = crc_valid
        self._records: list[Record] | None = None

    @classmethod
    def parse(cls, buf, position: int = 0, *, file_position: int | None = None) -> RecordBatch:
        """The batch starting at `buf[position]`, its framing checked (not its CRC, not its records).

        `file_position` is where `buf[0]` lies in the file (default: `position` is already absolute).
        """
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        where = position if file_position is None else file_position + position
        available = len(mv) - position
        if available < RECORD_BATCH_OVERHEAD:
            raise FormatError(
                "torn_tail",
                f"{available} bytes left, fewer than a batch header ({RECORD_BATCH_OVERHEAD})",
                where,
            )
        header = HEADER.unpack_from(mv, position)
        length = header[1]
        magic = header[3]
        if magic != MAGIC:
            raise FormatError("bad_magic", f"Invalid magic found in record: {magic}", where)
        if length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            raise FormatError(
                "bad_length",
                f"Record batch is corrupt (the size {length + LOG_OVERHEAD} is smaller than the "
                f"minimum allowed overhead {RECORD_BATCH_OVERHEAD})",
                where,
            )
        end = position + LOG_OVERHEAD + length
        if end > len(mv):
            raise FormatError(
                "torn_tail",
                f"batch of {length + LOG_OVERHEAD} bytes, only {available} present",
                where,
            )
        return cls(mv[position:end], where, header)

    # --- derived values (spec §2.5) -------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def timestamp_type(self) -> str:
        return "append" if self.attributes & TIMESTAMP_TYPE_MASK else "create"

    @property
    def first_timestamp(self) -> int:
        return self.base_timestamp

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def crc_valid(self) -> bool:
        valid = self._crc_valid
        if valid is None:
            valid = self._crc_valid = crc32c(self.raw[ATTRIBUTES_OFFSET:]) == self.crc
        return valid

    def computed_crc(self) -> int:
        return crc32c(self.raw[ATTRIBUTES_OFFSET:])

    def ensure_valid(self) -> None:
        """`DefaultRecordBatch.ensureValid`: what broker recovery checks for each batch."""
        if not self.crc_valid:
            raise FormatError(
                "crc_mismatch",
                f"Record is corrupt (stored crc = {self.crc}, computed crc = {self.computed_crc()})",
                self.position,
            )

    # --- records ---------------------------------------------------------------------------------

    def records(self, max_output: int | None = None) -> list[Record]:
        """All records, decoded and checked as Kafka's record iterator checks them.

        `max_output` bounds the decompressed size (a compression bomb is a `decompression_failed`).
        """
        records = self._records
        if records is None:
            attributes = self.attributes
            count = self.count
            # Uncompressed records are read in place: the common case, kept to one call.
            if count > 0 and not attributes & COMPRESSION_MASK:
                data = self.raw[RECORD_BATCH_OVERHEAD:]
            else:
                data = self._records_region(max_output)
            if data is None:
                records = []
            else:
                records = decode_records(
                    data,
                    count,
                    self.base_offset,
                    self.base_timestamp,
                    self.max_timestamp if attributes & TIMESTAMP_TYPE_MASK else None,
                    self.base_sequence,
                    self.position,
                )
            self._records = records
        return records

    def check_records(self, max_output: int | None = None) -> None:
        """Raises what `records()` would raise, without building the records (deep verification)."""
        if self._records is None:
            data = self._records_region(max_output)
            if data is not None:
                check_records(data, self.count, self.position)

    def _records_region(self, max_output: int | None) -> bytes | memoryview | None:
        """The (decompressed) records region, uncompressed ones not copied; None when the batch
        holds no records."""
        count = self.count
        if count == 0:
            return None  # Kafka does not look at the bytes after an empty batch's header.
        if count < 0:
            raise FormatError(
                "record_count_mismatch",
                f"Found invalid record count {count} in magic v2 batch",
                self.position,
            )
        codec = self.codec
        if codec == 0:
            return self.raw[RECORD_BATCH_OVERHEAD:]
        if codec not in compression.CODEC_NAMES:
            raise FormatError(
                "unknown_codec", f"Unknown compression type id: {codec}", self.position
            )
        kwargs = {} if max_output is None else {"max_output": max_output}
        try:
            return compression.decompress(
                compression.Codec(codec), self.raw[RECORD_BATCH_OVERHEAD:], magic=2, **kwargs
            )
        except FormatError as e:
            raise FormatError(e.kind, e.detail, self.position) from None

    def control_type(self) -> ControlType | None:
        """The type of the first control record (what producer-state recovery reads), or None."""
        if not self.is_control or self.count == 0:
            return None
        return parse_control_key(self.records()[0].key)[0]

    def end_txn_marker(self) -> EndTransactionMarker:
        """The marker of a COMMIT/ABORT control batch, parsed as `EndTransactionMarker.deserialize`."""
        first = self.records()[0]
        return EndTransactionMarker.parse(first.key, first.value)

    # --- JSON ------------------------------------------------------------------------------------

    def to_json(self, deep: bool = False) -> dict:
        out = {
            "position": self.position,
            "size": len(self.raw),
            "magic": self.magic,
            "base_offset": self.base_offset,
            "last_offset": self.base_offset + self.last_offset_delta,
            "count": self.count,
            "codec": codec_name(self.attributes & COMPRESSION_MASK),
            "crc": self.crc,
            "crc_valid": self.crc_valid,
            "is_transactional": self.is_transactional,
            "is_control": self.is_control,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "base_sequence": self.base_sequence,
            "partition_leader_epoch": self.partition_leader_epoch,
            "timestamp_type": self.timestamp_type,
            "first_timestamp": self.base_timestamp,
            "max_timestamp": self.max_timestamp,
        }
        if deep:
            out["records"] = [record_to_json(r) for r in self.records()]
        return out

    def __repr__(self) -> str:
        return (
            f"RecordBatch(position={self.position}, base_offset={self.base_offset}, "
            f"last_offset={self.last_offset}, count={self.count}, size={len(self.raw)})"
        )


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def record_to_json(record: Record) -> dict:
    """The dump contract's record object: key/value base64 or null, header keys as text."""
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [{"key": k, "value": _b64(v)} for k, v in record.headers],
    }
