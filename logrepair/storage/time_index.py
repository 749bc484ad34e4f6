"""The time index (`.timeindex`): 12-byte entries `(int64 timestamp, int32 relativeOffset)` (spec fmt §6).

Each entry says: the largest timestamp seen up to and including this offset. Kafka's `TimeIndex`,
including its quirks: equal timestamps are skipped silently, an empty index behaves as if its last
entry were `(-1, baseOffset)`, and one slot is kept free for the entry written at roll.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .abstract_index import (
    AbstractIndex,
    CorruptIndexError,
    IndexFileError,
    IndexFullError,
    InvalidOffsetError,
)

ENTRY_SIZE = 12
NO_TIMESTAMP = -1
_ENTRY = struct.Struct(">qi")


class TimestampRegressionError(IndexFileError):
    """Kafka's IllegalStateException: an entry whose timestamp is below the last one."""


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


# encode_entry(timestamp, relative_offset) -> bytes: the struct's own pack, as the offset index's.
encode_entry = _ENTRY.pack


def decode_entries(buf, base_offset: int) -> list[TimestampOffset]:
    """Every whole entry of `buf`; a partial trailing entry is ignored."""
    usable = len(buf) - len(buf) % ENTRY_SIZE
    return [
        TimestampOffset(ts, base_offset + rel)
        for ts, rel in _ENTRY.iter_unpack(memoryview(buf)[:usable])
    ]


class TimeIndex(AbstractIndex[TimestampOffset]):
    ENTRY_SIZE = ENTRY_SIZE
    _ENTRY = _ENTRY
    _NAME = "time index"
    _OFFSET_IS_KEY = False

    def is_full(self) -> bool:
        return self._entries >= self._max_entries - 1

    def last_entry(self) -> TimestampOffset:
        return self._last_entry

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Kafka's `TimeIndex.maybeAppend`: writes only when `timestamp` exceeds the last entry's."""
        if not skip_full_check and self.is_full():
            raise IndexFullError(
                f"Attempt to append to a full time index (size = {self._entries})."
            )
        last = self._last_entry
        if self._entries != 0 and offset < last.offset:
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to slot {self._entries} no larger than "
                f"the last offset appended ({last.offset}) to {self.path}"
            )
        if self._entries != 0 and timestamp < last.timestamp:
            raise TimestampRegressionError(
                f"Attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger "
                f"than the last timestamp appended ({last.timestamp}) to {self.path}"
            )
        if timestamp > last.timestamp:
            if self._entries >= self._max_entries:
                # Kafka's mmap would overflow here (BufferOverflowException); say so plainly.
                raise IndexFullError(
                    f"No slot left in time index {self.path} (size = {self._entries})."
                )
            self._write_next(
                TimestampOffset(timestamp, offset), timestamp, self.relative_offset(offset)
            )

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp ≤ target, else `(-1, base_offset)`."""
        slot = self._largest_lower_bound_slot(target_timestamp)
        return TimestampOffset(NO_TIMESTAMP, self.base_offset) if slot == -1 else self._parse(slot)

    def sanity_check(self) -> None:
        last = self._last_entry
        if self._entries != 0:
            first_timestamp = self._parse(0).timestamp
            if last.timestamp < first_timestamp:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size but "
                    f"the last timestamp is {last.timestamp} which is less than the first "
                    f"timestamp {first_timestamp}"
                )
            if last.offset < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size but "
                    f"the last offset is {last.offset} which is less than the first offset "
                    f"{self.base_offset}"
                )
        if self._length % ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {self._length} bytes which is "
                f"neither positive nor a multiple of {ENTRY_SIZE}"
            )

    def _decode(self, raw: tuple[int, ...]) -> TimestampOffset:
        return TimestampOffset(raw[0], self.base_offset + raw[1])

    def _after_entries_changed(self) -> None:
        self._last_entry = (
            TimestampOffset(NO_TIMESTAMP, self.base_offset)
            if self._entries == 0
            else self._parse(self._entries - 1)
        )

    def _appended(self, entry: TimestampOffset) -> None:
        self._last_entry = entry

    def _key(self, entry: TimestampOffset) -> int:
        return entry.timestamp

    def _value(self, entry: TimestampOffset) -> int:
        return entry.offset
