"""The deterministic index rebuild, against an independent re-statement of spec fmt §6.4(a)."""

from __future__ import annotations

import struct
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.abstract_index import (
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from logrepair.storage.disk import join
from logrepair.storage.index_builder import RecoveryIndexer, build_indexes
from logrepair.storage.offset_index import OffsetIndex
from logrepair.storage.osdisk import OsDisk
from logrepair.storage.time_index import TimeIndex


class B(NamedTuple):
    size: int
    last_offset: int
    max_timestamp: int


def spec_rebuild(batches: list[B], base: int, interval: int) -> tuple[bytes, bytes]:
    """Spec fmt §6.4(a), written out with no index class: what Kafka's recovery leaves."""
    offset_entries: list[tuple[int, int]] = []
    time_entries: list[tuple[int, int]] = []
    max_ts, max_ts_offset = -1, base
    valid = last_indexed = 0

    def time_append(ts: int, offset: int) -> None:
        last_ts = time_entries[-1][0] if time_entries else -1
        if ts > last_ts:  # equal timestamps are skipped; empty behaves as (-1, base)
            time_entries.append((ts, offset - base))

    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, max_ts_offset = b.max_timestamp, b.last_offset
        if valid - last_indexed > interval:
            offset_entries.append((b.last_offset - base, valid))
            time_append(max_ts, max_ts_offset)
            last_indexed = valid
        valid += b.size
    time_append(max_ts, max_ts_offset)
    return (
        b"".join(struct.pack(">ii", *e) for e in offset_entries),
        b"".join(struct.pack(">qi", *e) for e in time_entries),
    )


_TIMESTAMPS = st.one_of(st.just(-1), st.integers(0, 50), st.integers(0, 10**13))


@st.composite
def segments(draw) -> tuple[list[B], int, int]:
    base = draw(st.sampled_from([0, 45, 2**40]))
    interval = draw(st.sampled_from([0, 1, 61, 100, 4096]))
    steps = draw(
        st.lists(st.tuples(st.integers(1, 5), st.integers(61, 5000), _TIMESTAMPS), max_size=120)
    )
    batches, offset = [], base - 1
    for gap, size, ts in steps:
        offset += gap
        batches.append(B(size, offset, ts))
    return batches, base, interval


@given(segments())
def test_rebuild_matches_the_spec_rule(segment) -> None:
    batches, base, interval = segment
    assert build_indexes(batches, base, interval) == spec_rebuild(batches, base, interval)


@given(segments())
def test_rebuilt_indexes_have_the_properties_kafkas_have(segment) -> None:
    """Spec fmt §6.7, checked on the output alone."""
    batches, base, interval = segment
    offset_bytes, time_bytes = build_indexes(batches, base, interval)
    starts, position = {}, 0
    for b in batches:
        starts[position] = b
        position += b.size
    offset_entries = list(struct.iter_unpack(">ii", offset_bytes))
    for rel, pos in offset_entries:
        assert pos > interval and pos in starts
        assert starts[pos].last_offset == base + rel
    assert [r for r, _ in offset_entries] == sorted({r for r, _ in offset_entries})
    time_entries = list(struct.iter_unpack(">qi", time_bytes))
    timestamps = [t for t, _ in time_entries]
    assert timestamps == sorted(set(timestamps))
    last_offsets = {b.last_offset for b in batches}
    assert all(base + rel in last_offsets for _, rel in time_entries)
    segment_max = max((b.max_timestamp for b in batches), default=-1)
    if segment_max > -1:
        assert time_entries[-1][0] == segment_max
        earliest = next(b for b in batches if b.max_timestamp == segment_max)
        assert base + time_entries[-1][1] == earliest.last_offset
    else:
        assert time_entries == []


def test_the_running_max_points_at_the_earliest_batch_holding_it() -> None:
    batches = [B(100, 0, 50), B(100, 1, 70), B(100, 2, 70), B(100, 3, 60), B(100, 4, 10)]
    offset_bytes, time_bytes = build_indexes(batches, 0, 99)
    # Index points at positions 100.., each stores the batch's own last offset.
    assert list(struct.iter_unpack(">ii", offset_bytes)) == [(1, 100), (2, 200), (3, 300), (4, 400)]
    # Time entries: (70, 1) once; repeats of 70 are skipped, the final entry adds nothing.
    assert list(struct.iter_unpack(">qi", time_bytes)) == [(70, 1)]


def test_first_batch_never_gets_an_entry_and_v0_gives_an_empty_time_index() -> None:
    batches = [B(5000, i, -1) for i in range(3)]
    offset_bytes, time_bytes = build_indexes(batches, 0)
    assert list(struct.iter_unpack(">ii", offset_bytes)) == [(1, 5000), (2, 10000)]
    assert time_bytes == b""
    assert build_indexes([], 7) == (b"", b"")


def test_final_entry_only_when_above_the_last() -> None:
    batches = [B(100, 0, 5), B(100, 1, 9), B(100, 2, 9)]
    _, time_bytes = build_indexes(batches, 0, 10_000)
    assert list(struct.iter_unpack(">qi", time_bytes)) == [(9, 1)]


def test_offsets_going_backwards_at_an_index_point_raise_invalid_offset() -> None:
    with pytest.raises(InvalidOffsetError):
        build_indexes([B(100, 5, 1), B(100, 9, 2), B(100, 7, 3)], 0, 50)


def test_offset_beyond_the_relative_range_raises_overflow() -> None:
    with pytest.raises(IndexOffsetOverflowError):
        build_indexes([B(100, 1, 1), B(100, 2**31 + 5, 2)], 0, 50)


def test_an_index_too_small_for_the_interval_is_full() -> None:
    """Lowering segment.index.bytes after the fact makes Kafka's recovery fail this way."""
    batches = [B(100, i, i) for i in range(10)]
    with pytest.raises(IndexFullError):
        build_indexes(batches, 0, 50, max_index_size=3 * 8)


def test_rebuild_on_disk_writes_the_same_trimmed_bytes(tmp_path) -> None:
    disk = OsDisk()
    batches = [B(300 + 17 * i, 3 * i + 2, (i * 7919) % 1000) for i in range(200)]
    base = 0
    oi = OffsetIndex.open(disk, join(str(tmp_path), "a.index"), base)
    ti = TimeIndex.open(disk, join(str(tmp_path), "a.timeindex"), base)
    indexer = RecoveryIndexer(oi, ti, 1000)
    for b in batches:
        indexer.add(b)
    indexer.finish()
    assert indexer.valid_bytes == sum(b.size for b in batches)
    oi.close()
    ti.close()
    assert (disk.read_file(oi.path), disk.read_file(ti.path)) == build_indexes(batches, base, 1000)
