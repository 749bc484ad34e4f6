"""`logrepair verify PATH`: every byte of a log dir or partition dir accounted for; changes nothing.

Exit status 0 when clean (notices alone leave it clean), 1 when any damage is found, 2 when PATH is
unusable.
"""

from __future__ import annotations

import argparse

from ..recovery.defects import is_notice
from ..recovery.findings import Finding
from ..recovery.planner import fixing_modes
from ..recovery.scan import LogDirScan, scan_path
from ._recovery_options import add_command, emit, on_path


def add_parser(subparsers) -> None:
    add_command(
        subparsers,
        "verify",
        help="check a log dir or partition dir; exit 1 if anything is wrong",
        description="Scan a broker's log dir (or one partition dir) and report every defect: "
        "damaged batches, indexes that disagree with the log, leftovers of interrupted "
        "operations, checkpoints out of bounds. Changes nothing.",
        run=run,
    )


def run(args: argparse.Namespace) -> int:
    result = on_path(args, "verify", scan_path)
    emit(args, result.to_json(), render(result))
    return 0 if result.clean else 1


def render(result: LogDirScan) -> str:
    """The human report: one line per partition, then one per defect."""
    what = "log dir" if result.is_log_dir else "partition dir"
    lines = [f"{result.root} ({what})"]
    if result.clean_shutdown_marker:
        lines.append("  .kafka_cleanshutdown present (reported only; not trusted)")
    header = f"  {'partition':<32} {'segments':>8} {'bytes':>14} {'log start':>12} {'log end':>12}  defects"
    lines.append(header)
    for p in result.partitions:
        name = f"{p.topic}-{p.partition}" if p.partition >= 0 else p.topic
        lines.append(
            f"  {name:<32} {len(p.segments):>8} {p.bytes:>14,} {p.log_start_offset:>12} "
            f"{p.log_end_offset:>12}  {len(p.all_findings)}"
        )
    findings = result.all_findings()
    fixers = fixing_modes(result)
    damage = [f for f in findings if not is_notice(f.kind)]
    notices = [f for f in findings if is_notice(f.kind)]
    if not damage:
        lines.append("clean: no defects")
    if damage:
        lines.append("")
        lines.append(f"{len(damage)} defect(s):")
        _render_findings(lines, damage, fixers)
    if notices:
        lines.append("")
        lines.append(f"{len(notices)} notice(s) (not damage):")
        _render_findings(lines, notices, fixers)
    return "\n".join(lines)


def _render_findings(lines: list[str], findings: list[Finding], fixers: dict) -> None:
    for f in findings:
        where = f.file or "."
        if f.position is not None:
            where += f" @{f.position}"
            if f.length:
                where += f"+{f.length}"
        if f.offset is not None:
            where += f" (offset {f.offset})"
        modes = ", ".join(fixers[id(f)]) or "reported only"
        lines.append(f"  {f.kind:<30} {where}")
        if f.detail:
            lines.append(f"      {f.detail}")
        lines.append(f"      fixed by: {modes}")
