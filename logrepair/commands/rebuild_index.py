"""`logrepair rebuild-index PATH`: offset, time and transaction indexes rewritten from the logs.

Each index is written as Kafka's recovery would write it (spec fmt §6.4(a)); only those that
differ are replaced, through the same journal and quarantine as a repair (undo works).
"""

from __future__ import annotations

import argparse
import json

from ..cli import InputError
from ..recovery import apply, indexes
from ..recovery.rebuild import plan_rebuild
from ..recovery.repair import (
    RepairRefused,
    _inside,
    _lock,
    _new_run_dir,
    default_quarantine_root,
    log_dir_of,
)
from ..recovery.scan import NotALogDir, classify, scan_path
from ..storage.disk import LockHeld
from ..storage.osdisk import OsDisk
from ._recovery_options import absolute, add_settings_options, settings_from


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "rebuild-index",
        help="rewrite the offset, time and transaction indexes from the logs",
        description="Rebuild every segment's .index, .timeindex and .txnindex as Kafka's "
        "recovery would, replacing only those that differ (old ones go to quarantine).",
    )
    p.add_argument("path", metavar="PATH", help="a broker's log dir or a partition dir")
    p.add_argument("--dry-run", action="store_true", help="list what would be rebuilt")
    p.add_argument(
        "--quarantine", metavar="DIR", help="quarantine root (default: beside the log dir)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    add_settings_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    disk = OsDisk()
    settings = settings_from(args, disk)
    path = absolute(args.path).rstrip("/") or "/"
    lock = None
    try:
        is_log_dir = classify(disk, path)
        owner = log_dir_of(disk, path, is_log_dir)
        root = (
            absolute(args.quarantine)
            if args.quarantine
            else default_quarantine_root(disk, path, is_log_dir)
        )
        for protected in (path, owner):
            if protected is not None and _inside(root, protected):
                raise RepairRefused(f"quarantine {root} is inside {protected}")
        lock = _lock(disk, owner or path)
        plan = plan_rebuild(disk, scan_path(disk, path, settings))
        qdir = None
        if plan.actions and not args.dry_run:
            qdir = _new_run_dir(disk, root, "rebuild-index")
            journal = apply.start(disk, plan, qdir, {"notes": plan.notes}, validated=False)
            apply.run(journal, indexes.rebuild)
    except (NotALogDir, RepairRefused, apply.JournalError, LockHeld) as e:
        raise InputError(f"logrepair: {e}") from None
    finally:
        if lock is not None:
            lock.release()
    if args.json:
        print(
            json.dumps(
                {
                    "path": path,
                    "applied": qdir is not None,
                    "actions": [a.to_json() for a in plan.actions],
                    "quarantine": qdir,
                    "notes": plan.notes,
                },
                indent=1,
            )
        )
    else:
        for note in plan.notes:
            print(f"note: {note}")
        if not plan.actions:
            print(f"{path}: every index already agrees with its log")
        for a in plan.actions:
            print(("rebuilt: " if qdir else "would rebuild: ") + a.describe())
        if qdir:
            print(f"quarantine: {qdir} (undo: logrepair undo {qdir})")
    return 0
