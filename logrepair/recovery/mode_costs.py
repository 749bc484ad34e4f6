"""What each mode would cost, for verify's "fixed by" hint: the modes whose plan for this log dir
removes a finding, and the offsets each plan removes (and acknowledged offsets it loses) in the
finding's partition — computed by the same planner a dry run uses."""

from __future__ import annotations

from ..storage.layout import printable
from . import notation
from .loss import PartitionLoss
from .plan import Plan
from .planner import MODES, make_plan
from .scan import LogDirScan


def fixing_modes(scan: LogDirScan) -> dict[int, list[tuple[str, Plan]]]:
    """For each finding (by id), the modes whose plan for this scan removes it, with that plan.

    Exact for this log dir: `kafka` fixes a corrupt batch only at or after the recovery point."""
    out: dict[int, list[tuple[str, Plan]]] = {id(f): [] for f in scan.all_findings()}
    for mode in MODES:
        plan = make_plan(scan, mode)
        left = {(f["kind"], f["file"], f["position"], f["offset"]) for f in plan.left}
        for f in scan.all_findings():
            if (f.kind, printable(f.file), f.position, f.offset) not in left:
                out[id(f)].append((mode, plan))
    return out


def fix_hints(scan: LogDirScan) -> dict[int, str]:
    """For each finding (by id), verify's "fixed by" hint: each mode that removes it in this log
    dir and what that mode's repair would cost, as its dry run computes it — the offsets it
    removes from the finding's partition (from the whole log dir, for a log-dir-level finding)."""
    owner = {id(f): p.rel for p in scan.partitions for f in p.all_findings}
    for f in scan.findings:
        owner[id(f)] = f.partition
    hints = {}
    for fid, fixers in fixing_modes(scan).items():
        rel = owner.get(fid)
        costs = []
        for mode, plan in fixers:
            losses = [p for p in plan.partitions if rel is None or p.path == rel]
            costs.append(f"{mode} ({_cost(losses, whole_dir=rel is None)})")
        hints[fid] = ", ".join(costs) or "reported only"
    return hints


def _cost(losses: list[PartitionLoss], *, whole_dir: bool) -> str:
    removed = [r for p in losses for r in p.removed_offsets]
    acknowledged = [r for p in losses for r in p.acknowledged_lost]
    if whole_dir:
        touched = sum(1 for p in losses if p.removed_offsets)
        text = (
            f"removes {notation.count(removed)} offsets in {touched} partition(s)"
            if removed
            else "removes no offsets"
        )
    elif removed:
        plural = "s" if notation.count(removed) > 1 else ""
        text = f"removes offset{plural} {notation.offset_ranges(removed)}"
    elif any(p.records_removed for p in losses):
        text = "removes only the damaged batches"
    else:
        text = "removes no offsets"
    if acknowledged and whole_dir:
        text += f"; {notation.count(acknowledged)} acknowledged offsets lost"
    elif acknowledged:
        text += f"; acknowledged offsets lost {notation.offset_ranges(acknowledged)}"
    return text
