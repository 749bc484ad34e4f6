"""`logrepair undo QUARANTINE`: restore, byte for byte, what a repair run changed."""

from __future__ import annotations

import argparse
import json

from ..cli import InputError
from ..recovery.apply import Journal, JournalError
from ..recovery.repair import log_dir_of
from ..recovery.undo import undo
from ..storage import layout
from ..storage.disk import LockHeld, join
from ..storage.osdisk import OsDisk
from ._recovery_options import absolute


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "undo",
        help="put back what a repair run removed or replaced",
        description="Restore the pre-repair bytes recorded in a repair run's quarantine "
        "directory (printed by `logrepair repair`).",
    )
    p.add_argument("quarantine", metavar="QUARANTINE", help="the run's quarantine directory")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    disk = OsDisk()
    qdir = absolute(args.quarantine)
    lock = None
    try:
        journal = Journal.load(disk, qdir)
        if not disk.is_dir(journal.target):
            raise InputError(f"logrepair: {journal.target}: the repaired directory is gone")
        owner = log_dir_of(disk, journal.target, _is_log_dir(disk, journal.target))
        lock_path = join(owner or journal.target, layout.LOCK_FILE)
        if disk.exists(lock_path):
            lock = disk.lock(lock_path)
        done = undo(disk, qdir)
    except (JournalError, LockHeld) as e:
        raise InputError(f"logrepair: {e}") from None
    finally:
        if lock is not None:
            lock.release()
    if args.json:
        print(
            json.dumps({"quarantine": qdir, "target": journal.target, "restored": done}, indent=1)
        )
    else:
        if not done:
            print(f"{qdir}: already undone")
        for line in done:
            print(line)
    return 0


def _is_log_dir(disk, path: str) -> bool:
    from ..recovery.scan import NotALogDir, classify

    try:
        return classify(disk, path)
    except NotALogDir:
        return False
