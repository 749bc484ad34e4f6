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
    gaps = _Gaps(pp)
    for seg in list(pp.segs):
        scan = seg.scan
        damaged = [f for f in scan.findings if is_data_defect(f.kind)]
        gaps.segment(seg.base, scan.runs, damaged)
        if not damaged:
            if scan.runs:
                previous_last = scan.runs[-1].last_offset
            continue
        pieces = [Piece(r.start, r.end, r.first_offset, r.last_offset) for r in scan.runs]
        new = split_segment(pp, seg, pieces, "salvage: remove the damaged byte ranges")
        hole = next((f for f in scan.findings if f.kind == "offset_hole"), None)
        for s in new:
            if s.scan.runs:
                continue
            if previous_last is not None and s.base <= previous_last:
                pp.delete_segment(s, "an emptied segment whose name overlaps the previous one")
            elif hole is not None:
                # its offsets are gone (`_Gaps` reports them): the empty segment goes
                pp.delete_segment(s, f"salvage: {hole.detail}")
        if scan.runs:
            previous_last = scan.runs[-1].last_offset
    return 0


class _Gaps:
    """The offset gaps salvage leaves, as `pp.gaps`: where kept batches do not resume at the
    offset after the last kept one (or, at the start of the log, at its log start) because damage
    came between — inside a damaged segment, before its first valid batch, or a damaged segment
    with none, before the next segment's first batch. A gap between two undamaged stretches is
    the log's own (compaction), not salvage's."""

    def __init__(self, pp: PartitionPlan) -> None:
        self.pp = pp
        self.next: int | None = None
        """The offset after the last kept batch (None: no batch kept yet)."""
        self.damage_pending = False

    def segment(self, base: int, runs, damaged) -> None:
        expected = self.next
        if expected is None:
            expected = max(base, self.pp.log_start or 0)
        if runs:
            first = runs[0]
            damage_first = self.damage_pending or any(
                f.position is not None and f.position < first.start for f in damaged
            )
            if damage_first and first.first_offset > expected:
                self.pp.gaps.append((expected, first.first_offset - 1))
            last = first.last_offset
            for r in runs[1:]:  # runs are split by damage only
                if r.first_offset > last + 1:
                    self.pp.gaps.append((last + 1, r.first_offset - 1))
                last = r.last_offset
            self.next = last + 1
            self.damage_pending = bool(damaged) and any(
                f.position is not None and f.position >= runs[-1].end for f in damaged
            )
        elif damaged:
            self.damage_pending = True
