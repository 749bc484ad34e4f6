"""Damaged input never breaks the audit: every byte ends in a batch or a finding, never a crash."""

from __future__ import annotations

import os
import shutil

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.audit.local import audit_paths
from logrepair.audit.model import SegmentTask
from logrepair.audit.spark import pack_bins
from logrepair.storage.layout import TopicPartition

from .fleetgen import LogDirSpec, PartitionSpec, history, write_log_dir

T0 = TopicPartition("t", 0)
BATCHES = history(6, records=3)
CLEAN = b"".join(b.data for b in BATCHES)


@settings(max_examples=60)
@given(
    position=st.integers(0, len(CLEAN) - 1),
    junk=st.binary(min_size=1, max_size=200),
    truncate=st.booleans(),
)
def test_overwritten_or_cut_segment(tmp_path_factory, position, junk, truncate):
    root = str(tmp_path_factory.mktemp("damage"))
    write_log_dir(
        os.path.join(root, "b1"), LogDirSpec(partitions={T0: PartitionSpec(BATCHES, 100)})
    )
    log = os.path.join(root, "b1", "t-0", "00000000000000000000.log")
    data = (
        CLEAN[:position] + junk
        if truncate
        else CLEAN[:position] + junk + CLEAN[position + len(junk) :]
    )
    with open(log, "wb") as f:
        f.write(data)
    try:
        report = audit_paths([os.path.join(root, "b1")])
    finally:
        shutil.rmtree(root)
    (p,) = report.partitions
    assert p.bytes == len(data)
    assert 0 <= p.log_end_offset <= 2**31  # a segment holds offsets base..base + Int.MAX
    if data == CLEAN:  # the junk rewrote bytes with themselves
        assert not p.findings and p.log_end_offset == 18


def test_unreadable_segment_is_a_finding(tmp_path):
    write_log_dir(str(tmp_path / "b1"), LogDirSpec(partitions={T0: PartitionSpec(BATCHES)}))
    log = tmp_path / "b1" / "t-0" / "00000000000000000000.log"
    log.unlink()
    log.mkdir()  # listed as a segment, but reading it fails
    report = audit_paths([str(tmp_path / "b1")])
    assert "unreadable_segment" in {f.kind for f in report.partitions[0].findings}


def test_bins_balance_bytes():
    tasks = [
        SegmentTask("d", "p", "t", 0, f"f{i}", i, size, i)
        for i, size in enumerate([100, 90, 50, 40, 30, 20, 10, 10, 5, 5])
    ]
    bins = pack_bins(tasks, 3)
    loads = sorted(sum(t.size for t in b) for b in bins)
    assert loads == [120, 120, 120]
    assert sorted(t.file for b in bins for t in b) == sorted(t.file for t in tasks)
    assert pack_bins(tasks[:2], 8) == [[tasks[0]], [tasks[1]]]
    assert pack_bins([], 4) == []
