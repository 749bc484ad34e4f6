"""What an append is checked against before it reaches a segment, without I/O: Kafka's
`UnifiedLog.analyzeAndValidateRecords` and `LogAppendInfo`, and the producer-state and leader-epoch
steps of `UnifiedLog.append`. `Log` runs them in this order under its lock, then writes.
"""

from __future__ import annotations

import logging
import struct
from array import array
from collections.abc import Sequence
from typing import NamedTuple

from ..format.append_runs import AppendRun, append_run
from ..format.batch import RecordBatch
from ..format.batch_builder import build_batch
from ..format.batch_layout import LOG_OVERHEAD, Record
from ..format.errors import Defect, FormatError
from ..format.walker import Walker
from .layout import TopicPartition
from .leader_epoch_cache import LeaderEpochCache
from .log_errors import InvalidRecordsError, RecordTooLargeError
from .producer_state import ProducerState, ProducerStateError
from .time_index import NO_TIMESTAMP
from .txn_index import AbortedTxn

log = logging.getLogger(__name__)


class ProducerRecord(NamedTuple):
    """A record to append as the leader; `timestamp=None` means now."""

    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    size: int


class AppendAnalysis(NamedTuple):
    """What the batches of one append add up to (the first part of Kafka's `LogAppendInfo`)."""

    first_offset: int | None  # None when the first batch is v0/v1 (no base offset in its header)
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    with_producer: bool  # a v2 batch carries a producer id: producer state must check it


_MAX_LENGTH = 2**31 - LOG_OVERHEAD  # the walker's, without a maximum batch size
_LENGTH = struct.Struct(">i")


class Appended:
    """The whole batches of one append (`data`) and what they add up to.

    Either the batch objects (`batches`: the leader's batch, or a follower's append the walker
    walked) or the C append run's sum (`run`, see `format.append_runs`): then no batch object is
    made unless producer state or an error message reads them."""

    __slots__ = ("data", "batches", "run")

    def __init__(self, data: bytes, batches: list | None, run: AppendRun | None = None) -> None:
        self.data = data
        self.batches = batches
        self.run = run

    @classmethod
    def of(cls, batch: bytes) -> Appended:
        """The one batch a leader built."""
        return cls(batch, [RecordBatch(memoryview(batch))])

    def batch_list(self) -> list:
        if self.batches is None:
            self.batches = batch_views(self.data)
        return self.batches

    def first_offset(self) -> tuple[bool, int]:
        """Whether the first batch is v2, and its base offset (v0/v1: its last offset), which
        Kafka checks against the log end."""
        if self.run is not None:
            return True, self.run.first
        first = self.batches[0]
        if first.magic >= 2:
            return True, first.base_offset
        return False, first.last_offset

    def analysis(self, limit: int | None, topic_partition: TopicPartition) -> AppendAnalysis:
        if self.run is None:
            return analyze(self.batches, limit, topic_partition)
        run = self.run
        return AppendAnalysis(
            run.first, run.last, run.max_timestamp, run.offset_of_max_timestamp, bool(run.producers)
        )

    def assign_epochs(self, cache: LeaderEpochCache) -> None:
        if self.run is None:
            assign_epochs(cache, self.batches)
            return
        pairs = array("q", self.run.epochs)
        for i in range(0, len(pairs), 2):
            cache.assign(pairs[i], pairs[i + 1])

    def producer_appends(
        self, current: ProducerState, topic_partition: TopicPartition
    ) -> tuple[ProducerState, list[AbortedTxn]]:
        """`producer_appends` of these batches. From the run's producer rows when no batch is
        transactional or a marker and no producer of the run has an open transaction: then a
        producer's entry is made from its last batch alone, each earlier one being overwritten."""
        run = self.run
        if run is None or run.txn:
            return producer_appends(current, self.batch_list(), topic_partition)
        rows = array("q", run.producers)
        last = dict(zip(rows[0::6], range(0, len(rows), 6), strict=True))  # last row of each
        if any(current.in_transaction(pid) for pid in last):
            return producer_appends(current, self.batch_list(), topic_partition)
        state = ProducerState(current.map_end_offset, current.entries)
        for pid, i in last.items():
            state.append_data(
                pid, rows[i + 1], rows[i + 2], rows[i + 3], rows[i + 4], rows[i + 5], False
            )
        if rows:
            state.map_end_offset = rows[-2] + 1
        return state, []


def leader_batch(
    records: Sequence[ProducerRecord], base: int, now: int, timestamp_type: str, **fields
) -> bytes:
    """The batch a leader builds of `records` at the log end `base`: offsets in turn, each
    record's timestamp or `now`, and `now` for all under `LogAppendTime`; `fields` are
    `build_batch`'s producer, codec and epoch arguments."""
    log_append = timestamp_type == "LogAppendTime"
    return build_batch(
        (
            Record(
                base + i,
                now if r.timestamp is None else r.timestamp,
                r.key,
                r.value,
                tuple(r.headers),
            )
            for i, r in enumerate(records)
        ),
        base_offset=base,
        timestamp_type="append" if log_append else "create",
        log_append_time=now if log_append else None,
        **fields,
    )


def follower_append(data: bytes, topic_partition: TopicPartition) -> Appended:
    """`follower_batches` of `data`, summed up in C when every batch is one the walker takes as it
    comes (a torn batch at the end is dropped too); otherwise the walker's batches."""
    if append_run is not None:
        run = AppendRun._make(append_run(data, _MAX_LENGTH))
        end = run.end
        if run.n and (end == len(data) or _torn_at(data, end, run.last + 1)):
            return Appended(data if end == len(data) else data[:end], None, run)
    batches, valid = follower_batches(data, topic_partition)
    return Appended(valid, batches)


def _torn_at(data: bytes, end: int, expected: int) -> bool:
    """Whether the walker, having taken the batches before `end`, finds a torn tail there."""
    rest = Walker(
        memoryview(data)[end:], file_position=end, file_size=len(data), expected_offset=expected
    )
    item = next(iter(rest), None)
    return isinstance(item, Defect) and item.kind == "torn_tail"


def batch_views(data: bytes) -> list[RecordBatch]:
    """The v2 batches of `data`, which an append run has checked: views, nothing checked again."""
    mv = memoryview(data)
    out, pos = [], 0
    while pos < len(mv):
        end = pos + LOG_OVERHEAD + _LENGTH.unpack_from(mv, pos + 8)[0]
        out.append(RecordBatch(mv[pos:end], pos, None, True))
        pos = end
    return out


def follower_batches(data: bytes, topic_partition: TopicPartition) -> tuple[list, bytes]:
    """The whole batches of a follower's append and the bytes they span: a partial batch at the
    end is dropped, as Kafka trims it; anything else invalid is an `InvalidRecordsError`."""
    batches: list = []
    for item in Walker(data, file_size=len(data)):
        if isinstance(item, Defect):
            if item.kind == "torn_tail" and batches:
                break
            raise InvalidRecordsError(
                f"Invalid records in append to {topic_partition} at byte "
                f"{item.position}: {item.kind}: {item.detail}"
            )
        batches.append(item)
    if not batches:
        raise InvalidRecordsError(f"no whole batch in append to {topic_partition}")
    end = batches[-1].position + batches[-1].size
    return batches, data if end == len(data) else data[:end]


def analyze(
    batches: Sequence, limit: int | None, topic_partition: TopicPartition
) -> AppendAnalysis:
    """Offsets, the largest timestamp and whether producer state is involved; a batch over
    `limit` bytes (the leader's `max.message.bytes`) is a `RecordTooLargeError`."""
    first = batches[0]
    first_offset = first.base_offset if first.magic >= 2 else None
    last_offset = batches[-1].last_offset
    max_ts, ts_offset = NO_TIMESTAMP, last_offset
    with_producer = False
    for b in batches:
        if limit is not None and b.size > limit:
            raise RecordTooLargeError(
                f"The record batch size {b.size} bytes in the append to "
                f"{topic_partition} exceeds the maximum configured value ({limit} bytes)."
            )
        ts = b.max_timestamp
        if ts is not None and ts > max_ts:
            max_ts, ts_offset = ts, b.last_offset
        if b.magic >= 2 and b.producer_id >= 0:
            with_producer = True
    return AppendAnalysis(first_offset, last_offset, max_ts, ts_offset, with_producer)


def producer_appends(
    current: ProducerState, batches: Sequence, topic_partition: TopicPartition
) -> tuple[ProducerState, list[AbortedTxn]]:
    """The producer state after the batches, on a copy (the log's is kept if one is refused),
    and the aborted transactions their markers close."""
    state = ProducerState(current.map_end_offset, current.entries)
    aborted = []
    try:
        for b in batches:
            txn = state.append_batch(b)
            if txn is not None:
                aborted.append(txn)
    except (ProducerStateError, FormatError) as e:
        raise InvalidRecordsError(f"Invalid append to {topic_partition}: {e}") from None
    return state, aborted


def assign_epochs(cache: LeaderEpochCache, batches: Sequence) -> None:
    """Each v2 batch's partition leader epoch starts at its base offset, if new; a v0/v1 batch
    clears the cache, as Kafka does.

    Kafka assigns batch by batch. After `assign(e, offset)` the newest entry is epoch e starting
    at or before `offset`, so a later batch of the same epoch (a higher base offset) changes
    nothing: only a batch whose epoch differs from the one assigned just before is assigned."""
    assigned = None
    for b in batches:
        if b.magic >= 2:
            epoch = b.partition_leader_epoch
            if epoch >= 0 and epoch != assigned:
                cache.assign(epoch, b.base_offset)
                assigned = epoch
        elif cache.latest is not None:
            log.warning(
                "Clearing leader epoch cache after unexpected append with message format v%d",
                b.magic,
            )
            cache.clear_and_flush()
            assigned = None
