"""The deterministic index rebuild, against a re-statement of spec fmt §6.4(a) and the index classes."""

from __future__ import annotations

import struct
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.format.batch_runs import index_points
from logrepair.storage.abstract_index import (
    IndexFileError,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from logrepair.storage.index_builder import RecoveryIndex, build_indexes
from tests.storage.index_oracle import B, class_rebuild, spec_rebuild

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


@st.composite
def damaged_segments(draw) -> tuple[list[B], int, int, int]:
    """Offsets that go backwards or past the relative range, v0 batches, indexes too small."""
    base = draw(st.sampled_from([0, 45, 2**40]))
    interval = draw(st.sampled_from([0, 61, 300]))
    max_index_size = draw(st.sampled_from([8, 12, 24, 60, 10 * 1024 * 1024]))
    steps = draw(
        st.lists(
            st.tuples(
                st.one_of(st.integers(1, 5), st.integers(-8, 0), st.just(2**31)),
                st.integers(61, 400),
                st.one_of(st.none(), st.just(-1), st.integers(0, 50)),
            ),
            max_size=40,
        )
    )
    batches, offset = [], base - 1
    for gap, size, ts in steps:
        offset += gap
        batches.append(B(size, offset, ts))
    return batches, base, interval, max_index_size


def _outcome(rebuild, *args) -> tuple[bytes, bytes] | type[Exception]:
    try:
        return rebuild(*args)
    except (IndexFileError, ValueError) as e:
        return type(e)


@given(damaged_segments())
def test_raises_what_the_index_classes_raise(segment) -> None:
    """Kafka's recovery meets these through its index appends; the fast loop must fail alike."""
    batches, base, interval, max_index_size = segment
    assert _outcome(build_indexes, batches, base, interval, max_index_size) == _outcome(
        class_rebuild, batches, base, interval, max_index_size
    )


def test_time_index_offsets_going_backwards_raise_invalid_offset() -> None:
    """The running maximum moves to an earlier offset than the last time entry's."""
    batches = [B(200, 10, 100), B(100, 20, 50), B(100, 5, 200), B(100, 30, 0)]
    # Index points at the batches at 200 and 400: offsets 20 then 30 grow; time entries do not.
    with pytest.raises(InvalidOffsetError, match=r"offset \(5\) to slot 1"):
        build_indexes(batches, 0, 150)
    with pytest.raises(InvalidOffsetError):  # by the final entry, after the last index point
        build_indexes(batches[:3], 0, 150)


def test_a_full_offset_index_is_refused_before_the_time_index_fills() -> None:
    batches = [B(100, i, None) for i in range(10)]
    with pytest.raises(IndexFullError, match="full index"):
        build_indexes(batches, 0, 50, max_index_size=3 * 8)


def test_magic_0_batches_have_no_timestamp() -> None:
    batches = [B(100, 0, None), B(100, 1, None), B(100, 2, 7), B(100, 3, None)]
    offset_bytes, time_bytes = build_indexes(batches, 0, 50)
    assert list(struct.iter_unpack(">ii", offset_bytes)) == [(1, 100), (2, 200), (3, 300)]
    assert list(struct.iter_unpack(">qi", time_bytes)) == [(7, 2)]
    assert build_indexes(batches[:2], 0, 50)[1] == b""


def test_max_index_size_below_a_time_entry_is_refused() -> None:
    with pytest.raises(ValueError, match="Invalid max index size: 11"):
        build_indexes([], 0, max_index_size=11)


def _fed(batches: list[B], base: int, interval: int, max_index_size: int, bulk: bool):
    """The index after feeding `batches` one `_add` at a time, or as points to `add_points`:
    every field of its state, or the exception and the state it was left in."""
    index = RecoveryIndex(base, interval, max(max_index_size, 12))
    points, position = array("q"), 0
    for b in batches:
        points.extend((position, b.last_offset, -1 if b.max_timestamp is None else b.max_timestamp))
        position += b.size
    error = None
    try:
        if bulk:
            index.add_points(points.tobytes())
        else:
            for k in range(0, len(points), 3):
                index._add(*points[k : k + 3])  # the rule one batch at a time, unbuffered
    except (IndexFileError, ValueError, struct.error) as e:
        error = (type(e), str(e))
    return error, [getattr(index, name) for name in RecoveryIndex.__slots__]


@pytest.mark.skipif(index_points is None, reason="the C accelerator is not built (or not active)")
@given(damaged_segments())
def test_add_points_in_c_is_add_batch_by_batch(segment) -> None:
    """C's `index_points` stops before the triple that raises; `add` then raises it, so the two
    ways end in the same state with the same error."""
    assert _fed(*segment, bulk=True) == _fed(*segment, bulk=False)


def test_more_batches_than_add_buffers_are_the_spec_rule() -> None:
    """`add` runs its buffered points through the rule a chunk at a time: chunk edges (and a
    throw in a later chunk) change nothing."""
    batches = [B(61 + (i * 37) % 500, 3 * i, (i * 7919) % 10_000) for i in range(10_000)]
    assert build_indexes(batches, 0, 300) == spec_rebuild(batches, 0, 300)
    batches[9_000] = B(100, 5, 1)  # offsets go back at an index entry past the first chunks
    with pytest.raises(InvalidOffsetError):
        build_indexes(batches, 0, 0)
