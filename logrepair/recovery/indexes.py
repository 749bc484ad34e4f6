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
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from ..format.batch import RecordBatch
from ..format.errors import Defect, FormatError
from ..format.walker import CRC_VALID_KINDS
from ..storage import layout
from ..storage.disk import Disk
from ..storage.scan import LogScan


@dataclass(frozen=True, slots=True)
class _Header:
    size: int
    last_offset: int
    max_timestamp: int


def index_batches(disk: Disk, log_path: str) -> Iterator[_Header | RecordBatch]:
    """The batches Kafka's recovery would index, in file order, up to the first invalid frame."""
    for item in LogScan(disk, log_path, check_offsets=False):
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
        return _Header(size, batch.last_offset, batch.max_timestamp or -1)
    except FormatError:
        return _Header(size, int.from_bytes(head[0:8], "big", signed=True), -1)


class RecoveryIndexes:
    """Kafka's recovery-time index rebuild (spec fmt §6.4(a)), fed batch by batch.

    Written here rather than driving `storage.index_builder` because that goes through the index
    classes one entry at a time, about 20x slower, and the scan feeds every batch of every
    recovered segment through this; a test holds the bytes identical to `build_indexes`."""

    __slots__ = ("base", "interval", "valid_bytes", "last_indexed", "max_ts", "max_ts_offset",
                 "offsets", "times", "last_time")  # fmt: skip

    def __init__(self, base_offset: int, index_interval_bytes: int) -> None:
        self.base = base_offset
        self.interval = index_interval_bytes
        self.valid_bytes = 0
        self.last_indexed = 0
        self.max_ts = -1
        self.max_ts_offset = base_offset
        self.offsets = array("i")  # relative offset, position, ...
        self.times = array("q")  # timestamp, relative offset, ...
        self.last_time = -1  # an empty time index's last entry is (-1, base)

    def add(self, size: int, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_ts:
            self.max_ts = max_timestamp
            self.max_ts_offset = last_offset
        if self.valid_bytes - self.last_indexed > self.interval:
            self.offsets.append(last_offset - self.base)
            self.offsets.append(self.valid_bytes)
            if self.max_ts > self.last_time:
                self.times.append(self.max_ts)
                self.times.append(self.max_ts_offset - self.base)
                self.last_time = self.max_ts
            self.last_indexed = self.valid_bytes
        self.valid_bytes += size

    @property
    def entries(self) -> int:
        return len(self.offsets) // 2

    def finish(self) -> tuple[bytes, bytes]:
        """The trimmed `.index` and `.timeindex` bytes, with the final time-index entry."""
        times = array("q", self.times)
        if self.max_ts > self.last_time:
            times.append(self.max_ts)
            times.append(self.max_ts_offset - self.base)
        offsets = array("i", self.offsets)
        if sys.byteorder == "little":
            offsets.byteswap()
        packed = bytearray(len(times) // 2 * 12)
        for n in range(len(times) // 2):
            _TIME_ENTRY.pack_into(packed, n * 12, times[2 * n], times[2 * n + 1])
        return offsets.tobytes(), bytes(packed)


_TIME_ENTRY = struct.Struct(">qi")


def rebuild(
    disk: Disk, log_path: str, index_interval_bytes: int, verify_crc: bool = True
) -> list[tuple[str, bytes]]:
    """[(offset index path, bytes), (time index path, bytes)] for the `.log` at `log_path`."""
    name = log_path.rpartition("/")[2]
    base = layout.offset_from_file_name(name)
    batches = index_batches(disk, log_path) if verify_crc else header_batches(disk, log_path)
    indexer = RecoveryIndexes(base, index_interval_bytes)
    for b in batches:
        ts = b.max_timestamp
        indexer.add(b.size, b.last_offset, -1 if ts is None else ts)
    offset_bytes, time_bytes = indexer.finish()
    stem = log_path[: -len(layout.LOG_SUFFIX)]
    return [
        (stem + layout.INDEX_SUFFIX, offset_bytes),
        (stem + layout.TIME_INDEX_SUFFIX, time_bytes),
    ]
