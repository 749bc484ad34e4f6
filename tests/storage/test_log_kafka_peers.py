"""Kafka's own LogSegmentTest / UnifiedLogTest / LocalLogTest cases (spec rec §8.2, §8.4, §8.6),
re-stated against Segment and Log."""

from __future__ import annotations

import os

import pytest

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.walker import Walker
from logrepair.storage import layout
from logrepair.storage.clock import ManualClock
from logrepair.storage.leader_epoch import EpochEntry
from logrepair.storage.log import Log, ProducerRecord
from logrepair.storage.log_config import LogConfig
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.segment import RollParams, Segment
from logrepair.storage.time_index import TimestampOffset


def v2(first: int, count: int = 1, ts: int = 0, epoch: int = -1) -> bytes:
    return build_batch(
        [Record(first + i, ts, b"k", b"hello") for i in range(count)],
        base_offset=first,
        partition_leader_epoch=epoch,
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000_000)


def segment(tmp_path, clock, base: int = 40, **cfg) -> Segment:
    return Segment.create(OsDisk(), str(tmp_path), base, LogConfig(**cfg), clock)


def seg_append(seg: Segment, data: bytes) -> None:
    (b,) = list(Walker(data))
    seg.append(b.last_offset, b.max_timestamp, b.last_offset, data)


def test_read_from_gap(tmp_path, clock) -> None:
    seg = segment(tmp_path, clock)
    seg_append(seg, v2(50, 2))
    seg_append(seg, v2(60, 2))
    assert [b.base_offset for b in Walker(seg.read(55, 10_000).data)] == [60]
    assert seg.read(62, 10_000) is None and seg.read(41, 10_000).position == 0
    seg.close_handlers()


def test_find_offset_by_timestamp(tmp_path, clock) -> None:
    size = len(v2(40, ts=0))
    seg = segment(tmp_path, clock, index_interval_bytes=2 * size - 1)
    for i in range(10):
        seg_append(seg, v2(40 + i, ts=(40 + i) * 10))
    assert seg.max_timestamp_so_far.timestamp == 490
    expect = {420: 42, 421: 43, 430: 43, 431: 44, 401: 41, 399: 40}
    for ts, offset in expect.items():
        assert seg.find_offset_by_timestamp(ts, 40).offset == offset
    assert seg.find_offset_by_timestamp(491, 40) is None
    seg.close_handlers()


def test_reload_largest_timestamp_and_next_offset_after_truncation(tmp_path, clock) -> None:
    size = len(v2(40, ts=0))
    seg = segment(tmp_path, clock, index_interval_bytes=2 * size - 1)
    for offset in range(40, 70):
        seg_append(seg, v2(offset, ts=offset * 10))
    assert seg.next_offset_and_end()[0] == 70
    assert seg.time_index.entries == 14
    seg.truncate_to(41)
    assert seg.time_index.entries == 0
    assert seg.max_timestamp_so_far == TimestampOffset(400, 40)
    assert seg.next_offset_and_end()[0] == 41
    seg.close_handlers()


def test_truncate_full_and_empty_segment_do_not_roll(tmp_path, clock) -> None:
    seg = segment(tmp_path, clock, base=0, segment_ms=1000)
    seg_append(seg, v2(0, 2, ts=-1))
    clock.advance(500)
    params = RollParams(1000, 10**9, -1, 1, 10, clock.milliseconds())
    assert seg._time_waited_for_roll(clock.milliseconds(), -1) == 500
    seg.truncate_to(0)
    assert seg.size == 0 and seg.read(0, 1000) is None
    assert not seg.offset_index.is_full() and not seg.time_index.is_full()
    assert not seg.should_roll(params._replace(now=clock.milliseconds() + 1001))
    assert seg.should_roll(params._replace(max_offset_in_messages=2**31))
    seg_append(seg, v2(0))
    seg.close_handlers()


def test_truncate_into_a_gap(tmp_path, clock) -> None:
    seg = segment(tmp_path, clock)
    seg_append(seg, v2(40))
    seg_append(seg, v2(43))
    seg.truncate_to(41)
    assert [b.base_offset for b in Walker(seg.read(40, 10_000).data)] == [40]
    seg.close_handlers()


def test_change_file_suffixes_of_lazy_indexes(tmp_path, clock) -> None:
    seg = segment(tmp_path, clock)
    seg.change_file_suffixes("", layout.DELETED_SUFFIX)
    assert os.listdir(tmp_path) == ["00000000000000000040.log.deleted"]
    seg.flush()
    assert sorted(os.listdir(tmp_path)) == [
        "00000000000000000040.index.deleted",
        "00000000000000000040.log.deleted",
        "00000000000000000040.timeindex.deleted",
    ]
    seg.close_handlers()


def log_of(tmp_path, clock, **cfg) -> Log:
    return Log.open(OsDisk(), str(tmp_path / "t-0"), LogConfig(**cfg), clock=clock)


def test_size_based_log_roll(tmp_path, clock) -> None:
    size = len(build_batch([Record(0, 0, None, b"x" * 100)], base_offset=0))
    lg = log_of(tmp_path, clock, segment_bytes=10 * (size - 1))
    for _ in range(11):
        lg.append([ProducerRecord(None, b"x" * 100, 0)])
    assert len(lg.segments) == 2
    lg.close()


def test_time_based_roll_with_and_without_timestamps(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock, segment_ms=3600)
    clock.advance(3601)
    # The log was created at load time: its empty segment never rolls on time.
    lg.append([ProducerRecord(None, b"a", 0)])
    assert len(lg.segments) == 1
    # A segment whose first batch carries timestamp 0 rolls on record time, not wall time.
    clock.advance(10_000)
    lg.append([ProducerRecord(None, b"b", 3600)])
    assert len(lg.segments) == 1
    lg.append([ProducerRecord(None, b"c", 3601)])
    assert len(lg.segments) == 2
    lg.close()


def test_roll_segment_that_already_exists(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock)
    lg.roll(0)  # the empty active segment is replaced, not duplicated
    assert [s.base_offset for s in lg.segments] == [0]
    lg.append([ProducerRecord(None, b"a")])
    lg.append([ProducerRecord(None, b"b")])
    lg.roll()
    assert lg.active_segment.base_offset == 2
    lg.close()


def test_flushing_empty_active_segments(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock)
    lg.append([ProducerRecord(None, b"a")])
    lg.roll()
    files = os.listdir(tmp_path / "t-0")
    assert sum(n.endswith(".log") for n in files) == 2
    assert sum(n.endswith(".index") for n in files) == 1
    lg.flush(inclusive=True)
    assert sum(n.endswith(".index") for n in os.listdir(tmp_path / "t-0")) == 2
    lg.close()


def test_truncate_to(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock)
    for _ in range(10):
        lg.append([ProducerRecord(None, b"a")])
    size = lg.size
    assert not lg.truncate_to(10) and not lg.truncate_to(11)
    lg.truncate_to(5)
    assert lg.log_end_offset == 5 and lg.size < size
    lg.truncate_to(0)
    assert lg.log_end_offset == 0 and lg.size == 0
    for _ in range(10):
        lg.append([ProducerRecord(None, b"a")])
    lg.truncate_fully_and_start_at(1)
    assert lg.log_end_offset == 1 and lg.size == 0
    for _ in range(10):
        lg.append([ProducerRecord(None, b"a")])
    lg.truncate_to(0)  # below the first segment's base
    assert lg.log_end_offset == 0 and lg.size == 0
    lg.close()


def test_index_resizing_at_truncation(tmp_path, clock) -> None:
    size = len(build_batch([Record(0, 0, None, b"a")], base_offset=0))
    lg = log_of(tmp_path, clock, segment_bytes=10 * size, index_interval_bytes=1)
    for _ in range(10):
        lg.append([ProducerRecord(None, b"a", 0)])
    lg.append([ProducerRecord(None, b"a", 0)])
    assert len(lg.segments) == 2
    first = lg.segments[0]
    assert first.offset_index.max_entries == 9 and first.time_index.max_entries == 1
    lg.truncate_to(0)
    assert len(lg.segments) == 1
    assert lg.active_segment.offset_index.max_entries == LogConfig().segment_index_bytes // 8
    assert lg.active_segment.time_index.max_entries == LogConfig().segment_index_bytes // 12
    for _ in range(10):
        lg.append([ProducerRecord(None, b"a", 0)])
    assert len(lg.segments) == 1
    lg.close()


def test_truncate_to_end_offset_clears_epoch_cache(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock)
    lg.append_batches(v2(27, 2, epoch=19))
    lg.leader_epoch_cache.assign(20, 29)
    lg.truncate_to(29)
    assert lg.leader_epoch_cache.latest == EpochEntry(19, 27)
    lg.close()


def test_truncation_trims_the_leader_epoch_checkpoint(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock)
    for epoch, count in ((0, 10), (1, 6), (2, 4)):
        for _ in range(count):
            lg.append([ProducerRecord(None, b"a")], leader_epoch=epoch)
    expected = [EpochEntry(0, 0), EpochEntry(1, 10), EpochEntry(2, 16)]
    for target, n in ((20, 3), (11, 2), (10, 1), (0, 0)):
        lg.truncate_to(target)
        assert lg.leader_epoch_cache.entries == expected[:n]
    lg.close()


def test_delete_old_segments_keeps_epochs_and_high_watermark(tmp_path, clock) -> None:
    size = len(build_batch([Record(0, 0, None, b"x" * 20)], base_offset=0))
    lg = log_of(tmp_path, clock, segment_bytes=5 * size, retention_ms=1)
    for i in range(100):
        epoch = -1 if i < 40 else 0 if i < 90 else 1
        lg.append([ProducerRecord(None, b"x" * 20, 0)], leader_epoch=epoch)
    assert lg.leader_epoch_cache.entries == [EpochEntry(0, 40), EpochEntry(1, 90)]
    lg.update_high_watermark(25)
    lg.delete_old_segments()
    assert lg.log_start_offset <= 25
    assert all(s.base_offset <= 25 for s in lg.segments[:1])
    lg.update_high_watermark(100)
    lg.delete_old_segments()
    assert len(lg.segments) == 1 and lg.active_segment.size == 0
    assert lg.leader_epoch_cache.entries == [EpochEntry(1, 100)]
    lg.close()


def test_should_delete_size_based_segments(tmp_path, clock) -> None:
    size = len(build_batch([Record(0, 0, None, b"x" * 20)], base_offset=0))
    lg = log_of(tmp_path, clock, segment_bytes=5 * size, retention_bytes=10 * size)
    for _ in range(15):
        lg.append([ProducerRecord(None, b"x" * 20, 0)])
    assert len(lg.segments) == 3
    lg.delete_old_segments()
    assert len(lg.segments) == 2
    lg.close()


def test_garbage_collecting_segments_does_not_change_offset(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock, segment_bytes=300, retention_ms=0)
    for _ in range(25):
        lg.append([ProducerRecord(None, b"x" * 20, 0)])
    clock.advance(1)
    lg.delete_old_segments()
    assert lg.log_end_offset == 25 and len(lg.segments) == 1
    assert lg.delete_old_segments() == 0
    assert lg.append([ProducerRecord(None, b"y")]).first_offset == 25
    lg.close()


def test_producer_snapshot_after_segment_roll_on_append(tmp_path, clock) -> None:
    lg = log_of(tmp_path, clock, segment_bytes=1024)
    lg.append([ProducerRecord(None, b"x" * 460)], producer_id=1, producer_epoch=0, base_sequence=0)
    lg.append([ProducerRecord(None, b"x" * 460)], producer_id=1, producer_epoch=0, base_sequence=1)
    assert [s.base_offset for s in lg.segments] == [0, 1]
    lg.truncate_to(1)
    assert len(lg.segments) == 2 and lg.active_segment.size == 0
    snaps = sorted(n for n in os.listdir(tmp_path / "t-0") if n.endswith(".snapshot"))
    assert snaps[-1] == layout.snapshot_file_name(1)
    (entry,) = lg.producer_state.entries
    assert entry.last_offset == 0
    lg.close()


def test_log_reinitialize_after_manual_delete(tmp_path, clock) -> None:
    lg = Log.open(OsDisk(), str(tmp_path / "t-0"), clock=clock, log_start_offset=500)
    assert (lg.log_start_offset, lg.log_end_offset) == (500, 500)
    lg.close()
