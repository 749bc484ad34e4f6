"""Salvage writes the indexes of the segments its split makes from the scan's own pass, and
point-in-time those of the segment it cuts (issue 16.4): they must be the very bytes a rebuild from
the repaired `.log` gives, or Kafka's next recovery of the segment would disagree with them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.recovery import indexes
from logrepair.recovery.settings import Settings
from logrepair.storage import layout

from .builders import DISK, batch, flip_byte, write_offsets, write_segment
from .checks import repair_checked


def _segment(sizes: list[int], stamps: list[int]) -> tuple[list[bytes], list[int]]:
    """Batches of varied size and timestamps (not always rising: the time index keeps a running
    maximum), and where each starts."""
    out, starts, offset, position = [], [], 0, 0
    for n, ts in zip(sizes, stamps, strict=True):
        b = batch(offset, n=n, ts=ts)
        out.append(b)
        starts.append(position)
        offset += n
        position += len(b)
    return out, starts


def _index_actions(result) -> tuple[set[str], set[str]]:
    rebuilt = {a.file for a in result.plan.actions if a.action == "rebuild_indexes"}
    written = {a.file for a in result.plan.actions if a.action == "write_file"}
    return rebuilt, written


@pytest.mark.parametrize("mode", ["salvage", "point-in-time"])
@settings(max_examples=20)
@given(
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 40)), min_size=3, max_size=40),
    st.sets(st.integers(0, 39), min_size=1, max_size=3),
    st.sampled_from([1, 300, 1000, 4096]),
)
def test_kept_segments_get_the_indexes_a_rebuild_from_the_log_gives(mode, shape, bad, interval):
    sizes = [n for n, _ in shape]
    stamps = [1_700_000_000_000 + 7 * ts for _, ts in shape]
    data, starts = _segment(sizes, stamps)
    bad = sorted(i for i in bad if i < len(data))
    root = Path(tempfile.mkdtemp(prefix="salvage-indexes-"))
    try:
        log_dir = root / "kafka-logs"
        pdir = log_dir / "t-0"
        write_segment(pdir, 0, data, interval=interval)
        write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 0})
        for i in bad:
            flip_byte(pdir / layout.log_file_name(0), starts[i] + 70)  # inside the CRC's range
        result = repair_checked(log_dir, mode, Settings(index_interval_bytes=interval))
        rebuilt, written = _index_actions(result)
        # every kept piece's indexes came from the scan (an emptied segment has nothing to read)
        assert all((log_dir / f).stat().st_size == 0 for f in rebuilt), rebuilt
        for log in sorted(pdir.glob("*.log")):
            expected = indexes.rebuild(DISK, str(log), interval)
            for path, content in expected:
                assert Path(path).read_bytes() == content, (path, bad, interval)
        # the scan's indexes were used where something is kept past the damage (salvage) or
        # before it (point-in-time)
        if mode == "salvage" and bad and bad[-1] < len(data) - 1:
            assert written
        if mode == "point-in-time" and bad and bad[0] > 0:
            assert written
    finally:
        shutil.rmtree(root)
