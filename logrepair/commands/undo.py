"""`logrepair undo QUARANTINE`: restore, byte for byte, what a repair run changed.

Refuses (exit 2, one line) when the log dir changed since the repair; a crash during undo is
finished by running it again.
"""

from __future__ import annotations

import argparse

from ..recovery.apply import Journal
from ..recovery.undo import undo
from ..storage.osdisk import OsDisk
from ._recovery_options import absolute, add_command, emit, refusals_are_bad_input


def add_parser(subparsers) -> None:
    add_command(
        subparsers,
        "undo",
        help="put back what a repair run removed or replaced",
        description="Restore the pre-repair bytes recorded in a repair run's quarantine "
        "directory (printed by `logrepair repair`).",
        run=run,
        target="quarantine",
        target_help="the run's quarantine directory",
        settings=False,
    )


def run(args: argparse.Namespace) -> int:
    disk = OsDisk()
    qdir = absolute(args.quarantine)
    with refusals_are_bad_input():
        done = undo(disk, qdir)
        target = Journal.load(disk, qdir).target
    text = "\n".join(done) if done else f"{qdir}: already undone"
    emit(args, {"quarantine": qdir, "target": target, "restored": done}, text)
    return 0
