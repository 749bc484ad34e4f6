"""The offset index (`.index`): 8-byte entries `(int32 relativeOffset, int32 position)` (spec fmt §6).

Maps an offset to the file position of a batch at or before it; Kafka's `OffsetIndex`.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .abstract_index import AbstractIndex, CorruptIndexError, IndexFullError, InvalidOffsetError

ENTRY_SIZE = 8
_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


# encode_entry(relative_offset, position) -> bytes: the struct's own pack, so the index rebuild
# packs an entry without a Python call frame.
encode_entry = _ENTRY.pack


def decode_entries(buf, base_offset: int) -> list[OffsetPosition]:
    """Every whole entry of `buf`; a partial trailing entry is ignored, as Kafka's mmap view does."""
    usable = len(buf) - len(buf) % ENTRY_SIZE
    return [
        OffsetPosition(base_offset + rel, pos)
        for rel, pos in _ENTRY.iter_unpack(memoryview(buf)[:usable])
    ]


class OffsetIndex(AbstractIndex[OffsetPosition]):
    ENTRY_SIZE = ENTRY_SIZE
    _ENTRY = _ENTRY
    _NAME = "index"
    _OFFSET_IS_KEY = True

    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    @property
    def last_offset(self) -> int:
        """The last entry's offset, or the base offset when empty."""
        return self._last_offset

    def last_entry(self) -> OffsetPosition:
        if self._entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return self._parse(self._entries - 1)

    def append(self, offset: int, position: int) -> None:
        """Kafka's `OffsetIndex.append`: offsets must grow; positions are not checked."""
        if self.is_full():
            raise IndexFullError(f"Attempt to append to a full index (size = {self._entries}).")
        if self._entries != 0 and offset <= self._last_offset:
            raise InvalidOffsetError(
                f"Attempt to append an offset {offset} to position {self._entries} no larger than "
                f"the last offset appended ({self._last_offset}) to {self.path}"
            )
        self._write_next(OffsetPosition(offset, position), self.relative_offset(offset), position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry with offset ≤ target, else `(base_offset, 0)`."""
        slot = self._largest_lower_bound_slot(target_offset)
        return OffsetPosition(self.base_offset, 0) if slot == -1 else self._parse(slot)

    def fetch_upper_bound_offset(
        self, fetch: OffsetPosition, fetch_size: int
    ) -> OffsetPosition | None:
        """The first entry whose position is ≥ `fetch.position + fetch_size`, if any."""
        slot = self._smallest_upper_bound_slot(fetch.position + fetch_size, by_key=False)
        return None if slot == -1 else self._parse(slot)

    def sanity_check(self) -> None:
        if self._entries != 0 and self._last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {self.path} has non-zero size but the last "
                f"offset is {self._last_offset} which is less than the base offset {self.base_offset}"
            )
        if self._length % ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {self._length} bytes which is neither "
                f"positive nor a multiple of {ENTRY_SIZE}"
            )

    def _decode(self, raw: tuple[int, ...]) -> OffsetPosition:
        return OffsetPosition(self.base_offset + raw[0], raw[1])

    def _after_entries_changed(self) -> None:
        self._last_offset = self.last_entry().offset

    def _appended(self, entry: OffsetPosition) -> None:
        self._last_offset = entry.offset

    def _key(self, entry: OffsetPosition) -> int:
        return entry.offset

    def _value(self, entry: OffsetPosition) -> int:
        return entry.position
