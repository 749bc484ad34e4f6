"""Which segments a retention pass deletes (Kafka's `UnifiedLog.deletableSegments` and the three
breaches of `deleteOldSegments`), without I/O: `Log.delete_old_segments` deletes what these say.

A breach is a predicate over a segment and the one after it (None for the last); segments go
oldest first while the predicate holds, never past the high watermark, never the empty active one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .segment import Segment

Breach = Callable[[Segment, Segment | None], bool]


def log_start_offset_breach(log_start_offset: int) -> Breach:
    """A segment wholly below the log start offset (its successor starts at or before it)."""

    def breached(segment: Segment, next_segment: Segment | None) -> bool:
        return next_segment is not None and next_segment.base_offset <= log_start_offset

    return breached


def retention_size_breach(retention_bytes: int, log_size: int) -> Breach | None:
    """The oldest segments whose sizes fit in the excess over `retention.bytes`; None when
    there is no limit or no excess."""
    if retention_bytes < 0 or log_size < retention_bytes:
        return None
    diff = log_size - retention_bytes

    def breached(segment: Segment, next_segment: Segment | None) -> bool:
        nonlocal diff
        if diff - segment.size >= 0:
            diff -= segment.size
            return True
        return False

    return breached


def retention_ms_breach(retention_ms: int, now: int) -> Breach:
    """A segment whose largest timestamp is older than `retention.ms` at `now`."""

    def breached(segment: Segment, next_segment: Segment | None) -> bool:
        return now - segment.largest_timestamp > retention_ms

    return breached


def deletable_segments(
    segments: Sequence[Segment], predicate: Breach, high_watermark: int, log_end_offset: int
) -> list[Segment]:
    """The oldest segments, in order, up to the first that must stay."""
    out: list[Segment] = []
    for i, segment in enumerate(segments):
        next_segment = segments[i + 1] if i + 1 < len(segments) else None
        upper = next_segment.base_offset if next_segment is not None else log_end_offset
        last_and_empty = next_segment is None and segment.size == 0
        if high_watermark >= upper and not last_and_empty and predicate(segment, next_segment):
            out.append(segment)
        else:
            break
    return out
