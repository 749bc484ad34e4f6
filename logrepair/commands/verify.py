"""`logrepair verify PATH`: every byte of a log dir or partition dir accounted for; changes nothing.

Exit status 0 when there is no damage (notices alone leave it 0), 1 when any damage is found, 2
when PATH is unusable.
"""

from __future__ import annotations

import argparse

from ..recovery import notation
from ..recovery.scan import LogDirScan, rendered_partition, scan_path
from ..storage.layout import printable
from ..storage.osdisk import OsDisk
from ._recovery_options import add_command, emit, lock_status, on_path

NOT_DECODED = "records were not decoded (batches only: --deep-iteration decodes every record)"


def add_parser(subparsers) -> None:
    add_command(
        subparsers,
        "verify",
        help="check a log dir or partition dir; exit 1 if anything is damaged",
        description="Scan a broker's log dir (or one partition dir) and report every defect: "
        "damaged batches, offsets missing between segments, indexes that disagree with the log, "
        "leftovers of interrupted operations, checkpoints out of bounds, objects that are not "
        "regular files. Each finding is damage or a notice (valid but unusual); the exit status "
        "is 1 only for damage. Changes nothing.",
        run=run,
        own_options=_options,
    )


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="read a symlink to a regular file where a segment, index or checkpoint should be as "
        "that file, wherever it points; without it the link is reported and not read (repair "
        "and rebuild-index leave a partition holding one as it is, unless given their own "
        "--follow-symlinks)",
    )


def run(args: argparse.Namespace) -> int:
    step = rendered_partition if args.json else None  # (the entries rendered where scanned)
    result = on_path(args, "verify", lambda *work: scan_path(*work, then=step))
    locked, note = lock_status(OsDisk(), result.root, result.is_log_dir)
    emit(
        args,
        lambda: {**result.to_json(), "locked_by_other_process": locked},
        lambda: render(result) + (f"\nnote: {note}" if note else ""),
    )
    return 0 if result.clean else 1


def render(result: LogDirScan) -> str:
    """The human report: one line per partition, then one per finding."""
    what = "log dir" if result.is_log_dir else "partition dir"
    lines = [f"{printable(result.root)} ({what})"]
    if result.clean_shutdown_marker:
        lines.append("  .kafka_cleanshutdown present (reported only; not trusted)")
    if not result.deep:
        lines.append(f"  {NOT_DECODED}")
    header = f"  {'partition':<32} {'segments':>8} {'bytes':>14} {'log start':>12} {'log end':>12}  defects"
    lines.append(header)
    for p in result.partitions:
        name = printable(f"{p.topic}-{p.partition}" if p.partition >= 0 else p.topic)
        lines.append(
            f"  {name:<32} {len(p.segments):>8} {p.bytes:>14,} {p.log_start_offset:>12} "
            f"{p.log_end_offset:>12}  {len(p.all_findings)}"
        )
        if p.left_alone is not None:
            lines.append(f"      every repair leaves it as it is: {printable(p.left_alone)}")
    findings = result.all_findings()
    if not findings:
        lines.append("clean: no defects")
        return "\n".join(lines)
    from ..recovery.mode_costs import fix_hints  # (the planner: only a report with findings)

    hints = fix_hints(result)
    damage = sum(f.severity == "damage" for f in findings)
    lines.append("")
    lines.append(f"{damage} damage, {len(findings) - damage} notice(s):")
    for f in findings:
        where = printable(f.file) or "."
        if f.position is not None:
            where += f" {notation.at(f.position, f.length)}"
        if f.offset is not None:
            last = f.offset if f.last_offset is None else f.last_offset
            where += f" (offset {notation.offsets(f.offset, last)})"
        modes = hints[id(f)]
        lines.append(f"  {f.kind:<30} {where}" + ("  [notice]" if f.severity == "notice" else ""))
        if f.detail:
            lines.append(f"      {printable(f.detail)}")
        lines.append(f"      fixed by: {modes}")
    if not damage:
        lines.append("no damage: notices only (Kafka loads this log as it is)")
    return "\n".join(lines)
