"""The repair journal records what a replay needs: a run that finishes an interrupted repair
rebuilds indexes with the batch-size cap the plan's scan used, not the default one."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from logrepair.format.batch_layout import Record
from logrepair.format.legacy import LegacyBatch, build_legacy_batch
from logrepair.recovery import apply, journal
from logrepair.recovery.interrupted import REPLAN
from logrepair.recovery.invariants import tree_digest
from logrepair.recovery.planner import make_plan
from logrepair.recovery.repair import RepairRefused, batch_caps, rebuild_indexes, repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage import layout
from logrepair.storage import scan as storage_scan
from logrepair.storage.index_builder import build_indexes

from .builders import DISK, T0, write_segment
from .crashes import ROOT, every_crash, image_of, run_until, under

SMALL_CAP = 1024


@pytest.fixture
def small_batch_cap(monkeypatch):
    """The default batch-size cap lowered to 1 KiB (as if 64 MiB were that small), so a batch
    above it costs 3 KiB rather than 64 MiB of test memory."""
    monkeypatch.setattr(storage_scan, "DEFAULT_MAX_BATCH_SIZE", SMALL_CAP)
    monkeypatch.setitem(storage_scan.LogScan.__init__.__kwdefaults__, "max_batch_size", SMALL_CAP)


RAISED = Settings(index_interval_bytes=100, message_max_bytes=4096)
"""message.max.bytes above the (lowered) default cap: the scan reads batches up to 4 KiB."""


def _legacy(offset: int, value_size: int) -> bytes:
    # legacy data: apply's header-only rebuild hands magic 0/1 to the checked scan, which is capped
    return build_legacy_batch([Record(offset, T0 + offset, b"k", bytes(value_size), ())], magic=1,
                              base_offset=offset)  # fmt: skip


def _log_dir_with_a_big_legacy_batch(tmp_path):
    d = tmp_path / "kafka-logs"
    (d / "t-0").mkdir(parents=True)
    (d / layout.RECOVERY_POINT_CHECKPOINT).write_text("0\n0\n")
    raw = [_legacy(0, 50), _legacy(1, 3000), *(_legacy(n, 50) for n in range(2, 8))]
    assert SMALL_CAP < len(raw[1]) < RAISED.max_batch_size
    log = write_segment(d / "t-0", 0, b"".join(raw) + b"\x00" * 30, indexes=False)
    expected = build_indexes([LegacyBatch.parse(b, 0) for b in raw], 0, 100)
    return d, log, expected


@pytest.mark.parametrize("mode", ["salvage", "point-in-time"])
def test_a_replayed_index_rebuild_uses_the_cap_of_the_plans_scan(tmp_path, small_batch_cap, mode):
    d, _, expected = _log_dir_with_a_big_legacy_batch(tmp_path)
    image = image_of(d)

    def run(disk):
        return repair(disk, ROOT, mode, RAISED)

    reference, finished = run_until(image, run, None)
    assert finished
    done = under(reference.volatile_image())
    assert (done[ROOT + "/t-0/00000000000000000000.index"], done[ROOT + "/t-0/00000000000000000000.timeindex"]) == expected  # fmt: skip
    total = len(reference.trace)
    for where, disk in every_crash(image, run, total):
        run(disk)
        assert under(disk.volatile_image()) == done, where


def test_rebuild_index_writes_the_index_its_plan_saw(tmp_path, small_batch_cap):
    d, log, expected = _log_dir_with_a_big_legacy_batch(tmp_path)
    log.write_bytes(log.read_bytes()[:-30])
    result = rebuild_indexes(DISK, str(d), RAISED)
    assert [a.action for a in result.plan.actions] == ["rebuild_indexes"]
    pdir = d / "t-0"
    assert (pdir / layout.index_file_name(0)).read_bytes() == expected[0]
    assert (pdir / layout.time_index_file_name(0)).read_bytes() == expected[1]
    assert rebuild_indexes(DISK, str(d), RAISED).plan.actions == []


def _interrupted(tmp_path):
    """A salvage repair stopped as its manifest went to `applying`, before its first action:
    (its quarantine, the log dir as an uninterrupted run leaves it)."""
    d, _, _ = _log_dir_with_a_big_legacy_batch(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    repair(DISK, str(copy), "salvage", RAISED)
    scan = scan_path(DISK, str(d), RAISED)
    qdir = str(tmp_path / "quarantine" / "run")
    run = apply.start(DISK, make_plan(scan, "salvage"), qdir, {}, max_batch_sizes=batch_caps(scan))
    assert run.state == journal.APPLYING
    return d, qdir, tree_digest(DISK, str(copy))


def _edit_manifest(qdir: str, edit) -> None:
    path = qdir + "/" + journal.MANIFEST
    manifest = json.loads(DISK.read_file(path))
    edit(manifest)
    DISK.write_file_atomic(path, json.dumps(manifest).encode())


@pytest.mark.parametrize("version", [1, 2])
def test_an_interrupted_run_of_an_older_journal_is_refused_then_replanned(tmp_path, version):
    """Journals before version 3 recorded neither how far they got nor what they left, so an
    interrupted one cannot be checked against later changes: refused in one line; `--replan`
    leaves it (its quarantine kept) and plans afresh."""
    d, qdir, done = _interrupted(tmp_path)

    def as_older(manifest):
        manifest["version"] = version
        for key in ("applied", "expect", "warnings"):
            manifest.pop(key)

    _edit_manifest(qdir, as_older)
    os.unlink(os.path.join(qdir, journal.PROGRESS))
    root = str(tmp_path / "quarantine")
    before = tree_digest(DISK, str(d))
    with pytest.raises(RepairRefused, match=f"journal version {version}.*--replan"):
        repair(DISK, str(d), "salvage", RAISED, quarantine_root=root)
    assert tree_digest(DISK, str(d)) == before
    result = repair(DISK, str(d), "salvage", RAISED, quarantine_root=root, interrupted=REPLAN)
    assert [(s.qdir, s.done) for s in result.settled] == [(qdir, "abandoned")]
    assert journal.Journal.load(DISK, qdir).state == journal.ABANDONED
    assert tree_digest(DISK, str(d)) == done


def test_a_manifest_from_a_newer_logrepair_is_refused_with_one_line(tmp_path):
    _, qdir, _ = _interrupted(tmp_path)
    newer = journal.VERSION + 1
    _edit_manifest(qdir, lambda manifest: manifest.update(version=newer))
    with pytest.raises(journal.JournalError, match=f"manifest version {newer}; this logrepair"):
        journal.Journal.load(DISK, qdir)


def test_a_finished_run_of_a_version_2_journal_is_undone(log_dir):
    """Version 2 recorded the state a finished repair left as `left` (with the `.lock` in its
    listings when the dir had one): undo checks against it and restores every byte."""
    write_segment(log_dir / "t-0", 0, b"\x00" * 40, indexes=False)
    (log_dir / layout.LOCK_FILE).write_bytes(b"")
    before = tree_digest(DISK, str(log_dir))
    result = repair(DISK, str(log_dir), "kafka", Settings())

    def as_version_2(manifest):
        manifest["version"] = 2
        manifest["left"] = manifest.pop("expect")
        manifest["left"]["dirs"][""].append(layout.LOCK_FILE)
        for key in ("applied", "warnings", "lock_created", "marker"):
            manifest.pop(key)

    _edit_manifest(result.quarantine, as_version_2)
    os.unlink(os.path.join(result.quarantine, journal.PROGRESS))  # version 2 had none
    undo(DISK, result.quarantine)
    assert tree_digest(DISK, str(log_dir)) == before


def test_a_progress_line_a_crash_cut_short_is_not_counted_and_is_written_over(tmp_path):
    d, qdir, done = _interrupted(tmp_path)
    progress = os.path.join(qdir, journal.PROGRESS)
    with open(progress, "ab") as f:
        f.write(b'{"applied":1,"expe')  # torn: the action was never counted
    run = journal.Journal.load(DISK, qdir)
    assert run.data["applied"] == 0
    run.progress({"applied": 0})
    with open(progress, "rb") as f:
        assert f.read() == b'{"applied":0}\n'
    result = repair(DISK, str(d), "salvage", RAISED, quarantine_root=str(tmp_path / "quarantine"))
    assert [(s.qdir, s.done) for s in result.settled] == [(qdir, "completed")]
    assert tree_digest(DISK, str(d)) == done
