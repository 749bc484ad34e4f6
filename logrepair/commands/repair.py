"""`logrepair repair PATH --mode MODE`: plan, quarantine, apply — crash-safe and undoable.

Exit status 0 when nothing was removed from any `.log` (or there was nothing to do), 1 when the
repair removed log bytes (or, with --dry-run, when there is something to repair), 2 for unusable
input: a missing PATH, a log dir whose `.lock` a running broker holds, a quarantine inside it.
"""

from __future__ import annotations

import argparse

from ..recovery.planner import MODES
from ..recovery.repair import RepairResult, repair
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
        own_options=_mode_option,
        dry_run="print the plan and change nothing",
        quarantine="where runs keep what they remove (default: <log dir>.logrepair-quarantine)",
    )


def _mode_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mode",
        required=True,
        choices=MODES,
        help="kafka: what the broker's recovery does; point-in-time: cut at the first defect "
        "anywhere; salvage: keep every valid batch",
    )


def run(args: argparse.Namespace) -> int:
    result = journaled_run(
        args, lambda disk, path, settings, **kw: repair(disk, path, args.mode, settings, **kw)
    )
    emit(args, result.to_json(), render(result))
    if args.dry_run:
        return 1 if result.plan.actions else 0
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
    if not plan.actions:
        lines.append("nothing to repair")
    else:
        verb = "applied" if result.applied else "plan (dry run, nothing changed)"
        lines.append(f"{len(plan.actions)} action(s) {verb}:")
        for a in plan.actions:
            lines.append(f"  - {a.describe()}")
        lines.append(
            f"removed {plan.removed_bytes} bytes"
            if result.applied
            else f"would remove {plan.removed_bytes} bytes"
        )
        if plan.removed_offsets:
            ranges = ", ".join(f"{a}..{b}" for a, b in plan.removed_offsets)
            lines.append(f"offsets removed: {ranges}")
        if plan.gaps:
            lines.append("offset gaps left: " + ", ".join(f"{a}..{b}" for a, b in plan.gaps))
        if result.quarantine:
            lines.append(
                f"quarantine: {result.quarantine} (undo: logrepair undo {result.quarantine})"
            )
    if plan.left:
        lines.append(f"{len(plan.left)} defect(s) this mode leaves:")
        for f in plan.left:
            modes = ", ".join(f["fixed_by"]) or "reported only"
            lines.append(f"  {f['kind']:<30} {f['file']}  (fixed by: {modes})")
    return "\n".join(lines)
