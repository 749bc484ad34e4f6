"""What each mode would cost, for verify's "fixed by" hint and a repair's list of the defects its
mode leaves: the modes whose plan for this log dir removes a finding, and the offsets each plan
removes (and acknowledged offsets it loses) in the finding's partition — computed by the same
planner a dry run uses."""

from __future__ import annotations

from dataclasses import replace

from ..storage.layout import printable
from . import notation
from .findings import Finding
from .loss import PartitionLoss
from .plan import Plan
from .planner import MODES, make_plan
from .scan import LogDirScan


def _key(f: dict) -> tuple:
    """A finding as a plan's `left` lists it: the same finding in every mode's plan (where the
    scan found it, for one a split moves with its batch)."""
    at = f.get("moved_from") or f
    return (f["kind"], at["file"], at["position"], f["offset"])


def _finding_key(f: Finding) -> tuple:
    return (f.kind, printable(f.file), f.position, f.offset)


def _plans(scan: LogDirScan, modes=MODES) -> list[tuple[str, Plan]]:
    return [(mode, make_plan(scan, mode)) for mode in modes]


def fixing_modes(
    scan: LogDirScan, plans: list[tuple[str, Plan]] | None = None
) -> dict[int, list[tuple[str, Plan]]]:
    """For each finding (by id), the modes whose plan for this scan removes it, with that plan.

    Exact for this log dir: `kafka` fixes a corrupt batch only at or after the recovery point."""
    out: dict[int, list[tuple[str, Plan]]] = {id(f): [] for f in scan.all_findings()}
    for mode, plan in _plans(scan) if plans is None else plans:
        left = {_key(f) for f in plan.left}
        for f in scan.all_findings():
            if _finding_key(f) not in left:
                out[id(f)].append((mode, plan))
    return out


def _owners(scan: LogDirScan) -> dict[int, str | None]:
    """Each finding's partition dir (relative to PATH), None for a log-dir-level finding."""
    owner = {id(f): p.rel for p in scan.partitions for f in p.all_findings}
    for f in scan.findings:
        owner[id(f)] = f.partition
    return owner


def fix_hints(scan: LogDirScan) -> dict[int, str]:
    """For each finding (by id), verify's "fixed by" hint: each mode that removes it in this log
    dir and what that mode's repair would cost, as its dry run computes it — the offsets it
    removes from the finding's partition (from the whole log dir, for a log-dir-level finding)."""
    owner = _owners(scan)
    return {fid: _hint(fixers, owner.get(fid), None) for fid, fixers in fixing_modes(scan).items()}


def left_hints(scan: LogDirScan, plan: Plan) -> list[str]:
    """For each defect `plan` leaves (in `plan.left`'s order), the other modes that would fix it
    in this log dir and what each would remove beyond what `plan` removes — the same notation
    and reckoning as verify's "fixed by" hint."""
    if not plan.left:
        return []
    others = _plans(scan, [m for m in MODES if m != plan.mode])
    fixers = fixing_modes(scan, others)
    owner = _owners(scan)
    by_key = {}
    for f in scan.all_findings():
        by_key.setdefault(_finding_key(f), id(f))
    hints = []
    for entry in plan.left:
        fid = by_key.get(_key(entry))
        if fid is None:  # (a finding the plan itself describes; no other mode is asked)
            hints.append(", ".join(entry.get("fixed_by", [])) or "reported only")
            continue
        hints.append(_hint(fixers[fid], owner.get(fid), plan))
    return hints


def _hint(fixers: list[tuple[str, Plan]], rel: str | None, beyond: Plan | None) -> str:
    costs = []
    for mode, plan in fixers:
        losses = [p for p in plan.partitions if rel is None or p.path == rel]
        if beyond is not None:
            losses = [_beyond(loss, beyond) for loss in losses]
        costs.append(f"{mode} ({_cost(losses, whole_dir=rel is None)})")
    return ", ".join(costs) or "reported only"


def _beyond(loss: PartitionLoss, plan: Plan) -> PartitionLoss:
    """What `loss` removes from its partition that `plan` does not remove already."""
    done = next((p for p in plan.partitions if p.path == loss.path), None)
    if done is None:
        return loss
    removed = notation.subtract(loss.removed_offsets, done.removed_offsets)
    return replace(
        loss,
        removed_offsets=removed,
        acknowledged_lost=notation.subtract(loss.acknowledged_lost, done.offsets_lost),
        records_removed=loss.records_removed and (bool(removed) or not done.records_removed),
    )


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
