"""`point-in-time` mode: the partition ends just before its first defect, wherever it is.

Unlike Kafka, it reads every segment, also those below the recovery point, and cuts at the first
byte that is not a valid batch in order — so what remains is a consistent prefix of the log.
Index, leftover and checkpoint defects are fixed as in `kafka` mode without cutting data.
One defect does not end the log: the stale tail of a truncation that was never made durable (a
segment's batches at or past the next segment's base offset) is cut, and the newer segments stay.
"""

from __future__ import annotations

from ..defects import is_data_defect
from .partition_plan import PartitionPlan


def plan_partition(pp: PartitionPlan) -> int:
    for n, seg in enumerate(list(pp.segs)):
        data = [f for f in seg.scan.findings if is_data_defect(f.kind) and f.position is not None]
        if not data:
            continue
        first = min(data, key=lambda f: f.position)
        if first.position == seg.scan.stale_from:
            # The next segment was created when the log ended at its base: the batches from here
            # on were truncated away and the truncation was lost. The later segments stay.
            pp.truncate_segment(
                seg, first.position, "point-in-time: a truncation that was never made durable"
            )
            continue
        later = pp.segs[n + 1 :]
        if first.kind == "offset_hole":
            # an emptied segment: the log ends before its missing offsets, with it
            pp.delete_segment(seg, f"point-in-time: {first.detail}")
        else:
            pp.truncate_segment(
                seg,
                first.position,
                f"point-in-time: the log ends before the first defect ({first.kind})",
            )
        for after in later:
            pp.delete_segment(after, f"point-in-time: after the first defect (in {seg.log})")
        break
    return 0
