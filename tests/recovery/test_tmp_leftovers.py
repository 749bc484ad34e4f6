"""`.tmp` files of interrupted checkpoint writes: removed by every mode and restored by undo; the
repair's own writes go through temporary names of its run, so a `.tmp` it did not make is never
written over."""

from __future__ import annotations

import pytest

from logrepair.recovery import apply, indexes, journal
from logrepair.recovery.invariants import tree_digest
from logrepair.recovery.rebuild import plan_rebuild
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import layout
from simulator.disk import DiskImage, SimDisk

from .builders import DISK, batches, write_offsets, write_segment
from .checks import repair_checked
from .crashes import under

MODES = ("kafka", "point-in-time", "salvage")


def _log_dir_with_tmp_leftovers(log_dir):
    write_segment(log_dir / "t-0", 0, batches(0, 4))
    # a recovery point past the end: every mode rewrites the checkpoint whose `.tmp` is left
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 9})
    (log_dir / (layout.RECOVERY_POINT_CHECKPOINT + ".tmp")).write_text("0\n1\nt 0 ")
    (log_dir / (layout.REPLICATION_CHECKPOINT + ".tmp")).write_text("0\n")


@pytest.mark.parametrize("mode", MODES)
def test_root_tmp_leftovers_are_removed_and_undo_puts_them_back(log_dir, mode):
    _log_dir_with_tmp_leftovers(log_dir)
    kinds = sorted(f.kind for f in scan_path(DISK, str(log_dir), Settings()).all_findings())
    assert kinds == ["recovery_point_beyond_end", "tmp_leftover", "tmp_leftover"]
    # checks verify is clean afterwards, and that undo restores every byte
    result = repair_checked(log_dir, mode)
    assert not any(p.name.endswith(".tmp") for p in log_dir.iterdir())
    assert result.quarantine is not None


def test_an_index_rebuild_never_touches_a_tmp_someone_else_left(tmp_path):
    """The rebuild writes through a temporary name of its own run, never `<index>.tmp`."""
    pdir = tmp_path / "t-0"
    write_segment(pdir, 0, batches(0, 30), interval=100)
    index = pdir / layout.index_file_name(0)
    index.write_bytes(index.read_bytes()[:-8])  # stale: rebuild-index rewrites it
    (pdir / (index.name + ".tmp")).write_bytes(b"left by someone else")
    before = tree_digest(DISK, str(pdir))
    plan = plan_rebuild(DISK, scan_path(DISK, str(pdir), Settings(index_interval_bytes=100)))
    assert [a.action for a in plan.actions] == ["rebuild_indexes"]
    qdir = str(tmp_path / "quarantine")
    run = apply.start(DISK, plan, qdir, {}, validated=False)
    apply.run(run, indexes.rebuild)
    assert (pdir / (index.name + ".tmp")).read_bytes() == b"left by someone else"
    undo(DISK, qdir)
    assert tree_digest(DISK, str(pdir)) == before


ROOT = "/kafka-logs"


class _PowerLoss(BaseException):
    """Stops the repair at a chosen operation (BaseException: no handler in the code eats it)."""


def test_a_crash_after_the_tmp_is_quarantined_never_replaces_the_saved_copy(tmp_path):
    """Replaying the `.tmp`'s delete after the checkpoint write re-created that name must not move
    the new file over the quarantined original."""
    real = tmp_path / "kafka-logs"
    real.mkdir()
    _log_dir_with_tmp_leftovers(real)
    files = {
        f"{ROOT}/{p.relative_to(real)}": p.read_bytes() for p in real.rglob("*") if p.is_file()
    }
    image = DiskImage(files, {ROOT, f"{ROOT}/t-0"})
    reference = SimDisk.from_image(image)
    repair(reference, ROOT, "salvage", Settings())
    for stop in range(1, len(reference.trace)):
        disk = SimDisk.from_image(image)

        def listener(op, disk=disk, stop=stop) -> None:
            if len(disk.trace) >= stop:
                raise _PowerLoss()

        disk.listeners.append(listener)
        try:
            repair(disk, ROOT, "salvage", Settings(), quarantine_root="/q")
        except _PowerLoss:
            pass
        second = SimDisk.from_image(disk.volatile_image())
        repair(second, ROOT, "salvage", Settings(), quarantine_root="/q")
        runs = [f"/q/{n}" for n in second.list_dir("/q")] if second.exists("/q") else []
        for qdir in reversed(runs):
            if (
                second.exists(f"{qdir}/{journal.MANIFEST}")
                and journal.Journal.load(second, qdir).state == journal.DONE
            ):
                undo(second, qdir)
        assert under(second.volatile_image()) == files, (
            f"crash after operation {stop}: undo did not restore the log dir"
        )
