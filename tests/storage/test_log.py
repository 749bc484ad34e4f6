"""Log: append, roll, flush, retention, truncation, reads and reopen, on real temporary directories."""

from __future__ import annotations

import os
import random
import threading

import pytest
from kafka.record import MemoryRecords

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.walker import Walker
from logrepair.storage import layout
from logrepair.storage.clock import ManualClock
from logrepair.storage.leader_epoch import EpochEntry, read_leader_epochs
from logrepair.storage.log import (
    InvalidRecordsError,
    Log,
    LogError,
    LogNotCleanError,
    OffsetOutOfRangeError,
    ProducerRecord,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.producer_snapshot import read_snapshot
from logrepair.storage.scheduler import Scheduler
from logrepair.storage.time_index import TimestampOffset
from logrepair.storage.txn_index import AbortedTxn
from tests.storage.index_oracle import spec_rebuild

T0 = 1_700_000_000_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def pdir(tmp_path) -> str:
    return str(tmp_path / "orders-3")


def open_log(pdir: str, clock: ManualClock, **cfg) -> Log:
    return Log.open(OsDisk(), pdir, LogConfig(**cfg), clock=clock)


def rec(i: int, size: int = 30, ts: int | None = None) -> ProducerRecord:
    return ProducerRecord(f"k{i}".encode(), bytes([i % 251]) * size, ts)


def names(pdir: str) -> list[str]:
    return sorted(os.listdir(pdir))


def batches_of(data: bytes) -> list[RecordBatch]:
    return list(Walker(data))


def all_records(lg: Log) -> list[Record]:
    out = []
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:
        got = lg.read(offset, 1 << 20)
        if not got.data:
            break
        for b in batches_of(got.data):
            out.extend(r for r in b.records() if r.offset >= offset)
        offset = out[-1].offset + 1
    return out


def test_new_log_is_one_empty_segment(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    assert (lg.log_start_offset, lg.log_end_offset, lg.recovery_point) == (0, 0, 0)
    # Loading resizes the active segment's indexes, which creates them (as Kafka's LogLoader).
    assert names(pdir) == [
        layout.index_file_name(0),
        layout.log_file_name(0),
        layout.time_index_file_name(0),
        layout.LEADER_EPOCH_CHECKPOINT,
    ]
    assert lg.topic_partition == layout.TopicPartition("orders", 3)
    lg.close()


def test_append_assigns_offsets_and_reads_back(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    info = lg.append([rec(0), rec(1), rec(2)])
    assert (info.first_offset, info.last_offset) == (0, 2)
    info = lg.append([rec(3)], leader_epoch=2)
    assert info.first_offset == 3 and lg.log_end_offset == 4 and lg.high_watermark == 4
    got = all_records(lg)
    assert [r.offset for r in got] == [0, 1, 2, 3]
    assert [r.key for r in got] == [b"k0", b"k1", b"k2", b"k3"]
    assert all(r.timestamp == T0 for r in got)  # timestamp None → the clock
    assert lg.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(2, 3)]
    path = os.path.join(pdir, layout.LEADER_EPOCH_CHECKPOINT)
    assert read_leader_epochs(OsDisk(), path) == [EpochEntry(0, 0), EpochEntry(2, 3)]
    lg.close()


def test_log_append_time_stamps_the_batch(pdir, clock) -> None:
    lg = open_log(pdir, clock, message_timestamp_type="LogAppendTime")
    lg.append([rec(0, ts=5), rec(1, ts=6)])
    (b,) = batches_of(lg.read(0, 1000).data)
    assert b.timestamp_type == "append" and b.max_timestamp == T0
    assert [r.timestamp for r in b.records()] == [T0, T0]
    lg.close()


def test_roll_on_segment_bytes_and_kafka_python_reads_every_segment(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=1024)
    written = []
    for i in range(40):
        batch = [rec(2 * i, ts=T0 + i), rec(2 * i + 1, ts=T0 + i)]
        lg.append(batch, codec=i % 5)  # none, gzip, snappy, lz4, zstd
        written += [(r.key, r.value, r.timestamp) for r in batch]
    assert len(lg.segments) > 3
    assert all(s.size <= 1024 for s in lg.segments)
    lg.close()
    read = []
    for name in names(pdir):
        if name.endswith(".log"):
            with open(os.path.join(pdir, name), "rb") as f:
                records = MemoryRecords(f.read())
            while records.has_next():
                b = records.next_batch()
                assert b.validate_crc()
                for r in b:
                    assert r.offset == len(read)
                    read.append((r.key, r.value, r.timestamp))
    assert read == written


def test_roll_writes_snapshot_and_flushes_old_segments_after_roll(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=500)
    lg.append([rec(0, 200)], producer_id=9, producer_epoch=0, base_sequence=0)
    lg.append([rec(1, 200)], producer_id=9, producer_epoch=0, base_sequence=1)
    assert lg.active_segment.base_offset == 1
    snap = os.path.join(pdir, layout.snapshot_file_name(1))
    (entry,) = read_snapshot(OsDisk(), snap)
    assert (entry.producer_id, entry.last_sequence, entry.last_offset) == (9, 0, 0)
    # The old segment becomes durable only when the post-roll flush task runs.
    assert lg.recovery_point == 0
    assert lg.run_pending() == 1
    assert lg.recovery_point == 1
    lg.close()


def test_time_based_roll_with_record_timestamps(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_ms=1000)
    lg.append([rec(0, ts=T0)])
    lg.append([rec(1, ts=T0 + 1000)])
    assert len(lg.segments) == 1
    lg.append([rec(2, ts=T0 + 1001)])
    assert [s.base_offset for s in lg.segments] == [0, 2]
    lg.close()


def test_roll_jitter_is_drawn_per_segment(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_ms=1000, segment_jitter_ms=500, rng=random.Random(7))
    jitter = lg.active_segment.roll_jitter_ms
    assert 0 <= jitter < 500
    lg.append([rec(0, ts=T0)])
    lg.append([rec(1, ts=T0 + 1000 - jitter)])
    assert len(lg.segments) == 1
    lg.append([rec(2, ts=T0 + 1001 - jitter)])
    assert len(lg.segments) == 2
    lg.close()


def test_full_offset_index_rolls(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_index_bytes=32, index_interval_bytes=1)
    for i in range(12):
        lg.append([rec(i)])
    # 4 offset slots, 2 time slots (1 usable): the time index fills first and forces rolls.
    assert len(lg.segments) > 3
    assert all(s.offset_index.entries <= 4 for s in lg.segments)
    lg.close()


def test_follower_append_keeps_offsets_and_rolls_on_relative_overflow(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append_batches(
        build_batch([Record(5, T0, b"a", b"1")], base_offset=5, partition_leader_epoch=3)
    )
    assert lg.log_end_offset == 6 and lg.leader_epoch_cache.entries == [EpochEntry(3, 5)]
    far = 5 + 2**31
    lg.append_batches(build_batch([Record(far, T0, b"b", b"2")], base_offset=far))
    assert [s.base_offset for s in lg.segments] == [0, far]
    assert lg.high_watermark == 0  # followers do not move the high watermark
    with pytest.raises(
        UnexpectedAppendOffsetError, match=r"First offset 3 is less than the next offset"
    ):
        lg.append_batches(build_batch([Record(3, T0, b"c", b"3")], base_offset=3))
    lg.close()


def test_follower_append_trims_torn_tail_and_refuses_garbage(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    one = build_batch([Record(0, T0, b"a", b"1")], base_offset=0)
    two = build_batch([Record(1, T0, b"b", b"2")], base_offset=1)
    lg.append_batches(one + two[:-5])
    assert lg.log_end_offset == 1
    bad = bytearray(two)
    bad[-1] ^= 0xFF
    with pytest.raises(InvalidRecordsError, match="crc_mismatch"):
        lg.append_batches(bytes(bad))
    with pytest.raises(InvalidRecordsError):
        lg.append_batches(b"\x00" * 10)
    assert lg.log_end_offset == 1
    lg.close()


def test_too_large_batches_are_refused(pdir, clock) -> None:
    lg = open_log(pdir, clock, max_message_bytes=200, segment_bytes=1000)
    with pytest.raises(RecordTooLargeError, match="exceeds the maximum configured value"):
        lg.append([rec(0, 300)])
    big = build_batch([Record(0, T0, b"k", b"x" * 1200)], base_offset=0)
    with pytest.raises(RecordTooLargeError, match="exceeds the maximum configured segment size"):
        lg.append_batches(big)
    assert lg.log_end_offset == 0
    lg.close()


def test_flush_messages_policy_moves_recovery_point(pdir, clock) -> None:
    lg = open_log(pdir, clock, flush_messages=3)
    lg.append([rec(0)])
    lg.append([rec(1)])
    assert lg.recovery_point == 0
    lg.append([rec(2)])
    assert lg.recovery_point == 3 and lg.unflushed_messages == 0
    lg.close()


def test_flush_ms_policy(pdir, clock) -> None:
    lg = open_log(pdir, clock, flush_ms=1000)
    lg.append([rec(0)])
    assert not lg.flush_if_due()
    clock.advance(1000)
    assert lg.flush_if_due() and lg.recovery_point == 1
    lg.close()


def test_inclusive_flush_creates_index_files_of_empty_active_segment(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append([rec(0)])
    lg.roll()
    assert layout.index_file_name(1) not in names(pdir)  # lazy, as Kafka's
    lg.flush()
    assert layout.index_file_name(1) not in names(pdir) and lg.recovery_point == 1
    lg.flush(inclusive=True)
    assert layout.index_file_name(1) in names(pdir)
    lg.close()


def test_close_and_reopen_restores_offsets_and_data(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=600, index_interval_bytes=100)
    for i in range(30):
        lg.append([rec(i, ts=T0 + i)], leader_epoch=i // 10)
    before = all_records(lg)
    bases = [s.base_offset for s in lg.segments]
    lg.close()
    # A clean close leaves every index trimmed to its entries.
    for name in names(pdir):
        if name.endswith(".index"):
            assert os.path.getsize(os.path.join(pdir, name)) % 8 == 0
    again = open_log(pdir, clock, segment_bytes=600, index_interval_bytes=100)
    assert [s.base_offset for s in again.segments] == bases
    assert again.log_end_offset == 30 and again.recovery_point == 30
    assert all_records(again) == before
    assert again.leader_epoch_cache.entries == [
        EpochEntry(0, 0),
        EpochEntry(1, 10),
        EpochEntry(2, 20),
    ]
    # The active segment's indexes are full size again, so it takes appends without rolling.
    assert again.active_segment.offset_index.length == LogConfig().segment_index_bytes
    again.append([rec(30)])
    assert again.log_end_offset == 31
    again.close()


def test_reopen_rebuilds_a_missing_index_as_kafka_recovery_does(pdir, clock) -> None:
    cfg = {"segment_bytes": 5000, "index_interval_bytes": 150}
    lg = open_log(pdir, clock, **cfg)
    for i in range(20):
        lg.append([rec(i, ts=T0 + 7 * i)])
    lg.roll()
    lg.close()
    index = os.path.join(pdir, layout.index_file_name(0))
    os.unlink(index)
    again = open_log(pdir, clock, **cfg)
    log_bytes = open(os.path.join(pdir, layout.log_file_name(0)), "rb").read()
    expected_index, expected_time = spec_rebuild(batches_of(log_bytes), 0, 150)
    again.close()
    assert open(index, "rb").read() == expected_index
    assert open(os.path.join(pdir, layout.time_index_file_name(0)), "rb").read() == expected_time


def test_open_refuses_a_torn_active_segment_and_swap_leftovers(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append([rec(0)])
    lg.close()
    path = os.path.join(pdir, layout.log_file_name(0))
    with open(path, "ab") as f:
        f.write(build_batch([Record(1, T0, b"k", b"v")], base_offset=1)[:30])
    with pytest.raises(LogNotCleanError, match="does not end with a whole batch.*logrepair repair"):
        open_log(pdir, clock)
    os.truncate(path, os.path.getsize(path) - 30)
    open(os.path.join(pdir, "00000000000000000000.log.swap"), "wb").close()
    with pytest.raises(LogNotCleanError, match="interrupted compaction"):
        open_log(pdir, clock)


def test_open_removes_deleted_leftovers_and_orphan_indexes(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append([rec(0)])
    lg.close()
    for name in ("00000000000000000007.log.deleted", "00000000000000000009.index"):
        open(os.path.join(pdir, name), "wb").close()
    open_log(pdir, clock).close()
    assert "00000000000000000007.log.deleted" not in names(pdir)
    assert "00000000000000000009.index" not in names(pdir)


def test_open_refuses_a_name_kafka_cannot_load(tmp_path, clock) -> None:
    with pytest.raises(LogError, match="is not in the form of topic-partition"):
        open_log(str(tmp_path / "not_a_partition"), clock)


def test_read_errors_name_the_valid_range(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    for i in range(5):
        lg.append([rec(i)])
    assert lg.read(5, 100).data == b""
    with pytest.raises(OffsetOutOfRangeError, match="in the range 0 to 5"):
        lg.read(6, 100)
    lg.increment_log_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError, match="in the range 2 to 5"):
        lg.read(1, 100)
    lg.close()


def test_read_returns_at_least_one_batch(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=400)
    for i in range(6):
        lg.append([rec(i, 100)])
    got = lg.read(2, 1)
    assert [b.base_offset for b in batches_of(got.data)] == [2]
    got = lg.read(0, 10_000)
    # One segment per read: whole batches of the segment holding the offset.
    assert got.segment_base_offset == 0
    assert [b.base_offset for b in batches_of(got.data)] == list(range(lg.segments[1].base_offset))
    lg.close()


def test_offset_for_timestamp(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=400)
    for i in range(10):
        lg.append([rec(i, 50, ts=T0 + 10 * i)])
    assert lg.offset_for_timestamp(T0 + 35) == TimestampOffset(T0 + 40, 4)
    assert lg.offset_for_timestamp(T0 + 1000) is None
    assert lg.offset_for_timestamp(-2).offset == 0
    assert lg.offset_for_timestamp(-1).offset == 10
    assert lg.offset_for_timestamp(-3) == TimestampOffset(T0 + 90, 9)
    lg.close()


def test_time_retention_keeps_the_segment_holding_recent_data(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=300, retention_ms=1000, file_delete_delay_ms=500)
    for i in range(8):
        lg.append([rec(i, 60, ts=T0 + 100 * i)])
    lg.run_pending()  # the post-roll flushes
    clock.set(T0 + 1450)
    deletable = [s for s in lg.segments[:-1] if T0 + 1450 - s.largest_timestamp > 1000]
    assert deletable
    bases = [s.base_offset for s in lg.segments]
    assert lg.delete_old_segments() == len(deletable)
    assert lg.log_start_offset == bases[len(deletable)]
    deleted_files = [n for n in names(pdir) if n.endswith(".deleted")]
    assert deleted_files
    assert lg.run_pending(clock.milliseconds() + 499) == 0
    clock.advance(500)
    lg.run_pending()
    assert not [n for n in names(pdir) if n.endswith(".deleted")]
    lg.close()


def test_size_retention(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=300, retention_bytes=700)
    for i in range(12):
        lg.append([rec(i, 60)])
    sizes = [s.size for s in lg.segments]
    lg.delete_old_segments()
    assert lg.size >= 700 - max(sizes) and sum(s.size for s in lg.segments) < sum(sizes)
    assert lg.size - lg.segments[0].size < 700
    lg.close()


def test_retention_never_passes_the_high_watermark(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=300, retention_ms=0)
    for i in range(6):
        lg.append([rec(i, 60, ts=T0 - 10_000)])
    lg.update_high_watermark(0)
    assert lg.delete_old_segments() == 0
    lg.update_high_watermark(lg.segments[1].base_offset)
    assert lg.delete_old_segments() == 1
    lg.close()


def test_retention_of_every_segment_rolls_a_new_active_first(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=300, retention_ms=0, file_delete_delay_ms=0)
    for i in range(6):
        lg.append([rec(i, 60, ts=T0 - 10_000)])
    n = len(lg.segments)
    assert lg.delete_old_segments() == n
    assert [s.base_offset for s in lg.segments] == [6] and lg.active_segment.size == 0
    assert lg.log_start_offset == 6 and lg.log_end_offset == 6
    # An empty active segment is never deletable.
    assert lg.delete_old_segments() == 0
    lg.run_pending()
    assert [n for n in names(pdir) if n.endswith(".log")] == [layout.log_file_name(6)]
    lg.close()


def test_delete_records_then_retention_drops_whole_segments(pdir, clock) -> None:
    # UnifiedLogTest.testLogDeletionAfterDeleteRecords, with a compact-only topic.
    lg = open_log(pdir, clock, segment_bytes=250, cleanup_policy=("compact",))
    for i in range(15):
        lg.append([rec(i, 40)])
    bases = [s.base_offset for s in lg.segments]
    lg.increment_log_start_offset(bases[2] + 1)
    lg.delete_old_segments()
    assert [s.base_offset for s in lg.segments] == bases[2:]
    assert lg.log_start_offset == bases[2] + 1
    with pytest.raises(OffsetOutOfRangeError, match="larger than the high watermark"):
        lg.increment_log_start_offset(lg.high_watermark + 1)
    lg.close()


def test_truncate_to_mid_log(pdir, clock) -> None:
    # LocalLogTest.testTruncateTo: offsets 0-11 in segments 0,3,6,9 plus an empty active at 12.
    lg = open_log(pdir, clock, flush_messages=10**9)
    for i in range(12):
        if i and i % 3 == 0:
            lg.roll()
        lg.append([rec(i)], leader_epoch=i // 4)
    lg.roll()
    assert [s.base_offset for s in lg.segments] == [0, 3, 6, 9, 12]
    assert lg.truncate_to(7)
    assert [s.base_offset for s in lg.segments] == [0, 3, 6]
    assert (lg.log_end_offset, lg.recovery_point, lg.high_watermark) == (7, 0, 7)
    assert [r.offset for r in all_records(lg)] == list(range(7))
    assert lg.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 4)]
    assert not lg.truncate_to(7)
    lg.append([rec(7)])
    assert [r.offset for r in all_records(lg)] == list(range(8))
    lg.close()


def test_truncate_inside_a_batch_removes_all_of_it(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append([rec(0), rec(1), rec(2)])
    lg.append([rec(3), rec(4)])
    lg.truncate_to(4)
    assert lg.log_end_offset == 4
    assert [r.offset for r in all_records(lg)] == [0, 1, 2]
    lg.close()


def test_truncate_fully_and_start_at(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=300)
    for i in range(8):
        lg.append([rec(i, 60)], producer_id=1, producer_epoch=0, base_sequence=i)
    lg.truncate_fully_and_start_at(100)
    assert [s.base_offset for s in lg.segments] == [100]
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (100, 100, 100)
    assert lg.leader_epoch_cache.entries == []
    assert not [n for n in names(pdir) if n.endswith(".snapshot")]
    lg.run_pending(clock.milliseconds() + 60_000)
    assert [n for n in names(pdir) if n.endswith(".log")] == [layout.log_file_name(100)]
    lg.close()


def test_truncate_below_first_segment_starts_over(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append_batches(build_batch([Record(50, T0, b"k", b"v")], base_offset=50))
    lg.truncate_fully_and_start_at(50)
    lg.append_batches(build_batch([Record(50, T0, b"k", b"v")], base_offset=50))
    assert lg.truncate_to(20)
    assert [s.base_offset for s in lg.segments] == [20]
    assert lg.log_end_offset == 20 and lg.log_start_offset == 20
    lg.close()


def test_aborted_transactions_go_to_the_txn_index(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append([rec(0)], producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True)
    lg.append([rec(1)], producer_id=2, producer_epoch=0, base_sequence=0, is_transactional=True)
    lg.append_end_txn(1, 0, commit=False)  # offset 2; producer 2 still open from 1
    lg.append_end_txn(2, 0, commit=True)  # offset 3: commits make no entry
    lg.append([rec(4)], producer_id=1, producer_epoch=0, base_sequence=1, is_transactional=True)
    lg.append_end_txn(1, 0, commit=False)  # offset 5, nothing open elsewhere: LSO 6
    assert list(lg.active_segment.txn_index.iter_entries()) == [
        AbortedTxn(1, 0, 2, 1),
        AbortedTxn(1, 4, 5, 6),
    ]
    assert lg.collect_aborted_transactions(3, 6) == [AbortedTxn(1, 4, 5, 6)]
    lg.append([rec(6)], producer_id=2, producer_epoch=0, base_sequence=1, is_transactional=True)
    with pytest.raises(InvalidRecordsError, match="open transaction"):
        lg.append([rec(7)], producer_id=2, producer_epoch=0, base_sequence=2)
    assert lg.log_end_offset == 7
    lg.close()


def test_producer_state_survives_reopen_and_truncation(pdir, clock) -> None:
    lg = open_log(pdir, clock, segment_bytes=300)
    for i in range(6):
        lg.append([rec(i, 60)], producer_id=4, producer_epoch=1, base_sequence=i)
    lg.close()
    again = open_log(pdir, clock, segment_bytes=300)
    (entry,) = again.producer_state.entries
    assert (entry.last_sequence, entry.last_offset) == (5, 5)
    again.truncate_to(3)
    (entry,) = again.producer_state.entries
    assert (entry.last_sequence, entry.last_offset) == (2, 2)
    assert layout.snapshot_file_name(3) in names(pdir)
    assert all(layout.offset_from_file_name(n) <= 3 for n in names(pdir) if n.endswith(".snapshot"))
    again.close()


def test_closed_log_refuses_changes(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.close()
    with pytest.raises(LogError, match="is closed"):
        lg.append([rec(0)])
    lg.close()  # idempotent


def test_log_end_below_checkpointed_start_starts_over(pdir, clock) -> None:
    # LogLoaderTest.testLogEndLessThanStartAfterReopen (KAFKA-10101).
    lg = open_log(pdir, clock, segment_bytes=300)
    for i in range(8):
        lg.append([rec(i, 60)], leader_epoch=1)
    lg.close()
    for name in names(pdir):
        if name.endswith(".log") and not name.startswith("00000000000000000000"):
            os.unlink(os.path.join(pdir, name))
    again = Log.open(OsDisk(), pdir, LogConfig(segment_bytes=300), clock=clock, log_start_offset=6)
    assert [s.base_offset for s in again.segments] == [6]
    assert (again.log_start_offset, again.log_end_offset) == (6, 6)
    assert again.leader_epoch_cache.entries == []
    assert all(n.endswith(".deleted") for n in names(pdir) if n.startswith("00000000000000000000"))
    again.close()


def test_missing_index_over_a_damaged_log_is_refused(pdir, clock) -> None:
    lg = open_log(pdir, clock)
    lg.append([rec(0)])
    lg.append([rec(1)])
    lg.roll()
    lg.close()
    path = os.path.join(pdir, layout.log_file_name(0))
    with open(path, "r+b") as f:
        f.seek(30)
        f.write(b"\xff")
    os.unlink(os.path.join(pdir, layout.index_file_name(0)))
    with pytest.raises(LogNotCleanError, match="crc_mismatch at byte 0.*logrepair repair"):
        open_log(pdir, clock)


def test_background_scheduler_runs_delayed_deletes(pdir, clock) -> None:
    scheduler = Scheduler(clock)
    lg = Log.open(
        OsDisk(),
        pdir,
        LogConfig(segment_bytes=300, retention_ms=0),
        clock=clock,
        scheduler=scheduler,
    )
    for i in range(6):
        lg.append([rec(i, 60, ts=T0 - 10_000)])
    lg.delete_old_segments()
    assert any(n.endswith(".deleted") for n in names(pdir))
    done = threading.Event()
    scheduler.schedule("probe", 60_000, done.set)  # queued after the deletes, due at the same time
    scheduler.start(interval_s=0.01)
    try:
        clock.advance(60_000)
        assert done.wait(5)
    finally:
        scheduler.stop()
    assert not any(n.endswith(".deleted") for n in names(pdir))
    lg.close()
