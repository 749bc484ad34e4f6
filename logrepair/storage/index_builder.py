"""The deterministic index rebuild of Kafka's segment recovery (spec fmt §6.4(a), rec §6.6.1).

`RecoveryIndexer` feeds batches, in file order, into an `OffsetIndex` and a `TimeIndex` exactly as
`LogSegment.recover` does; `build_indexes` runs it over in-memory files and returns the bytes
Kafka's recovery would leave on disk (trimmed). The same classes append to real files, so the
bytes rebuilt in memory and the files rebuilt on disk cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from .abstract_index import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_INDEX_SIZE
from .disk import DiskFile
from .offset_index import OffsetIndex
from .time_index import NO_TIMESTAMP, TimeIndex


class IndexedBatch(Protocol):
    """What recovery needs of a batch (the format layer's Batch protocol has it)."""

    @property
    def size(self) -> int: ...

    @property
    def last_offset(self) -> int: ...

    @property
    def max_timestamp(self) -> int: ...


class RecoveryIndexer:
    """Steps 2-4 and the end of `LogSegment.recover` for the offset and time indexes.

    The caller validates each batch (CRC, relative offset range) before `add`; `add` raises what
    Kafka's index appends raise (InvalidOffsetError when offsets go backwards at an index point,
    IndexFullError when the index is too small for the interval)."""

    def __init__(
        self,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    ) -> None:
        self.offset_index = offset_index
        self.time_index = time_index
        self.index_interval_bytes = index_interval_bytes
        self.valid_bytes = 0
        self._last_indexed_position = 0
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = offset_index.base_offset

    def add(self, batch: IndexedBatch) -> None:
        if batch.max_timestamp > self._max_timestamp:
            self._max_timestamp = batch.max_timestamp
            self._offset_of_max_timestamp = batch.last_offset
        if self.valid_bytes - self._last_indexed_position > self.index_interval_bytes:
            self.offset_index.append(batch.last_offset, self.valid_bytes)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._last_indexed_position = self.valid_bytes
        self.valid_bytes += batch.size

    def finish(self) -> None:
        """Trims both indexes after the final "largest timestamp" time-index entry."""
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(
            self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
        )
        self.time_index.trim_to_valid_size()


def build_indexes(
    batches: Iterable[IndexedBatch],
    base_offset: int,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
) -> tuple[bytes, bytes]:
    """The `.index` and `.timeindex` bytes Kafka's recovery leaves for a segment of these batches."""
    offset_file, time_file = MemoryFile(".index"), MemoryFile(".timeindex")
    indexer = RecoveryIndexer(
        OffsetIndex(offset_file, base_offset, max_index_size=max_index_size, newly_created=True),
        TimeIndex(time_file, base_offset, max_index_size=max_index_size, newly_created=True),
        index_interval_bytes,
    )
    for batch in batches:
        indexer.add(batch)
    indexer.finish()
    return offset_file.getvalue(), time_file.getvalue()


class MemoryFile(DiskFile):
    """A DiskFile in memory, sparse past what was written: a preallocated 10 MiB index costs
    only the bytes of its entries."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._data = bytearray()
        self._size = 0

    def getvalue(self) -> bytes:
        return bytes(self._data) + bytes(self._size - len(self._data))

    def size(self) -> int:
        return self._size

    def read_at(self, position: int, length: int) -> bytes:
        end = min(position + length, self._size)
        if end <= position:
            return b""
        stored = bytes(self._data[position:end])
        return stored + bytes(end - position - len(stored))

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        data = self.read_at(position, len(buffer))
        memoryview(buffer)[: len(data)] = data
        return len(data)

    def write_at(self, position: int, data) -> None:
        data = bytes(data)
        end = position + len(data)
        if len(self._data) < end:
            self._data.extend(bytes(end - len(self._data)))
        self._data[position:end] = data
        self._size = max(self._size, end)

    def append(self, data) -> int:
        position = self._size
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        del self._data[size:]
        self._size = size

    def fsync(self) -> None:
        """Nothing to make durable: the bytes are only ever returned by `getvalue`."""

    def close(self) -> None:
        """Keeps the bytes readable by `getvalue` after the index is closed."""
