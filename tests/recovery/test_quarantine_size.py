"""What a repair keeps costs what it must: a zero tail is a hole in the quarantine (and again in
the segment undo restores), and a segment hard-linked elsewhere (a `cp -al` snapshot) is cut by
writing a new file, so the snapshot keeps every byte — also across a crash at any operation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from logrepair.recovery import apply, indexes, journal
from logrepair.recovery.plan import Action, Plan
from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import layout
from simulator.disk import DiskImage

from .builders import DISK, batches, segment_files, write_segment
from .checks import repair_checked
from .crashes import QUARANTINE, ROOT, every_crash, image_of, run_until, under

GIB = 1 << 30


def test_a_sparse_zero_tail_of_a_gib_costs_nothing_in_the_quarantine(tmp_path):
    pdir = tmp_path / "kafka-logs" / "t-0"
    log = write_segment(pdir, 0, batches(0, 10))
    kept = log.stat().st_size
    os.truncate(log, kept + GIB)  # a preallocated (sparse) zero tail
    rel = f"t-0/{log.name}"
    plan = Plan("kafka", str(tmp_path / "kafka-logs"))
    plan.actions.append(Action("truncate", rel, "zero tail", size=kept, removed_bytes=GIB))
    run = apply.start(DISK, plan, str(tmp_path / "q" / "run"), {})
    apply.run(run, indexes.rebuild)
    assert log.stat().st_size == kept
    tail = tmp_path / "q" / "run" / "blobs" / "00000.tail"
    assert tail.stat().st_size == GIB and tail.stat().st_blocks * 512 < 1 << 20
    undo(DISK, run.qdir)
    assert log.stat().st_size == kept + GIB and log.stat().st_blocks * 512 < 1 << 20
    with open(log, "rb") as f:
        assert os.lseek(f.fileno(), kept, os.SEEK_DATA) >= kept  # bytes before: still there
        with pytest.raises(OSError):  # and nothing but a hole after
            os.lseek(f.fileno(), kept + 4096, os.SEEK_DATA)


def test_written_zeros_in_a_tail_become_holes_and_come_back_as_zeros(log_dir):
    """Zeros written as data (not a hole) mixed with junk: the quarantine keeps the junk and
    leaves the zero blocks as holes; undo restores every byte."""
    pdir = log_dir / "t-0"
    log = write_segment(pdir, 0, batches(0, 6))
    junk = os.urandom(5000) + bytes(4 << 20) + os.urandom(3000) + bytes(300_000)
    with open(log, "ab") as f:
        f.write(junk)
    result = repair_checked(log_dir, "kafka")  # undo restoring every byte is one of its checks
    tail = Path(result.quarantine) / "blobs" / "00000.tail"
    assert tail.stat().st_size == len(junk)
    assert tail.stat().st_blocks * 512 <= 256 * 1024  # the junk's blocks, not 4.5 MB


def test_a_hard_linked_segment_is_cut_as_a_new_file_and_the_snapshot_keeps_its_bytes(log_dir):
    pdir = log_dir / "t-0"
    log = write_segment(pdir, 0, batches(0, 6))
    with open(log, "ab") as f:
        f.write(os.urandom(500))  # a torn tail
    snapshot = log_dir.parent / "snapshot"
    snapshot.mkdir()
    os.link(log, snapshot / log.name)  # `cp -al`
    original = log.read_bytes()
    result = repair(DISK, str(log_dir), "kafka", Settings())
    [warning] = result.warnings
    assert f"t-0/{log.name} has 2 hard links" in warning
    assert (snapshot / log.name).read_bytes() == original
    assert log.stat().st_nlink == 1 and log.stat().st_size == len(original) - 500
    undo(DISK, result.quarantine)
    assert log.read_bytes() == original == (snapshot / log.name).read_bytes()


def _hard_linked_image(tmp_path) -> tuple[DiskImage, str]:
    """The damaged log dir of the crash tests, its first segment also linked from a snapshot."""
    d = tmp_path / "kafka-logs"
    pdir = d / "t-0"
    write_segment(pdir, 0, batches(0, 6))
    with open(segment_files(pdir)[0], "ab") as f:
        f.write(os.urandom(200))
    (d / layout.RECOVERY_POINT_CHECKPOINT).write_text("0\n1\nt 0 0\n")
    image = image_of(d)
    log = f"{ROOT}/t-0/{layout.log_file_name(0)}"
    linked = "/snapshot/" + layout.log_file_name(0)
    image.files[linked] = image.files[log]
    image.dirs.add("/snapshot")
    image.nodes = {log: 1, linked: 1}
    return image, linked


def test_a_crash_at_any_operation_never_changes_the_hard_linked_snapshot(tmp_path):
    image, linked = _hard_linked_image(tmp_path)

    def run(disk):
        return repair(disk, ROOT, "kafka", Settings())

    reference, _ = run_until(image, run, None)
    assert reference.links(linked) == 1  # the log dir's name now holds a new file
    expected = under(reference.volatile_image())
    for where, disk in every_crash(image, run, len(reference.trace)):
        assert disk.read_file(linked) == image.files[linked], where
        run(disk)
        assert disk.read_file(linked) == image.files[linked], where
        assert under(disk.volatile_image()) == expected, where
        for done in reversed(journal.runs_under(disk, QUARANTINE)):
            undo(disk, done.qdir)
        assert under(disk.volatile_image()) == under(image), where
