"""Quiet runs change how many Python steps a scan takes, never what it finds.

Random partitions (offsets that continue, go back or jump; leader epochs that rise and fall;
transactional batches; indexes of several intervals, some damaged; damage in the `.log`; a small
`message.max.bytes`) are scanned twice, with quiet runs (C or pure Python, whichever is active)
and batch by batch, and the two scans must be the same in every field.
"""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.format.batch_builder import build_batch
from logrepair.format.batch_layout import Record
from logrepair.recovery import segment_scan
from logrepair.recovery.index_checks import TXN_ENTRY
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout

from .builders import DISK, T0, write_segment

batch_plans = st.tuples(
    st.sampled_from([1, 1, 1, 1, 1, 0, -1, -3, 40]),  # the step from the last offset
    st.sampled_from([0, 0, 0, 1, 1, 2, -1]),  # leader epoch
    st.sampled_from([1, 1, 3]),  # records
    st.sampled_from([10, 10, 300, 2000]),  # value bytes
    st.sampled_from([False, False, False, True]),  # transactional
)


def _batch(offset: int, epoch: int, records: int, value: int, transactional: bool) -> bytes:
    return build_batch(
        [
            Record(offset + i, T0 + (offset + i) % 10**6, None, bytes(value), ())
            for i in range(records)
        ],
        base_offset=offset,
        partition_leader_epoch=epoch,
        producer_id=7 if transactional else -1,
        producer_epoch=0 if transactional else -1,
        base_sequence=offset if transactional else -1,
        is_transactional=transactional,
    )


def _segment_bytes(plans, offset: int) -> tuple[bytes, int]:
    out = []
    for step, epoch, records, value, transactional in plans:
        offset = max(0, offset + step)
        out.append(_batch(offset, epoch, records, value, transactional))
        offset += records - 1
    return b"".join(out), offset


def _damage(raw: bytes, mutations) -> bytes:
    data = bytearray(raw)
    for op, where, blob in mutations:
        at = where % (len(data) + 1)
        if op == "flip" and data:
            data[at % len(data)] ^= 1 << (where % 8)
        elif op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = blob
        else:
            data[at : at + len(blob)] = bytes(len(blob))
    return bytes(data)


partitions = st.lists(st.lists(batch_plans, min_size=1, max_size=12), min_size=1, max_size=3)
intervals = st.sampled_from([0, 100, 4096])


def _write_partition(pdir, segments, offset: int, log_damage, interval: int) -> list[int]:
    """The segments of the plans after `offset`, the last one damaged, with the indexes Kafka's
    rule writes where it can; their base offsets."""
    bases = []
    for k, plans in enumerate(segments):
        base = max(0, offset + 1)
        raw, offset = _segment_bytes(plans, offset)
        if k == len(segments) - 1:
            raw = _damage(raw, log_damage)
        try:
            write_segment(pdir, base, raw, interval=interval)
        except ValueError:  # (offsets going back: no index Kafka's rule would write)
            write_segment(pdir, base, raw, indexes=False)
        bases.append(base)
    return bases


mutations = st.lists(
    st.tuples(
        st.sampled_from(["flip", "cut", "insert", "zero"]),
        st.integers(0, 10**6),
        st.binary(min_size=1, max_size=30),
    ),
    max_size=2,
)


@settings(max_examples=60, deadline=None)
@given(
    segments=partitions,
    interval=intervals,
    log_damage=mutations,
    index_damage=mutations,
    message_max_bytes=st.sampled_from([1 << 20, 1000, 0, 2**70]),
)
def test_a_scan_with_quiet_runs_is_the_scan_batch_by_batch(
    tmp_path_factory, segments, interval, log_damage, index_damage, message_max_bytes
):
    pdir = tmp_path_factory.mktemp("quiet") / "t-0"
    _write_partition(pdir, segments, -1, log_damage, interval)
    index = pdir / layout.index_file_name(0)
    if index.exists():
        index.write_bytes(_damage(index.read_bytes(), index_damage))
    config = Settings(index_interval_bytes=interval, message_max_bytes=message_max_bytes)
    with_runs = scan_path(DISK, str(pdir), config)
    with (
        mock.patch.object(segment_scan, "QuietBatches", lambda *_: None),
        mock.patch.object(segment_scan, "take_quiet_segment", _declined),
    ):
        batch_by_batch = scan_path(DISK, str(pdir), config)
    assert repr(with_runs) == repr(batch_by_batch)


def _declined(*_, **__) -> bool:
    return False


index_changes = st.sampled_from(
    ["none", "none", "no_time_index", "empty_time_index", "preallocated", "txn_index", "other"]
)


@settings(max_examples=100, deadline=None)
@given(
    segments=partitions,
    interval=intervals,
    log_damage=mutations,
    index_damage=mutations,
    change=index_changes,
    changed=st.integers(0, 2),
    message_max_bytes=st.sampled_from([1 << 20, 1000, 2**70]),
    previous=st.sampled_from([None, 0, 5]),
)
def test_a_segment_taken_whole_is_the_segment_scanned_in_full(
    tmp_path_factory,
    segments,
    interval,
    log_damage,
    index_damage,
    change,
    changed,
    message_max_bytes,
    previous,
):
    """`quiet_segment.take_quiet_segment` (a clean segment in a few C calls) leaves the scan as
    the full pass does, in every field; where it declines, nothing of it shows."""
    pdir = tmp_path_factory.mktemp("whole") / "t-0"
    bases = _write_partition(
        pdir, segments, -1 if previous is None else previous, log_damage, interval
    )
    at = bases[changed % len(bases)]
    index, times = pdir / layout.index_file_name(at), pdir / layout.time_index_file_name(at)
    if index.exists():
        index.write_bytes(_damage(index.read_bytes(), index_damage))
    if change == "no_time_index" and times.exists():
        times.unlink()
    elif change == "empty_time_index" and times.exists():
        times.write_bytes(b"")
    elif change == "preallocated" and index.exists():
        index.write_bytes(index.read_bytes() + bytes(64))
        times.write_bytes(times.read_bytes() + bytes(72))
    elif change == "txn_index":  # an aborted transaction, in or past the segment
        (pdir / layout.segment_file_name(at, ".txnindex")).write_bytes(
            TXN_ENTRY.pack(0, 7, at, at + 1, at)
        )
    config = Settings(index_interval_bytes=interval, message_max_bytes=message_max_bytes)
    taken = scan_path(DISK, str(pdir), config)
    with mock.patch.object(segment_scan, "take_quiet_segment", _declined):
        in_full = scan_path(DISK, str(pdir), config)
    assert repr(taken) == repr(in_full)


def test_a_clean_segment_is_taken_whole(tmp_path, monkeypatch):
    """The path the property above holds equal is the one a healthy log takes (else it would
    hold nothing): each of three clean segments of rising epochs is taken whole."""
    pdir = tmp_path / "t-0"
    offset = -1
    for epoch in (0, 0, 3):
        base = offset + 1
        raw, offset = _segment_bytes([(1, epoch, 3, 300, False)] * 20, offset)
        write_segment(pdir, base, raw)
    taken = []
    real = segment_scan.take_quiet_segment

    def recorded(*args, **kwargs) -> bool:
        taken.append(real(*args, **kwargs))
        return taken[-1]

    monkeypatch.setattr(segment_scan, "take_quiet_segment", recorded)
    scan = scan_path(DISK, str(pdir), Settings())
    assert taken == [True, True, True] and scan.clean
    assert [s.strict_epochs[0][0] for s in scan.partitions[0].segments] == [0, 0, 3]


def test_segments_based_near_the_end_of_the_offsets_are_scanned_batch_by_batch(tmp_path):
    """Offsets past 2^62 would overflow the C call's int64s (base + a 31-bit relative offset):
    such a segment goes through the per-batch path, with the same findings."""
    pdir = tmp_path / "t-0"
    base = 2**63 - 100
    raw, _ = _segment_bytes([(1, 0, 1, 10, False)] * 5, base - 1)
    write_segment(pdir, base, raw, indexes=False)
    config = Settings(message_max_bytes=2**70)
    with_runs = scan_path(DISK, str(pdir), config)
    with mock.patch.object(segment_scan, "QuietBatches", lambda *_: None):
        assert repr(with_runs) == repr(scan_path(DISK, str(pdir), config))
    assert with_runs.partitions[0].segments[0].last_offset == base + 4
