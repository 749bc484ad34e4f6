"""Reads of one partition's log without its lock (Kafka's `LocalLog.read` and the offset lookups
of `UnifiedLog`).

The log swaps an immutable `SegmentList` and a `LogEnd` in whole on every change; a reader takes
each once, and pins the segment it reads, so a concurrent roll, retention delete or append never
shows it a closed file or bytes past the log end it captured first.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import NamedTuple

from .layout import TopicPartition
from .log_errors import OffsetOutOfRangeError
from .segment import Segment
from .time_index import NO_TIMESTAMP, TimestampOffset
from .txn_index import AbortedTxn

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class FetchResult(NamedTuple):
    """Whole batches read from one segment; `data` is empty at the log end."""

    offset: int
    segment_base_offset: int | None
    position: int | None
    data: bytes


class LogEnd(NamedTuple):
    """Kafka's `nextOffsetMetadata`, captured by readers in one read."""

    offset: int
    segment_base_offset: int
    position: int


class SegmentList(NamedTuple):
    segments: tuple[Segment, ...]
    bases: tuple[int, ...]


def segment_list(segments: Iterable[Segment]) -> SegmentList:
    ordered = tuple(sorted(segments, key=lambda s: s.base_offset))
    return SegmentList(ordered, tuple(s.base_offset for s in ordered))


def read(
    current: Callable[[], SegmentList],
    end: LogEnd,
    log_start_offset: int,
    topic_partition: TopicPartition,
    offset: int,
    max_bytes: int,
    min_one_message: bool,
) -> FetchResult:
    """Whole batches from the segment holding `offset` on, up to `max_bytes`, never past `end`;
    `current()` is the log's segment list now (taken again when a segment was deleted
    under the reader)."""
    lso = log_start_offset
    if offset == end.offset:
        return FetchResult(offset, None, None, b"")
    if offset < lso or offset > end.offset:
        raise OffsetOutOfRangeError(
            f"Received request for offset {offset} for partition {topic_partition}, but "
            f"we only have log segments in the range {lso} to {end.offset}."
        )
    while True:
        segments, bases = current()
        i = max(0, bisect.bisect_right(bases, offset) - 1)
        retry = False
        while i < len(segments):
            segment = segments[i]
            if not segment.pin():
                retry = True
                break
            try:
                max_position = (
                    end.position if segment.base_offset == end.segment_base_offset else None
                )
                found = segment.read(offset, max_bytes, max_position, min_one_message)
            finally:
                segment.unpin()
            if found is not None:
                return FetchResult(offset, found.segment_base_offset, found.position, found.data)
            i += 1
        if not retry:
            return FetchResult(offset, None, None, b"")


def offset_for_timestamp(
    segments: tuple[Segment, ...], log_start_offset: int, log_end_offset: int, timestamp: int
) -> TimestampOffset | None:
    """Kafka's `fetchOffsetByTimestamp`: the first record with a timestamp ≥ `timestamp`;
    -2 (earliest) gives the log start, -1 (latest) the log end, -3 the max timestamp."""
    if timestamp == EARLIEST_TIMESTAMP:
        return TimestampOffset(NO_TIMESTAMP, log_start_offset)
    if timestamp == LATEST_TIMESTAMP:
        return TimestampOffset(NO_TIMESTAMP, log_end_offset)
    if timestamp == MAX_TIMESTAMP:
        best = max((s.max_timestamp_so_far for s in segments), key=lambda t: t.timestamp)
        return best if best.timestamp >= 0 else None
    if timestamp < 0:
        raise ValueError(f"invalid target timestamp {timestamp}")
    for segment in segments:
        if segment.largest_timestamp >= timestamp:
            return segment.find_offset_by_timestamp(timestamp, log_start_offset)
    return None


def collect_aborted_transactions(
    segment_list: SegmentList, start_offset: int, upper_bound_offset: int
) -> list[AbortedTxn]:
    """The aborted transactions overlapping [start, upper bound), as Kafka's fetch collects
    them: from the segment holding `start_offset` on, through later segments too (an abort
    is indexed in the segment of its marker, which may lie past the upper bound), until an
    entry whose last stable offset reaches the upper bound says the search is complete."""
    segments, bases = segment_list
    first = max(0, bisect.bisect_right(bases, start_offset) - 1)
    out = []
    for segment in segments[first:]:
        for txn in segment.txn_index.iter_entries():
            if txn.last_offset >= start_offset and txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return out
    return out
