"""The append checks of `storage.log_append` that are not plain moves of Kafka's loop: the leader
epoch step assigns only where the epoch changes, which must leave the cache (and its checkpoint
writes) exactly as Kafka's batch-by-batch assignment does; a follower's append summed up by the C
append run is what the walker's batches (the reference) give, on valid and damaged appends of
every format."""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from logrepair.format.append_runs import append_run
from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.compression import Codec
from logrepair.format.legacy import LegacyBatch, build_legacy_batch
from logrepair.storage.layout import TopicPartition
from logrepair.storage.leader_epoch import EpochEntry
from logrepair.storage.leader_epoch_cache import LeaderEpochCache
from logrepair.storage.log_append import (
    Appended,
    assign_epochs,
    follower_append,
    follower_batches,
)
from logrepair.storage.log_errors import InvalidRecordsError
from logrepair.storage.producer_state import ProducerEntry, ProducerState

from ..format.strategies import segments
from ..format.test_batch_runs import _damaged


def kafka_assign_epochs(cache: LeaderEpochCache, batches) -> None:
    """Kafka's `UnifiedLog.append` step as written there: every batch assigned."""
    for b in batches:
        if b.magic >= 2:
            if b.partition_leader_epoch >= 0:
                cache.assign(b.partition_leader_epoch, b.base_offset)
        elif cache.latest is not None:
            cache.clear_and_flush()


def batch(offset: int, epoch: int | None):
    """A v2 batch of one record at `offset` in leader `epoch`; a v1 entry for None."""
    record = Record(offset, 1_700_000_000_000, None, b"v")
    if epoch is None:
        return LegacyBatch.parse(build_legacy_batch([record], magic=1, base_offset=offset), 0)
    raw = build_batch([record], base_offset=offset, partition_leader_epoch=epoch)
    return RecordBatch(memoryview(raw))


@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=4).map(
        lambda pairs: [EpochEntry(e, o) for e, o in pairs]
    ),
    st.lists(
        st.lists(st.tuples(st.integers(1, 3), st.none() | st.integers(-1, 5)), max_size=8),
        max_size=4,
    ),
)
def test_epochs_assigned_where_they_change_leave_kafkas_cache(entries, appends) -> None:
    ours_persisted: list[list[EpochEntry]] = []
    kafka_persisted: list[list[EpochEntry]] = []
    ours = LeaderEpochCache(ours_persisted.append, entries)
    kafka = LeaderEpochCache(kafka_persisted.append, entries)
    offset = 0
    for steps in appends:
        batches = []
        for gap, epoch in steps:
            offset += gap
            batches.append(batch(offset, epoch))
        assign_epochs(ours, batches)
        kafka_assign_epochs(kafka, batches)
        assert ours.entries == kafka.entries
        assert ours_persisted == kafka_persisted


TP = TopicPartition("t", 0)
needs_append_run = pytest.mark.skipif(
    append_run is None,
    reason="the C accelerator is not built or LOGREPAIR_PURE_PYTHON is set: appends are walked",
)
ALL_CODECS = tuple(int(c) for c in Codec)
PRODUCERS = (3, 5, 2**40)


@st.composite
def producer_states(draw) -> ProducerState:
    """The state before an append: some of the producers known, now and then in a transaction."""
    entries = []
    for pid in draw(st.lists(st.sampled_from(PRODUCERS), unique=True)):
        txn_first = draw(st.sampled_from([-1, -1, 0]))
        entries.append(ProducerEntry(pid, draw(st.integers(0, 5)), 7, 0, 0, 1, 4, txn_first))
    return ProducerState(1, tuple(entries))


@st.composite
def appends(draw) -> bytes:
    """A follower's append: v2 batches of every kind and codec, now and then v0/v1 entries among
    them, maybe damaged or cut short (a torn last batch, as a fetch's size limit leaves one)."""
    _, specs = draw(segments(max_batches=6, codecs=ALL_CODECS))
    for spec in specs:  # a few producers, each with several batches, as a partition has them
        if spec.kwargs.get("producer_id", -1) >= 0:
            spec.kwargs["producer_id"] = draw(st.sampled_from(PRODUCERS))
    valid = b"".join(spec.build() for spec in specs)
    if draw(st.integers(0, 3)) == 0:
        offset = specs[-1].last_offset + 1
        records = [Record(offset + i, 1_700_000_000_000 + i, b"k", b"v") for i in range(2)]
        legacy = build_legacy_batch(
            records, magic=draw(st.sampled_from([0, 1])), base_offset=offset,
            codec=draw(st.sampled_from([0, 1])),
        )  # fmt: skip
        valid += legacy
    how = draw(st.sampled_from(["whole", "torn", "damaged"]))
    if how == "torn":
        return valid[: len(valid) - draw(st.integers(1, 60))]
    if how == "damaged":
        return _damaged(draw, valid)
    return valid


def _outcome(make, data: bytes):
    try:
        return make(data, TP)
    except Exception as e:  # noqa: BLE001 - the error is the outcome compared
        return type(e), str(e)


def _walked(data: bytes, topic_partition: TopicPartition) -> Appended:
    batches, valid = follower_batches(data, topic_partition)
    return Appended(valid, batches)


def _fields(b) -> tuple:
    return (b.position, bytes(b.raw), b.magic, b.base_offset, b.last_offset, b.crc_valid)


def _epochs_after(appended: Appended) -> tuple[list, list]:
    persisted: list = []
    cache = LeaderEpochCache(persisted.append, [EpochEntry(0, 0)])
    appended.assign_epochs(cache)
    return cache.entries, persisted


def _producers_after(appended: Appended, before: ProducerState):
    try:
        state, aborted = appended.producer_appends(before, TP)
    except InvalidRecordsError as e:
        return str(e)
    return state.entries, state.ongoing(), state.map_end_offset, aborted


@needs_append_run
@given(appends(), producer_states())
def test_the_append_run_gives_what_the_walkers_batches_give(data, before) -> None:
    ours, walked = _outcome(follower_append, data), _outcome(_walked, data)
    if isinstance(walked, tuple):
        event("refused")
        assert ours == walked
        return
    event("summed up in C" if ours.run is not None else "walked")
    if ours.run is not None and ours.run.producers:
        event("producers from the run's rows" if not ours.run.txn else "producers from the batches")
    assert ours.data == walked.data
    assert ours.first_offset() == walked.first_offset()
    assert ours.analysis(None, TP) == walked.analysis(None, TP)
    assert _epochs_after(ours) == _epochs_after(walked)
    assert _producers_after(ours, before) == _producers_after(walked, before)
    assert list(map(_fields, ours.batch_list())) == list(map(_fields, walked.batch_list()))


@needs_append_run
def test_a_torn_last_batch_is_dropped_without_walking() -> None:
    one = build_batch([Record(5, 1000, b"k", b"v")], base_offset=5, partition_leader_epoch=2)
    two = build_batch([Record(6, 2000, b"k", b"w")], base_offset=6, partition_leader_epoch=3)
    appended = follower_append(one + two[:-3], TP)
    assert appended.run is not None and appended.batches is None
    assert appended.data == one
    assert appended.analysis(None, TP)[:4] == (5, 5, 1000, 5)
    with pytest.raises(InvalidRecordsError, match="torn_tail"):
        follower_append(two[:-3], TP)
