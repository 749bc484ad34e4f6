"""The append checks of `storage.log_append` that are not plain moves of Kafka's loop: the leader
epoch step assigns only where the epoch changes, which must leave the cache (and its checkpoint
writes) exactly as Kafka's batch-by-batch assignment does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.batch import Record, RecordBatch, build_batch
from logrepair.format.legacy import LegacyBatch, build_legacy_batch
from logrepair.storage.leader_epoch import EpochEntry
from logrepair.storage.leader_epoch_cache import LeaderEpochCache
from logrepair.storage.log_append import assign_epochs


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
