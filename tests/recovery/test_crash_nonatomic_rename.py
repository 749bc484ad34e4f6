"""Power loss during a repair on a disk whose renames are not atomic (each directory's entry is
durable only once that directory is fsynced): a file moved into the quarantine must never be lost
from both places (found by `logsim explore --non-atomic-rename`: the quarantine's new `files/`
directory was not fsynced into its parent, and a later fsync of the partition dir made the file's
removal durable first; the next run then moved the swap segment renamed in under its name)."""

from __future__ import annotations

import pytest

from logrepair.recovery import journal
from logrepair.recovery.repair import repair
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from simulator.disk import PersistenceModel, SimDisk

from .builders import batches, write_segment
from .crashes import QUARANTINE, ROOT, image_of, under
from .test_undo_after_swap import _interrupted_swap

MODEL = PersistenceModel(atomic_rename=False)


class PowerLoss(BaseException):
    pass


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_a_power_loss_at_any_operation_loses_no_quarantined_file(log_dir, mode):
    _interrupted_swap(log_dir, torn=False)
    write_segment(log_dir / "t-0", 0, batches(0, 9))  # the segment the swap replaces
    image = image_of(log_dir)
    settings = Settings()
    reference = SimDisk.from_image(image, MODEL)
    repair(reference, ROOT, mode, settings)
    expected = under(reference.volatile_image())
    total = len(reference.trace)
    for stop in range(1, total):
        disk = SimDisk.from_image(image, MODEL)

        def listener(op, disk=disk, stop=stop) -> None:
            if len(disk.trace) >= stop:
                raise PowerLoss()

        disk.listeners.append(listener)
        with pytest.raises(PowerLoss):
            repair(disk, ROOT, mode, settings)
        after = SimDisk.from_image(disk.durable_image(), MODEL)
        repair(after, ROOT, mode, settings)
        where = f"{mode}: power loss after operation {stop} of {total}"
        assert under(after.volatile_image()) == expected, where
        # and the run that finished can still be undone to the bytes before the repair
        for run in reversed(journal.runs_under(after, QUARANTINE)):
            undo(after, run.qdir)
        assert under(after.volatile_image()) == under(image), where
