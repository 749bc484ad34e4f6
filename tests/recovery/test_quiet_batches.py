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
    segments=st.lists(st.lists(batch_plans, min_size=1, max_size=12), min_size=1, max_size=3),
    interval=st.sampled_from([0, 100, 4096]),
    log_damage=mutations,
    index_damage=mutations,
    message_max_bytes=st.sampled_from([1 << 20, 1000, 0, 2**70]),
)
def test_a_scan_with_quiet_runs_is_the_scan_batch_by_batch(
    tmp_path_factory, segments, interval, log_damage, index_damage, message_max_bytes
):
    pdir = tmp_path_factory.mktemp("quiet") / "t-0"
    offset = -1
    for k, plans in enumerate(segments):
        base = max(0, offset + 1)
        raw, offset = _segment_bytes(plans, offset)
        if k == len(segments) - 1:
            raw = _damage(raw, log_damage)
        try:
            write_segment(pdir, base, raw, interval=interval)
        except ValueError:  # (offsets going back: no index Kafka's rule would write)
            write_segment(pdir, base, raw, indexes=False)
    index = pdir / layout.index_file_name(0)
    if index.exists():
        index.write_bytes(_damage(index.read_bytes(), index_damage))
    config = Settings(index_interval_bytes=interval, message_max_bytes=message_max_bytes)
    with_runs = scan_path(DISK, str(pdir), config)
    with mock.patch.object(segment_scan, "QuietBatches", lambda *_: None):
        batch_by_batch = scan_path(DISK, str(pdir), config)
    assert repr(with_runs) == repr(batch_by_batch)


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
