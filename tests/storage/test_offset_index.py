"""OffsetIndex: Kafka's OffsetIndexTest (base 45, max 30 entries) and the file rules of spec fmt §6."""

from __future__ import annotations

import bisect
import os
import random
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.abstract_index import (
    CorruptIndexError,
    IndexFileError,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from logrepair.storage.disk import join
from logrepair.storage.offset_index import (
    OffsetIndex,
    OffsetPosition,
    decode_entries,
    encode_entry,
)
from tests.storage.memory_file import MemoryFile

BASE = 45


@pytest.fixture
def path(tmp_path) -> str:
    return join(str(tmp_path), "00000000000000000045.index")


@pytest.fixture
def index(disk, path):
    idx = OffsetIndex.open(disk, path, BASE, max_index_size=30 * 8)
    yield idx
    idx.file.close()


def test_new_file_is_preallocated_sparse_to_whole_entries(disk, tmp_path) -> None:
    path = join(str(tmp_path), "x.index")
    idx = OffsetIndex.open(disk, path, 0, max_index_size=10485760 + 5)
    assert os.stat(path).st_size == 10485760
    assert (idx.entries, idx.max_entries) == (0, 1310720)
    idx.file.close()


def test_max_index_size_below_entry_size_is_refused(disk, tmp_path) -> None:
    with pytest.raises(ValueError, match="Invalid max index size: 7"):
        OffsetIndex.open(disk, join(str(tmp_path), "x.index"), 0, max_index_size=7)


def test_existing_file_counts_every_whole_slot_as_an_entry(disk, tmp_path) -> None:
    path = join(str(tmp_path), "x.index")
    disk.write_file_atomic(path, encode_entry(1, 100) + bytes(8 * 3) + b"\x01\x02\x03")
    idx = OffsetIndex.open(disk, path, 10, writable=False)
    assert idx.entries == 4 and idx.max_entries == 4 and idx.length == 35
    assert list(idx.iter_entries()) == [(11, 100), (10, 0), (10, 0), (10, 0)]
    assert idx.is_full()
    with pytest.raises(CorruptIndexError) as info:
        idx.sanity_check()
    assert str(info.value) == (
        f"Index file {path} is corrupt, found 35 bytes which is neither positive nor a multiple of 8"
    )
    idx.close()


def test_read_only_open_of_a_missing_file_creates_nothing(disk, tmp_path) -> None:
    path = join(str(tmp_path), "x.index")
    with pytest.raises(FileNotFoundError):
        OffsetIndex.open(disk, path, 0, writable=False)
    assert not disk.exists(path)


def test_read_only_index_refuses_changes(disk, path) -> None:
    disk.write_file_atomic(path, encode_entry(1, 100))
    idx = OffsetIndex.open(disk, path, BASE, writable=False)
    with pytest.raises(OSError):
        idx.resize(800)
    idx.close()
    assert disk.read_file(path) == encode_entry(1, 100)


def test_random_lookup(index) -> None:
    """randomLookupTest."""
    assert index.lookup(92) == OffsetPosition(BASE, 0)
    rng = random.Random(1)
    offsets = sorted(rng.sample(range(BASE + 1, BASE + 1000), 30))
    positions = sorted(rng.sample(range(0, 100000), 30))
    for o, p in zip(offsets, positions, strict=True):
        index.append(o, p)
    for o, p in zip(offsets, positions, strict=True):
        assert index.lookup(o) == OffsetPosition(o, p)
    for target in range(BASE, BASE + 1000, 7):
        i = bisect.bisect_right(offsets, target) - 1
        expected = OffsetPosition(BASE, 0) if i < 0 else OffsetPosition(offsets[i], positions[i])
        assert index.lookup(target) == expected


def test_lookup_extreme_cases(index) -> None:
    assert index.lookup(BASE) == OffsetPosition(BASE, 0)
    for i in range(30):
        index.append(BASE + i + 1, i)
    assert index.lookup(BASE) == OffsetPosition(BASE, 0)
    assert index.lookup(BASE + 30) == OffsetPosition(BASE + 30, 29)


def test_entry(index) -> None:
    with pytest.raises(IndexFileError):
        index.entry(0)
    for i in range(3):
        index.append(BASE + 10 * (i + 1), i * 100)
    assert index.entry(2) == OffsetPosition(BASE + 30, 200)
    with pytest.raises(IndexFileError, match="Attempt to fetch the 3th entry"):
        index.entry(3)


def test_append_too_many(index) -> None:
    for i in range(30):
        index.append(BASE + i + 1, i)
    with pytest.raises(IndexFullError, match=r"Attempt to append to a full index \(size = 30\)\."):
        index.append(BASE + 31, 30)


def test_append_out_of_order(index, path) -> None:
    index.append(51, 0)
    with pytest.raises(InvalidOffsetError) as info:
        index.append(50, 1)
    assert str(info.value) == (
        "Attempt to append an offset 50 to position 1 no larger than the last offset appended "
        f"(51) to {path}"
    )
    with pytest.raises(InvalidOffsetError):
        index.append(51, 1)


def test_append_overflowing_relative_offset(index, path) -> None:
    with pytest.raises(IndexOffsetOverflowError) as info:
        index.append(BASE + 2**31, 0)
    assert str(info.value) == f"Integer overflow for offset: {BASE + 2**31} ({path})"
    assert index.can_append_offset(BASE + 2**31 - 1) and not index.can_append_offset(BASE - 1)
    assert index.entries == 0


def test_fetch_upper_bound_offset(index) -> None:
    first, second, third, fourth = (
        OffsetPosition(45, 0),
        OffsetPosition(46, 10),
        OffsetPosition(47, 23),
        OffsetPosition(48, 37),
    )
    for e in (first, second, third, fourth):
        index.append(e.offset, e.position)
    assert index.fetch_upper_bound_offset(first, 5) == second
    assert index.fetch_upper_bound_offset(first, 10) == second
    assert index.fetch_upper_bound_offset(first, 23) == third
    assert index.fetch_upper_bound_offset(first, 22) == third
    assert index.fetch_upper_bound_offset(second, 24) == fourth
    assert index.fetch_upper_bound_offset(fourth, 1) is None
    assert index.fetch_upper_bound_offset(first, 200) is None
    assert index.fetch_upper_bound_offset(second, 200) is None


def test_reopen(disk, path) -> None:
    """testReopen: closing trims; the reopened file is exactly full."""
    idx = OffsetIndex.open(disk, path, BASE, max_index_size=30 * 8)
    idx.append(BASE + 5, 100)
    idx.append(BASE + 7, 200)
    idx.close()
    assert disk.size(path) == 16
    idx = OffsetIndex.open(disk, path, BASE, max_index_size=30 * 8)
    assert idx.lookup(BASE + 6) == OffsetPosition(BASE + 5, 100)
    assert idx.last_offset == 52 and idx.entries == 2
    with pytest.raises(IndexFullError):
        idx.append(BASE + 10, 300)
    assert idx.resize(30 * 8)  # what the loader does for the active segment
    idx.append(BASE + 10, 300)
    idx.close()
    assert disk.read_file(path) == b"".join(
        encode_entry(r, p) for r, p in [(5, 100), (7, 200), (10, 300)]
    )


def test_truncate(disk, tmp_path) -> None:
    idx = OffsetIndex.open(disk, join(str(tmp_path), "t.index"), 0, max_index_size=100 * 8)
    for i in range(1, 10):
        idx.append(i, i)
    idx.truncate_to(12)
    assert idx.entries == 9 and idx.last_offset == 9
    idx.append(10, 10)
    idx.truncate_to(10)
    assert idx.last_offset == 9 and idx.entries == 9
    idx.truncate_to(9)
    assert idx.last_offset == 8
    idx.truncate_to(5)
    assert idx.last_offset == 4 and idx.lookup(10) == OffsetPosition(4, 4)
    idx.truncate()
    assert idx.entries == 0 and idx.last_offset == 0
    idx.append(3, 3)
    assert idx.lookup(100) == OffsetPosition(3, 3)
    idx.file.close()


def test_truncate_between_entries_keeps_the_lower_ones(index) -> None:
    for o in (50, 60, 70):
        index.append(o, o)
    index.truncate_to(65)
    assert list(index.iter_entries()) == [(50, 50), (60, 60)]


def test_sanity_last_offset_equal_to_base_offset(disk, tmp_path) -> None:
    """KAFKA-7076: a single entry at the base offset passes."""
    idx = OffsetIndex.open(disk, join(str(tmp_path), "s.index"), 20, max_index_size=80)
    idx.append(20, 0)
    idx.sanity_check()
    idx.file.close()


def test_sanity_last_offset_below_base(disk, path) -> None:
    disk.write_file_atomic(path, struct.pack(">ii", -1, 0))
    idx = OffsetIndex.open(disk, path, BASE, writable=False)
    with pytest.raises(CorruptIndexError) as info:
        idx.sanity_check()
    assert str(info.value) == (
        f"Corrupt index found, index file {path} has non-zero size but the last offset is 44 "
        f"which is less than the base offset {BASE}"
    )
    idx.close()


def test_zero_filled_tail_passes_the_offset_check(disk, path) -> None:
    disk.write_file_atomic(path, encode_entry(3, 100) + bytes(8 * 5))
    idx = OffsetIndex.open(disk, path, BASE, writable=False)
    idx.sanity_check()
    assert idx.last_offset == BASE
    idx.close()


def test_resize_trim_and_reset(disk, path) -> None:
    idx = OffsetIndex.open(disk, path, BASE, max_index_size=30 * 8)
    idx.append(BASE + 1, 10)
    assert not idx.resize(30 * 8 + 3)  # rounds down to the same length
    assert idx.trim_to_valid_size() and disk.size(path) == 8
    assert idx.max_entries == 1 and idx.is_full()
    with pytest.raises(ValueError):
        idx.resize(0)
    idx.reset()
    assert idx.entries == 0 and disk.size(path) == 240
    idx.close()
    assert disk.size(path) == 0


def test_codec_round_trip_and_partial_entry() -> None:
    raw = encode_entry(1, 2) + encode_entry(2**31 - 1, 2**31 - 1) + b"\x00\x01"
    assert decode_entries(raw, 10) == [(11, 2), (10 + 2**31 - 1, 2**31 - 1)]


@given(
    st.lists(st.integers(1, 50), min_size=0, max_size=2500),
    st.lists(st.integers(-5, 200_000), min_size=1, max_size=40),
)
def test_lookup_equals_plain_binary_search_across_the_warm_section(gaps, targets) -> None:
    """More than 1024 entries puts part of the index outside Kafka's warm section."""
    idx = OffsetIndex(MemoryFile("m.index"), 0, max_index_size=8 * 3000, newly_created=True)
    offsets, offset = [], 0
    for gap in gaps:
        offset += gap
        idx.append(offset, offset * 2)
        offsets.append(offset)
    for target in targets:
        i = bisect.bisect_right(offsets, target) - 1
        want = OffsetPosition(0, 0) if i < 0 else OffsetPosition(offsets[i], offsets[i] * 2)
        assert idx.lookup(target) == want
