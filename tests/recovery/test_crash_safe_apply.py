"""A crash at any step of a repair, followed by another run, ends where an uninterrupted repair ends.

The repair runs on the simulator's SimDisk; a listener stops it (as a power loss) after operation k,
for every k. The disk left is either everything the program wrote (a process crash) or only what
was fsynced (power loss, the worst case); a second repair then runs on that image.
"""

from __future__ import annotations

import pytest

from logrepair.recovery import journal
from logrepair.recovery.repair import repair
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.storage.disk import join

from .crashes import QUARANTINE, ROOT, after_crash, damaged_log_dir, every_crash, run_until, under


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_a_crash_at_any_operation_is_finished_by_the_next_run(tmp_path, mode):
    image = damaged_log_dir(tmp_path)

    def run(disk):
        return repair(disk, ROOT, mode, Settings())

    reference, finished = run_until(image, run, None)
    assert finished
    expected = under(reference.volatile_image())
    total = len(reference.trace)
    assert total > 20
    for where, disk in every_crash(image, run, total):
        result = run(disk)
        assert under(disk.volatile_image()) == expected, f"{mode}: {where}: {result.finished}"
        assert scan_path(disk, ROOT, Settings()).clean or mode == "kafka"
        runs = [join(QUARANTINE, n) for n in disk.list_dir(QUARANTINE)]
        assert all(disk.exists(join(q, journal.MANIFEST)) for q in runs), f"{where}: {runs}"


def test_a_crash_while_rolling_back_an_interrupted_run_leaves_no_orphan(tmp_path):
    """A crash while saving leaves a run the next one discards; a crash during that discard must
    leave either the whole run (discarded again later) or nothing: never a quarantine directory
    without its manifest, which no later run would find."""
    image = damaged_log_dir(tmp_path)

    def run(disk):
        return repair(disk, ROOT, "salvage", Settings())

    reference, _ = run_until(image, run, None)
    expected = under(reference.volatile_image())
    applying = next(
        op.index
        for op in reference.trace
        if op.kind == "write" and op.path.endswith(journal.MANIFEST + ".tmp")
        and b'"state": "applying"' in op.data
    )  # fmt: skip
    crashed, _ = run_until(image, run, applying)  # the manifest still says saving
    saving = after_crash(crashed)[1].volatile_image()
    rollback, _ = run_until(saving, run, None)
    discarded = next(op.dst for op in rollback.trace if op.dst.endswith(journal.DISCARDED))
    discard_ops = next(
        op.index for op in rollback.trace if op.kind == "rmdir" and op.path == discarded
    )
    for where, disk in every_crash(saving, run, discard_ops + 2):
        left = [join(QUARANTINE, n) for n in disk.list_dir(QUARANTINE)]
        orphans = [q for q in left if q != discarded and not disk.exists(join(q, journal.MANIFEST))]
        assert orphans == [], f"{where}: {orphans}"
        run(disk)
        assert under(disk.volatile_image()) == expected, where
        assert not disk.exists(discarded), where
