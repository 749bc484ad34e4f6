"""`logrepair repair PATH --mode MODE`: plan, quarantine, apply — crash-safe and undoable.

Exit status 1 when the repair removed records or lost acknowledged offsets (with --dry-run: when it
would), else 0 (also when it removed only zero padding or junk after the last batch); 2 for unusable
input: not a Kafka log dir, a log dir whose `.lock` a running broker holds, a quarantine inside it.
"""

from __future__ import annotations

import argparse

from ..recovery import notation
from ..recovery.loss import PartitionLoss
from ..recovery.mode_costs import left_hints
from ..recovery.planner import REPAIR_MODES
from ..recovery.repair import RepairResult, repair
from ._heal_options import heal_options, run_heal
from ._recovery_options import add_command, emit, journaled_run


def add_parser(subparsers) -> None:
    add_command(
        subparsers,
        "repair",
        help="repair a stopped broker's log dir or a partition dir",
        description="Plan and apply a repair. Every removed byte and replaced file goes to a "
        "quarantine beside the log dir (undo with `logrepair undo`); the run is journaled, so a "
        "crash during it is finished or rolled back by the next run.",
        run=run,
        follow_links=True,
        own_options=_mode_option,
        dry_run="print the plan and change nothing",
        quarantine="where runs keep what they remove (default: <log dir>.logrepair-quarantine)",
    )


def _mode_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mode",
        required=True,
        choices=REPAIR_MODES,
        help="kafka: what the broker's recovery does; point-in-time: cut at the first defect "
        "anywhere; salvage: keep every valid batch; heal: fill damaged ranges from --replica",
    )
    heal_options(p)


def run(args: argparse.Namespace) -> int:
    if args.mode == "heal" or args.replica:
        return run_heal(args, render)
    result = journaled_run(
        args, lambda disk, path, settings, **kw: repair(disk, path, args.mode, settings, **kw)
    )
    emit(args, result.to_json, lambda: render(result))
    return 1 if result.lost_data else 0


def render(result: RepairResult) -> str:
    plan = result.plan
    lines = [f"{plan.root}: mode {plan.mode}"]
    for done in result.finished:
        lines.append(f"  {done}")
    for warning in result.warnings:
        lines.append(f"  warning: {warning}")
    for note in plan.notes:
        lines.append(f"  note: {note}")
    for link in plan.links:
        lines.append(f"  link: {link.describe()}")
    if not plan.actions:
        lines.append("nothing to repair")
    else:
        verb = "applied" if result.applied else "plan (dry run, nothing changed)"
        lines.append(f"{len(plan.actions)} action(s) {verb}:")
        for a in plan.actions:
            lines.append(f"  - {a.output_line()}")
        lines.append(
            f"{'removed' if result.applied else 'would remove'} {plan.removed_bytes:,} bytes"
            + (f"; per partition ({len(plan.partitions)}):" if plan.partitions else "")
        )
        for loss in plan.partitions:
            lines.append(f"  {loss.output_line()}")
        if result.quarantine:
            lines.append(
                f"quarantine: {result.quarantine} (undo: logrepair undo {result.quarantine})"
            )
    if plan.left:
        lines.append(
            f"{len(plan.left)} defect(s) this mode leaves (fixed by: each mode that removes it "
            "here, and what that mode would remove beyond this repair):"
        )
        for f, hint in zip(plan.left, left_hints(result.scan, plan), strict=True):
            lines.append(f"  {f['kind']:<30} {f['file']}  (fixed by: {hint})")
    lines.append(summary(result))
    return "\n".join(lines)


def summary(result: RepairResult) -> str:
    """The one line an operator can paste to the owners of the applications: what each partition
    lost, in offsets, and whether those offsets had been acknowledged."""
    plan = result.plan
    head = f"summary: {plan.mode} repair of {plan.root}"
    if not plan.actions:
        return f"{head}: nothing to repair, nothing lost" + _left(plan.left)
    head += " applied" if result.applied else " planned (dry run, nothing changed yet)"
    lost = plan.lost
    parts = [_lost(loss) for loss in lost]
    if not parts:
        parts.append("no records lost")
        if plan.removed_bytes:
            parts[0] += f" (only {plan.removed_bytes:,} bytes of padding or junk removed)"
    others = len(plan.partitions) - len(lost)
    if lost and others:
        parts.append(f"{others} other partition(s) changed without loss")
    return f"{head}: " + "; ".join(parts) + _left(plan.left)


def _lost(loss: PartitionLoss) -> str:
    """`<partition> lost offsets A..B (n), <how many of them were acknowledged>`."""
    known = loss.offsets_lost
    parts = []
    if known:
        parts.append(notation.named(known))
    end = loss.log_end_offset[1]
    if loss.damaged_tail and not any(first <= end <= last for first, last in known):
        parts.append(f"damaged batches from offset {end} on (their offsets are unreadable)")
    elif not parts:
        parts.append("damaged batches (their offsets are unreadable)")
    text = f"{loss.name} lost " + " and ".join(parts)
    acknowledged = loss.acknowledged_lost
    if acknowledged and acknowledged == known:
        text += ", all acknowledged"
    elif acknowledged:
        text += f", acknowledged {notation.named(acknowledged)}"
    elif loss.high_watermark[0] is None:
        text += ", acknowledgement unknown (no high watermark checkpointed)"
    else:
        text += f", none acknowledged (high watermark {loss.high_watermark[0]})"
    if not loss.records_removed and not loss.removed_offsets:
        text += " (gone before the repair)"
    return text


def _left(left: list[dict]) -> str:
    return f"; {len(left)} defect(s) left as they are" if left else ""
