"""The shallow entry scan of a `.log`: what Kafka's `FileRecords` batch iteration reads of each
entry (offset, length, magic, last offset delta, max timestamp, producer id), from the headers only,
never CRCs or records. A segment finds positions with it after an index probe, so an offset lookup
costs a few small reads.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from .disk import DiskFile
from .time_index import NO_TIMESTAMP

LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
MIN_ENTRY_SIZE = 14
V2_HEADER_SIZE = 61
_OVERHEAD = struct.Struct(">qi")
# From byte 21: attributes, lastOffsetDelta, (baseTimestamp), maxTimestamp, producerId.
_V2_FIELDS = struct.Struct(">hi8xqq")
_V1_TIMESTAMP = struct.Struct(">q")  # at 18
_SCAN_WINDOW = 64 * 1024


class CorruptSegmentError(ValueError):
    """Bytes in a `.log` that are not a batch where one must start (Kafka's CorruptRecordException)."""

    def __init__(self, path: str, position: int, detail: str) -> None:
        super().__init__(f"{path}: {detail} at byte {position}")
        self.path = path
        self.position = position
        self.detail = detail


class EntryHeader(NamedTuple):
    """What a shallow scan reads of one batch (v2) or shallow message (v0/v1)."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    magic: int
    producer_id: int = -1


def entry_headers(file: DiskFile, path: str, start: int, end: int) -> Iterator[EntryHeader]:
    """Headers of the whole entries in `[start, end)` of the `.log` open as `file` (named `path` in
    errors); stops silently at a torn last entry, raises `CorruptSegmentError` where an entry
    cannot start."""
    pos = start
    buf = b""
    buf_start = pos
    while pos + HEADER_SIZE_UP_TO_MAGIC < end:
        rel = pos - buf_start
        if rel + V2_HEADER_SIZE > len(buf) and buf_start + len(buf) < end:
            buf_start = pos
            buf = file.read_at(pos, min(_SCAN_WINDOW, end - pos))
            rel = 0
        if rel + HEADER_SIZE_UP_TO_MAGIC > len(buf):
            return
        base, length = _OVERHEAD.unpack_from(buf, rel)
        if length < MIN_ENTRY_SIZE:
            raise CorruptSegmentError(
                path,
                pos,
                f"Found record size {length} smaller than minimum record overhead ({MIN_ENTRY_SIZE})",
            )
        size = LOG_OVERHEAD + length
        if pos + size > end:
            return
        magic = buf[rel + 16]
        if magic == 2:
            if size < V2_HEADER_SIZE or rel + V2_HEADER_SIZE > len(buf):
                raise CorruptSegmentError(
                    path,
                    pos,
                    f"Record batch of {size} bytes is shorter than its header",
                )
            _, delta, max_ts, producer_id = _V2_FIELDS.unpack_from(buf, rel + 21)
            yield EntryHeader(pos, size, base, base + delta, max_ts, 2, producer_id)
        elif magic == 1:
            (ts,) = _V1_TIMESTAMP.unpack_from(buf, rel + 18)
            yield EntryHeader(pos, size, base, base, ts, 1)
        elif magic == 0:
            yield EntryHeader(pos, size, base, base, NO_TIMESTAMP, 0)
        else:
            raise CorruptSegmentError(path, pos, f"Invalid magic found in record: {magic}")
        pos += size
