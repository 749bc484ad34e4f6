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
from ..format.errors import Defect
from ..format.walker import CRC_VALID_KINDS
from ..storage import layout
from ..storage.disk import Disk
from ..storage.index_builder import IndexPoint, recovery_index_bytes
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """What Kafka's recovery reads of a batch to index it, from the header alone."""

    size: int
    base_offset: int
    """For magic 0/1, the outer message's offset (its inner records are not read)."""
    last_offset: int
    max_timestamp: int
    """-1 (NO_TIMESTAMP) for magic 0."""


def index_batches(
    disk: Disk, log_path: str, max_batch_size: int | None, start: int = 0
) -> Iterator[BatchHeader | RecordBatch]:
    """The batches Kafka's recovery would index, in file order from `start`, up to the first
    invalid frame. `max_batch_size` is the scan's cap (`Settings.max_batch_size`): the rebuild
    must see the batches the plan's scan saw, so there is no default."""
    scan = LogScan(disk, log_path, check_offsets=False, start=start, max_batch_size=max_batch_size)
    for item in scan:
        if isinstance(item, Defect):
            if item.kind not in CRC_VALID_KINDS:
                return
            yield batch_header(disk, log_path, item.position)
        else:
            yield item


_V2_HEADER = struct.Struct(">qiibIhiqq")  # base offset .. max timestamp
_WINDOW = 8 << 20


def header_batches(
    disk: Disk, log_path: str, max_batch_size: int | None
) -> Iterator[BatchHeader | RecordBatch]:
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
                        yield from index_batches(disk, log_path, max_batch_size, position + pos)
                    return
                if length < 49 or position + pos + 12 + length > size:
                    return
                yield BatchHeader(12 + length, base, base + delta, max_ts)
                pos += 12 + length
            if pos == 0:
                return  # fewer than a header's bytes left
            position += pos


def batch_header(disk: Disk, log_path: str, position: int) -> BatchHeader:
    """The header of the whole batch at `position`, read as Kafka's `FileChannelRecordBatch` reads
    it: for a batch whose CRC holds but whose records do not (Kafka keeps it, spec fmt §2.9), the
    header is all recovery looks at. The caller knows a whole batch of magic 0, 1 or 2 is there."""
    with disk.open(log_path) as f:
        head = f.read_at(position, _V2_HEADER.size)
    base, length, _, magic, _, _, delta, _, max_ts = _V2_HEADER.unpack_from(
        head.ljust(_V2_HEADER.size, b"\0")
    )
    if magic >= 2:
        return BatchHeader(12 + length, base, base + delta, max_ts)
    # magic 0/1: offset, size, crc, magic, attributes, then (magic 1) the timestamp
    ts = int.from_bytes(head[18:26], "big", signed=True) if magic == 1 else -1
    return BatchHeader(12 + length, base, base, ts)


UNBOUNDED_INDEX = 2**62
"""`max_index_size` for the rebuild: an index that outgrows `segment.index.bytes` is written whole
(the plan says Kafka's recovery would fail on it) rather than cut short."""


def _points(batches: Iterator[BatchHeader | RecordBatch]) -> Iterator[IndexPoint]:
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
    """[(offset index path, bytes), (time index path, bytes)] for the `.log` at `log_path`.

    `verify_crc` False for a log the plan's scan validated: headers are read, not CRCs. A plan's
    rebuild passes the `max_batch_size` of the scan it came from (apply takes it from the
    journal)."""
    name = log_path.rpartition("/")[2]
    base = layout.offset_from_file_name(name)
    batches = (
        index_batches(disk, log_path, max_batch_size)
        if verify_crc
        else header_batches(disk, log_path, max_batch_size)
    )
    offset_bytes, time_bytes = recovery_index_bytes(
        _points(batches), base, index_interval_bytes, UNBOUNDED_INDEX
    )
    stem = log_path[: -len(layout.LOG_SUFFIX)]
    return [
        (stem + layout.INDEX_SUFFIX, offset_bytes),
        (stem + layout.TIME_INDEX_SUFFIX, time_bytes),
    ]
