"""Producer-state snapshots, `<offset>.snapshot` (spec fmt §7.2; Kafka's `ProducerStateManager`).

int16 version (only 1), uint32 CRC-32C of bytes `[6, EOF)`, int32 entry count, then 46-byte
entries. Reading checks what Kafka checks, in Kafka's order, with Kafka's messages; writing is
Kafka's too: in place, without truncating, then fsync. Because the CRC runs to the end of the file,
a shorter snapshot written over a longer one reads back as corrupt, in Kafka as here.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from ..format.crc import crc32c
from .decoded_memo import DecodedMemo
from .disk import Disk, FileTooLarge

VERSION = 1
CRC_OFFSET = 2
PRODUCER_ENTRIES_OFFSET = 6
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size  # 46
_CHUNK = 1 << 20


class CorruptSnapshotError(ValueError):
    """Kafka's CorruptSnapshotException; the broker deletes such a snapshot and tries an older one."""


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def has_batch_metadata(self) -> bool:
        """Kafka keeps `(lastSequence, lastOffset, offsetDelta, timestamp)` only when lastOffset ≥ 0."""
        return self.last_offset >= 0

    @property
    def has_ongoing_transaction(self) -> bool:
        return self.current_txn_first_offset >= 0


def encode_snapshot(entries: list[ProducerSnapshotEntry]) -> bytes:
    body = bytearray(_HEADER.pack(VERSION, 0, len(entries)))
    for e in entries:
        body += _ENTRY.pack(
            e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta,
            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset,
        )  # fmt: skip
    struct.pack_into(">I", body, CRC_OFFSET, crc32c(memoryview(body)[PRODUCER_ENTRIES_OFFSET:]))
    return bytes(body)


def decode_snapshot(data) -> list[ProducerSnapshotEntry]:
    """The entries of a snapshot file's bytes; CorruptSnapshotError as Kafka's `readSnapshot`."""
    view = memoryview(data).cast("B")
    return _decode(lambda position, length: view[position : position + length], len(view))


_READ_WHOLE = 1 << 16


def read_snapshot(disk: Disk, path: str) -> list[ProducerSnapshotEntry]:
    """Reads in bounded chunks: a garbage file costs no memory, only a valid one its entries (a
    small file is read whole, in one call)."""
    try:
        try:
            data = disk.read_small(path, _READ_WHOLE)
        except FileTooLarge:
            with disk.open(path) as f:
                return _decode(f.read_at, f.size())
        if len(data) > _remembered.largest:
            return decode_snapshot(data)
        data = bytes(data)
        return _remembered.entries(data, lambda: decode_snapshot(data))
    except CorruptSnapshotError as e:
        raise CorruptSnapshotError(f"{e} ({path})") from None


_remembered: DecodedMemo[ProducerSnapshotEntry] = DecodedMemo()


def _decode(
    read_at: Callable[[int, int], bytes | memoryview], size: int
) -> list[ProducerSnapshotEntry]:
    if size < 2:
        raise _schema_error(f"the file has {size} bytes, too few for the version")
    header = read_at(0, _HEADER.size)
    (version,) = struct.unpack_from(">h", header)
    if version != VERSION:
        raise _schema_error(f"Snapshot contained an unknown file version {version}")
    if size < _HEADER.size:
        raise _schema_error(f"the file has {size} bytes, too few for the snapshot header")
    _, stored_crc, count = _HEADER.unpack(header)
    remaining = size - _HEADER.size
    # The checks of the generated ProducerSnapshot reader, which also keep a bogus count from
    # allocating anything.
    if count < 0:
        raise _schema_error("non-nullable field producerEntries was serialized as null")
    if count > remaining:
        raise _schema_error(
            f"Tried to allocate a collection of size {count}, but there are only {remaining} "
            "bytes remaining."
        )
    if count * ENTRY_SIZE > remaining:
        raise _schema_error(
            f"entry {remaining // ENTRY_SIZE} of {count} is cut off by the end of the file"
        )
    # Kafka parses the entries before it checks the CRC; once the sizes fit, parsing cannot fail,
    # so checking the CRC first (streamed) gives the same answers without holding a bad file.
    computed = 0
    for position in range(PRODUCER_ENTRIES_OFFSET, size, _CHUNK):
        computed = crc32c(read_at(position, min(_CHUNK, size - position)), computed)
    if stored_crc != computed:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. "
            f"Computed crc: {computed}"
        )
    return [
        ProducerSnapshotEntry(*fields)
        for fields in _ENTRY.iter_unpack(read_at(_HEADER.size, count * ENTRY_SIZE))
    ]


def write_snapshot(
    disk: Disk, path: str, entries: list[ProducerSnapshotEntry], *, sync: bool = True
) -> None:
    """Kafka's `writeSnapshot`: CREATE+WRITE at position 0, no truncate, no temp file, no rename."""
    with disk.open(path, create=True) as f:
        f.write_at(0, encode_snapshot(entries))
        if sync:
            f.fsync()


def _schema_error(cause: str) -> CorruptSnapshotError:
    return CorruptSnapshotError(f"Snapshot failed schema validation: {cause}")
