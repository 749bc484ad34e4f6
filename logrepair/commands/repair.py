"""`logrepair repair PATH --mode MODE`: plan, quarantine, apply — crash-safe and undoable.

Exit status 0 when nothing was removed from any `.log` (or there was nothing to do), 1 when the
repair removed log bytes (or, with --dry-run, when there is something to repair), 2 for unusable
input: a missing PATH, a log dir whose `.lock` a running broker holds, a quarantine inside it.
"""

from __future__ import annotations

import argparse
import json

from ..cli import InputError
from ..recovery.apply import JournalError
from ..recovery.planner import MODES
from ..recovery.repair import RepairRefused, RepairResult, repair
from ..recovery.scan import NotALogDir, classify, total_log_bytes
from ..storage.disk import LockHeld
from ..storage.osdisk import OsDisk
from ._recovery_options import ProgressBar, absolute, add_settings_options, settings_from


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "repair",
        help="repair a stopped broker's log dir or a partition dir",
        description="Plan and apply a repair. Every removed byte and replaced file goes to a "
        "quarantine beside the log dir (undo with `logrepair undo`); the run is journaled, so a "
        "crash during it is finished or rolled back by the next run.",
    )
    p.add_argument("path", metavar="PATH", help="a broker's log dir or a partition dir")
    p.add_argument(
        "--mode",
        required=True,
        choices=MODES,
        help="kafka: what the broker's recovery does; point-in-time: cut at the first defect "
        "anywhere; salvage: keep every valid batch",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    p.add_argument(
        "--quarantine",
        metavar="DIR",
        help="where runs keep what they remove (default: <log dir>.logrepair-quarantine)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    add_settings_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    disk = OsDisk()
    settings = settings_from(args, disk)
    path = absolute(args.path)
    quarantine = absolute(args.quarantine) if args.quarantine else None
    bar = None
    try:
        bar = ProgressBar(total_log_bytes(disk, path, classify(disk, path)), "scan")
        result = repair(
            disk,
            path,
            args.mode,
            settings,
            dry_run=args.dry_run,
            quarantine_root=quarantine,
            progress=bar,
        )
    except (NotALogDir, RepairRefused, JournalError, LockHeld) as e:
        raise InputError(f"logrepair: {e}") from None
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        print(render(result))
    if args.dry_run:
        return 1 if result.plan.actions else 0
    return 1 if result.lost_data else 0


def render(result: RepairResult) -> str:
    plan = result.plan
    lines = [f"{plan.root}: mode {plan.mode}"]
    for done in result.finished:
        lines.append(f"  {done}")
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
