"""Rebuilding a segment's offset and time index from its `.log`, as Kafka's recovery would.

The bytes come from `storage.index_builder` (the deterministic rebuild of spec fmt §6.4(a)) fed by
a windowed scan, so a 1 GiB segment costs one window of memory. A batch that the walker flags but
whose CRC holds (Kafka keeps those) is still indexed, at its real position, from its header.

After a repair the log was validated by the scan the plan came from and cut only at batch
boundaries, so the rebuild then reads headers only (`verify_crc=False`): one header unpack per
batch instead of a second CRC pass over the whole segment, which is most of a repair's time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..format.batch import RecordBatch
from ..format.errors import Defect, FormatError
from ..format.walker import CRC_VALID_KINDS
from ..storage import layout
from ..storage.disk import Disk
from ..storage.index_builder import IndexPoint, recovery_index_bytes
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan


@dataclass(frozen=True, slots=True)
class _Header:
    size: int
    last_offset: int
    max_timestamp: int


def index_batches(
    disk: Disk, log_path: str, max_batch_size: int | None = DEFAULT_MAX_BATCH_SIZE
) -> Iterator[_Header | RecordBatch]:
    """The batches Kafka's recovery would index, in file order, up to the first invalid frame."""
    for item in LogScan(disk, log_path, check_offsets=False, max_batch_size=max_batch_size):
        if isinstance(item, Defect):
            if item.kind not in CRC_VALID_KINDS:
                return
            yield _header_at(disk, log_path, item.position)
        else:
            yield item


_V2_HEADER = struct.Struct(">qiibIhiqq")  # base offset .. max timestamp
_WINDOW = 8 << 20


def header_batches(disk: Disk, log_path: str) -> Iterator[_Header | RecordBatch]:
    """Like `index_batches` for a log known to be valid: v2 headers only, no CRC.

    Stops at the first frame that is not a whole v2 batch; legacy data takes the checked path."""
    unpack = _V2_HEADER.unpack_from
    with disk.open(log_path) as f:
        size = f.size()
        buf = bytearray(min(_WINDOW, size))
        view = memoryview(buf)
        position = 0
        while position < size:
            got = f.read_into(position, view[: min(len(buf), size - position)])
            pos = 0
            # Only the 61-byte header has to be in the window; a batch may run past it.
            while pos + 61 <= got:
                base, length, _, magic, _, _, delta, _, max_ts = unpack(buf, pos)
                if magic != 2:
                    if magic in (0, 1):
                        yield from _checked_from(disk, log_path, position + pos)
                    return
                if length < 49 or position + pos + 12 + length > size:
                    return
                yield _Header(12 + length, base + delta, max_ts)
                pos += 12 + length
            if pos == 0:
                return  # fewer than a header's bytes left
            position += pos


def _checked_from(disk: Disk, log_path: str, start: int) -> Iterator[_Header | RecordBatch]:
    for item in LogScan(disk, log_path, check_offsets=False, start=start):
        if isinstance(item, Defect):
            if item.kind not in CRC_VALID_KINDS:
                return
            yield _header_at(disk, log_path, item.position)
        else:
            yield item


def _header_at(disk: Disk, log_path: str, position: int) -> _Header:
    with disk.open(log_path) as f:
        head = f.read_at(position, 17)
        size = int.from_bytes(head[8:12], "big", signed=True) + 12
        raw = f.read_at(position, size)
    try:
        if head[16] >= 2:
            batch = RecordBatch.parse(raw)
        else:
            from ..format.legacy import LegacyBatch  # magic 0/1 only: most logs never need it

            batch = LegacyBatch.parse(raw, 0)
        ts = batch.max_timestamp
        return _Header(size, batch.last_offset, -1 if ts is None else ts)
    except FormatError:
        return _Header(size, int.from_bytes(head[0:8], "big", signed=True), -1)


UNBOUNDED_INDEX = 2**62
"""`max_index_size` for the rebuild: an index that outgrows `segment.index.bytes` is written whole
(the plan says Kafka's recovery would fail on it) rather than cut short."""


def _points(batches: Iterator[_Header | RecordBatch]) -> Iterator[IndexPoint]:
    position = 0
    for b in batches:
        yield position, b.last_offset, b.max_timestamp
        position += b.size


def rebuild(
    disk: Disk,
    log_path: str,
    index_interval_bytes: int,
    verify_crc: bool = True,
    max_batch_size: int | None = DEFAULT_MAX_BATCH_SIZE,
) -> list[tuple[str, bytes]]:
    """[(offset index path, bytes), (time index path, bytes)] for the `.log` at `log_path`."""
    name = log_path.rpartition("/")[2]
    base = layout.offset_from_file_name(name)
    batches = (
        index_batches(disk, log_path, max_batch_size)
        if verify_crc
        else header_batches(disk, log_path)
    )
    offset_bytes, time_bytes = recovery_index_bytes(
        _points(batches), base, index_interval_bytes, UNBOUNDED_INDEX
    )
    stem = log_path[: -len(layout.LOG_SUFFIX)]
    return [
        (stem + layout.INDEX_SUFFIX, offset_bytes),
        (stem + layout.TIME_INDEX_SUFFIX, time_bytes),
    ]
