"""Two oracles for `index_builder.build_indexes`, written without it.

`spec_rebuild` re-states spec fmt §6.4(a) with no index class: what Kafka's recovery leaves.
`class_rebuild` drives `OffsetIndex` and `TimeIndex` as `LogSegment.recover` does, so it raises
whatever their appends raise: the oracle for damaged input.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from logrepair.storage.index_builder import IndexedBatch
from logrepair.storage.offset_index import OffsetIndex
from logrepair.storage.time_index import TimeIndex
from tests.storage.memory_file import MemoryFile


class B(NamedTuple):
    size: int
    last_offset: int
    max_timestamp: int | None


def spec_rebuild(batches: Sequence[IndexedBatch], base: int, interval: int) -> tuple[bytes, bytes]:
    offset_entries: list[tuple[int, int]] = []
    time_entries: list[tuple[int, int]] = []
    max_ts, max_ts_offset = -1, base
    valid = last_indexed = 0

    def time_append(ts: int, offset: int) -> None:
        last_ts = time_entries[-1][0] if time_entries else -1
        if ts > last_ts:  # equal timestamps are skipped; empty behaves as (-1, base)
            time_entries.append((ts, offset - base))

    for b in batches:
        if b.max_timestamp is not None and b.max_timestamp > max_ts:
            max_ts, max_ts_offset = b.max_timestamp, b.last_offset
        if valid - last_indexed > interval:
            offset_entries.append((b.last_offset - base, valid))
            time_append(max_ts, max_ts_offset)
            last_indexed = valid
        valid += b.size
    time_append(max_ts, max_ts_offset)
    return (
        b"".join(struct.pack(">ii", *e) for e in offset_entries),
        b"".join(struct.pack(">qi", *e) for e in time_entries),
    )


def class_rebuild(
    batches: Sequence[IndexedBatch], base: int, interval: int, max_index_size: int
) -> tuple[bytes, bytes]:
    offset_file, time_file = MemoryFile(".index"), MemoryFile(".timeindex")
    offsets = OffsetIndex(offset_file, base, max_index_size=max_index_size, newly_created=True)
    times = TimeIndex(time_file, base, max_index_size=max_index_size, newly_created=True)
    max_ts, max_ts_offset = -1, base
    valid = last_indexed = 0
    for b in batches:
        if b.max_timestamp is not None and b.max_timestamp > max_ts:
            max_ts, max_ts_offset = b.max_timestamp, b.last_offset
        if valid - last_indexed > interval:
            offsets.append(b.last_offset, valid)
            times.maybe_append(max_ts, max_ts_offset)
            last_indexed = valid
        valid += b.size
    offsets.trim_to_valid_size()
    times.maybe_append(max_ts, max_ts_offset, skip_full_check=True)
    times.trim_to_valid_size()
    return offset_file.getvalue(), time_file.getvalue()
