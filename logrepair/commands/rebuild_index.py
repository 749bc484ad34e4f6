"""`logrepair rebuild-index PATH`: offset, time and transaction indexes rewritten from the logs.

Each index is written as Kafka's recovery would write it (spec fmt §6.4(a)); only those that
differ are replaced, through the same journal and quarantine as a repair (undo works), after
finishing any interrupted run on PATH.
"""

from __future__ import annotations

import argparse

from ..recovery import notation
from ..recovery.loss import actions_by_dir
from ..recovery.plan import Action
from ..recovery.repair import RepairResult, rebuild_indexes
from ..recovery.scan import PartitionScan
from ..storage.layout import LOG_SUFFIX, TXN_INDEX_SUFFIX, printable
from ._recovery_options import add_command, emit, journaled_run


def add_parser(subparsers) -> None:
    add_command(
        subparsers,
        "rebuild-index",
        help="rewrite the offset, time and transaction indexes from the logs",
        description="Rebuild every segment's .index, .timeindex and .txnindex as Kafka's "
        "recovery would, replacing only those that differ (old ones go to quarantine).",
        run=run,
        follow_links=True,
        dry_run="list what would be rebuilt",
        quarantine="quarantine root (default: beside the log dir)",
    )


def run(args: argparse.Namespace) -> int:
    result = journaled_run(args, rebuild_indexes)
    emit(args, lambda: to_json(result), lambda: render(result))
    return 0


def to_json(result: RepairResult) -> dict:
    plan = result.plan
    return {
        "path": plan.root,
        "applied": result.applied,
        "actions": [a.output_json() for a in plan.actions],
        "quarantine": result.quarantine,
        "notes": plan.notes,
        "finished_interrupted": result.finished,
        "links": [link.to_json() for link in plan.links],
    }


def render(result: RepairResult) -> str:
    plan = result.plan
    lines = [*result.finished, *(f"note: {note}" for note in plan.notes)]
    lines += [f"link: {link.describe()}" for link in plan.links]
    if not plan.actions:
        lines.append(f"{plan.root}: every index already agrees with its log")
    for a in plan.actions:
        lines.append(("rebuilt: " if result.applied else "would rebuild: ") + a.output_line())
    if result.quarantine:
        lines.append(f"quarantine: {result.quarantine} (undo: logrepair undo {result.quarantine})")
    lines.append(summary(result))
    return "\n".join(lines)


def summary(result: RepairResult) -> str:
    """One line, as a repair ends: per partition, the offsets whose index entries were rewritten
    (`A..B`, README "Notation"), offset and time indexes apart from transaction indexes; the
    partitions left as they are; and that no record changed."""
    plan = result.plan
    head = f"summary: rebuild-index of {plan.root}"
    if plan.actions:
        head += " applied" if result.applied else " planned (dry run, nothing changed yet)"
    by_dir = actions_by_dir(plan.actions)
    parts = [_partition(p, by_dir.get(p.rel, [])) for p in result.scan.partitions]
    parts = [part for part in parts if part]
    if not plan.actions:
        parts.insert(0, "every index agrees with its log, nothing changed")
    else:
        parts.append("no record changed")
    return f"{head}: " + "; ".join(parts)


def _partition(p: PartitionScan, actions: list[Action]) -> str:
    """`<partition> offset and time indexes of offsets A..B (n segments), ...`, or '' when the
    plan's `actions` in its dir do not touch it."""
    name = printable(f"{p.topic}-{p.partition}" if p.partition >= 0 else p.topic)
    if p.left_alone is not None:
        return f"{name} left as it is ({printable(p.left_alone)})"
    by_stem = {s.name[: -len(LOG_SUFFIX)]: s for s in p.segments}
    kinds = {"offset and time indexes": [], "transaction indexes": []}
    for a in actions:
        stem, _, suffix = a.file.rpartition(".")
        seg = by_stem.get(stem)
        if seg is not None:
            what = (
                "transaction indexes"
                if "." + suffix == TXN_INDEX_SUFFIX
                else "offset and time indexes"
            )
            kinds[what].append(seg)
    parts = []
    for what, segs in kinds.items():
        if not segs:
            continue
        ranges = notation.merge((s.base_offset, s.next_offset - 1) for s in segs if s.runs)
        empty = sum(1 for s in segs if not s.runs)
        word = "offset" if notation.count(ranges) == 1 else "offsets"
        where = f"{word} {notation.offset_ranges(ranges)}" if ranges else "no batch"
        if ranges and empty:
            where += f" and {empty} empty segment(s)"
        parts.append(f"{what} of {where} ({len(segs)} segment{'s' if len(segs) > 1 else ''})")
    return f"{name} {', '.join(parts)} rewritten" if parts else ""
