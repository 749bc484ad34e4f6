"""One segment of a partition log: the `.log` file and its three indexes (Kafka's `LogSegment`).

The offset and time indexes are lazy, as Kafka's `LazyIndex`: a freshly rolled segment has only its
`.log` on disk until an append, a roll check or a flush first touches them, so the files this code
leaves after a crash are the files a broker leaves. Every read and write goes through the Disk.

Positions in the `.log` are found by reading entry headers only (`segment_entries`: offset, length,
magic, last offset delta, max timestamp), never CRCs or records: that is what Kafka's
`translateOffset` reads, and it keeps offset lookups to a few small reads after an index probe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import NamedTuple, TypeVar

from ..format.batch import RecordBatch
from ..format.errors import Defect
from . import layout
from .clock import Clock
from .disk import Disk, DiskFile, join
from .index_builder import RecoveryIndex
from .log_config import INT_MAX, LogConfig
from .offset_index import OffsetIndex
from .scan import LogScan
from .segment_entries import EntryHeader, entry_headers
from .time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from .txn_index import AbortedTxn, TransactionIndex

# Kafka's FileRecords refuses to grow a segment past Integer.MAX_VALUE bytes.
MAX_SEGMENT_FILE_SIZE = INT_MAX
IndexT = TypeVar("IndexT", OffsetIndex, TimeIndex)


class SegmentOffsetOverflowError(ValueError):
    """Kafka's LogSegmentOffsetOverflowException: an offset not representable in this segment."""


class FetchSlice(NamedTuple):
    """Whole batches read from one segment: `data` starts at `position` of the `.log`."""

    segment_base_offset: int
    position: int
    data: bytes


class RollParams(NamedTuple):
    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class Segment:
    """A `.log` with lazily opened `.index` and `.timeindex`, and a `.txnindex` made on first abort."""

    def __init__(
        self,
        disk: Disk,
        dir: str,
        base_offset: int,
        log_file: DiskFile,
        config: LogConfig,
        clock: Clock,
        *,
        size: int,
        suffix: str = "",
    ) -> None:
        self.disk = disk
        self.dir = dir
        self.base_offset = base_offset
        self.config = config
        self.clock = clock
        self.suffix = suffix
        self._log = log_file
        self._size = size
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        # Its file is created by the first aborted transaction, as Kafka's.
        self.txn_index = TransactionIndex(disk, self.txn_index_path, base_offset)
        self.created_ms = clock.milliseconds()
        self.roll_jitter_ms = config.random_segment_jitter()
        self._rolling_based_timestamp: int | None = None
        self._bytes_since_last_index_entry = 0
        self._max_ts_and_offset: TimestampOffset | None = None  # None: not loaded yet
        # Readers pin a segment while they read so deletion never closes a file under them.
        self._ref_lock = threading.Lock()
        self._readers = 0
        self._closed = False
        self._handles_closed = False
        self._on_idle: Callable[[], None] | None = None

    # --- opening ---------------------------------------------------------------------------------

    @classmethod
    def create(
        cls, disk: Disk, dir: str, base_offset: int, config: LogConfig, clock: Clock
    ) -> Segment:
        """A new, empty segment: its `.log` created now (preallocated if configured), indexes later."""
        path = join(dir, layout.log_file_name(base_offset))
        log_file = disk.open(path, create=True)
        try:
            if config.preallocate:
                log_file.truncate(config.segment_bytes)
            return cls(disk, dir, base_offset, log_file, config, clock, size=0)
        except BaseException:
            log_file.close()
            raise

    @classmethod
    def open_existing(
        cls, disk: Disk, dir: str, base_offset: int, config: LogConfig, clock: Clock
    ) -> Segment:
        """An existing segment; its logical size is the whole file, as Kafka's `FileRecords.open`."""
        path = join(dir, layout.log_file_name(base_offset))
        log_file = disk.open(path, write=True)
        try:
            return cls(disk, dir, base_offset, log_file, config, clock, size=log_file.size())
        except BaseException:
            log_file.close()
            raise

    # --- names and state -------------------------------------------------------------------------

    def _path(self, suffix: str) -> str:
        return join(self.dir, layout.segment_file_name(self.base_offset, suffix, self.suffix))

    @property
    def log_path(self) -> str:
        return self._path(layout.LOG_SUFFIX)

    @property
    def index_path(self) -> str:
        return self._path(layout.INDEX_SUFFIX)

    @property
    def time_index_path(self) -> str:
        return self._path(layout.TIME_INDEX_SUFFIX)

    @property
    def txn_index_path(self) -> str:
        return self._path(layout.TXN_INDEX_SUFFIX)

    @property
    def size(self) -> int:
        """Bytes of batches in the `.log` (a preallocated file is longer)."""
        return self._size

    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._offset_index = self._open_index(OffsetIndex, self.index_path)
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._time_index = self._open_index(TimeIndex, self.time_index_path)
        return self._time_index

    def _open_index(self, index_class: type[IndexT], path: str) -> IndexT:
        """Kafka's LazyIndex: the file is opened, or created and preallocated, on first use."""
        return index_class.open(
            self.disk, path, self.base_offset, max_index_size=self.config.segment_index_bytes
        )

    @property
    def max_timestamp_so_far(self) -> TimestampOffset:
        """The largest batch max timestamp and the offset it was seen at (Kafka's lazily loaded value)."""
        if self._max_ts_and_offset is None:
            self._max_ts_and_offset = self.time_index.last_entry()
        return self._max_ts_and_offset

    @property
    def largest_timestamp(self) -> int:
        """What time retention compares: the max record timestamp, else the `.log`'s mtime."""
        ts = self.max_timestamp_so_far.timestamp
        if ts >= 0:
            return ts
        return int(self.disk.mtime(self.log_path) * 1000)

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT_MAX

    def __repr__(self) -> str:
        return (
            f"LogSegment(baseOffset={self.base_offset}, size={self._size}, "
            f"largestRecordTimestamp={self.max_timestamp_so_far.timestamp})"
        )

    # --- append ----------------------------------------------------------------------------------

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_timestamp: int,
        records: bytes,
    ) -> None:
        """Kafka's `LogSegment.append`: write at the end, then maybe one index entry (spec §2.1)."""
        if not records:
            return
        if self._size == 0:
            self._rolling_based_timestamp = largest_timestamp
        if not self.can_convert_to_relative_offset(largest_offset):
            raise SegmentOffsetOverflowError(
                f"Detected offset overflow at offset {largest_offset} in segment {self}"
            )
        position = self._size
        if position + len(records) > MAX_SEGMENT_FILE_SIZE:
            raise ValueError(
                f"The size of segment {self.log_path} ({position}) plus the append size "
                f"({len(records)}) exceeds the maximum segment file size"
            )
        try:
            self._log.write_at(position, records)
        except OSError:
            self._undo_partial_write(position)
            raise
        self._size = position + len(records)
        if largest_timestamp > self.max_timestamp_so_far.timestamp:
            self._max_ts_and_offset = TimestampOffset(
                largest_timestamp, shallow_offset_of_max_timestamp
            )
        if self._bytes_since_last_index_entry > self.config.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            ts = self.max_timestamp_so_far
            self.time_index.maybe_append(ts.timestamp, ts.offset)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += len(records)

    def _undo_partial_write(self, position: int) -> None:
        """After a failed write (no space, I/O error), cuts off whatever part of it landed."""
        try:
            if self._log.size() > position and not self.config.preallocate:
                self._log.truncate(position)
        except OSError:
            pass  # the original error says what went wrong; the tail is beyond the logical size

    def update_txn_index(self, aborted: AbortedTxn) -> None:
        self.txn_index.append(aborted)

    # --- shallow scans ---------------------------------------------------------------------------

    def entries(self, start: int = 0, end: int | None = None) -> Iterator[EntryHeader]:
        """Headers of the whole entries in `[start, end)`; stops silently at a torn last entry."""
        end = self._size if end is None else min(end, self._size)
        return entry_headers(self._log, self.log_path, start, end)

    def translate_offset(self, offset: int) -> EntryHeader | None:
        """The first entry at or after the index's hint whose last offset is ≥ `offset`."""
        for entry in self.entries(self.offset_index.lookup(offset).position):
            if entry.last_offset >= offset:
                return entry
        return None

    def next_offset_and_end(self) -> tuple[int, int]:
        """The offset after the last whole entry (scanning from the last index entry) or the base
        offset, and the byte position where that entry ends: the size, unless the tail is torn."""
        start = self.offset_index.last_entry().position
        last = None
        for last in self.entries(start):  # noqa: B007
            pass
        if last is None:
            return self.base_offset, min(start, self._size)
        return last.last_offset + 1, last.position + last.size

    def _largest_timestamp_after(self, position: int) -> TimestampOffset:
        best = TimestampOffset(NO_TIMESTAMP, -1)
        for entry in self.entries(position):
            if entry.max_timestamp > best.timestamp:
                best = TimestampOffset(entry.max_timestamp, entry.last_offset)
        return best

    def _first_batch_timestamp(self) -> int:
        if self._rolling_based_timestamp is None:
            first = next(self.entries(), None)
            if first is not None:
                self._rolling_based_timestamp = first.max_timestamp
        return (
            NO_TIMESTAMP if self._rolling_based_timestamp is None else self._rolling_based_timestamp
        )

    # --- reads -----------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = True,
    ) -> FetchSlice | None:
        """Whole batches from the one holding `start_offset`, at most `max_size` bytes — at least
        one batch when `min_one_message`, however large (Kafka's minOneMessage). None past the end."""
        if max_size < 0:
            raise ValueError(
                f"Invalid max size {max_size} for log read from segment {self.log_path}"
            )
        limit = self._size if max_position is None else min(max_position, self._size)
        first = self.translate_offset(start_offset)
        if first is None or first.position >= limit:
            return None
        end = first.position
        for entry in self.entries(first.position, limit):
            if entry.position + entry.size - first.position > max_size and not (
                min_one_message and entry.position == first.position
            ):
                break
            end = entry.position + entry.size
        return FetchSlice(
            self.base_offset,
            first.position,
            self._log.read_at(first.position, end - first.position),
        )

    def read_batch(self, entry: EntryHeader) -> RecordBatch:
        return RecordBatch(
            memoryview(self._log.read_at(entry.position, entry.size)), entry.position
        )

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> TimestampOffset | None:
        """The first record at or after `start_offset` with a timestamp ≥ `timestamp` (Kafka's
        `findOffsetByTimestamp`); legacy entries answer with their shallow offset and timestamp."""
        ts_entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(ts_entry.offset, start_offset)).position
        for entry in self.entries(position):
            if entry.max_timestamp < timestamp:
                continue
            if entry.magic < 2:
                if entry.last_offset >= start_offset:
                    return TimestampOffset(entry.max_timestamp, entry.last_offset)
                continue
            for record in self.read_batch(entry).records():
                if record.timestamp >= timestamp and record.offset >= start_offset:
                    return TimestampOffset(record.timestamp, record.offset)
        return None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping `[fetch_offset, upper_bound_offset)`."""
        return [
            t
            for t in self.txn_index.iter_entries()
            if t.last_offset >= fetch_offset and t.first_offset < upper_bound_offset
        ]

    # --- roll ------------------------------------------------------------------------------------

    def should_roll(self, params: RollParams) -> bool:
        """Kafka's `shouldRoll` (spec §2.2); touching the indexes creates them, as in Kafka."""
        reached_roll_ms = (
            self._time_waited_for_roll(params.now, params.max_timestamp_in_messages)
            > params.max_segment_ms - self.roll_jitter_ms
        )
        size = self._size
        return (
            size > params.max_segment_bytes - params.messages_size
            or (size > 0 and reached_roll_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(params.max_offset_in_messages)
        )

    def _time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        ts = self._first_batch_timestamp()
        if ts >= 0:
            return message_timestamp - ts
        return now - self.created_ms

    def on_become_inactive(self) -> None:
        """At roll: the final "largest timestamp" time entry, indexes and `.log` trimmed; no fsync."""
        ts = self.max_timestamp_so_far
        self.time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self._trim_log()

    def _trim_log(self) -> None:
        if self._log.size() > self._size:
            self._log.truncate(self._size)

    def rebuild_indexes(self) -> Defect | None:
        """Kafka's recovery rebuild of the offset and time indexes (spec fmt §6.4(a)) over a
        windowed scan of the `.log`. Stops at the first defect and returns it, the indexes
        covering the valid prefix; the caller decides what the defect means.

        The entries are built in memory and each file written once: appending entry by entry
        through the Disk costs a few system calls per batch."""
        defect: Defect | None = None
        base = self.base_offset
        rebuilt = RecoveryIndex(
            base, self.config.index_interval_bytes, self.config.segment_index_bytes
        )
        # Runs of batches that need nothing more are added in one call (`take_run`); the scan
        # yields the rest, one at a time.
        for item in LogScan(self.disk, self.log_path, quiet_runs=rebuilt.take_run):
            if isinstance(item, Defect):
                defect = item
                break
            last = item.last_offset
            # Kafka's ensureOffsetInRange: an overflow splits the segment, it is no defect.
            if not 0 <= last - base <= INT_MAX:
                rebuilt.flush()  # a full index at an earlier batch throws first, as in Kafka's loop
                raise SegmentOffsetOverflowError(
                    f"Detected offset overflow at offset {last} in segment {base}"
                )
            rebuilt.add(item.position, last, item.max_timestamp)
        index_bytes, time_bytes = rebuilt.result()
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.close()
        self._offset_index = self._time_index = None
        for path, data in ((self.index_path, index_bytes), (self.time_index_path, time_bytes)):
            with self.disk.open(path, create=True) as f:
                f.truncate(0)
                f.write_at(0, data)
        self._max_ts_and_offset = None
        return defect

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    # --- truncation ------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Kafka's `LogSegment.truncateTo` (spec §5.2): the whole batch holding `offset` goes.

        Returns the bytes removed from the `.log`. Nothing is fsynced."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.resize_indexes(self.config.segment_index_bytes)
        removed = 0
        if mapping is not None:
            removed = self._size - mapping.position
            self._size = mapping.position
            if self._log.size() > mapping.position:
                self._log.truncate(mapping.position)
        if self._size == 0:
            self.created_ms = self.clock.milliseconds()
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far.timestamp >= 0:
            last = self.time_index.last_entry()
            after = self._largest_timestamp_after(self.offset_index.lookup(last.offset).position)
            self._max_ts_and_offset = after if after.timestamp > last.timestamp else last
        return removed

    # --- durability and life cycle ---------------------------------------------------------------

    def flush(self) -> None:
        """fsyncs the `.log` and the indexes (creating lazy index files, as Kafka's flush does)."""
        self._log.fsync()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """A clean close: final time entry, indexes trimmed, `.log` fsynced and trimmed."""
        if self._max_ts_and_offset is not None and self._max_ts_and_offset.timestamp > NO_TIMESTAMP:
            ts = self._max_ts_and_offset
            self.time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
        self._log.fsync()
        self._trim_log()
        self.close_handlers()

    def close_handlers(self) -> None:
        """Closes the files without flushing (Kafka's `closeHandlers`); indexes trim on close."""
        with self._ref_lock:
            if self._handles_closed:
                return
            self._closed = self._handles_closed = True
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.close()
        self.txn_index.close()
        self._log.close()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Renames the segment's files from `old_suffix` to `new_suffix` (e.g. "" → ".deleted").

        Open handles keep working across a rename; a missing lazy index is not an error."""
        if self.suffix != old_suffix:
            raise ValueError(f"{self} has suffix {self.suffix!r}, not {old_suffix!r}")
        olds = [self._path(k) for k in layout.SEGMENT_FILE_SUFFIXES]
        self.suffix = new_suffix
        for old, kind in zip(olds, layout.SEGMENT_FILE_SUFFIXES, strict=True):
            if self.disk.exists(old):
                self.disk.rename(old, self._path(kind))
        # Handles follow the rename; their paths (used in messages and by the txn index's
        # re-reads) must follow too.
        self._log.path = self.log_path
        for index, path in (
            (self._offset_index, self.index_path),
            (self._time_index, self.time_index_path),
        ):
            if index is not None:
                index.file.path = path
        self.txn_index.path = self.txn_index_path

    def pin(self) -> bool:
        """Marks a read in progress; False when the segment was already closed (read elsewhere)."""
        with self._ref_lock:
            if self._closed:
                return False
            self._readers += 1
            return True

    def unpin(self) -> None:
        with self._ref_lock:
            self._readers -= 1
            run = self._on_idle if self._readers == 0 else None
            if run is not None:
                self._on_idle = None
                self._closed = True
        if run is not None:
            run()

    def delete_files_when_idle(self) -> None:
        """Closes and unlinks the files now, or when the last reader still holding it finishes."""
        with self._ref_lock:
            if self._readers > 0:
                self._on_idle = self._delete_files
                return
            self._closed = True
        self._delete_files()

    def _delete_files(self) -> None:
        self.close_handlers()
        for kind in layout.SEGMENT_FILE_SUFFIXES:
            path = self._path(kind)
            if self.disk.exists(path):
                self.disk.unlink(path)
