"""Legacy message sets, magic 0 and 1 (spec fmt §3): a lazy read view and Kafka's writer.

A legacy log entry is one message behind the 12-byte log overhead. An uncompressed entry holds one
record; a compressed one is a wrapper whose value is a compressed run of inner entries, and which
counts as one batch: its offset is the last inner offset, its first offset needs decompression.

`LegacyBatch` reads the header from the caller's buffer without copying and implements the read
interface of `format.batch_layout.Batch`; the v2-only fields are None. Checks and messages follow Kafka's
`LegacyRecord`, `AbstractLegacyRecordBatch.DeepRecordsIterator` and `FileLogInputStream`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from . import compression
from .batch import record_to_json
from .batch_layout import Record, codec_name
from .crc import crc32
from .errors import FormatError

__all__ = ["LegacyBatch", "build_legacy_batch"]

LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14  # LegacyRecord.RECORD_OVERHEAD_V0: Kafka's minimum message size, any magic
MAGIC_OFFSET = 16  # of the entry; the CRC covers [MAGIC_OFFSET, end)
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
NO_TIMESTAMP = -1

# offset, messageSize, crc, magic, attributes: the first 18 bytes of every entry.
_ENTRY_HEAD = struct.Struct(">qiIbb")
_OVERHEAD = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")


def _invalid(detail: str, position: int | None) -> FormatError:
    return FormatError("invalid_records", detail, position)


def _corrupt_inner(offset: int, stored: int, computed: int, position: int | None) -> FormatError:
    return _invalid(
        f"Record for offset {offset} is corrupt (stored crc = {stored}, computed crc = {computed})",
        position,
    )


def _key_value(
    msg: memoryview, magic: int, position: int | None
) -> tuple[memoryview | None, memoryview | None]:
    """Key and value views of one message (`LegacyRecord.key`/`value`): negative lengths are null.

    Magic 0 lays them out from message byte 6, any other magic from byte 14, as Kafka reads them.
    """
    end = len(msg)
    p = 6 if magic == 0 else 14
    views: list[memoryview | None] = []
    for name in ("key", "value"):
        if p + 4 > end:
            raise _invalid(f"message of {end} bytes ends before its {name} length", position)
        (length,) = _INT32.unpack_from(msg, p)
        p += 4
        if length < 0:
            views.append(None)
            continue
        if length > end - p:
            raise _invalid(
                f"{name} of {length} bytes runs past the end of a {end}-byte message", position
            )
        views.append(msg[p : p + length])
        p += length
    return views[0], views[1]


def _record(
    offset: int, timestamp: int | None, msg: memoryview, magic: int, position: int | None
) -> Record:
    key, value = _key_value(msg, magic, position)
    return Record(
        offset,
        timestamp,
        None if key is None else bytes(key),
        None if value is None else bytes(value),
    )


class LegacyBatch:
    """One magic 0/1 log entry over `raw` (exactly its bytes), at `position` in its file.

    Header fields are read once; the CRC check and a wrapper's inner records are computed on first
    use and cached.
    """

    __slots__ = (
        "raw",
        "position",
        "last_offset",
        "crc",
        "magic",
        "attributes",
        "_computed_crc",
        "_records",
        "_crcs",
    )

    def __init__(self, raw: memoryview, position: int = 0) -> None:
        self.raw = raw
        self.position = position
        self.last_offset, _, self.crc, self.magic, attributes = _ENTRY_HEAD.unpack_from(raw, 0)
        self.attributes = attributes & 0xFF
        self._computed_crc: int | None = None
        self._records: list[Record] | None = None
        self._crcs: list[tuple[int, int]] | None = None

    @classmethod
    def parse(cls, buf, position: int = 0, *, file_position: int | None = None) -> LegacyBatch:
        """The entry starting at `buf[position]`, its framing checked (not its CRC nor its records).

        `file_position` is where `buf[0]` lies in the file (default: `position` is absolute).
        """
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        where = position if file_position is None else file_position + position
        available = len(mv) - position
        if available < LOG_OVERHEAD:
            raise FormatError(
                "torn_tail", f"{available} bytes left, fewer than a log overhead (12)", where
            )
        offset, size = _OVERHEAD.unpack_from(mv, position)
        if size < RECORD_OVERHEAD_V0:
            raise FormatError(
                "bad_length",
                f"Found record size {size} smaller than minimum record overhead "
                f"({RECORD_OVERHEAD_V0})",
                where,
            )
        end = position + LOG_OVERHEAD + size
        if end > len(mv):
            raise FormatError(
                "torn_tail",
                f"entry of {size + LOG_OVERHEAD} bytes at offset {offset}, "
                f"only {available} present",
                where,
            )
        magic = mv[position + MAGIC_OFFSET]
        if magic > 1:
            magic = magic - 256 if magic > 127 else magic
            raise FormatError("bad_magic", f"Invalid magic used in LegacyRecord: {magic}", where)
        return cls(mv[position:end], where)

    # --- header values ---------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> str | None:
        """None for magic 0 (`NoTimestampType`)."""
        if self.magic == 0:
            return None
        return "append" if self.attributes & TIMESTAMP_TYPE_MASK else "create"

    @property
    def max_timestamp(self) -> int | None:
        """The outer message's timestamp: a wrapper's max or log-append time; None for magic 0."""
        if self.magic == 0:
            return None
        return _INT64.unpack_from(self.raw, 18)[0]

    @property
    def first_timestamp(self) -> int | None:
        """The first record's timestamp as a consumer sees it (decompresses a wrapper)."""
        if self.magic == 0:
            return None
        if not self.is_compressed:
            return self.max_timestamp
        return self.records()[0].timestamp

    @property
    def base_offset(self) -> int:
        """The first record's offset: the entry's own offset, or a wrapper's first inner offset."""
        if not self.is_compressed:
            return self.last_offset
        return self.records()[0].offset

    @property
    def count(self) -> int:
        return len(self.records()) if self.is_compressed else 1

    is_transactional = False
    is_control = False
    producer_id = None
    producer_epoch = None
    base_sequence = None
    partition_leader_epoch = None

    # --- integrity -------------------------------------------------------------------------------

    def computed_crc(self) -> int:
        computed = self._computed_crc
        if computed is None:
            computed = self._computed_crc = crc32(self.raw[MAGIC_OFFSET:])
        return computed

    @property
    def crc_valid(self) -> bool:
        """`LegacyRecord.isValid` of the shallow message; `records()` checks inner messages."""
        return self.computed_crc() == self.crc

    def ensure_valid(self) -> None:
        """`LegacyRecord.ensureValid`: what broker recovery checks for each entry."""
        if not self.crc_valid:
            raise FormatError(
                "crc_mismatch",
                f"Record is corrupt (stored crc = {self.crc}, "
                f"computed crc = {self.computed_crc()})",
                self.position,
            )

    # --- records ---------------------------------------------------------------------------------

    def records(self, max_output: int | None = None, *, check_crcs: bool = True) -> list[Record]:
        """The entry's records with absolute offsets and the timestamps a consumer sees.

        A wrapper is decompressed (at most `max_output` bytes) and its inner entries checked as
        `DeepRecordsIterator` checks them; with `check_crcs`, each inner message's CRC too, as a
        consumer with `check.crcs` does. Failures are `FormatError`s whose kinds the walker treats
        as a CRC-valid but undecodable batch (`invalid_records`, `decompression_failed`,
        `unknown_codec`). Magic 0 records have the timestamp None.
        """
        if self._records is None:
            msg = self.raw[LOG_OVERHEAD:]
            if self.is_compressed:
                self._records = self._inner_records(msg, max_output, check_crcs)
            else:
                self._records = [
                    _record(self.last_offset, self.max_timestamp, msg, self.magic, self.position)
                ]
        elif check_crcs and self._crcs is not None:
            # Decoded earlier without the check: every record decoded, so only CRCs can fail.
            for record, (stored, computed) in zip(self._records, self._crcs, strict=True):
                if stored != computed:
                    raise _corrupt_inner(record.offset, stored, computed, self.position)
        return self._records

    def record_crcs(self, max_output: int | None = None) -> list[tuple[int, int]]:
        """(stored, computed) CRC of each record's message in `records()` order, which
        kafka-dump-log prints per record (`isValid`, `crc`).

        A wrapper's come from its inner messages, read by the one decompression `records()`
        does (run here without enforcing them if it has not run yet)."""
        if not self.is_compressed:
            return [(self.crc, self.computed_crc())]
        self.records(max_output, check_crcs=False)
        assert self._crcs is not None  # set with the records
        return self._crcs

    def _inner_records(
        self, msg: memoryview, max_output: int | None, check_crcs: bool
    ) -> list[Record]:
        position = self.position
        magic = self.magic
        codec = self.codec
        if codec == compression.Codec.ZSTD:
            raise FormatError(
                "unknown_codec",
                f"Invalid wrapper compressionType found in legacy deep record iterator {magic}",
                position,
            )
        if codec > compression.Codec.ZSTD:
            raise FormatError("unknown_codec", f"Unknown compression type id: {codec}", position)
        _, value = _key_value(msg, magic, position)
        if value is None:
            raise _invalid(
                f"Found invalid compressed record set with null value (magic = {magic})", position
            )
        kwargs = {} if max_output is None else {"max_output": max_output}
        try:
            data = compression.decompress(codec, value, magic=magic, **kwargs)
        except FormatError as e:
            raise FormatError(e.kind, e.detail, position) from None
        entries = _inner_entries(data, position)
        if magic == 1:
            wrapper_offset = self.last_offset
            last_inner = entries[-1][0]
            if wrapper_offset == 0:
                base = 0  # librdkafka wrote 0 as the wrapper offset of produced data
            elif wrapper_offset < last_inner:
                raise _invalid(
                    "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper_offset}' is less than the last inner message offset "
                    f"'{last_inner}' and it is not zero.",
                    position,
                )
            else:
                base = wrapper_offset - last_inner
        else:
            base = 0  # magic 0 inner offsets are absolute
        log_append_time = self.max_timestamp if self.timestamp_type == "append" else None
        records = []
        crcs = []
        for offset, inner in entries:
            inner_magic = inner[4]
            inner_magic = inner_magic - 256 if inner_magic > 127 else inner_magic
            if inner[5] & COMPRESSION_MASK:
                raise _invalid("Inner messages must not be compressed", position)
            stored = _UINT32.unpack_from(inner, 0)[0]
            computed = crc32(inner[4:])
            if check_crcs and stored != computed:
                raise _corrupt_inner(base + offset, stored, computed, position)
            crcs.append((stored, computed))
            if inner_magic == 0:
                timestamp = None
            elif inner_magic == 1 and log_append_time is not None:
                timestamp = log_append_time
            else:
                timestamp = _INT64.unpack_from(inner, 6)[0]
            records.append(_record(base + offset, timestamp, inner, inner_magic, position))
        self._crcs = crcs
        return records

    # --- JSON ------------------------------------------------------------------------------------

    def to_json(self, deep: bool = False) -> dict:
        """The dump contract's batch object; v2-only keys are null.

        A wrapper that does not decompress still dumps, with null base offset, count and first
        timestamp (its defect is what `records()` raises).
        """
        try:
            base_offset, count, first_timestamp = (
                self.base_offset,
                self.count,
                self.first_timestamp,
            )
        except FormatError:
            if deep:
                raise
            base_offset = count = first_timestamp = None
        out = {
            "position": self.position,
            "size": len(self.raw),
            "magic": self.magic,
            "base_offset": base_offset,
            "last_offset": self.last_offset,
            "count": count,
            "codec": codec_name(self.codec),
            "crc": self.crc,
            "crc_valid": self.crc_valid,
            "is_transactional": False,
            "is_control": False,
            "producer_id": None,
            "producer_epoch": None,
            "base_sequence": None,
            "partition_leader_epoch": None,
            "timestamp_type": self.timestamp_type,
            "first_timestamp": first_timestamp,
            "max_timestamp": self.max_timestamp,
        }
        if deep:
            out["records"] = [record_to_json(r) for r in self.records()]
        return out

    def __repr__(self) -> str:
        return (
            f"LegacyBatch(position={self.position}, magic={self.magic}, "
            f"last_offset={self.last_offset}, codec={codec_name(self.codec)}, size={len(self.raw)})"
        )


def _inner_entries(data: bytes, position: int | None) -> list[tuple[int, memoryview]]:
    """`DataLogInputStream.nextBatch` until the stream ends: (stored offset, message) pairs.

    A trailing entry cut short ends the iteration silently, as in Kafka.
    """
    mv = memoryview(data)
    end = len(mv)
    pos = 0
    entries = []
    while end - pos >= LOG_OVERHEAD:
        offset, size = _OVERHEAD.unpack_from(mv, pos)
        if size < RECORD_OVERHEAD_V0:
            raise _invalid(
                f"Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                position,
            )
        start = pos + LOG_OVERHEAD
        if end - start < size:
            break
        entries.append((offset, mv[start : start + size]))
        pos = start + size
    if not entries:
        raise _invalid("Found invalid compressed record set with no inner records", position)
    return entries


# --- writer ---------------------------------------------------------------------------------------


def _message(
    magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    """`LegacyRecord.write`: crc, magic, attributes, [timestamp], key, value; CRC of [magic,end)."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += b"\xff\xff\xff\xff"
        else:
            body += _INT32.pack(len(field))
            body += field
    return struct.pack(">I", crc32(body)) + bytes(body)


def _entry(offset: int, message: bytes) -> bytes:
    return _OVERHEAD.pack(offset, len(message)) + message


def build_legacy_batch(
    records: Iterable[Record],
    *,
    magic: int,
    base_offset: int,
    codec: int = 0,
    compression_level: int | None = None,
    timestamp_type: str = "create",
    log_append_time: int | None = None,
) -> bytes:
    """What Kafka's `MemoryRecordsBuilder` writes for magic 0/1: one entry per record uncompressed,
    one wrapper when compressed. No records gives no bytes, as in Kafka.

    Records keep their absolute `offset`; a magic 1 wrapper stores them relative to `base_offset`
    (`toInnerOffset`). Timestamps are ignored for magic 0, and replaced by `log_append_time` (then
    required) for `timestamp_type='append'`.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    if timestamp_type not in ("create", "append"):
        raise ValueError(f"timestamp_type must be 'create' or 'append', not {timestamp_type!r}")
    if timestamp_type == "append" and log_append_time is None:
        raise ValueError("timestamp_type 'append' needs log_append_time")
    codec = compression.Codec(codec)
    if codec == compression.Codec.ZSTD:
        raise ValueError(f"ZStandard compression is not supported for magic {magic}")
    records = list(records)
    if not records:
        return b""
    append_time = timestamp_type == "append"
    ts_bit = TIMESTAMP_TYPE_MASK if magic == 1 and append_time else 0
    compressed = codec != compression.Codec.NONE
    max_timestamp = NO_TIMESTAMP
    previous: int | None = None
    entries: list[bytes] = []
    for record in records:
        if record.headers:
            raise ValueError(f"Magic v{magic} does not support record headers")
        if previous is not None and record.offset <= previous:
            raise ValueError(
                f"Illegal offset {record.offset} following previous offset {previous} "
                "(Offsets must increase monotonically)."
            )
        if record.offset < base_offset:
            raise ValueError(f"offset {record.offset} is below the base offset {base_offset}")
        previous = record.offset
        timestamp = NO_TIMESTAMP if record.timestamp is None else record.timestamp
        if magic == 1 and timestamp < 0 and timestamp != NO_TIMESTAMP:
            raise ValueError(f"Invalid negative timestamp {timestamp}")
        if append_time:
            timestamp = log_append_time
        max_timestamp = max(max_timestamp, timestamp)
        offset = record.offset - base_offset if compressed and magic == 1 else record.offset
        entries.append(_entry(offset, _message(magic, ts_bit, timestamp, record.key, record.value)))
    if not compressed:
        return b"".join(entries)
    value = compression.compress(codec, b"".join(entries), magic=magic, level=compression_level)
    wrapper_timestamp = log_append_time if append_time else max_timestamp
    return _entry(previous, _message(magic, codec | ts_bit, wrapper_timestamp, None, value))
