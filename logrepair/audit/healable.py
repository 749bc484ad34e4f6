"""Where one replica's damage another replica can mend: the audit's pointer to `repair --mode heal`.

A replica's damaged range is an offset hole between two of its valid batches (a corrupt or lost
batch, an emptied or lost segment; below the cleaner checkpoint holes are compaction's and are
skipped) or the stretch between its log end and another replica's high watermark. Another replica
can heal it when it holds the batch before the range with the same offsets and CRC (their
histories agree there), then batches covering every offset of the range, with no hole, and has not
diverged from the reference replica.
"""

from __future__ import annotations

from .checks import PartitionResult
from .model import BatchDigests, Finding


def healable_findings(
    replicas: list[PartitionResult], diverged: set[str], top_hw: int | None, cleaned_up_to: int
) -> list[Finding]:
    out = []
    for damaged in replicas:
        for first, last in _damaged_ranges(damaged, top_hw, cleaned_up_to):
            for other in replicas:
                if other is damaged or other.audit.path in diverged:
                    continue
                if _covers(other.digests, damaged.digests, first, last):
                    out.append(
                        Finding(
                            "replica_healable",
                            f"{damaged.audit.path} offsets {first}..{last}: healable from "
                            f"{other.audit.path} (logrepair repair --mode heal --replica)",
                        )
                    )
                    break
    return out


def _damaged_ranges(r: PartitionResult, top_hw: int | None, cleaned_up_to: int):
    d = r.digests
    for i in range(1, len(d)):
        if d.base[i] > d.last[i - 1] + 1 and d.base[i] > cleaned_up_to:
            yield d.last[i - 1] + 1, d.base[i] - 1
    end = r.audit.log_end_offset
    if top_hw is not None and end < top_hw:
        yield end, top_hw - 1


def _covers(d: BatchDigests, mine: BatchDigests, first: int, last: int) -> bool:
    """`d` holds every offset of first..last, joined to a batch equal to `mine`'s before it."""
    before = _index_ending(mine, first - 1)
    j = _index_ending(d, first - 1)
    if first > 0 and (before is None or j is None or d.crc[j] != mine.crc[before]):
        return False
    k = 0 if j is None else j + 1
    expected = first
    while k < len(d) and expected <= last:
        if d.base[k] != expected:
            return False
        expected = d.last[k] + 1
        k += 1
    return expected > last


def _index_ending(d: BatchDigests, offset: int) -> int | None:
    for i in range(len(d)):
        if d.last[i] == offset:
            return i
        if d.last[i] > offset:
            return None
    return None
