"""A partition's segments on this disk (Kafka's `LocalLog`, carved out of `UnifiedLog` as Kafka
carved it): the segment list, the log end, the recovery point, roll, flush, truncation and the
two-step delete of segments. The policy above it (log start offset, high watermark, producer
state, leader epochs, retention, the lock and going offline) is `Log`'s.

Not thread-safe by itself, as Kafka's is not: every mutating call runs under `Log`'s lock
(`lock`), which the delayed delete of retired segments also takes. Readers take `segment_list`
and `end` without the lock: both are immutable values swapped in whole on every change.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Iterable, Sequence

from . import layout
from .clock import Clock
from .disk import Disk, join
from .layout import TopicPartition
from .log_config import LogConfig
from .log_errors import LogError
from .log_reads import LogEnd, segment_list
from .scheduler import Scheduler
from .segment import Segment

log = logging.getLogger(__name__)


class LocalLog:
    """The segments of one partition directory, oldest first, and where they end."""

    def __init__(
        self,
        disk: Disk,
        dir: str,
        topic_partition: TopicPartition,
        config: LogConfig,
        clock: Clock,
        scheduler: Scheduler,
        lock: threading.RLock,
        segments: Sequence[Segment],
        *,
        recovery_point: int,
        log_end_offset: int,
    ) -> None:
        self.disk = disk
        self.dir = dir
        self.topic_partition = topic_partition
        self.config = config
        self.clock = clock
        self.scheduler = scheduler
        self.lock = lock
        self.segment_list = segment_list(segments)
        active = self.segment_list.segments[-1]
        self.end = LogEnd(log_end_offset, active.base_offset, active.size)
        self.recovery_point = recovery_point
        self.last_flush_ms = clock.milliseconds()
        self.retired: list[Segment] = []
        self.closed = False

    # --- state -----------------------------------------------------------------------------------

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self.segment_list.segments

    @property
    def active_segment(self) -> Segment:
        return self.segment_list.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.end.offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segment_list.segments)

    def set_segments(self, segments: Iterable[Segment]) -> None:
        self.segment_list = segment_list(segments)
        self.update_end(self.end.offset)

    def update_end(self, offset: int) -> None:
        """Kafka's `updateLogEndOffset`: the recovery point never stays past the log end."""
        active = self.segment_list.segments[-1]
        self.end = LogEnd(offset, active.base_offset, active.size)
        if self.recovery_point > offset:
            self.recovery_point = offset

    def segments_in_range(self, start: int, end: int) -> list[Segment]:
        """Kafka's `LogSegments.values(from, to)`: includes the segment holding `start`."""
        if start == end:
            return []
        if end < start:
            raise ValueError(
                f"Invalid log segment range: requested segments in {self.topic_partition} from "
                f"offset {start} which is greater than limit offset {end}"
            )
        segments, bases = self.segment_list
        first = max(0, bisect.bisect_right(bases, start) - 1)
        return [s for s in segments[first:] if s.base_offset < end]

    def append(
        self, last_offset: int, max_timestamp: int, offset_of_max_timestamp: int, data: bytes
    ) -> Segment:
        """Writes checked batches to the active segment and moves the log end past them."""
        segment = self.active_segment
        segment.append(last_offset, max_timestamp, offset_of_max_timestamp, data)
        self.update_end(last_offset + 1)
        return segment

    # --- roll ------------------------------------------------------------------------------------

    def roll(self, expected_next_offset: int | None) -> Segment:
        """A new active segment at the log end (or `expected_next_offset` past it), spec §2.3."""
        leo = self.end.offset
        new_offset = max(expected_next_offset or 0, leo)
        active = self.active_segment
        text = f"with start offset {new_offset} =max(provided offset = {expected_next_offset}, LEO = {leo})"
        if new_offset in self.segment_list.bases:
            if active.base_offset != new_offset or active.size != 0:
                existing = self.segment_list.segments[self.segment_list.bases.index(new_offset)]
                raise LogError(
                    f"Trying to roll a new log segment for topic partition {self.topic_partition} "
                    f"{text} while it already exists. Existing segment is {existing}."
                )
            log.warning(
                "Trying to roll a new log segment %s while it already exists and is active with size 0.",
                text,
            )
            return self.create_and_delete_segment(new_offset, active, "log roll")
        if new_offset < active.base_offset:
            raise LogError(
                f"Trying to roll a new log segment for topic partition {self.topic_partition} "
                f"{text} lower than start offset of the active segment {active}"
            )
        for suffix in layout.SEGMENT_FILE_SUFFIXES:
            path = join(self.dir, layout.segment_file_name(new_offset, suffix))
            if self.disk.exists(path):
                log.warning("Newly rolled segment file %s already exists; deleting it first", path)
                self.disk.unlink(path)
        active.on_become_inactive()
        new = Segment.create(self.disk, self.dir, new_offset, self.config, self.clock)
        self.set_segments((*self.segment_list.segments, new))
        return new

    def create_and_delete_segment(self, new_offset: int, old: Segment, reason: str) -> Segment:
        """Replaces `old` by a new empty segment at `new_offset`, never leaving the list without
        an active segment (KAFKA-12875)."""
        if new_offset == old.base_offset:
            old.change_file_suffixes("", layout.DELETED_SUFFIX)
        new = Segment.create(self.disk, self.dir, new_offset, self.config, self.clock)
        self.set_segments([*(s for s in self.segment_list.segments if s is not old), new])
        log.info("Deleting segments as part of %s: %s", reason, [old])
        if old.suffix != layout.DELETED_SUFFIX:
            old.change_file_suffixes("", layout.DELETED_SUFFIX)
        self.schedule_delete([old])
        return new

    # --- flush -----------------------------------------------------------------------------------

    def flush(self, offset: int, *, inclusive: bool) -> None:
        """fsyncs the segments from the recovery point up to `offset` (and the directory when a
        new segment is among them), then moves the recovery point there."""
        flush_offset = offset + 1 if inclusive else offset
        old_rp = self.recovery_point
        if flush_offset <= old_rp:
            return
        segments = self.segments_in_range(old_rp, flush_offset)
        for segment in segments:
            segment.flush()
        if any(s.base_offset >= old_rp for s in segments):
            self.disk.fsync_dir(self.dir)
        # A post-roll flush that runs after a truncation below the rolled offset must not put
        # the recovery point past the log end (Kafka has the same window; it is short there).
        if min(offset, self.end.offset) > self.recovery_point:
            self.recovery_point = min(offset, self.end.offset)
        self.last_flush_ms = self.clock.milliseconds()

    # --- truncation ------------------------------------------------------------------------------

    def truncate_to(self, target: int) -> None:
        """Removes every segment above `target` and cuts the active one at it (Kafka's
        `LocalLog.truncateTo`); a segment must hold `target` or lie below it."""
        doomed = [s for s in self.segment_list.segments if s.base_offset > target]
        if doomed:
            log.info("Deleting segments as part of log truncation: %s", doomed)
            self.remove_and_delete_segments(doomed)
        self.active_segment.truncate_to(target)
        self.update_end(target)

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Every segment goes; one empty segment at `new_offset` is the log (spec §5.3)."""
        *older, last = self.segment_list.segments
        if older:
            log.info("Deleting segments as part of log truncation: %s", older)
            self.remove_and_delete_segments(list(older))
        self.create_and_delete_segment(new_offset, last, "log truncation")
        self.update_end(new_offset)

    # --- deletion --------------------------------------------------------------------------------

    def remove_and_delete_segments(self, segments: list[Segment]) -> None:
        """Kafka's two-step delete: out of the list at once, files renamed `.deleted` now (no
        directory fsync), removed after `file.delete.delay.ms`; so is the producer snapshot
        named for each segment."""
        gone = set(map(id, segments))
        self.set_segments(s for s in self.segment_list.segments if id(s) not in gone)
        for segment in segments:
            segment.change_file_suffixes("", layout.DELETED_SUFFIX)
        self.schedule_delete(segments)
        for segment in segments:
            self._retire_snapshot(segment.base_offset)

    def schedule_delete(self, segments: list[Segment]) -> None:
        self.retired.extend(segments)

        def delete() -> None:
            with self.lock:
                if self.closed:
                    return
                for segment in segments:
                    self.retired.remove(segment)
            log.info("Deleting segment files %s", segments)
            for segment in segments:
                segment.delete_files_when_idle()

        self.scheduler.schedule("delete-file", self.config.file_delete_delay_ms, delete)

    def _retire_snapshot(self, offset: int) -> None:
        path = join(self.dir, layout.snapshot_file_name(offset))
        if not self.disk.exists(path):
            return
        deleted = path + layout.DELETED_SUFFIX
        self.disk.rename(path, deleted)

        def delete() -> None:
            if self.disk.exists(deleted):
                self.disk.unlink(deleted)

        self.scheduler.schedule(
            "delete-producer-snapshot", self.config.file_delete_delay_ms, delete
        )

    # --- close -----------------------------------------------------------------------------------

    def close_handlers(self) -> None:
        """Closes every file, retired segments' too; the log is closed from here on."""
        self.closed = True
        for segment in (*self.segment_list.segments, *self.retired):
            segment.close_handlers()
