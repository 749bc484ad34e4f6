"""The loss report is what the repair did, held to the files: after any mode's repair of a
partition with corrupt batches, an emptied middle segment and a torn tail, the offsets it calls
acknowledged and lost are exactly those below the high watermark the repaired log no longer holds,
every valid batch that is gone is among the offsets it says it removed, and none it says it removed
is still there."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from logrepair.recovery import notation
from logrepair.recovery.invariants import inventory
from logrepair.recovery.planner import MODES
from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.storage import layout

from .builders import BATCH_SIZE, DISK, batches, flip_byte, truncate, write_offsets, write_segment


def offsets_held(d: Path) -> set[int]:
    """The offsets of the CRC-valid batches the partition's files hold."""
    held: set[int] = set()
    for batch_ids in inventory(DISK, str(d)).values():
        for b in batch_ids:
            held.update(range(b.base_offset, b.last_offset + 1))
    return held


def as_set(ranges) -> set[int]:
    return {o for first, last in ranges for o in range(first, last + 1)}


@settings(max_examples=300 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 15)
@given(
    mode=st.sampled_from(MODES),
    flips=st.lists(st.integers(0, 29), max_size=2, unique=True),
    hole=st.booleans(),
    torn=st.integers(0, BATCH_SIZE - 1),
    high_watermark=st.integers(0, 34),
    recovery_point=st.sampled_from([0, 10, 20, 30]),
)
def test_the_loss_report_is_what_the_repair_did(
    mode, flips, hole, torn, high_watermark, recovery_point
):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "kafka-logs"
        pdir = d / "t-0"
        for base in (0, 10, 20):
            write_segment(pdir, base, batches(base, 10))
        for offset in flips:
            base = offset // 10 * 10
            flip_byte(pdir / layout.log_file_name(base), (offset - base) * BATCH_SIZE + 100)
        if hole:
            (pdir / layout.log_file_name(10)).write_bytes(bytes(10 * BATCH_SIZE))
        if torn:
            truncate(pdir / layout.log_file_name(20), 10 * BATCH_SIZE - torn)
        write_offsets(d, layout.REPLICATION_CHECKPOINT, {("t", 0): high_watermark})
        write_offsets(d, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): recovery_point})
        write_offsets(d, layout.LOG_START_OFFSET_CHECKPOINT, {("t", 0): 0})
        before = offsets_held(d)
        result = repair(DISK, str(d), mode, Settings())
        after = offsets_held(d)
        losses = result.plan.partitions
        loss = losses[0] if losses else None
        # a corrupt batch a mode leaves as it is (kafka mode, below the recovery point) may be
        # counted either way: it is there, and unreadable
        left = {
            layout.offset_from_file_name(f["file"].rpartition("/")[2]) + k
            for f in result.plan.left
            if f["kind"] == "crc_mismatch"
            for k in range(f["position"] // BATCH_SIZE, (f["position"] + f["length"]) // BATCH_SIZE)
        }
        expected = notation.merge(
            (o, o) for o in range(high_watermark) if o not in after and o not in left
        )
        reported = as_set(loss.acknowledged_lost if loss else []) - left
        assert notation.merge((o, o) for o in reported) == expected
        removed = as_set(loss.removed_offsets) if loss else set()
        assert before - after <= removed
        assert not removed & after
        for first, last in loss.gaps if loss else []:
            assert not as_set([(first, last)]) & after
            assert last < loss.log_end_offset[1]  # a gap is never past the log end
        assert result.lost_data == bool(loss and loss.lost)
