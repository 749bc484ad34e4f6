"""KRaft's metadata log after a repair (`recovery/modes/kraft.py`): the raft layer, not LogManager,
loads `__cluster_metadata-0` (from offset 0 at every start, checkpoints ignored), then fails when
the log starts above 0 with no snapshot at or past its start, and empties the log up to its latest
snapshot when that is past the log end. The plan says where either happens; against the real
broker: tests/kafka/test_broker_e2e.py."""

from __future__ import annotations

import pytest

from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.storage import layout
from logrepair.storage.osdisk import OsDisk

from .builders import batches, flip_byte, write_offsets, write_segment

META = f"{layout.CLUSTER_METADATA_TOPIC}-0"


def _notes(log_dir, mode: str) -> list[str]:
    result = repair(OsDisk(), str(log_dir), mode, Settings(), dry_run=True)
    return [n for n in result.plan.notes if n.startswith(META)]


def _snapshot(pdir, offset: int, epoch: int = 1) -> None:
    (pdir / layout.kraft_snapshot_file_name(offset, epoch)).write_bytes(b"")


@pytest.mark.parametrize("mode", ["kafka", "point-in-time", "salvage"])
def test_a_cut_below_the_latest_snapshot_is_said_to_empty_the_log(tmp_path, mode):
    pdir = tmp_path / META
    write_segment(pdir, 0, batches(0, 20))
    _snapshot(pdir, 12)
    flip_byte(pdir / layout.log_file_name(0), 5 * len(batches(0, 1)[0]) + 40)  # batch 5
    notes = _notes(tmp_path, mode)
    if mode == "salvage":  # the batches after the flip are kept: the log ends past the snapshot
        assert notes == []
    else:
        (note,) = notes
        assert f"{layout.kraft_snapshot_file_name(12, 1)} is past the log end 5" in note
        assert "starts it at 12" in note


def test_the_checkpoints_do_not_apply_to_the_metadata_log(tmp_path):
    """A recovery point past a bit flip keeps it in a LogManager log; the raft layer recovers
    from 0, cuts there and drops the next segment, and so does kafka mode."""
    pdir = tmp_path / META
    write_segment(pdir, 0, batches(0, 10))
    write_segment(pdir, 10, batches(10, 10))
    offsets = {(layout.CLUSTER_METADATA_TOPIC, 0): 15}
    write_offsets(tmp_path, layout.RECOVERY_POINT_CHECKPOINT, offsets)
    flip_byte(pdir / layout.log_file_name(0), 5 * len(batches(0, 1)[0]) + 40)
    result = repair(OsDisk(), str(tmp_path), "kafka", Settings(), dry_run=True)
    actions = {(a.action, a.file.rpartition("/")[2]) for a in result.plan.actions}
    assert ("truncate", layout.log_file_name(0)) in actions
    assert ("delete", layout.log_file_name(10)) in actions


def test_a_log_starting_above_every_snapshot_is_said_to_stop_the_broker(tmp_path):
    pdir = tmp_path / META
    write_segment(pdir, 10, batches(10, 10))
    _snapshot(pdir, 5)
    (note,) = _notes(tmp_path, "kafka")
    assert "start at offset 10 with no KRaft snapshot at or past it" in note
    assert "the broker does not start" in note
    _snapshot(pdir, 10)
    assert _notes(tmp_path, "kafka") == []


def test_salvage_moving_the_first_batch_past_offset_0_is_said_to_stop_the_broker(tmp_path):
    """salvage names the batches after a flipped first batch `1.log`: the log would start at 1,
    and a young cluster has no snapshot there; kafka mode cuts segment 0 and keeps its name."""
    pdir = tmp_path / META
    write_segment(pdir, 0, batches(0, 20))
    flip_byte(pdir / layout.log_file_name(0), 40)
    (note,) = _notes(tmp_path, "salvage")
    assert "start at offset 1 with no KRaft snapshot" in note
    assert _notes(tmp_path, "kafka") == []
