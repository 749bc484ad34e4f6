"""A heal run: the journaled run every repair goes through, with a plan that reads replicas.

The replicas are only read: never locked, never written, never inside the repaired PATH (nor
holding it), so the run's quarantine, journal and undo concern PATH alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..storage.disk import Disk
from . import notation
from .interrupted import FINISH
from .modes.heal import HealSource
from .plan import Plan
from .planner import make_plan
from .repair import RepairRefused, RepairResult, _run
from .runs import inside
from .scan import LogDirScan, PartitionMapper, Progress
from .settings import Settings


@dataclass(slots=True)
class HealResult:
    result: RepairResult
    source: HealSource

    @property
    def lost(self) -> bool:
        """Records were removed that no replica could give back, or acknowledged offsets lost."""
        return self.result.lost_data or any(r.lost for r in self.source.ranges)

    def to_json(self) -> dict:
        out = self.result.to_json()
        out["heal"] = {
            "replicas": self.source.replicas,
            "beyond_high_watermark": self.source.beyond_high_watermark,
            "ranges": [r.to_json() for r in self.source.ranges],
            "unusable": self.source.unusable,
        }
        return out

    def lines(self) -> list[str]:
        out = []
        if self.source.ranges:
            out.append(f"{len(self.source.ranges)} damaged range(s):")
            for r in self.source.ranges:
                out.extend("  " + line for line in r.describe())
        for u in self.source.unusable:
            out.append(f"  replica {u['replica']} has no copy of {u['partition']}: {u['why']}")
        return out


def _restored(plan: Plan, source: HealSource) -> None:
    """Each partition's loss report without the offsets the heal gave back: the damaged bytes went
    to the quarantine, the records are in the log again."""
    for loss in plan.partitions:
        ranges = [r for r in source.ranges if r.rel == loss.path]
        if not ranges:
            continue
        back = [x for r in ranges for x in r.restored]
        loss.removed_offsets = notation.subtract(loss.removed_offsets, back)
        loss.gaps = notation.subtract(loss.gaps, back)
        loss.acknowledged_lost = notation.subtract(loss.acknowledged_lost, back)
        loss.records_removed = bool(loss.removed_offsets) or any(r.lost for r in ranges)


def heal(
    disk: Disk,
    path: str,
    settings: Settings,
    replicas: list[str],
    *,
    beyond_high_watermark: bool = False,
    dry_run: bool = False,
    quarantine_root: str | None = None,
    progress: Progress | None = None,
    interrupted: str = FINISH,
    partitions: PartitionMapper | None = None,
) -> HealResult:
    """`repair --mode heal`: scan PATH, fill each damaged range from the replicas, apply."""
    path = path.rstrip("/") or "/"
    for r in replicas:
        if inside(r, path) or inside(path, r):
            raise RepairRefused(f"replica {r} overlaps {path}: a replica is another broker's copy")
    source = HealSource(disk, replicas, beyond_high_watermark=beyond_high_watermark)

    def plan(scan: LogDirScan):
        source.compacted = set(scan.checkpoints.cleaner_offsets or {})
        plan = make_plan(scan, "heal", heal=source)
        plan.left = [f for f in plan.left if not source.resolved(f)]
        _restored(plan, source)
        return plan

    result = _run(
        disk,
        path,
        settings,
        "heal",
        plan,
        None,
        validated=True,
        dry_run=dry_run,
        quarantine_root=quarantine_root,
        progress=progress,
        interrupted=interrupted,
        partitions=partitions,
    )
    return HealResult(result, source)
