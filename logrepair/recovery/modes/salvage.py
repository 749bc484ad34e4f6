"""`salvage` mode: keep every valid batch, remove only the damaged byte ranges.

Each stretch of valid batches after a damaged range continues in a segment of its own, named by
its first offset, so every segment stays well-formed (offsets increasing, names at their first
batch, indexes that agree); the offset gaps this leaves are reported. Batches whose offsets do not
increase past what precedes them cannot stay in an ordered log and are removed with the damage.
"""

from __future__ import annotations

from ..defects import is_data_defect
from .partition_plan import PartitionPlan
from .split import Piece, split_segment


def plan_partition(pp: PartitionPlan) -> int:
    previous_last: int | None = None
    for seg in list(pp.segs):
        scan = seg.scan
        damaged = [f for f in scan.findings if is_data_defect(f.kind)]
        if not damaged:
            if scan.runs:
                previous_last = scan.runs[-1].last_offset
            continue
        pieces = [Piece(r.start, r.end, r.first_offset, r.last_offset) for r in scan.runs]
        _report_gaps(pp, scan.runs, previous_last)
        new = split_segment(pp, seg, pieces, "salvage: remove the damaged byte ranges")
        hole = next((f for f in scan.findings if f.kind == "offset_hole"), None)
        for s in new:
            if s.scan.runs:
                continue
            if previous_last is not None and s.base <= previous_last:
                pp.delete_segment(s, "an emptied segment whose name overlaps the previous one")
            elif hole is not None:
                # its offsets are gone: the gap is reported, the empty segment goes
                pp.delete_segment(s, f"salvage: {hole.detail}")
                pp.plan.gaps.append((hole.offset, hole.last_offset))
        if scan.runs:
            previous_last = scan.runs[-1].last_offset
    return 0


def _report_gaps(pp: PartitionPlan, runs, previous_last: int | None) -> None:
    last = previous_last
    for r in runs:
        if last is not None and r.first_offset > last + 1:
            pp.plan.gaps.append((last + 1, r.first_offset - 1))
        last = r.last_offset
