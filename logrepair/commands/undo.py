"""`logrepair undo QUARANTINE`: restore, byte for byte, what a repair run changed.

QUARANTINE is a run's directory (printed by `logrepair repair`), or the quarantine root holding
runs (what `--quarantine` was given, or `<log dir>.logrepair-quarantine`): with one run left to
undo it is undone; with several they are listed, and `--latest` undoes the newest.

Refuses (exit 2, one line) when the log dir changed since the repair; a crash during undo is
finished by running it again. A run interrupted while applying is rolled back.
"""

from __future__ import annotations

import argparse

from ..cli import InputError
from ..recovery.journal import (
    APPLYING,
    DONE,
    MANIFEST,
    SAVING,
    UNDOING,
    UNDONE,
    Journal,
    runs_under,
)
from ..recovery.undo import undo
from ..storage.disk import join
from ..storage.osdisk import OsDisk
from ._recovery_options import absolute, add_command, emit, refusals_are_bad_input

UNDOABLE = (DONE, APPLYING, UNDOING, SAVING)


def add_parser(subparsers) -> None:
    add_command(
        subparsers,
        "undo",
        help="put back what a repair run removed or replaced",
        description="Restore the pre-repair bytes recorded in a repair run's quarantine "
        "directory (printed by `logrepair repair`), or roll back the applied part of a run "
        "that was interrupted. Given the quarantine root, undoes its one run (or, with "
        "--latest, the newest of several).",
        run=run,
        target="quarantine",
        target_help="a run's quarantine directory, or the quarantine root holding runs",
        settings=False,
        own_options=_latest_option,
    )


def _latest_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--latest",
        action="store_true",
        help="given a quarantine root holding several runs to undo, undo the newest",
    )


def run(args: argparse.Namespace) -> int:
    disk = OsDisk()
    qdir = absolute(args.quarantine)
    with refusals_are_bad_input():
        if not disk.exists(join(qdir, MANIFEST)) and disk.is_dir(qdir):
            qdir = _pick_run(disk, qdir, args.latest)
        was_undone = Journal.load(disk, qdir).state == UNDONE
        result = undo(disk, qdir)
    text = f"{qdir}: already undone" if was_undone else "\n".join(result.lines())
    emit(args, {**result.to_json(), "already_undone": was_undone}, text)
    return 0


def _pick_run(disk: OsDisk, root: str, latest: bool) -> str:
    """The run to undo under a quarantine root: its only one left to undo, or the newest."""
    found = runs_under(disk, root)
    if not found:
        raise InputError(f"logrepair: {root} holds no logrepair run (no {MANIFEST} in it or below)")
    open_runs = [j for j in found if j.state in UNDOABLE]
    if len(open_runs) == 1 or (open_runs and latest):
        return open_runs[-1].qdir
    listing = "; ".join(f"{j.run_id} ({j.state})" for j in found)
    if not open_runs:
        raise InputError(f"logrepair: nothing to undo under {root}: {listing}")
    raise InputError(
        f"logrepair: {root} holds {len(open_runs)} runs to undo: {listing}. Undo the newest "
        "with --latest (then the next), or name a run's directory"
    )
