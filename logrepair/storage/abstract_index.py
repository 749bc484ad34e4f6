"""What the offset index and the time index share: Kafka's `AbstractIndex` over a Disk file.

Kafka mmaps an index; here every probe is a positioned read through the Disk, so an index of any
size costs no memory and the simulator sees every write. The rules are Kafka's (spec fmt §6):
an existing file counts `floor(length / entrySize)` entries, zero-filled preallocated slots
included; a new file is preallocated (sparse) to `maxIndexSize` rounded down to whole entries.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import ClassVar, Generic, Self, TypeVar

from .disk import Disk, DiskFile

DEFAULT_MAX_INDEX_SIZE = 10485760
DEFAULT_INDEX_INTERVAL_BYTES = 4096
INT32_MAX = 2**31 - 1
# Lookups search the last 8 KiB of entries first: Kafka's "warm section".
_WARM_SECTION_BYTES = 8192
_ITER_CHUNK_ENTRIES = 4096


class IndexFileError(ValueError):
    """Base of the index errors; each subclass is one of Kafka's exceptions."""


class CorruptIndexError(IndexFileError):
    """Kafka's CorruptIndexException."""


class InvalidOffsetError(IndexFileError):
    """Kafka's InvalidOffsetException: an append that does not move forward."""


class IndexOffsetOverflowError(IndexFileError):
    """Kafka's IndexOffsetOverflowException: `offset - baseOffset` outside `[0, Integer.MAX_VALUE]`."""


class IndexFullError(IndexFileError):
    """Kafka's IllegalArgumentException for an append to a full index."""


E = TypeVar("E", bound=tuple)


class AbstractIndex(ABC, Generic[E]):
    """A fixed-width entry array in a file; entries sorted by key (and, in a sound index, value)."""

    ENTRY_SIZE: ClassVar[int]
    _ENTRY: ClassVar[struct.Struct]
    _NAME: ClassVar[str]
    # Whether an entry's offset is its search key (offset index) or its value (time index).
    _OFFSET_IS_KEY: ClassVar[bool]

    def __init__(
        self,
        file: DiskFile,
        base_offset: int,
        *,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        newly_created: bool = False,
        writable: bool = True,
    ) -> None:
        """Wraps an open file. `newly_created` preallocates it, as Kafka does for a file it created."""
        self.file = file
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        if newly_created:
            if max_index_size < self.ENTRY_SIZE:
                raise ValueError(f"Invalid max index size: {max_index_size}")
            file.truncate(self._round_down(max_index_size))
        self._length = file.size()
        self._max_entries = self._length // self.ENTRY_SIZE
        self._entries = 0 if newly_created else self._max_entries
        self._after_entries_changed()

    @classmethod
    def open(
        cls,
        disk: Disk,
        path: str,
        base_offset: int,
        *,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        writable: bool = True,
    ) -> Self:
        """Opens `path`; when writable and missing, creates and preallocates it (Kafka's constructor).

        Read-only opening never creates anything: a missing file is FileNotFoundError."""
        newly_created = writable and not disk.exists(path)
        file = disk.open(path, write=writable, create=newly_created)
        try:
            return cls(
                file,
                base_offset,
                max_index_size=max_index_size,
                newly_created=newly_created,
                writable=writable,
            )
        except BaseException:
            file.close()
            raise

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def length(self) -> int:
        """The file length as of opening or the last resize (Kafka's `length()`)."""
        return self._length

    @abstractmethod
    def is_full(self) -> bool: ...

    @abstractmethod
    def _decode(self, raw: tuple[int, ...]) -> E:
        """An entry from its unpacked fields."""

    @abstractmethod
    def _after_entries_changed(self) -> None:
        """Refreshes the cached last entry after the entry count changed."""

    @abstractmethod
    def _appended(self, entry: E) -> None:
        """Caches `entry`, just written, as the last entry."""

    @abstractmethod
    def _key(self, entry: E) -> int: ...

    @abstractmethod
    def _value(self, entry: E) -> int: ...

    def entry(self, n: int) -> E:
        if not 0 <= n < self._entries:
            raise IndexFileError(
                f"Attempt to fetch the {n}th entry from {self._NAME} {self.path}, "
                f"which has size {self._entries}"
            )
        return self._parse(n)

    def iter_entries(self) -> Iterator[E]:
        """Every entry, read in bounded chunks."""
        size = self.ENTRY_SIZE
        for first in range(0, self._entries, _ITER_CHUNK_ENTRIES):
            count = min(_ITER_CHUNK_ENTRIES, self._entries - first)
            raw = self.file.read_at(first * size, count * size)
            usable = len(raw) - len(raw) % size
            for fields in self._ENTRY.iter_unpack(raw[:usable]):
                yield self._decode(fields)
            if usable < count * size:
                return  # the file shrank under us; what remains is not there to read

    def relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= INT32_MAX:
            raise IndexOffsetOverflowError(f"Integer overflow for offset: {offset} ({self.path})")
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def truncate(self) -> None:
        """Drops every entry (the file keeps its length)."""
        self._truncate_to_entries(0)

    def truncate_to(self, offset: int) -> None:
        """Drops every entry whose offset is ≥ `offset` (the file keeps its length)."""
        by_key = self._OFFSET_IS_KEY
        slot = self._largest_lower_bound_slot(offset, by_key=by_key)
        if slot == -1:
            keep = 0
        elif self._compare(self._parse(slot), offset, by_key) == 0:
            keep = slot
        else:
            keep = slot + 1
        self._truncate_to_entries(keep)

    def resize(self, new_size: int) -> bool:
        """Sets the file length to `new_size` rounded down to whole entries; False if unchanged."""
        self._require_writable()
        rounded = self._round_down(new_size)
        if rounded == self._length:
            return False
        if rounded < self._entries * self.ENTRY_SIZE:
            raise ValueError(
                f"cannot resize {self.path} to {rounded} bytes: it holds {self._entries} entries"
            )
        self.file.truncate(rounded)
        self._length = rounded
        self._max_entries = rounded // self.ENTRY_SIZE
        return True

    def trim_to_valid_size(self) -> bool:
        return self.resize(self._entries * self.ENTRY_SIZE)

    def reset(self) -> None:
        """No entries, file back to `max_index_size` (what recovery does before rebuilding)."""
        self.truncate()
        self.resize(self.max_index_size)

    def flush(self) -> None:
        self.file.fsync()

    def close(self) -> None:
        """Trims a writable index to its entries, as Kafka's close does, then closes the file."""
        if self.writable:
            self.trim_to_valid_size()
        self.file.close()

    @abstractmethod
    def sanity_check(self) -> None:
        """Raises CorruptIndexError with Kafka's message when the index is unusable."""

    def _parse(self, slot: int) -> E:
        raw = self.file.read_at(slot * self.ENTRY_SIZE, self.ENTRY_SIZE)
        if len(raw) < self.ENTRY_SIZE:
            raise IndexFileError(f"{self.path} ended inside entry {slot}")
        return self._decode(self._ENTRY.unpack(raw))

    def _write_next(self, entry: E, *fields: int) -> None:
        """Writes `fields` as the next entry, which decodes to `entry`: kept as the last entry
        without reading it back, as Kafka keeps `_lastOffset` / `_lastEntry` on append."""
        self._require_writable()
        self.file.write_at(self._entries * self.ENTRY_SIZE, self._ENTRY.pack(*fields))
        self._entries += 1
        self._appended(entry)

    def _truncate_to_entries(self, n: int) -> None:
        self._entries = n
        self._after_entries_changed()

    def _require_writable(self) -> None:
        if not self.writable:
            raise OSError(f"{self.path} was opened read-only")

    def _round_down(self, n: int) -> int:
        return n - n % self.ENTRY_SIZE

    def _compare(self, entry: E, target: int, by_key: bool) -> int:
        found = self._key(entry) if by_key else self._value(entry)
        return (found > target) - (found < target)

    def _largest_lower_bound_slot(self, target: int, *, by_key: bool = True) -> int:
        return self._slot_for(target, by_key, largest_lower_bound=True)

    def _smallest_upper_bound_slot(self, target: int, *, by_key: bool = True) -> int:
        return self._slot_for(target, by_key, largest_lower_bound=False)

    def _slot_for(self, target: int, by_key: bool, *, largest_lower_bound: bool) -> int:
        """`AbstractIndex.indexSlotRangeFor`, probe for probe, so a corrupt (unsorted) index answers
        as Kafka's would; on a sorted index it equals a plain binary search."""
        if self._entries == 0:
            return -1
        first_hot = max(0, self._entries - 1 - _WARM_SECTION_BYTES // self.ENTRY_SIZE)
        if self._compare(self._parse(first_hot), target, by_key) < 0:
            return self._binary_search(target, by_key, largest_lower_bound, first_hot)
        if self._compare(self._parse(0), target, by_key) > 0:
            return -1 if largest_lower_bound else 0
        return self._binary_search(target, by_key, largest_lower_bound, 0, first_hot)

    def _binary_search(
        self, target: int, by_key: bool, largest_lower_bound: bool, lo: int, hi: int | None = None
    ) -> int:
        hi = self._entries - 1 if hi is None else hi
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            c = self._compare(self._parse(mid), target, by_key)
            if c > 0:
                hi = mid - 1
            elif c < 0:
                lo = mid
            else:
                return mid
        if largest_lower_bound:
            return lo
        return -1 if lo == self._entries - 1 else lo + 1
