"""Undo is crash-safe and idempotent: a power loss at any operation of an undo, followed by
another undo, restores the pre-repair log dir byte for byte; and undo refuses a log dir that
changed since the repair instead of overwriting newer bytes."""

from __future__ import annotations

import pytest

from logrepair.recovery import journal
from logrepair.recovery.invariants import tree_digest
from logrepair.recovery.logdir_state import LogDirChanged
from logrepair.recovery.repair import RepairRefused, repair
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import layout
from simulator.disk import SimDisk

from .builders import DISK, append_bytes, batches, flip_byte, segment_files, write_segment
from .crashes import QUARANTINE, ROOT, after_crash, damaged_log_dir, every_crash, run_until, under


def _repaired(tmp_path, mode):
    """(the damaged image, the repaired disk as a power loss right after the repair leaves it,
    the run's quarantine)."""
    image = damaged_log_dir(tmp_path)
    result = {}

    def run(disk):
        result["r"] = repair(disk, ROOT, mode, Settings())

    disk, finished = run_until(image, run, None)
    assert finished and result["r"].quarantine is not None
    # the repair made everything durable before it returned
    assert under(disk.durable_image()) == under(disk.volatile_image())
    return image, disk.durable_image(), result["r"].quarantine


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_a_crash_at_any_operation_of_undo_is_finished_by_the_next_undo(tmp_path, mode):
    original, repaired, qdir = _repaired(tmp_path, mode)
    before = under(original)

    def run(disk):
        return undo(disk, qdir)

    reference, finished = run_until(repaired, run, None)
    assert finished and under(reference.volatile_image()) == before
    total = len(reference.trace)
    assert total > 20
    for where, disk in every_crash(repaired, run, total):
        run(disk)
        assert under(disk.volatile_image()) == before, f"{mode}: {where}"
        assert journal.Journal.load(disk, qdir).state == journal.UNDONE
        assert undo(disk, qdir).files == []


def test_a_repair_refuses_a_log_dir_whose_undo_was_interrupted(tmp_path):
    _, repaired, qdir = _repaired(tmp_path, "salvage")
    reference, _ = run_until(repaired, lambda disk: undo(disk, qdir), None)
    crashed, _ = run_until(repaired, lambda disk: undo(disk, qdir), len(reference.trace) // 2)
    disk = after_crash(crashed)[1]
    assert journal.Journal.load(disk, qdir).state == journal.UNDOING
    with pytest.raises(RepairRefused, match="run `logrepair undo .*` to finish it first"):
        repair(disk, ROOT, "salvage", Settings())
    assert undo(disk, qdir).notes == [f"finishing the interrupted undo of {qdir}"]
    assert QUARANTINE in qdir


@pytest.fixture
def repaired_dir(log_dir):
    """A real log dir after a salvage repair: (the dir, the run's quarantine)."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 6))
    write_segment(pdir, 6, batches(6, 6), indexes=False)
    flip_byte(segment_files(pdir)[0], 400)
    result = repair(DISK, str(log_dir), "salvage", Settings())
    assert result.quarantine is not None
    return log_dir, result.quarantine


def _refused(log_dir, qdir, match: str) -> None:
    after = tree_digest(DISK, str(log_dir))
    with pytest.raises(LogDirChanged, match=match):
        undo(DISK, qdir)
    assert tree_digest(DISK, str(log_dir)) == after, "a refused undo changed the log dir"
    assert journal.Journal.load(DISK, qdir).state == journal.DONE


def test_undo_refuses_an_index_rewritten_since_the_repair(repaired_dir):
    log_dir, qdir = repaired_dir
    index = log_dir / "t-0" / layout.time_index_file_name(6)
    flip_byte(index, 0)  # the same size: only the CRC the journal kept tells
    _refused(log_dir, qdir, r"t-0/00000000000000000006\.timeindex was rewritten since the repair")


def test_undo_refuses_a_segment_appended_to_since_the_repair(repaired_dir):
    log_dir, qdir = repaired_dir
    append_bytes(segment_files(log_dir / "t-0")[-1], batches(12, 1)[0])
    _refused(log_dir, qdir, r"\.log went from \d+ to \d+ bytes since the repair")


def test_undo_refuses_a_segment_a_broker_rolled_since_the_repair(repaired_dir):
    log_dir, qdir = repaired_dir
    write_segment(log_dir / "t-0", 12, batches(12, 1))
    _refused(log_dir, qdir, r"00000000000000000012\.index, .* appeared since the repair")


def test_undo_refuses_a_checkpoint_rewritten_since_the_repair(repaired_dir):
    log_dir, qdir = repaired_dir
    run = journal.Journal.load(DISK, qdir)
    written = [a["file"] for a in run.data["actions"] if a["action"] == "write_file"]
    assert written
    target = log_dir / written[0]
    target.write_bytes(target.read_bytes() + b"\n")
    _refused(log_dir, qdir, "since the repair; refusing to undo")


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_a_repair_interrupted_at_any_operation_is_rolled_back_by_undo(tmp_path, mode):
    """Never neither: whatever operation a crash stopped the repair at, `undo` of its run puts
    back the log dir as it was (a run still saving is discarded; one applying is rolled back
    from its count of actions applied)."""
    image = damaged_log_dir(tmp_path)

    def run(disk):
        return repair(disk, ROOT, mode, Settings())

    reference, _ = run_until(image, run, None)
    states = set()
    for where, disk in every_crash(image, run, len(reference.trace)):
        for found in journal.runs_under(disk, QUARANTINE):
            states.add(found.state)
            undo(disk, found.qdir)
        assert under(disk.volatile_image()) == under(image), f"{mode}: {where}"
    assert {journal.SAVING, journal.APPLYING, journal.DONE} <= states


def test_a_crash_at_any_operation_of_a_roll_back_is_finished_by_the_next_undo(tmp_path):
    image = damaged_log_dir(tmp_path)

    def run(disk):
        return repair(disk, ROOT, "salvage", Settings())

    reference, _ = run_until(image, run, None)
    crashed, _ = run_until(image, run, len(reference.trace) * 3 // 4)
    interrupted = after_crash(crashed)[1].volatile_image()
    [qdir] = [j.qdir for j in journal.runs_under(SimDisk.from_image(interrupted), QUARANTINE)]
    assert journal.Journal.load(SimDisk.from_image(interrupted), qdir).state == journal.APPLYING

    def roll_back(disk):
        return undo(disk, qdir)

    rolled, _ = run_until(interrupted, roll_back, None)
    assert under(rolled.volatile_image()) == under(image)
    for where, disk in every_crash(interrupted, roll_back, len(rolled.trace)):
        roll_back(disk)
        assert under(disk.volatile_image()) == under(image), where
