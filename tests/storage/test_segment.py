"""Segment: Kafka's LogSegment rules for index entries, lookups, truncation, roll checks, deletion."""

from __future__ import annotations

import struct
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from logrepair.format.batch import RecordBatch
from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.format.legacy import build_legacy_batch
from logrepair.storage import layout
from logrepair.storage import segment as segment_module
from logrepair.storage.abstract_index import IndexFullError
from logrepair.storage.clock import ManualClock
from logrepair.storage.disk import join
from logrepair.storage.log_config import LogConfig
from logrepair.storage.offset_index import OffsetPosition
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.segment import RollParams, Segment, SegmentOffsetOverflowError
from logrepair.storage.segment_entries import CorruptSegmentError
from logrepair.storage.time_index import TimestampOffset
from logrepair.storage.txn_index import AbortedTxn
from tests.storage.index_oracle import B, spec_rebuild

BASE = 40


def batch(first: int, count: int = 1, ts: int = 1000, value: bytes = b"v" * 20) -> bytes:
    return build_batch(
        [Record(first + i, ts + i, b"k", value) for i in range(count)], base_offset=first
    )


def append(seg: Segment, data: bytes, last: int, ts: int) -> None:
    seg.append(last, ts, last, data)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(10_000)


def make(disk, tmp_path, clock, **cfg) -> Segment:
    config = LogConfig(**{"index_interval_bytes": 10, "segment_index_bytes": 1000, **cfg})
    return Segment.create(disk, str(tmp_path), BASE, config, clock)


def test_new_segment_has_only_its_log_until_indexes_are_touched(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    assert sorted(p.name for p in tmp_path.iterdir()) == [layout.log_file_name(BASE)]
    seg.flush()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        layout.index_file_name(BASE),
        layout.log_file_name(BASE),
        layout.time_index_file_name(BASE),
    ]
    # Preallocated to whole entries of segment.index.bytes, as Kafka's AbstractIndex.
    assert (tmp_path / layout.index_file_name(BASE)).stat().st_size == 1000
    assert (tmp_path / layout.time_index_file_name(BASE)).stat().st_size == 996
    seg.close_handlers()


def test_index_entries_follow_bytes_since_last_index_entry(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock, index_interval_bytes=150)
    positions = []
    for i in range(6):
        data = batch(BASE + i, ts=1000 + i)
        positions.append(seg.size)
        append(seg, data, BASE + i, 1000 + i)
    size = len(batch(BASE))
    # The counter counts appended bytes after the check: an entry goes in when more than
    # 150 bytes were appended since the last one, at the start of the append that finds it so.
    per_entry = 150 // size + 1
    expected = [OffsetPosition(BASE + i, positions[i]) for i in range(per_entry, 6, per_entry)]
    assert list(seg.offset_index.iter_entries()) == expected
    assert [e.offset for e in seg.time_index.iter_entries()] == [o.offset for o in expected]
    seg.close_handlers()


def test_translate_offset_and_read_return_whole_batches(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    batches = [batch(BASE + 3 * i, count=3) for i in range(5)]
    for i, data in enumerate(batches):
        append(seg, data, BASE + 3 * i + 2, 1000)
    size = len(batches[0])
    entry = seg.translate_offset(BASE + 7)
    assert (entry.base_offset, entry.last_offset, entry.position) == (BASE + 6, BASE + 8, 2 * size)
    assert seg.translate_offset(BASE + 15) is None
    got = seg.read(BASE + 4, max_size=2 * size + 5)
    assert got.position == size and got.data == batches[1] + batches[2]
    # minOneMessage: one batch even when larger than max_size; none without it.
    assert seg.read(BASE, max_size=1).data == batches[0]
    assert seg.read(BASE, max_size=1, min_one_message=False).data == b""
    # A max position (the captured log end) hides later bytes.
    assert seg.read(BASE + 9, 10_000, max_position=3 * size) is None
    seg.close_handlers()


def test_truncate_mid_batch_removes_the_whole_batch(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock, index_interval_bytes=0)
    batches = [batch(BASE + 3 * i, count=3, ts=1000 + i) for i in range(4)]
    for i, data in enumerate(batches):
        append(seg, data, BASE + 3 * i + 2, 1000 + i + 2)
    size = len(batches[0])
    removed = seg.truncate_to(BASE + 7)  # inside the third batch [46, 48]
    assert removed == 2 * size and seg.size == 2 * size
    assert seg.next_offset_and_end() == (BASE + 6, 2 * size)
    assert all(e.offset < BASE + 7 for e in seg.offset_index.iter_entries())
    # Resized back to segment.index.bytes so the segment can take appends (KAFKA-6492).
    assert seg.offset_index.length == 1000
    assert seg.max_timestamp_so_far == TimestampOffset(1003, BASE + 5)
    assert (tmp_path / layout.log_file_name(BASE)).stat().st_size == 2 * size
    seg.close_handlers()


def test_truncate_to_empty_resets_created_time(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    append(seg, batch(BASE), BASE, 1000)
    clock.advance(500)
    assert seg.truncate_to(BASE) == len(batch(BASE))
    assert seg.size == 0 and seg.created_ms == clock.milliseconds()
    seg.close_handlers()


def test_find_offset_by_timestamp_is_record_level(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    for i in range(4):
        append(seg, batch(BASE + 3 * i, count=3, ts=100 * i), BASE + 3 * i + 2, 100 * i + 2)
    assert seg.find_offset_by_timestamp(101, BASE) == TimestampOffset(101, BASE + 4)
    assert seg.find_offset_by_timestamp(0, BASE + 2) == TimestampOffset(2, BASE + 2)
    assert seg.find_offset_by_timestamp(303, BASE) is None
    seg.close_handlers()


def test_offset_overflow_is_refused(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    far = BASE + 2**31
    with pytest.raises(SegmentOffsetOverflowError, match="Detected offset overflow at offset"):
        seg.append(far, 1, far, batch(far))
    assert seg.size == 0
    seg.close_handlers()


def test_should_roll_on_size_time_jitter_and_overflow(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock, segment_ms=1000)
    params = RollParams(1000, 10_000, 5000, BASE, 100, clock.milliseconds())
    assert not seg.should_roll(params)  # empty segments never roll on time
    append(seg, batch(BASE, ts=5000), BASE, 5000)
    assert not seg.should_roll(params._replace(max_timestamp_in_messages=6000))
    assert seg.should_roll(params._replace(max_timestamp_in_messages=6001))
    seg.roll_jitter_ms = 300
    assert seg.should_roll(params._replace(max_timestamp_in_messages=5701))
    assert seg.should_roll(params._replace(messages_size=10_000 - seg.size + 1))
    assert seg.should_roll(params._replace(max_offset_in_messages=BASE + 2**31))
    seg.close_handlers()


def test_time_roll_without_timestamps_uses_wall_clock(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    append(seg, batch(BASE, ts=-1), BASE, -1)
    params = RollParams(1000, 10_000, -1, BASE + 1, 10, clock.milliseconds() + 1000)
    assert not seg.should_roll(params)
    assert seg.should_roll(params._replace(now=clock.milliseconds() + 1001))
    seg.close_handlers()


def test_full_index_forces_a_roll(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock, segment_index_bytes=24, index_interval_bytes=0)
    params = RollParams(10**9, 10**9, 1000, BASE + 10, 10, clock.milliseconds())
    for i in range(2):
        append(seg, batch(BASE + i, ts=1000 + i), BASE + i, 1000 + i)
    # 24 bytes = 2 time-index slots, one kept for the roll entry: full after one entry.
    assert seg.time_index.is_full() and seg.should_roll(params)
    seg.close_handlers()


def test_preallocated_log_is_trimmed_when_inactive(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock, preallocate=True, segment_bytes=4096)
    path = tmp_path / layout.log_file_name(BASE)
    assert path.stat().st_size == 4096 and seg.size == 0
    append(seg, batch(BASE), BASE, 1000)
    seg.on_become_inactive()
    assert path.stat().st_size == seg.size
    assert seg.offset_index.length == 0
    assert list(seg.time_index.iter_entries()) == [TimestampOffset(1000, BASE)]
    seg.close_handlers()


def test_close_writes_final_time_entry_and_reopen_reads_back(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock, index_interval_bytes=10**6)
    for i in range(3):
        append(seg, batch(BASE + i, ts=1000 + i), BASE + i, 1000 + i)
    size = seg.size
    seg.close()
    assert (tmp_path / layout.time_index_file_name(BASE)).stat().st_size == 12
    assert not (tmp_path / layout.index_file_name(BASE)).exists()  # never touched: lazy
    again = Segment.open_existing(disk, str(tmp_path), BASE, seg.config, clock)
    assert again.size == size
    assert again.next_offset_and_end() == (BASE + 3, size)
    assert again.max_timestamp_so_far == TimestampOffset(1002, BASE + 2)
    again.close_handlers()


def test_txn_index_created_on_first_abort_and_truncated(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    assert not (tmp_path / layout.txn_index_file_name(BASE)).exists()
    seg.update_txn_index(AbortedTxn(7, BASE, BASE + 3, BASE))
    seg.update_txn_index(AbortedTxn(8, BASE + 4, BASE + 9, BASE + 4))
    assert seg.collect_aborted_txns(BASE + 5, BASE + 20) == [
        AbortedTxn(8, BASE + 4, BASE + 9, BASE + 4)
    ]
    seg.truncate_to(BASE + 5)
    assert [t.producer_id for t in seg.txn_index.iter_entries()] == [7]
    seg.close_handlers()


def test_garbage_in_the_log_is_a_clear_error(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    append(seg, batch(BASE), BASE, 1000)
    seg.append(BASE + 1, 1000, BASE + 1, bytes(40))  # a zero run: length field 0
    with pytest.raises(CorruptSegmentError, match="smaller than minimum record overhead"):
        seg.next_offset_and_end()
    seg.close_handlers()


def test_deleted_suffix_and_delete_waits_for_readers(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    append(seg, batch(BASE), BASE, 1000)
    seg.flush()
    seg.change_file_suffixes("", layout.DELETED_SUFFIX)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert all(n.endswith(".deleted") for n in names) and len(names) == 3
    assert seg.pin()
    seg.delete_files_when_idle()
    # A reader holding it keeps reading the renamed file.
    assert seg.read(BASE, 1000).data == batch(BASE)
    assert len(list(tmp_path.iterdir())) == 3
    seg.unpin()
    assert list(tmp_path.iterdir()) == []
    assert not seg.pin()


def test_paths_follow_kafka_names(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock)
    assert seg.log_path == join(str(tmp_path), "00000000000000000040.log")
    assert seg.txn_index_path.endswith("00000000000000000040.txnindex")
    seg.close_handlers()


def _write_segment(tmp_path, batches: list[bytes]) -> None:
    (tmp_path / layout.log_file_name(BASE)).write_bytes(b"".join(batches))


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(1, 5), st.integers(0, 3000), st.integers(-1, 50)), max_size=40
    ),
    interval=st.sampled_from([0, 1, 100, 4096]),
)
def test_rebuild_writes_the_indexes_of_the_spec_rule(tmp_path_factory, steps, interval) -> None:
    """Real batches in a real `.log`, through the windowed scan, against spec fmt §6.4(a)."""
    tmp_path = tmp_path_factory.mktemp("seg")
    raw, headers = [], []
    offset, ts = BASE, 1000
    for count, value_size, bump in steps:
        ts = ts + bump if bump >= 0 else -1
        data = batch(offset, count, ts, bytes(value_size))
        parsed = RecordBatch.parse(data)
        raw.append(data)
        headers.append(B(parsed.size, parsed.last_offset, parsed.max_timestamp))
        offset += count
    _write_segment(tmp_path, raw)
    config = LogConfig(index_interval_bytes=interval)
    seg = Segment.open_existing(OsDisk(), str(tmp_path), BASE, config, ManualClock(0))
    assert seg.rebuild_indexes() is None
    seg.close_handlers()
    expected = spec_rebuild(headers, BASE, interval)
    assert (tmp_path / layout.index_file_name(BASE)).read_bytes() == expected[0]
    assert (tmp_path / layout.time_index_file_name(BASE)).read_bytes() == expected[1]


def _rebuilt(tmp_path, config: LogConfig, quiet: bool):
    """What a rebuild leaves (the defect it stops at and the two files) or the error it raises."""
    seg = Segment.open_existing(OsDisk(), str(tmp_path), BASE, config, ManualClock(0))
    scan = original = segment_module.LogScan
    if not quiet:

        def scan(*args, quiet_runs=None, **kwargs):
            return original(*args, **kwargs)

    try:
        with mock.patch.object(segment_module, "LogScan", scan):
            defect = seg.rebuild_indexes()
    except Exception as e:  # noqa: BLE001 - the error is the outcome compared
        return type(e), str(e)
    finally:
        seg.close_handlers()
    files = [(tmp_path / name(BASE)).read_bytes() for name in INDEX_NAMES]
    return defect and (defect.kind, defect.position, defect.length), files


INDEX_NAMES = (layout.index_file_name, layout.time_index_file_name)


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from([1, 1, 1, 0, -2, 2**31]), st.integers(0, 3000)), max_size=30
    ),
    interval=st.sampled_from([0, 100, 4096]),
    index_bytes=st.sampled_from([24, 10 * 1024 * 1024]),
    flip=st.none() | st.integers(0, 10**6),
)
@example(  # a time index full at the third batch, an overflow at the fourth: Kafka throws IndexFull
    steps=[(1, 0), (1, 0), (1, 0), (2**31, 0)], interval=0, index_bytes=24, flip=None
)
def test_rebuild_in_runs_is_the_rebuild_batch_by_batch(
    tmp_path_factory, steps, interval, index_bytes, flip
) -> None:
    """Offsets that go back or overflow, a full index, a flipped bit: the runs taken at once end
    where the batch-by-batch rebuild ends, with the same files, defect or error."""
    tmp_path = tmp_path_factory.mktemp("seg")
    raw, offset = bytearray(), BASE
    for step, value_size in steps:
        offset = max(BASE, offset + step)
        raw += batch(offset, 1, 1000 + offset % 7, bytes(value_size))
    if flip is not None and raw:
        raw[flip % len(raw)] ^= 0x08
    _write_segment(tmp_path, [bytes(raw)])
    config = LogConfig(index_interval_bytes=interval, segment_index_bytes=index_bytes)
    assert _rebuilt(tmp_path, config, quiet=True) == _rebuilt(tmp_path, config, quiet=False)


def test_rebuild_of_magic_0_and_1_messages(disk, tmp_path, clock) -> None:
    """Magic 0 has no timestamps (an empty time index, spec fmt §6.4(a)); magic 1 has them."""
    v0 = [
        build_legacy_batch([Record(BASE + i, 0, b"k", b"v" * 30)], magic=0, base_offset=BASE + i)
        for i in range(3)
    ]
    v1 = build_legacy_batch([Record(BASE + 3, 777, b"k", b"v" * 30)], magic=1, base_offset=BASE + 3)
    _write_segment(tmp_path, [*v0, v1])
    seg = Segment.open_existing(disk, str(tmp_path), BASE, LogConfig(index_interval_bytes=1), clock)
    assert seg.rebuild_indexes() is None
    seg.close_handlers()
    size = len(v0[0])
    offsets = list(
        struct.iter_unpack(">ii", (tmp_path / layout.index_file_name(BASE)).read_bytes())
    )
    assert offsets == [(1, size), (2, 2 * size), (3, 3 * size)]
    assert (tmp_path / layout.time_index_file_name(BASE)).read_bytes() == struct.pack(">qi", 777, 3)


def test_rebuild_refuses_a_full_index_as_kafka_does(disk, tmp_path, clock) -> None:
    """segment.index.bytes lowered below what the segment's index points need."""
    _write_segment(tmp_path, [batch(BASE + i, ts=1000 + i) for i in range(10)])
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=24)
    seg = Segment.open_existing(disk, str(tmp_path), BASE, config, clock)
    with pytest.raises(IndexFullError):
        seg.rebuild_indexes()
    seg.close_handlers()


def test_rebuild_throws_a_full_index_before_a_later_overflow(disk, tmp_path, clock) -> None:
    """Kafka's loop appends each batch's index entry before it reads the next: a time index full
    at the third batch throws there (TimeIndex.isFull keeps one slot), before the fourth batch's
    offset overflow is seen. The buffered rule must not let the overflow go first."""
    far = BASE + 3 + 2**31
    _write_segment(tmp_path, [batch(BASE + 1), batch(BASE + 2), batch(BASE + 3), batch(far)])
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=24)
    seg = Segment.open_existing(disk, str(tmp_path), BASE, config, clock)
    with pytest.raises(IndexFullError, match="full time index"):
        seg.rebuild_indexes()
    seg.close_handlers()


def test_rebuild_stops_at_an_offset_overflow_for_the_split(disk, tmp_path, clock) -> None:
    """Kafka's recovery throws LogSegmentOffsetOverflowException at any batch out of range, index
    point or not; log loading splits the segment on it."""
    far = BASE + 2**31
    _write_segment(tmp_path, [batch(BASE), batch(BASE + 1), batch(far)])
    config = LogConfig(index_interval_bytes=10_000)
    seg = Segment.open_existing(disk, str(tmp_path), BASE, config, clock)
    with pytest.raises(SegmentOffsetOverflowError, match=f"offset overflow at offset {far} "):
        seg.rebuild_indexes()
    seg.close_handlers()


def test_rebuild_indexes_stops_at_the_first_defect(disk, tmp_path, clock) -> None:
    seg = make(disk, tmp_path, clock, index_interval_bytes=50)
    for i in range(5):
        append(seg, batch(BASE + i, ts=1000 + i), BASE + i, 1000 + i)
    seg.append(BASE + 5, 1, BASE + 5, b"\x00" * 30)
    defect = seg.rebuild_indexes()
    assert defect is not None and defect.position == 5 * len(batch(BASE))
    good = [RecordBatch.parse(batch(BASE + i, ts=1000 + i)) for i in range(5)]
    expected = spec_rebuild(good, BASE, 50)
    assert (tmp_path / layout.index_file_name(BASE)).read_bytes() == expected[0]
    assert (tmp_path / layout.time_index_file_name(BASE)).read_bytes() == expected[1]
    seg.close_handlers()
