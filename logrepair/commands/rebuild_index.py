"""`logrepair rebuild-index PATH`: offset, time and transaction indexes rewritten from the logs.

Each index is written as Kafka's recovery would write it (spec fmt §6.4(a)); only those that
differ are replaced, through the same journal and quarantine as a repair (undo works), after
finishing any interrupted run on PATH.
"""

from __future__ import annotations

import argparse

from ..recovery.repair import RepairResult, rebuild_indexes
from ._recovery_options import add_command, emit, journaled_run


def add_parser(subparsers) -> None:
    add_command(
        subparsers,
        "rebuild-index",
        help="rewrite the offset, time and transaction indexes from the logs",
        description="Rebuild every segment's .index, .timeindex and .txnindex as Kafka's "
        "recovery would, replacing only those that differ (old ones go to quarantine).",
        run=run,
        dry_run="list what would be rebuilt",
        quarantine="quarantine root (default: beside the log dir)",
    )


def run(args: argparse.Namespace) -> int:
    result = journaled_run(args, rebuild_indexes)
    plan = result.plan
    data = {
        "path": plan.root,
        "applied": result.applied,
        "actions": [a.to_json() for a in plan.actions],
        "quarantine": result.quarantine,
        "notes": plan.notes,
        "finished_interrupted": result.finished,
    }
    emit(args, data, render(result))
    return 0


def render(result: RepairResult) -> str:
    plan = result.plan
    lines = [*result.finished, *(f"note: {note}" for note in plan.notes)]
    if not plan.actions:
        lines.append(f"{plan.root}: every index already agrees with its log")
    for a in plan.actions:
        lines.append(("rebuilt: " if result.applied else "would rebuild: ") + a.describe())
    if result.quarantine:
        lines.append(f"quarantine: {result.quarantine} (undo: logrepair undo {result.quarantine})")
    return "\n".join(lines)
