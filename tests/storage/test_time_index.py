"""TimeIndex: Kafka's TimeIndexTest (base 45, 30 slots) and the rules of spec fmt §6.3-6.6."""

from __future__ import annotations

import bisect
import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.abstract_index import (
    CorruptIndexError,
    IndexFileError,
    IndexFullError,
    InvalidOffsetError,
)
from logrepair.storage.disk import join
from logrepair.storage.time_index import (
    TimeIndex,
    TimestampOffset,
    TimestampRegressionError,
    decode_entries,
    encode_entry,
)
from tests.storage.memory_file import MemoryFile

BASE = 45


@pytest.fixture
def path(tmp_path) -> str:
    return join(str(tmp_path), "00000000000000000045.timeindex")


@pytest.fixture
def index(disk, path):
    idx = TimeIndex.open(disk, path, BASE, max_index_size=30 * 12)
    yield idx
    idx.file.close()


def append_entries(idx: TimeIndex, n: int) -> None:
    for i in range(1, n + 1):
        idx.maybe_append(i * 10, i * 10 + BASE)


def test_new_file_is_preallocated_to_whole_entries(disk, tmp_path) -> None:
    path = join(str(tmp_path), "x.timeindex")
    idx = TimeIndex.open(disk, path, 0)
    assert os.stat(path).st_size == 10485756
    assert idx.max_entries == 873813
    idx.file.close()


def test_lookup(index) -> None:
    assert index.lookup(100) == TimestampOffset(-1, BASE)
    append_entries(index, 29)
    assert index.lookup(9) == TimestampOffset(-1, BASE)
    assert index.lookup(25) == TimestampOffset(20, 65)
    assert index.lookup(30) == TimestampOffset(30, 75)


def test_entry(index) -> None:
    with pytest.raises(IndexFileError):
        index.entry(0)
    append_entries(index, 4)
    assert [index.entry(i) for i in range(4)] == [(10, 55), (20, 65), (30, 75), (40, 85)]


def test_truncate(index) -> None:
    append_entries(index, 29)
    index.truncate()
    assert index.entries == 0
    append_entries(index, 29)
    index.truncate_to(10 + BASE)
    assert index.entries == 0
    append_entries(index, 5)
    index.truncate_to(36 + BASE)
    assert list(index.iter_entries()) == [(10, 55), (20, 65), (30, 75)]
    assert index.last_entry() == TimestampOffset(30, 75)


def test_append(index, path) -> None:
    append_entries(index, 29)
    assert index.is_full()
    with pytest.raises(
        IndexFullError, match=r"Attempt to append to a full time index \(size = 29\)\."
    ):
        index.maybe_append(10000, 1000)
    with pytest.raises(InvalidOffsetError) as info:
        index.maybe_append(10000, 280, skip_full_check=True)
    assert str(info.value) == (
        f"Attempt to append an offset (280) to slot 29 no larger than the last offset appended "
        f"(335) to {path}"
    )
    index.maybe_append(10000, 1000, skip_full_check=True)
    assert index.entries == 30
    with pytest.raises(IndexFullError):  # no slot left at all
        index.maybe_append(10001, 1001, skip_full_check=True)


def test_equal_timestamps_are_skipped_and_lower_ones_refused(index, path) -> None:
    index.maybe_append(100, 50)
    index.maybe_append(100, 60)
    assert index.entries == 1 and index.last_entry() == TimestampOffset(100, 50)
    with pytest.raises(TimestampRegressionError) as info:
        index.maybe_append(99, 70)
    assert str(info.value) == (
        "Attempt to append a timestamp (99) to slot 1 no larger than the last timestamp appended "
        f"(100) to {path}"
    )


def test_empty_index_behaves_as_if_last_entry_were_minus_one(index) -> None:
    assert index.last_entry() == TimestampOffset(-1, BASE)
    index.maybe_append(-1, 50)  # magic 0: NO_TIMESTAMP never creates an entry
    assert index.entries == 0
    index.maybe_append(0, 50)
    assert index.entries == 1


def test_sanity_check(disk, path) -> None:
    def check(raw: bytes) -> None:
        disk.write_file_atomic(path, raw)
        idx = TimeIndex.open(disk, path, BASE, writable=False)
        try:
            idx.sanity_check()
        finally:
            idx.close()

    check(encode_entry(10, 1) + encode_entry(20, 2))
    with pytest.raises(CorruptIndexError) as info:
        check(encode_entry(20, 1) + encode_entry(10, 2))
    assert str(info.value) == (
        f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
        "timestamp is 10 which is less than the first timestamp 20"
    )
    with pytest.raises(CorruptIndexError) as info:
        check(encode_entry(10, 1) + struct.pack(">qi", 20, -1))
    assert str(info.value) == (
        f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
        f"offset is 44 which is less than the first offset {BASE}"
    )
    with pytest.raises(CorruptIndexError) as info:
        check(encode_entry(10, 1) + b"\x00" * 5)
    assert str(info.value) == (
        f"Time index file {path} is corrupt, found 17 bytes which is neither positive nor a "
        "multiple of 12"
    )
    # A zero-filled tail (a crash while active) fails the timestamp check.
    with pytest.raises(CorruptIndexError, match="last timestamp is 0"):
        check(encode_entry(10, 1) + bytes(24))


def test_is_full_keeps_one_slot(index) -> None:
    append_entries(index, 28)
    assert not index.is_full()
    index.maybe_append(290, 290 + BASE)
    assert index.is_full()


def test_last_entry_after_reopen(disk, path) -> None:
    idx = TimeIndex.open(disk, path, BASE, max_index_size=360)
    assert idx.last_entry() == TimestampOffset(-1, BASE)
    idx.maybe_append(1, 46)
    assert idx.last_entry() == TimestampOffset(1, 46)
    idx.close()
    assert disk.read_file(path) == encode_entry(1, 1)
    idx = TimeIndex.open(disk, path, BASE, max_index_size=360)
    assert idx.last_entry() == TimestampOffset(1, 46) and idx.entries == 1
    idx.close()


def test_resize(index) -> None:
    assert not index.resize(30 * 12)
    assert index.resize(15 * 12) and index.max_entries == 15
    assert index.resize(60 * 12) and index.max_entries == 60


def test_entry_size_and_parse() -> None:
    assert TimeIndex.ENTRY_SIZE == 12
    raw = encode_entry(2**63 - 1, 7) + encode_entry(-5, 0) + b"\x01"
    assert decode_entries(raw, 100) == [(2**63 - 1, 107), (-5, 100)]


@given(
    st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 3)), max_size=1500),
    st.lists(st.integers(-10, 2_000_000), min_size=1, max_size=30),
)
def test_lookup_equals_plain_binary_search(steps, targets) -> None:
    idx = TimeIndex(MemoryFile("t"), 0, max_index_size=12 * 2000, newly_created=True)
    timestamps, offsets = [], []
    ts = offset = 0
    for ts_gap, offset_gap in steps:
        ts += ts_gap
        offset += offset_gap
        idx.maybe_append(ts, offset)
        timestamps.append(ts)
        offsets.append(offset)
    for target in targets:
        i = bisect.bisect_right(timestamps, target) - 1
        want = TimestampOffset(-1, 0) if i < 0 else TimestampOffset(timestamps[i], offsets[i])
        assert idx.lookup(target) == want
