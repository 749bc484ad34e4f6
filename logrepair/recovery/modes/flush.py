"""What a repair that changed a partition does last: flush it, as Kafka's `UnifiedLog.flush` does
(spec rec §3.2), so that its recovery point can move to the new log end.

Kafka's loader leaves the recovery point at min(checkpoint, log end) after recovery (§6.6) and only
a later flush moves it. Leaving it there after a repair is not idempotent: once a repair has
changed which segment holds the old recovery point (an overflow split renames a segment, salvage
starts new ones), the next run recovers a different, earlier segment. A repair fsyncs before it
reports success, so it can honestly do what the broker's next flush (or clean shutdown) would do:
fsync every segment from the one holding the old recovery point to the end, then checkpoint the
log end. A partition the repair does not change keeps its recovery point.
"""

from __future__ import annotations

from ..plan import Action
from .partition_plan import PartitionPlan


def plan_flush(pp: PartitionPlan, recovery_point: int, end: int, changed: bool) -> int | None:
    """Plans the flush of a changed partition; returns its new recovery point (None: unchanged),
    `end` (its log end as checkpoints are held to) or lower.

    Where kafka mode left a segment at or after the old recovery point that Kafka's recovery fails
    on, the recovery point stops at that segment: moving past it would make the broker trust a
    segment it refuses to load."""
    if not changed or not pp.segs or pp.p.dir_kind == "delete":
        return None
    start = 0
    for i, seg in enumerate(pp.segs):
        if seg.base <= recovery_point:
            start = i
    for seg in pp.segs[start:]:
        pp.add(
            Action(
                "flush",
                seg.log,
                "the repair flushes what it changed, so the recovery point can move to the log end",
            )
        )
    stuck = [base for base in pp.unrecoverable if base >= pp.segs[start].base]
    return min([end, *stuck])
