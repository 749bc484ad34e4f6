"""RecordBatch magic 2 (spec fmt §2): a lazy read view over a memoryview, and Kafka's writer.

Reading never copies the batch: the 61-byte header is one `struct` unpack from the caller's buffer, the
CRC is computed on first use over a zero-copy slice, and records are decoded only when asked. Every
check of spec §2.9 raises `FormatError` with Kafka's own message in the detail, so an operator can match
what logrepair says to what the broker logged.

The builder writes exactly what Kafka's `MemoryRecordsBuilder` writes for the same inputs (spec §2.8):
same field order and sentinels, attributes' high byte 0, CRC last.

Deep reading (`decode_records`, `check_records`) runs in C when the optional extension
`logrepair.format._records` is built (it is, at install, wherever a C compiler and Python's headers
are present); otherwise, or with `LOGREPAIR_PURE_PYTHON=1` in the environment, the pure-Python
functions here do it, with the same results and the same errors. `ACCELERATED` says which is active.
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import NamedTuple, Protocol, runtime_checkable

from . import compression
from .control import (
    ControlType,
    EndTransactionMarker,
    encode_control_key,
    parse_control_key,
)
from .crc import crc32c
from .errors import FormatError
from .varint import read_varint, read_varlong, write_varint, write_varlong

__all__ = [
    "ACCELERATED",
    "Batch",
    "ControlType",
    "EndTransactionMarker",
    "HEADER",
    "RECORD_BATCH_OVERHEAD",
    "Record",
    "RecordBatch",
    "build_batch",
    "build_control_batch",
    "build_empty_batch",
    "build_end_txn_marker",
    "check_records",
    "check_records_python",
    "codec_name",
    "decode_records",
    "decode_records_python",
    "encode_record",
    "increment_sequence",
    "record_to_json",
]

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


# One-byte varint tables, indexed by the byte (entries from 0x80 mean "longer varint"). The hot loops
# below use them instead of `&`/`>>`, which the 3.11 interpreter does not specialize for ints, while
# tuple indexing, `+`, `*` and int comparisons are specialized.
_ZIGZAG = tuple((b >> 1) ^ -(b & 1) if b < 0x80 else 0 for b in range(256))
# A length field's length: >= 0, -1 for null (any negative length), -2 for a longer varint.
_LENGTH1 = tuple((-1 if b & 1 else b >> 1) if b < 0x80 else -2 for b in range(256))
# Bytes a nullable length-prefixed field takes, its one-byte length included; 0 for a longer varint.
_SKIP1 = tuple((1 if b & 1 else 1 + (b >> 1)) if b < 0x80 else 0 for b in range(256))
# The first byte's share of a two-byte varint's value, and its sign bit.
_HALF = tuple((b & 0x7F) >> 1 for b in range(256))
_ODD = tuple(b & 1 for b in range(256))


def _invalid(detail: str, position: int) -> FormatError:
    return FormatError("invalid_records", detail, position)


def _premature_eof(position: int) -> FormatError:
    return FormatError(
        "record_count_mismatch", "Incorrect declared batch size, premature EOF reached", position
    )


def _read_length(data: bytes, pos: int, position: int) -> tuple[int, int]:
    """A record's length varint at `pos` and the position after it."""
    try:
        return read_varint(data, pos)
    except FormatError:
        raise _premature_eof(position) from None


def _bad_length(length: int, remaining: int, position: int) -> FormatError:
    return _invalid(
        f"Invalid record size: expected {length} bytes in record payload, but instead the "
        f"buffer has only {remaining} remaining bytes.",
        position,
    )


def _read_record(data: bytes, pos: int, length: int, end: int, position: int) -> tuple:
    """The record whose body (`length` bytes) starts at `pos`, read exactly as
    `DefaultRecord.readFrom` reads it: the reference the fast paths fall back to whenever they meet
    anything unusual, so every error comes from here. Returns (timestamp delta, offset delta, key,
    value, headers)."""
    try:
        # attributes at pos: no bits defined, ignored as Kafka ignores them
        ts_delta, p = read_varlong(data, pos + 1)
        offset_delta, p = read_varint(data, p)
        n, p = read_varint(data, p)  # a negative length is null, as in Kafka
        key = data[p : (p := p + n)] if n >= 0 else None
        n, p = read_varint(data, p)
        value = data[p : (p := p + n)] if n >= 0 else None
        headers, p = _decode_headers(data, p, end, position)
    except FormatError as e:
        if e.kind == "invalid_records":
            raise
        raise _invalid("Found invalid record structure", position) from None
    if p > end:
        # The last header value's length runs past the records: Kafka's `position()` throws
        # IllegalArgumentException there (any earlier field that does fails the next varint).
        raise _invalid("Found invalid record structure", position)
    if p != pos + length:
        raise _invalid(
            f"Invalid record size: expected to read {length} bytes in record payload, but "
            f"instead read {p - pos}",
            position,
        )
    return ts_delta, offset_delta, key, value, headers


def _decode_headers(
    data: bytes, p: int, end: int, position: int
) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """A record's header count and headers at `p`; the count is checked against the bytes left in
    the batch, as Kafka checks it against its buffer's remaining bytes."""
    n, p = read_varint(data, p)
    if n < 0:
        raise _invalid(f"Found invalid number of record headers {n}", position)
    if n > end - p:
        raise _invalid(
            f"Found invalid number of record headers. {n} is larger than the "
            "remaining size of the buffer",
            position,
        )
    headers = []
    for _ in range(n):
        key_length, p = read_varint(data, p)
        if key_length < 0:
            raise _invalid(f"Invalid negative header key size {key_length}", position)
        # Java's UTF-8 decoder replaces malformed input; so does this one.
        key = data[p : (p := p + key_length)].decode("utf-8", "replace")
        value_length, p = read_varint(data, p)
        value = data[p : (p := p + value_length)] if value_length >= 0 else None
        headers.append((key, value))
    return tuple(headers), p


def decode_records_python(
    data: bytes | bytearray | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
    position: int = 0,
) -> list[Record]:
    """Decodes exactly `count` records filling all of `data` (`DefaultRecord.readFrom` semantics).

    Written for speed (deep iteration has a stated target against kafka-python). Each record body
    is copied out (`rec`) so that positions inside it stay small ints, which CPython does not
    allocate; varints of one and two bytes, nearly all deltas and lengths, are decoded inline
    through the tables above. A record the fast path cannot take whole (a longer varint, a read
    past its body, a bad length) is read again by `_read_record`, which raises what Kafka raises.
    Fields are gathered as plain tuples and made `Record`s in one `map` at the end. Any buffer is
    copied to bytes first, so keys and values are bytes whatever the input.

    The reference for the C accelerator's `decode_records` (see `ACCELERATED`).
    """
    if type(data) is not bytes:
        data = bytes(data)
    rows: list[tuple] = []
    append = rows.append
    zigzag, length1, half, odd = _ZIGZAG, _LENGTH1, _HALF, _ODD
    end = len(data)
    pos = 0
    no_headers: tuple = ()
    # Records of one batch nearly always repeat their header keys: each distinct key is decoded
    # once per batch (so the cache is bounded by the batch).
    header_keys: dict[bytes, str] = {}
    sequenced = base_sequence >= 0
    seq = NO_SEQUENCE
    append_time = log_append_time is not None
    for _ in range(count):
        if pos >= end:
            raise _premature_eof(position)
        b = data[pos]
        if b < 0x80:
            length = zigzag[b]
            pos += 1
        elif pos + 1 < end and (c := data[pos + 1]) < 0x80:
            length = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
            pos += 2
        else:
            length, pos = _read_length(data, pos, position)
        body_end = pos + length
        if length < 0 or body_end > end:
            raise _bad_length(length, end - pos, position)
        rec = data[pos:body_end]
        try:
            b = rec[1]
            if b < 0x80:
                ts_delta = zigzag[b]
                q = 2
            elif (c := rec[2]) < 0x80:
                ts_delta = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
                q = 3
            else:
                ts_delta, q = read_varlong(rec, 1)
            b = rec[q]
            if b < 0x80:
                offset_delta = zigzag[b]
                q += 1
            elif (c := rec[q + 1]) < 0x80:
                offset_delta = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
                q += 2
            else:
                offset_delta, q = read_varint(rec, q)
            n = length1[rec[q]]
            if n >= 0:
                key = rec[q + 1 : (q := q + 1 + n)]
            elif n == -1:
                key = None
                q += 1
            else:
                n, q = read_varint(rec, q)
                key = rec[q : (q := q + n)] if n >= 0 else None
            b = rec[q]
            n = length1[b]
            if n >= 0:
                value = rec[q + 1 : (q := q + 1 + n)]
            elif n == -1:
                value = None
                q += 1
            elif (c := rec[q + 1]) < 0x80:
                if odd[b]:
                    value = None
                    q += 2
                else:
                    value = rec[q + 2 : (q := q + 2 + half[b] + c * 64)]
            else:
                n, q = read_varint(rec, q)
                value = rec[q : (q := q + n)] if n >= 0 else None
            b = rec[q]
            if b == 0:
                headers = no_headers
                q += 1
            elif b == 2 and (k := length1[rec[q + 1]]) >= 0:
                # One header (the common case beside none), its lengths of one byte.
                raw_key = rec[q + 2 : (q := q + 2 + k)]
                header_key = header_keys.get(raw_key)
                if header_key is None:
                    # Java's UTF-8 decoder replaces malformed input; so does this one.
                    header_key = header_keys[raw_key] = raw_key.decode("utf-8", "replace")
                k = length1[rec[q]]
                if k >= 0:
                    headers = ((header_key, rec[q + 1 : (q := q + 1 + k)]),)
                elif k == -1:
                    headers = ((header_key, None),)
                    q += 1
                else:
                    q = -1
            else:
                # A one-byte header count, each header's lengths of one byte; anything else
                # goes to `_read_record`.
                n = length1[b]
                q += 1
                hs = []
                for _h in range(n):
                    k = length1[rec[q]]
                    if k < 0:
                        break
                    raw_key = rec[q + 1 : (q := q + 1 + k)]
                    header_key = header_keys.get(raw_key)
                    if header_key is None:
                        header_key = header_keys[raw_key] = raw_key.decode("utf-8", "replace")
                    k = length1[rec[q]]
                    if k >= 0:
                        hs.append((header_key, rec[q + 1 : (q := q + 1 + k)]))
                    elif k == -1:
                        hs.append((header_key, None))
                        q += 1
                    else:
                        break
                headers = tuple(hs)
                if len(hs) != n:
                    q = -1
        except (IndexError, FormatError):
            q = -1
        if q != length:
            ts_delta, offset_delta, key, value, headers = _read_record(
                data, pos, length, end, position
            )
        pos = body_end
        if sequenced:
            seq = base_sequence + offset_delta
            if seq > INT32_MAX:
                seq -= 2**31
        append(
            (
                base_offset + offset_delta,
                log_append_time if append_time else base_timestamp + ts_delta,
                key,
                value,
                headers,
                seq,
            )
        )
    if pos != end:
        raise FormatError(
            "record_count_mismatch",
            "Incorrect declared batch size, records still remaining in file",
            position,
        )
    return list(map(tuple.__new__, repeat(Record), rows))


def check_records_python(
    data: bytes | bytearray | memoryview, count: int, position: int = 0
) -> None:
    """What `decode_records` checks, with the same errors, but nothing built: deep verification.

    Kept apart from `decode_records` because skipping every slice and tuple makes it about twice
    as fast; the same fast path shape and the same `_read_record` fallback, so the same verdicts
    (tests/format/test_batch_check.py holds the two to them).
    """
    if type(data) is not bytes:
        data = bytes(data)
    zigzag, length1, skip1, half, odd = _ZIGZAG, _LENGTH1, _SKIP1, _HALF, _ODD
    end = len(data)
    pos = 0
    for _ in range(count):
        if pos >= end:
            raise _premature_eof(position)
        b = data[pos]
        if b < 0x80:
            length = zigzag[b]
            pos += 1
        elif pos + 1 < end and (c := data[pos + 1]) < 0x80:
            length = -1 - half[b] - c * 64 if odd[b] else half[b] + c * 64
            pos += 2
        else:
            length, pos = _read_length(data, pos, position)
        body_end = pos + length
        if length < 0 or body_end > end:
            raise _bad_length(length, end - pos, position)
        rec = data[pos:body_end]
        try:
            # timestamp and offset deltas
            if rec[1] < 0x80:
                q = 2
            elif rec[2] < 0x80:
                q = 3
            else:
                q = read_varlong(rec, 1)[1]
            if rec[q] < 0x80:
                q += 1
            elif rec[q + 1] < 0x80:
                q += 2
            else:
                q = read_varint(rec, q)[1]
            s = skip1[rec[q]]  # key
            if s > 0:
                q += s
            else:
                n, q = read_varint(rec, q)
                if n > 0:
                    q += n
            b = rec[q]  # value
            s = skip1[b]
            if s > 0:
                q += s
            elif (c := rec[q + 1]) < 0x80:
                q += 2 if odd[b] else 2 + half[b] + c * 64
            else:
                n, q = read_varint(rec, q)
                if n > 0:
                    q += n
            b = rec[q]
            if b == 0:
                q += 1
            elif b == 2 and (k := length1[rec[q + 1]]) >= 0:
                q += 2 + k
                s = skip1[rec[q]]
                q = q + s if s > 0 else -1
            else:
                n = length1[b]  # as in decode_records: one-byte count and lengths
                q += 1
                for _h in range(n):
                    k = length1[rec[q]]
                    if k < 0:
                        q = -1
                        break
                    q += 1 + k
                    s = skip1[rec[q]]
                    if s == 0:
                        q = -1
                        break
                    q += s
                if n < 0:
                    q = -1
        except (IndexError, FormatError):
            q = -1
        if q != length:
            _read_record(data, pos, length, end, position)
        pos = body_end
    if pos != end:
        raise FormatError(
            "record_count_mismatch",
            "Incorrect declared batch size, records still remaining in file",
            position,
        )


def _accelerator():
    """The C reader (`logrepair.format._records`, built from `_records.c` when a compiler is
    present at install), or None: not built, or `LOGREPAIR_PURE_PYTHON` set to anything but `0`."""
    if os.environ.get("LOGREPAIR_PURE_PYTHON", "0") not in ("", "0"):
        return None
    try:
        from . import _records
    except ImportError:
        return None
    _records.bind(Record, FormatError)
    return _records


_ACCELERATOR = _accelerator()
# Whether `decode_records` and `check_records` are the C ones (same arguments, results and errors
# as the `*_python` reference functions above, which tests/format/test_records_accel.py holds them to).
ACCELERATED: bool = _ACCELERATOR is not None
if _ACCELERATOR is not None:
    decode_records = _ACCELERATOR.decode_records
    check_records = _ACCELERATOR.check_records
else:
    decode_records = decode_records_python
    check_records = check_records_python


# --- writer ----------------------------------------------------------------------------------------

_NULL = b"\x01"  # varint -1


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    """`DefaultRecord.writeTo`: length varint, then the body."""
    body = bytearray(b"\x00")
    body += write_varlong(timestamp_delta)
    body += write_varint(offset_delta)
    if key is None:
        body += _NULL
    else:
        body += write_varint(len(key))
        body += key
    if value is None:
        body += _NULL
    else:
        body += write_varint(len(value))
        body += value
    body += write_varint(len(headers))
    for header_key, header_value in headers:
        if header_key is None:
            raise ValueError("Invalid null header key found in headers")
        encoded = header_key.encode("utf-8")
        body += write_varint(len(encoded))
        body += encoded
        if header_value is None:
            body += _NULL
        else:
            body += write_varint(len(header_value))
            body += header_value
    return write_varint(len(body)) + bytes(body)


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
