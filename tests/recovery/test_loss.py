"""What a plan costs each partition (loss.py): ranges of one partition only, acknowledged offsets
held to that partition's own high watermark, the exit status following records and acknowledged
offsets, not bytes."""

from __future__ import annotations

import pytest

from logrepair.recovery.planner import MODES, make_plan
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage import layout

from .builders import BATCH_SIZE, DISK, batches, flip_byte, truncate, write_offsets, write_segment


def plan_for(log_dir, mode):
    return make_plan(scan_path(DISK, str(log_dir), Settings()), mode)


def by_name(plan):
    return {p.name: p for p in plan.partitions}


def test_ranges_of_two_partitions_are_never_merged(log_dir):
    # the example: damage at 34 in one partition and at 36 in another
    for name, bad in (("orders-0", 34), ("payments-0", 36)):
        write_segment(log_dir / name, 0, batches(0, 40))
        flip_byte(log_dir / name / layout.log_file_name(0), bad * BATCH_SIZE + 40)
    write_offsets(log_dir, layout.REPLICATION_CHECKPOINT, {("orders", 0): 40, ("payments", 0): 38})
    salvage = plan_for(log_dir, "salvage")
    losses = by_name(salvage)
    assert losses["orders-0"].removed_offsets == losses["orders-0"].gaps == [(34, 34)]
    assert losses["payments-0"].removed_offsets == [(36, 36)]
    assert salvage.removed_offsets == [(34, 34), (36, 36)]  # partition by partition
    pit = by_name(plan_for(log_dir, "point-in-time"))
    assert pit["orders-0"].removed_offsets == [(34, 39)]
    assert pit["payments-0"].removed_offsets == [(36, 39)]
    # acknowledged: below each partition's own high watermark only
    assert pit["orders-0"].acknowledged_lost == [(34, 39)]
    assert pit["payments-0"].acknowledged_lost == [(36, 37)]
    assert pit["payments-0"].high_watermark == (38, 36)


@pytest.mark.parametrize("mode", MODES)
def test_a_torn_tail_below_the_high_watermark_is_acknowledged_loss(log_dir, mode):
    write_segment(log_dir / "t-0", 0, batches(0, 10))
    truncate(log_dir / "t-0" / layout.log_file_name(0), 10 * BATCH_SIZE - 30)
    write_offsets(log_dir, layout.REPLICATION_CHECKPOINT, {("t", 0): 10})
    (loss,) = plan_for(log_dir, mode).partitions
    assert loss.removed_offsets == [] and loss.records_removed
    assert loss.acknowledged_lost == [(9, 9)] and loss.high_watermark == (10, 9)
    assert loss.lost


@pytest.mark.parametrize("mode", MODES)
def test_zero_padding_alone_is_no_loss(log_dir, mode):
    write_segment(log_dir / "t-0", 0, batches(0, 10))
    with open(log_dir / "t-0" / layout.log_file_name(0), "ab") as f:
        f.write(bytes(1000))
    write_offsets(log_dir, layout.REPLICATION_CHECKPOINT, {("t", 0): 10})
    plan = plan_for(log_dir, mode)
    (loss,) = plan.partitions
    assert loss.removed_bytes == 1000 and not loss.lost and plan.lost == []


def test_a_delete_dir_is_not_held_to_the_live_partitions_high_watermark(log_dir):
    write_segment(log_dir / "t-0", 0, batches(0, 20))
    dead = log_dir / "t-0.0123456789abcdef0123456789abcdef-delete"
    write_segment(dead, 0, batches(0, 5))
    truncate(dead / layout.log_file_name(0), 5 * BATCH_SIZE - 30)
    write_offsets(log_dir, layout.REPLICATION_CHECKPOINT, {("t", 0): 20})
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 20})
    plan = plan_for(log_dir, "salvage")
    (loss,) = plan.partitions
    assert loss.path == dead.name
    assert loss.high_watermark == (None, None) and loss.acknowledged_lost == []
    # the live partition's checkpoint entries are not held to the dead copy's log end
    assert not [
        a
        for a in plan.actions
        if a.action == "write_file" and not a.file.endswith((".index", ".timeindex"))
    ]
