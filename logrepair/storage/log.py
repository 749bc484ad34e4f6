"""The segment manager of one partition (Kafka's `UnifiedLog`), all I/O through a Disk.

Mutations (append, roll, flush, retention, truncation, close) hold one lock, as Kafka's
`UnifiedLog.lock`. Readers take no lock: the segment list is an immutable tuple swapped atomically
(copy-on-write; Kafka uses a concurrent skip list to the same end), and a reader pins the segment it
reads, so a segment whose delete delay runs out while it is being read is closed only afterwards.

Loading (`Log.open`, the steps in `log_loader`) trusts the files as a broker does after a clean
shutdown: it does not recover. A directory that needs recovery (a torn active segment, `.swap`
leftovers) is refused with `LogNotCleanError`, which says to run `logrepair repair`. What an append
is checked against before it is written is `log_append`'s; the segments themselves (list, log end,
recovery point, roll, flush, truncation, deletes) are `local_log.LocalLog`'s, as in Kafka.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from ..format.batch_builder import build_end_txn_marker
from ..format.control import ControlType, EndTransactionMarker
from . import layout, log_reads, log_retention
from .clock import Clock, SystemClock
from .disk import Disk, join, parent_of
from .leader_epoch import EpochEntry, write_leader_epochs
from .leader_epoch_cache import LeaderEpochCache
from .local_log import LocalLog
from .log_append import (
    Appended,
    AppendInfo,
    ProducerRecord,
    follower_append,
    leader_batch,
)
from .log_config import INT_MAX, LogConfig
from .log_errors import (
    InvalidRecordsError,
    LogError,
    LogNotCleanError,
    LogStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from .log_loader import LoadedLog, load_file_names, load_log, partition_dir
from .log_reads import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FetchResult,
)
from .producer_state import ProducerState
from .producer_state_manager import ProducerStateManager
from .scheduler import Scheduler
from .segment import RollParams, Segment
from .segment_entries import CorruptSegmentError
from .time_index import TimestampOffset
from .txn_index import AbortedTxn

log = logging.getLogger(__name__)


class Log:
    """One partition directory: its segments, log start offset, recovery point and high watermark."""

    def __init__(
        self,
        disk: Disk,
        dir: str,
        topic_partition: layout.TopicPartition,
        config: LogConfig,
        clock: Clock,
        scheduler: Scheduler,
        loaded: LoadedLog,
    ) -> None:
        """Use `Log.open`; this wires up what it loaded."""
        self.disk = disk
        self.dir = dir
        self.topic_partition = topic_partition
        self.config = config
        self.clock = clock
        self.scheduler = scheduler
        self._lock = threading.RLock()
        self._local = LocalLog(
            disk, dir, topic_partition, config, clock, scheduler, self._lock, loaded.segments,
            recovery_point=loaded.recovery_point, log_end_offset=loaded.log_end_offset,
        )  # fmt: skip
        self._log_start_offset = loaded.log_start_offset
        self._high_watermark = loaded.high_watermark
        self.leader_epoch_cache = LeaderEpochCache(
            self._write_epoch_checkpoint, loaded.epoch_entries
        )
        self._producers = ProducerStateManager(
            disk, dir, loaded.producer_state, loaded.snapshot_offset
        )
        self._offline: str | None = None

    # --- loading ---------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        disk: Disk,
        dir: str,
        config: LogConfig | None = None,
        *,
        clock: Clock | None = None,
        scheduler: Scheduler | None = None,
        log_start_offset: int = 0,
        recovery_point: int | None = None,
        high_watermark: int | None = None,
    ) -> Log:
        """Loads a partition directory (created, with one empty segment, if missing or empty).

        `log_start_offset`, `recovery_point` and `high_watermark` are the checkpointed values
        (a log dir's root files hold them); `recovery_point=None` means a clean shutdown, so the
        recovery point is the log end, and `high_watermark=None` starts it at the log start."""
        config = config or LogConfig()
        clock = clock or SystemClock()
        scheduler = scheduler or Scheduler(clock)
        tp = partition_dir(disk, dir)
        bases, snapshots = load_file_names(disk, dir)
        segments: list[Segment] = []
        try:
            # Every segment loading opens goes into `segments`, to be closed on failure.
            loaded = load_log(
                disk, dir, config, clock, bases, snapshots, segments,
                log_start_offset, recovery_point, high_watermark,
            )  # fmt: skip
            self = cls(disk, dir, tp, config, clock, scheduler, loaded)
            if loaded.doomed:
                self._local.schedule_delete(loaded.doomed)
                self.leader_epoch_cache.clear_and_flush()
            self.leader_epoch_cache.truncate_from_end(loaded.log_end_offset)
            self.leader_epoch_cache.truncate_from_start(log_start_offset)
            self._producers.catch_up(self._local, loaded.log_end_offset)
            return self
        except CorruptSegmentError as e:
            for s in segments:
                s.close_handlers()
            raise LogNotCleanError(f"{e}; run `logrepair repair` first") from None
        except BaseException:
            for s in segments:
                s.close_handlers()
            raise

    # --- state -----------------------------------------------------------------------------------

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments, oldest first: an immutable snapshot that later changes do not touch."""
        return self._local.segments

    @property
    def active_segment(self) -> Segment:
        return self._local.active_segment

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._local.end.offset

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def size(self) -> int:
        return self._local.size

    @property
    def unflushed_messages(self) -> int:
        return self._local.end.offset - self._local.recovery_point

    @property
    def offline(self) -> bool:
        return self._offline is not None

    @property
    def producer_state(self) -> ProducerState:
        return self._producers.state

    def __repr__(self) -> str:
        return (
            f"Log(partition={self.topic_partition}, dir={self.dir}, "
            f"logStartOffset={self._log_start_offset}, logEndOffset={self._local.end.offset})"
        )

    @property
    def _closed(self) -> bool:
        return self._local.closed

    def _mutating(self, what: str) -> _Mutation:
        return _Mutation(self, what)

    # --- append ----------------------------------------------------------------------------------

    def append(
        self,
        records: Sequence[ProducerRecord],
        *,
        leader_epoch: int = 0,
        codec: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
    ) -> AppendInfo:
        """Appends one batch as the leader: offsets from the log end, the partition leader epoch
        stamped, CreateTime or LogAppendTime per `message.timestamp.type`. As a single-replica
        leader, the high watermark follows the log end."""
        if not records:
            raise ValueError("no records to append")
        with self._mutating(
            f"Error while appending records to {self.topic_partition} in dir {self.dir}"
        ):
            batch = leader_batch(
                records,
                self._local.end.offset,
                self.clock.milliseconds(),
                self.config.message_timestamp_type,
                codec=codec,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
                is_transactional=is_transactional,
                partition_leader_epoch=leader_epoch,
            )
            info = self._append(Appended.of(batch), leader=True)
            self._high_watermark = self._local.end.offset
            return info

    def append_end_txn(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> AppendInfo:
        """Appends a COMMIT or ABORT marker as the transaction coordinator has the leader do."""
        with self._mutating(
            f"Error while appending records to {self.topic_partition} in dir {self.dir}"
        ):
            marker = EndTransactionMarker(
                ControlType.COMMIT if commit else ControlType.ABORT, coordinator_epoch
            )
            batch = build_end_txn_marker(
                marker,
                base_offset=self._local.end.offset,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                timestamp=self.clock.milliseconds(),
                partition_leader_epoch=leader_epoch,
            )
            info = self._append(Appended.of(batch), leader=True)
            self._high_watermark = self._local.end.offset
            return info

    def append_batches(self, data: bytes | bytearray | memoryview) -> AppendInfo:
        """Appends already-built batches with their own offsets, as a follower does.

        The first offset must be at or above the log end (gaps are fine: compacted data); a
        partial batch at the end is dropped, as Kafka trims it; anything else invalid is refused."""
        # The batches are views into the data: immutable bytes keep them valid after the call.
        if not isinstance(data, bytes):
            data = bytes(data)
        appended = follower_append(data, self.topic_partition)
        with self._mutating(
            f"Error while appending records to {self.topic_partition} in dir {self.dir}"
        ):
            leo = self._local.end.offset
            first_known, first_offset = appended.first_offset()
            if first_offset < leo:
                batches = appended.batch_list()
                which = "First offset" if first_known else "Last offset of the first batch"
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.topic_partition}. {which} {first_offset} "
                    f"is less than the next offset {leo}. First 10 offsets in append: "
                    f"{[b.last_offset for b in batches[:10]]}, last offset in append: "
                    f"{batches[-1].last_offset}. Log start offset = {self._log_start_offset}"
                )
            return self._append(appended, leader=False)

    def _append(self, appended: Appended, *, leader: bool) -> AppendInfo:
        """Kafka's `UnifiedLog.append` after the records are built: analyze, producer state,
        epochs, roll, write, then the log end and the transaction index."""
        config = self.config
        data = appended.data
        if len(data) > config.segment_bytes:
            raise RecordTooLargeError(
                f"Message batch size is {len(data)} bytes in append to partition "
                f"{self.topic_partition} which exceeds the maximum configured segment size of "
                f"{config.segment_bytes}."
            )
        limit = config.max_message_bytes if leader else None
        info = appended.analysis(limit, self.topic_partition)
        first_offset, last_offset, max_ts, ts_offset, with_producer = info
        if with_producer:
            state, aborted = appended.producer_appends(self._producers.state, self.topic_partition)
        else:
            state, aborted = self._producers.state, []
        appended.assign_epochs(self.leader_epoch_cache)
        self._maybe_roll(len(data), max_ts, last_offset, first_offset)
        local = self._local
        # The log end moves before the txn index is written (KAFKA-7866).
        segment = local.append(last_offset, max_ts, ts_offset, data)
        state.map_end_offset = last_offset + 1
        self._producers.state = state
        for txn in aborted:
            segment.update_txn_index(txn)
        if local.end.offset - local.recovery_point >= config.flush_messages:
            local.flush(local.end.offset, inclusive=False)
        return AppendInfo(
            first_offset if first_offset is not None else appended.batches[0].last_offset,
            last_offset,
            max_ts,
            ts_offset,
            len(data),
        )

    # --- roll ------------------------------------------------------------------------------------

    def _maybe_roll(
        self, messages_size: int, max_timestamp: int, last_offset: int, first_offset: int | None
    ) -> Segment:
        segment = self.active_segment
        params = RollParams(
            self.config.max_segment_ms,
            self.config.segment_bytes,
            max_timestamp,
            last_offset,
            messages_size,
            self.clock.milliseconds(),
        )
        if not segment.should_roll(params):
            return segment
        # Without the first offset (v0/v1 follower data), Kafka's heuristic keeps every offset
        # of the append representable in the new segment (KAFKA-6530).
        return self._roll(first_offset if first_offset is not None else last_offset - INT_MAX)

    def roll(self, expected_next_offset: int | None = None) -> Segment:
        """Starts a new active segment at the log end (spec §2.3)."""
        with self._mutating(
            f"Error while rolling log segment for {self.topic_partition} in dir {self.dir}"
        ):
            return self._roll(expected_next_offset)

    def _roll(self, expected_next_offset: int | None) -> Segment:
        """Kafka's `UnifiedLog.roll`: the local roll, then the producer snapshot at the new
        segment's base and the flush of everything below it, scheduled."""
        new = self._local.roll(expected_next_offset)
        self._producers.advance_to(new.base_offset)
        snapshot = self._producers.take_snapshot(sync=False)
        self.scheduler.schedule(
            "flush-log", 0, lambda: self._flush_after_roll(snapshot, new.base_offset)
        )
        return new

    def _flush_after_roll(self, snapshot: str | None, new_base: int) -> None:
        """Kafka's post-roll `flush-log` task: the new snapshot, then everything below the new segment."""
        with self._lock:
            if self._closed or self._offline is not None:
                return
            with self._mutating(
                f"Error while flushing log for {self.topic_partition} in dir {self.dir}"
            ):
                if snapshot is not None and self.disk.exists(snapshot):
                    with self.disk.open(snapshot, write=True) as f:
                        f.fsync()
                self._local.flush(new_base, inclusive=False)

    # --- flush -----------------------------------------------------------------------------------

    def flush(self, *, inclusive: bool = False) -> None:
        """fsyncs everything up to the log end and moves the recovery point there.

        `inclusive` also flushes an empty active segment (creating its index files), as a
        broker's shutdown does (KAFKA-13603)."""
        with self._mutating(
            f"Error while flushing log for {self.topic_partition} in dir {self.dir}"
        ):
            self._local.flush(self._local.end.offset, inclusive=inclusive)

    def flush_if_due(self, now: int | None = None) -> bool:
        """The LogManager flusher's check: flushes when `flush.ms` has passed since the last flush."""
        now = self.clock.milliseconds() if now is None else now
        with self._lock:
            if now - self._local.last_flush_ms < self.config.flush_ms:
                return False
            self.flush()
            return True

    # --- retention -------------------------------------------------------------------------------

    def delete_old_segments(self) -> int:
        """One retention pass: log start offset, then size, then time (spec §4.2); returns the
        number of segments deleted."""
        with self._mutating(
            f"Error while deleting segments for {self.topic_partition} in dir {self.dir}"
        ):
            config = self.config
            deleted = self._delete_old(
                log_retention.log_start_offset_breach(self._log_start_offset)
            )
            if config.delete:
                deleted += self._delete_old(
                    log_retention.retention_size_breach(config.retention_bytes, self.size)
                )
                deleted += self._delete_old(
                    log_retention.retention_ms_breach(
                        config.retention_ms, self.clock.milliseconds()
                    )
                )
            return deleted

    def _delete_old(self, rule: log_retention.Rule | None) -> int:
        if rule is None:
            return 0
        deletable = log_retention.deletable_segments(
            self._local.segments, rule.breached, self._high_watermark, self._local.end.offset
        )
        if not deletable:
            return 0
        if len(deletable) == len(self._local.segments):
            # Every segment goes, the active one too: roll first so a new active exists (§4.3).
            self._roll(None)
        after = self._local.segments[len(deletable)]
        self._maybe_increment_log_start_offset(after.base_offset, "segment deletion")
        log.info("%s: %s", rule.reason, deletable)
        self._local.remove_and_delete_segments(deletable)
        return len(deletable)

    def increment_log_start_offset(
        self, offset: int, reason: str = "client delete records request"
    ) -> None:
        """Moves the log start offset up (delete-records); whole segments below it go at the next
        retention pass."""
        with self._mutating(f"Error while incrementing log start offset of {self.topic_partition}"):
            self._maybe_increment_log_start_offset(offset, reason)

    def _maybe_increment_log_start_offset(self, offset: int, reason: str) -> None:
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition "
                f"{self.topic_partition} since it is larger than the high watermark {self._high_watermark}"
            )
        if offset <= self._log_start_offset:
            return
        self._log_start_offset = offset
        self._local.recovery_point = max(self._local.recovery_point, offset)
        self.leader_epoch_cache.truncate_from_start(offset)
        self._producers.state.on_log_start_offset_incremented(offset)
        log.info("Incremented log start offset to %d due to %s", offset, reason)

    def update_high_watermark(self, offset: int) -> int:
        """Sets the high watermark, clamped to [log start, log end] as Kafka clamps it."""
        with self._lock:
            self._high_watermark = min(max(offset, self._log_start_offset), self._local.end.offset)
            return self._high_watermark

    def run_pending(self, now: int | None = None) -> int:
        """Runs the delayed tasks that are due (deletes of `.deleted` files, post-roll flushes)."""
        return self.scheduler.run_pending(now)

    # --- truncation ------------------------------------------------------------------------------

    def truncate_to(self, target: int) -> bool:
        """Follower truncation (spec §5.1): removes every batch holding an offset ≥ `target`.

        Returns False when there was nothing to remove."""
        if target < 0:
            raise ValueError(
                f"Cannot truncate partition {self.topic_partition} to a negative offset ({target})."
            )
        with self._mutating(
            f"Error while truncating log to offset {target} for {self.topic_partition} in dir {self.dir}"
        ):
            leo = self._local.end.offset
            if target >= leo:
                log.info(
                    "Truncating to %d has no effect as the largest offset in the log is %d",
                    target,
                    leo - 1,
                )
                self.leader_epoch_cache.truncate_from_end(leo)
                return False
            log.info("Truncating to offset %d", target)
            if self._local.segments[0].base_offset > target:
                self._truncate_fully_and_start_at(target, None)
                return True
            self._local.truncate_to(target)
            self.leader_epoch_cache.truncate_from_end(target)
            self._log_start_offset = min(target, self._log_start_offset)
            self._producers.rebuild(self._local, self._log_start_offset, target)
            if self._high_watermark >= target:
                self._high_watermark = target
            return True

    def truncate_fully_and_start_at(
        self, new_offset: int, log_start_offset: int | None = None
    ) -> None:
        """Empties the log and starts it again at `new_offset` (spec §5.3)."""
        if new_offset < 0:
            raise ValueError(
                f"Cannot start partition {self.topic_partition} at a negative offset ({new_offset})."
            )
        with self._mutating(
            f"Error while truncating the entire log for {self.topic_partition} in dir {self.dir}"
        ):
            self._truncate_fully_and_start_at(new_offset, log_start_offset)

    def _truncate_fully_and_start_at(self, new_offset: int, log_start_offset: int | None) -> None:
        self._local.truncate_fully_and_start_at(new_offset)
        self.leader_epoch_cache.clear_and_flush()
        self._producers.truncate_fully_and_start_at(new_offset)
        self._log_start_offset = new_offset if log_start_offset is None else log_start_offset
        self._high_watermark = new_offset

    # --- reads -----------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, min_one_message: bool = True) -> FetchResult:
        """Whole batches from the one holding `offset`, up to `max_bytes` (at least one batch when
        `min_one_message`). Lock-free: never sees a closed file, never bytes past the log end it
        captured first."""
        local = self._local
        return log_reads.read(
            lambda: local.segment_list,
            local.end,
            self._log_start_offset,
            self.topic_partition,
            offset,
            max_bytes,
            min_one_message,
        )

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """Kafka's `fetchOffsetByTimestamp`: the first record with a timestamp ≥ `timestamp`;
        -2 (earliest) gives the log start, -1 (latest) the log end, -3 the max timestamp."""
        return log_reads.offset_for_timestamp(
            self._local.segments, self._log_start_offset, self._local.end.offset, timestamp
        )

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start, upper bound), as Kafka's fetch collects
        them (see `log_reads.collect_aborted_transactions`)."""
        return log_reads.collect_aborted_transactions(
            self._local.segment_list, start_offset, upper_bound_offset
        )

    # --- close -----------------------------------------------------------------------------------

    def close(self) -> None:
        """A clean shutdown of this log: flush including an empty active segment, producer
        snapshot at the log end, segments closed (final time entries, trimmed indexes and `.log`).

        An offline log only has its files closed, as Kafka's `closeHandlers`."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._offline is None:
                    with self._mutating(
                        f"Error while closing log {self.topic_partition} in dir {self.dir}"
                    ):
                        local = self._local
                        local.flush(local.end.offset, inclusive=True)
                        self._producers.advance_to(local.end.offset)
                        self._producers.take_snapshot(sync=True)
                        for segment in local.segments:
                            segment.close()
            finally:
                self._local.close_handlers()

    def abandon(self) -> None:
        """Closes the files without flushing anything (a killed process); the log is unusable."""
        with self._lock:
            self._local.close_handlers()

    def __enter__(self) -> Log:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- leader epochs ---------------------------------------------------------------------------

    def _write_epoch_checkpoint(self, entries: list[EpochEntry]) -> None:
        write_leader_epochs(self.disk, join(self.dir, layout.LEADER_EPOCH_CHECKPOINT), entries)


class _Mutation:
    """The lock plus Kafka's `maybeHandleIOException`: an OSError takes the log offline."""

    def __init__(self, owner: Log, message: str) -> None:
        self.owner = owner
        self.message = message

    def __enter__(self) -> None:
        self.owner._lock.acquire()
        try:
            if self.owner._closed:
                raise LogError(f"{self.owner} is closed")
            if self.owner._offline is not None:
                raise LogStorageError(
                    f"The log dir {parent_of(self.owner.dir)} is already offline due to a previous "
                    f"IO exception ({self.owner._offline})."
                )
        except BaseException:
            self.owner._lock.release()
            raise

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if isinstance(exc, OSError):
                self.owner._offline = f"{self.message}: {exc}"
                raise LogStorageError(f"{self.message}: {exc}") from exc
        finally:
            self.owner._lock.release()


__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendInfo",
    "FetchResult",
    "InvalidRecordsError",
    "Log",
    "LogError",
    "LogNotCleanError",
    "LogStorageError",
    "OffsetOutOfRangeError",
    "ProducerRecord",
    "RecordTooLargeError",
    "UnexpectedAppendOffsetError",
]
