"""A crash at any step of a heal, followed by another heal, ends where an uninterrupted heal ends;
undo then restores the damaged log dir byte for byte, and no replica byte is ever written."""

from __future__ import annotations

from logrepair.recovery.healing import heal
from logrepair.recovery.scan import scan_path
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo
from logrepair.storage.disk import join
from simulator.disk import SimDisk
from simulator.replicas import ReplicaSpec, run_replicated

from .crashes import every_crash, run_until, under

ROOT = "/cluster"
DAMAGED = ROOT + "/broker1"
REPLICAS = [ROOT + "/broker0", ROOT + "/broker2"]


def damaged_cluster():
    disk = SimDisk()
    run_replicated(ReplicaSpec(appends=25, seed=9, root=ROOT), disk)
    pdir = DAMAGED + "/orders-0"
    logs = sorted(n for n in disk.list_dir(pdir) if n.endswith(".log"))
    with disk.open(join(pdir, logs[1]), write=True) as f:
        f.write_at(40, b"\xff" * 8)  # a corrupt batch in the middle
    disk.unlink(join(pdir, logs[2]))  # a lost segment
    return disk.volatile_image()


def test_a_crash_at_any_operation_of_a_heal_is_finished_by_the_next_run():
    image = damaged_cluster()

    def run(disk):
        return heal(disk, DAMAGED, Settings(), REPLICAS)

    reference, finished = run_until(image, run, None)
    assert finished
    expected = under(reference.volatile_image(), DAMAGED)
    assert scan_path(reference, DAMAGED, Settings()).clean
    total = len(reference.trace)
    assert total > 20
    replicas = {r: under(image, r) for r in REPLICAS}
    for where, disk in every_crash(image, run, total):
        run(disk)
        after = under(disk.volatile_image(), DAMAGED)
        assert after == expected, where
        assert {r: under(disk.volatile_image(), r) for r in REPLICAS} == replicas, where


def test_undo_of_a_heal_restores_the_damaged_dir():
    image = damaged_cluster()
    disk = SimDisk.from_image(image)
    result = heal(disk, DAMAGED, Settings(), REPLICAS)
    assert result.result.quarantine and not result.lost
    undo(disk, result.result.quarantine)
    assert under(disk.volatile_image(), DAMAGED) == under(image, DAMAGED)
