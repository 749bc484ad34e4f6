"""leader-epoch-checkpoint: strict reading, atomic writing, and Kafka's load semantics (spec fmt §8.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logrepair.storage.checkpoints import CheckpointError
from logrepair.storage.disk import join
from logrepair.storage.leader_epoch import (
    EpochEntry,
    InvalidLeaderEpochError,
    load_leader_epochs,
    read_leader_epochs,
    truncate_from_end,
    truncate_from_start,
    write_leader_epochs,
)
from logrepair.storage.leader_epoch_cache import LeaderEpochCache
from logrepair.storage.osdisk import OsDisk


@pytest.fixture
def path(tmp_path) -> str:
    return join(str(tmp_path), "leader-epoch-checkpoint")


monotonic_epochs = st.lists(st.tuples(st.integers(1, 5), st.integers(1, 1000)), max_size=30).map(
    lambda steps: [
        EpochEntry(sum(e for e, _ in steps[: i + 1]), sum(o for _, o in steps[: i + 1]))
        for i in range(len(steps))
    ]
)


@given(monotonic_epochs)
def test_round_trip(tmp_path_factory, entries) -> None:
    disk = OsDisk()
    path = join(str(tmp_path_factory.mktemp("le")), "leader-epoch-checkpoint")
    write_leader_epochs(disk, path, entries)
    assert read_leader_epochs(disk, path) == entries
    load = load_leader_epochs(entries)
    assert load.entries == entries and load.monotonic and not load.warned


def test_format(disk, path) -> None:
    write_leader_epochs(disk, path, [EpochEntry(0, 0), EpochEntry(3, 120)])
    assert disk.read_file(path) == b"0\n2\n0 0\n3 120\n"


@pytest.mark.parametrize(
    ("data", "line_number", "structural"),
    [
        (b"1\n0\n", 1, True),
        (b"0\n1\n3\n", 3, True),
        (b"0\n1\n3 4 5\n", 3, True),
        (b"0\n1\nx 4\n", 3, False),
        (b"0\n1\n3 y\n", 3, False),
        (b"0\n2\n3 4\n", None, True),
    ],
)
def test_malformed(disk, path, data, line_number, structural) -> None:
    disk.write_file_atomic(path, data)
    with pytest.raises(CheckpointError) as info:
        read_leader_epochs(disk, path)
    assert info.value.line_number == line_number
    assert info.value.structural is structural
    assert path in str(info.value)


def test_negative_values_stop_loading_with_kafkas_message() -> None:
    with pytest.raises(InvalidLeaderEpochError) as info:
        load_leader_epochs([EpochEntry(1, 0), EpochEntry(-1, 5)])
    assert str(info.value) == (
        "Received invalid partition leader epoch entry EpochEntry(epoch=-1, startOffset=5)"
    )
    with pytest.raises(InvalidLeaderEpochError):
        load_leader_epochs([EpochEntry(1, -5)])


def test_same_epoch_at_a_later_offset_is_ignored() -> None:
    load = load_leader_epochs([EpochEntry(1, 0), EpochEntry(1, 10), EpochEntry(1, 0)])
    assert load.entries == [EpochEntry(1, 0)]
    assert load.ignored == [EpochEntry(1, 10), EpochEntry(1, 0)]
    assert not load.warned and not load.monotonic


def test_same_epoch_at_an_earlier_offset_replaces_it_without_warning() -> None:
    load = load_leader_epochs([EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(2, 5)])
    assert load.entries == [EpochEntry(1, 0), EpochEntry(2, 5)]
    assert load.truncated == [EpochEntry(2, 10)]
    assert load.warned


def test_a_lower_epoch_truncates_newer_entries_with_a_warning() -> None:
    load = load_leader_epochs(
        [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(4, 20), EpochEntry(2, 15)]
    )
    assert load.entries == [EpochEntry(1, 0), EpochEntry(2, 15)]
    assert load.truncated == [EpochEntry(3, 10), EpochEntry(4, 20)]
    assert load.warned


def test_a_single_removal_at_the_same_start_offset_is_not_warned() -> None:
    load = load_leader_epochs([EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(2, 10)])
    assert load.entries == [EpochEntry(1, 0), EpochEntry(2, 10)]
    assert load.truncated == [EpochEntry(3, 10)] and not load.warned


@given(st.lists(st.tuples(st.integers(0, 10), st.integers(0, 100)), max_size=25))
def test_load_always_ends_strictly_monotonic(raw) -> None:
    load = load_leader_epochs([EpochEntry(*r) for r in raw])
    for a, b in zip(load.entries, load.entries[1:], strict=False):
        assert a.epoch < b.epoch and a.start_offset < b.start_offset
    assert len(load.entries) + len(load.ignored) + len(load.truncated) == len(raw)


def test_truncation_to_the_log_bounds() -> None:
    entries = [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(4, 20)]
    assert truncate_from_end(entries, 20) == entries[:2]
    assert truncate_from_end(entries, 21) == entries
    assert truncate_from_start(entries, 15) == [EpochEntry(3, 15), EpochEntry(4, 20)]
    assert truncate_from_start(entries, 10) == [EpochEntry(3, 10), EpochEntry(4, 20)]
    assert truncate_from_start([EpochEntry(3, 10)], 5) == [EpochEntry(3, 10)]


def test_the_live_cache_writes_the_checkpoint_only_when_assign_changes_it() -> None:
    written: list[list[EpochEntry]] = []
    cache = LeaderEpochCache(written.append, [EpochEntry(1, 0), EpochEntry(1, 5)])
    assert cache.entries == [EpochEntry(1, 0)] and written == []
    cache.assign(1, 7)  # the newest epoch again, later: once per appended batch
    assert written == []
    cache.assign(3, 10)
    cache.assign(2, 12)  # a lower epoch after a higher one truncates it, as at load
    assert written == [[EpochEntry(1, 0), EpochEntry(3, 10)], [EpochEntry(1, 0), EpochEntry(2, 12)]]
    with pytest.raises(InvalidLeaderEpochError):
        cache.assign(4, -1)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 12)] and len(written) == 2
