"""Which findings a plan resolves, and the ones it leaves (with the modes that would fix them)."""

from __future__ import annotations

from dataclasses import replace

from ...storage import layout
from ...storage.layout import printable
from ..defects import kind as defect_kind
from ..findings import Finding
from ..plan import Action, Plan
from ..scan import LogDirScan
from .partition_plan import SEGMENT_SUFFIXES, PartitionPlan

_BATCH_BYTES = frozenset(
    {
        "crc_mismatch",
        "bad_magic",
        "bad_length",
        "torn_tail",
        "garbage_tail",
        "record_count_mismatch",
        "decompression_failed",
        "invalid_records",
        "unknown_codec",
    }
)
"""Kinds about a batch's own bytes, which a split copies as they are (kafka mode's overflow split
keeps a damaged batch below the recovery point, as Kafka's does); the others are about where a
batch lies, which a split changes."""


def unresolved(scan: LogDirScan, plan: Plan, pps: list[PartitionPlan]) -> list[Finding]:
    """Findings the plan leaves in place."""
    truncated: dict[str, int] = {}
    rewritten: set[str] = set()
    deleted: set[str] = set()
    renamed: set[str] = set()
    for a in plan.actions:
        if a.action == "truncate":
            truncated[a.file] = min(a.size, truncated.get(a.file, a.size))
        elif a.action == "delete":
            deleted.add(a.file)
        elif a.action == "rename":
            renamed.add(a.file)
        elif a.action == "write_file":
            rewritten.add(a.file)
        elif a.action in ("rebuild_indexes", "create_segment"):
            stem = a.file[: -len(layout.LOG_SUFFIX)]
            rewritten.update({stem + layout.INDEX_SUFFIX, stem + layout.TIME_INDEX_SUFFIX})
    splits = [a for a in plan.actions if a.action == "split" and a.to is not None]
    rewritten.update(a.to for a in splits)
    deleted_stems = {d[: -len(layout.LOG_SUFFIX)] for d in deleted if d.endswith(layout.LOG_SUFFIX)}
    left = []
    for f in scan.all_findings():
        if f.file in deleted or f.file in renamed or f.file in rewritten:
            continue
        stem, dot, suffix = f.file.rpartition(".")
        if dot and stem in deleted_stems and "." + suffix in SEGMENT_SUFFIXES:
            continue
        if f.file in truncated and f.position is not None and f.position >= truncated[f.file]:
            moved = None
            if f.kind in _BATCH_BYTES or not defect_kind(f.kind).fixed_by:
                moved = _moved_with(f, splits)
            if moved is not None:
                left.append(moved)  # it goes with its batch
            continue  # removed, or (a split) moved where it no longer holds
        if f.kind in (
            "recovery_point_beyond_end",
            "high_watermark_beyond_end",
            "log_start_beyond_high_watermark",
            "log_start_beyond_end",
            "checkpoint_malformed",
        ) and (f.file in rewritten or _checkpoint_resolved(f, pps)):
            continue
        left.append(f)
    return left


def _moved_with(f: Finding, splits: list[Action]) -> Finding | None:
    """The finding where a split moves the batch it is about, if one does."""
    for a in splits:
        if a.file == f.file and a.position <= f.position < a.position + a.length:
            return replace(
                f, file=a.to, position=f.position - a.position, moved_from=(f.file, f.position)
            )
    return None


def _checkpoint_resolved(f: Finding, pps: list[PartitionPlan]) -> bool:
    """A checkpoint value out of bounds before the repair and within them after it (the data
    moved, not the checkpoint: e.g. salvage keeping batches the old end did not count)."""
    pp = next((pp for pp in pps if pp.p.rel == f.partition), None)
    if pp is None or f.offset is None:
        return False
    leo = min(pp.log_end_offset, pp.verified_end_offset)
    if f.kind in ("recovery_point_beyond_end", "high_watermark_beyond_end", "log_start_beyond_end"):
        return f.offset <= leo
    return False


def left_json(findings: list[Finding], mode: str) -> list[dict]:
    """Each finding a mode leaves, with the other modes that would fix it."""
    out = []
    for f in findings:
        entry = f.to_json()
        entry["fixed_by"] = [m for m in defect_kind(f.kind).fixed_by if m != mode]
        if f.moved_from is not None:
            entry["moved_from"] = {"file": printable(f.moved_from[0]), "position": f.moved_from[1]}
        out.append(entry)
    return out
