"""Apply changes only what its run owns, refuses before any change what it cannot write, and an
I/O error leaves a state its one line names: untouched, or journaled (finish by re-running, or roll
back by undo) — never neither."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from logrepair.recovery import apply, journal
from logrepair.recovery.apply import JournalError
from logrepair.recovery.invariants import tree_digest
from logrepair.recovery.plan import Action, Plan
from logrepair.recovery.repair import RepairFailed, repair
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import layout
from simulator.disk import IoFault, SimDisk

from .builders import DISK, batches, flip_byte, segment_files, write_offsets, write_segment
from .crashes import QUARANTINE, ROOT, damaged_log_dir, run_until, under


def test_undo_never_touches_a_file_the_run_did_not_make(log_dir):
    """Stray `<file>.undo` and `<file>.tmp` beside every file a repair rewrites: the `.undo` ones
    are never touched, the `.tmp` ones (leftovers Kafka ignores) are quarantined and put back;
    the run's own temporary names never meet them."""
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 6))
    flip_byte(segment_files(pdir)[0], 400)
    write_offsets(log_dir, layout.RECOVERY_POINT_CHECKPOINT, {("t", 0): 9})
    strays = [
        p.with_name(p.name + suffix)
        for p in (*pdir.iterdir(), log_dir / layout.RECOVERY_POINT_CHECKPOINT)
        for suffix in (".undo", ".tmp")
        if p.is_file()
    ]
    for n, stray in enumerate(strays):
        stray.write_bytes(b"not the tool's %d" % n)
    before = tree_digest(DISK, str(log_dir))
    result = repair(DISK, str(log_dir), "salvage", Settings())
    assert {a.action for a in result.plan.actions} >= {"truncate", "write_file"}
    undo_strays = {s.name: s.read_bytes() for s in strays if s.name.endswith(".undo")}
    done = undo(DISK, result.quarantine)
    assert tree_digest(DISK, str(log_dir)) == before
    assert {
        n: (pdir.parent / n if "checkpoint" in n else pdir / n).read_bytes() for n in undo_strays
    } == undo_strays
    said = [rel for _, rel in done.files]
    assert len(said) == len(set(said)), said
    assert not any(rel.endswith(".undo") for rel in said), said
    # a `.tmp` is named only where one was there before the repair, which moved it away
    tmps = [(what, rel) for what, rel in done.files if rel.endswith(".tmp")]
    assert tmps and all(what == "put back" for what, _ in tmps), tmps


def test_undo_says_removed_for_what_the_repair_created(log_dir):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 6), indexes=False)  # the repair creates its indexes
    flip_byte(segment_files(pdir)[0], 400)
    result = repair(DISK, str(log_dir), "kafka", Settings())
    done = undo(DISK, result.quarantine)
    assert ("removed", "t-0/00000000000000000000.index") in done.files
    assert ("restored", "t-0/00000000000000000000.log") in done.files
    assert not any(what == "restored" and rel.endswith(".index") for what, rel in done.files)
    assert done.lines()[-1].startswith("undone: ")


def test_a_symlinked_checkpoint_is_never_written_through(log_dir, tmp_path):
    write_segment(log_dir / "t-0", 0, batches(0, 6))
    outside = tmp_path / "outside-checkpoint"
    outside.write_text("0\n1\nt 0 99\n")  # past the log end
    (log_dir / layout.REPLICATION_CHECKPOINT).symlink_to(outside)
    repair(DISK, str(log_dir), "salvage", Settings())  # the plan leaves it, or apply refuses it
    assert outside.read_text() == "0\n1\nt 0 99\n"
    assert (log_dir / layout.REPLICATION_CHECKPOINT).is_symlink()
    # and apply itself refuses a plan that would, before its run dir exists
    plan = Plan("salvage", str(log_dir))
    plan.actions.append(
        Action("write_file", layout.REPLICATION_CHECKPOINT, "test", content=b"0\n0\n")
    )
    qdir = tmp_path / "q" / "run"
    with pytest.raises(JournalError, match="is a symbolic link; a repair never writes through"):
        apply.start(DISK, plan, str(qdir), {})
    assert not qdir.exists() and outside.read_text() == "0\n1\nt 0 99\n"


def _full(image, capacity: int) -> SimDisk:
    return SimDisk.from_image(image, capacity=capacity)


def test_a_full_disk_while_saving_leaves_the_log_dir_untouched(tmp_path):
    image = damaged_log_dir(tmp_path)
    used = sum(len(d) for d in image.files.values())
    disk = _full(image, used + 100)
    with pytest.raises(RepairFailed) as failed:
        repair(disk, ROOT, "salvage", Settings())
    line = str(failed.value)
    assert failed.value.errno == errno.ENOSPC
    assert "while saving what the plan removes: the log dir is untouched" in line, line
    assert f"the quarantine under {QUARANTINE} needs up to" in line
    assert "\n" not in line
    assert under(disk.volatile_image()) == under(image)
    assert journal.runs_under(disk, QUARANTINE) == []  # the partial run is gone


def test_a_full_disk_while_applying_is_journaled_and_either_undone_or_finished(tmp_path):
    image = damaged_log_dir(tmp_path)
    reference = SimDisk.from_image(image)
    repair(reference, ROOT, "salvage", Settings())
    used = sum(len(d) for d in image.files.values())
    failure = ""
    for capacity in range(used, used + 40_000, 500):
        disk = _full(image, capacity)
        try:
            repair(disk, ROOT, "salvage", Settings())
        except RepairFailed as e:
            failure = str(e)
            if "while applying" in failure:
                break
    else:
        pytest.fail(f"no capacity made the apply step fail: {failure}")
    assert "re-run the same command to finish it, or `logrepair undo" in failure
    [run] = journal.runs_under(disk, QUARANTINE)
    assert run.state == journal.APPLYING
    rolled = SimDisk.from_image(disk.volatile_image())
    undo(rolled, run.qdir)
    assert under(rolled.volatile_image()) == under(image)
    finished = SimDisk.from_image(disk.volatile_image())
    result = repair(finished, ROOT, "salvage", Settings())
    assert [s.done for s in result.settled] == ["completed"]
    assert under(finished.volatile_image()) == under(reference.volatile_image())


def test_a_device_as_a_segment_is_never_cut_nor_makes_a_repair_fail_half_way(log_dir, tmp_path):
    pdir = log_dir / "t-0"
    write_segment(pdir, 0, batches(0, 6))
    flip_byte(segment_files(pdir)[0], 400)
    device = pdir / layout.log_file_name(6)
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device needs root")
    before = tree_digest(DISK, str(log_dir))
    try:
        repair(DISK, str(log_dir), "salvage", Settings())  # left as it is, or refused
    except JournalError as e:
        assert "nothing was changed" in str(e)
        assert tree_digest(DISK, str(log_dir)) == before
    assert stat.S_ISCHR(device.lstat().st_mode)
    plan = Plan("salvage", str(log_dir))
    plan.actions.append(Action("truncate", f"t-0/{device.name}", "test", size=0))
    qdir = tmp_path / "q" / "run"
    with pytest.raises(JournalError, match=r"is not a regular file but a character device"):
        apply.start(DISK, plan, str(qdir), {})
    assert not qdir.exists()


@pytest.mark.parametrize("kind", IoFault.KINDS)
def test_every_io_error_leaves_a_state_its_line_names_and_never_neither(tmp_path, kind):
    """An I/O error at the n-th call of its kind, for many n: the run succeeds, or fails with one
    line saying the log dir is untouched (and it is), or that the run is journaled — and then a
    re-run finishes it to the uninterrupted result, and undo rolls it back to the original."""
    image = damaged_log_dir(tmp_path)
    reference = SimDisk.from_image(image)
    repair(reference, ROOT, "salvage", Settings())
    said = set()
    for nth in range(0, 60, 4):
        disk = SimDisk.from_image(image, io_faults=[IoFault(kind, nth, "/")])
        try:
            repair(disk, ROOT, "salvage", Settings())
            continue
        except RepairFailed as e:
            line = str(e)
        assert "\n" not in line
        if "the log dir is untouched" in line or "nothing was changed" in line:
            said.add("untouched")
            assert under(disk.volatile_image()) == under(image), line
            continue
        assert "re-run the same command to finish it" in line, line
        said.add("journaled")
        finished = SimDisk.from_image(disk.volatile_image())
        repair(finished, ROOT, "salvage", Settings())
        assert under(finished.volatile_image()) == under(reference.volatile_image()), line
        rolled = SimDisk.from_image(disk.volatile_image())
        for run in journal.runs_under(rolled, QUARANTINE):
            undo(rolled, run.qdir)
        assert under(rolled.volatile_image()) == under(image), line
    assert said, f"no {kind} fault hit the run"


def test_an_interrupted_run_whose_quarantine_was_removed_is_said_not_silently_dropped(tmp_path):
    image = damaged_log_dir(tmp_path)

    def run(disk):
        return repair(disk, ROOT, "salvage", Settings())

    reference, _ = run_until(image, run, None)
    crashed, _ = run_until(image, run, len(reference.trace) // 2)
    disk = SimDisk.from_image(crashed.volatile_image())
    [interrupted] = journal.runs_under(disk, QUARANTINE)
    assert interrupted.state == journal.APPLYING
    for name in disk.list_dir(interrupted.qdir):  # removed by hand
        if not disk.is_dir(f"{interrupted.qdir}/{name}"):
            disk.unlink(f"{interrupted.qdir}/{name}")
    result = run(disk)
    assert any(f"journaled in {interrupted.qdir}, which is gone" in n for n in result.plan.notes)
    assert not disk.exists(f"{ROOT}/{journal.PENDING_MARKER}")


@pytest.mark.parametrize("kind", ["eio_write", "eio_fsync"])
def test_an_io_error_during_undo_says_how_to_finish_it(tmp_path, kind):
    image = damaged_log_dir(tmp_path)
    repaired = SimDisk.from_image(image)
    qdir = repair(repaired, ROOT, "salvage", Settings()).quarantine
    for nth in range(0, 30, 3):
        disk = SimDisk.from_image(repaired.volatile_image(), io_faults=[IoFault(kind, nth, "/")])
        try:
            undo(disk, qdir)
            continue
        except RepairFailed as e:
            line = str(e)
        if "nothing was changed" in line:
            continue
        assert f"run `logrepair undo {qdir}` again to finish it" in line, line
        again = SimDisk.from_image(disk.volatile_image())
        undo(again, qdir)
        assert under(again.volatile_image()) == under(image), line
        return
    pytest.fail(f"no {kind} fault stopped the undo half way")
