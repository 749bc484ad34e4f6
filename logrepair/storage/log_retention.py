"""Which segments a retention pass deletes (Kafka's `UnifiedLog.deletableSegments` and the three
breaches of `deleteOldSegments`), without I/O: `Log.delete_old_segments` deletes what these say.

A breach is a predicate over a segment and the one after it (None for the last); segments go
oldest first while the predicate holds, never past the high watermark, never the empty active one.
Each comes with the reason Kafka logs for the segments it deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from .segment import Segment

Breach = Callable[[Segment, Segment | None], bool]


class Rule(NamedTuple):
    breached: Breach
    reason: str


def log_start_offset_breach(log_start_offset: int) -> Rule:
    """A segment wholly below the log start offset (its successor starts at or before it)."""

    def breached(segment: Segment, next_segment: Segment | None) -> bool:
        return next_segment is not None and next_segment.base_offset <= log_start_offset

    return Rule(breached, f"Deleting segments due to log start offset {log_start_offset} breach")


def retention_size_breach(retention_bytes: int, log_size: int) -> Rule | None:
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

    return Rule(breached, f"Deleting segments due to log retention size {retention_bytes} breach")


def retention_ms_breach(retention_ms: int, now: int) -> Rule | None:
    """A segment whose largest timestamp is older than `retention.ms` at `now`; None when
    there is no limit."""
    if retention_ms < 0:
        return None

    def breached(segment: Segment, next_segment: Segment | None) -> bool:
        return now - segment.largest_timestamp > retention_ms

    return Rule(breached, f"Deleting segments due to log retention time {retention_ms}ms breach")


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
