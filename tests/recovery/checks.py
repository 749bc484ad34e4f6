"""Repair, then assert the invariants of design.md; used after every repair in this suite."""

from __future__ import annotations

from pathlib import Path

from logrepair.recovery.invariants import (
    accounted,
    inventory,
    minimal_loss,
    no_invention,
    tree_digest,
    valid_batches,
    well_formed,
)
from logrepair.recovery.repair import RepairResult, repair
from logrepair.recovery.settings import Settings
from logrepair.recovery.undo import undo

from .builders import DISK


def repair_checked(path: Path, mode: str, settings: Settings | None = None) -> RepairResult:
    """Runs the repair and checks: well-formed, idempotent, no invention, minimal loss (salvage),
    accounted, and undo restoring every byte (then repairs again, deterministically)."""
    settings = settings or Settings()
    root = str(path)
    before_tree = tree_digest(DISK, root)
    before = inventory(DISK, root)
    # point-in-time keeps a prefix of the log without the stale tails of lost truncations
    prefix_of = inventory(DISK, root, stale=False) if mode == "point-in-time" else None
    keep = valid_batches(DISK, root, settings) if mode == "salvage" else {}
    result = repair(DISK, root, mode, settings)
    after = inventory(DISK, root)
    problems = []
    problems += well_formed(DISK, root, mode, settings, result.plan.left, result.scan)
    # kafka mode keeps Kafka's quirk of spec rec §6.4 (a segment recovered while loading does not
    # delete later segments), so only point-in-time promises a prefix of each partition
    if prefix_of is not None:
        problems += no_invention(prefix_of, after, prefix=True)
    else:
        problems += no_invention(before, after, prefix=False)
    problems += accounted(DISK, result.plan, result.quarantine)
    if mode == "salvage":
        problems += minimal_loss(before, after, keep)
    assert not problems, "\n".join(problems)
    if result.quarantine is not None:
        repaired_tree = tree_digest(DISK, root)
        undo(DISK, result.quarantine)
        assert tree_digest(DISK, root) == before_tree, "undo did not restore every byte"
        again = repair(DISK, root, mode, settings)
        assert tree_digest(DISK, root) == repaired_tree, "the repair is not deterministic"
        result.quarantine = again.quarantine
    return result
