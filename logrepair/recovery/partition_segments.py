"""A partition's segments: scanned in offset order, and the checks that need all of them.

The `.log` files in offset order, each scanned (segment_scan.py) knowing its neighbours, with the
indexes it lacks; the offsets missing between them (`offset_hole`, outside compaction); the
`.log.swap` files of an interrupted compaction or split, each on its own; and the indexes whose
segment is gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..storage import layout
from ..storage.disk import Disk, join
from .findings import Finding
from .partition_files import PartitionFiles
from .segment_scan import scan_segment

if TYPE_CHECKING:
    from .scan import PartitionScan, Progress


def scan_segments(
    disk: Disk, p: PartitionScan, files: PartitionFiles, progress: Progress | None
) -> None:
    """The segments in offset order, each scanned knowing where the previous one ended (its last
    offset, its highest leader epoch) and where the next one begins."""
    previous_last: int | None = None
    max_epoch = -1
    bases = sorted(files.logs)
    for n, base in enumerate(bases):
        fname = files.logs[base]
        idx = files.index_paths(p.path, base)
        seg = scan_segment(
            disk,
            join(p.path, fname),
            p.file(fname),
            base,
            previous_last_offset=previous_last,
            index_interval_bytes=p.settings.index_interval_bytes,
            index_paths=idx,
            message_max_bytes=p.settings.message_max_bytes,
            max_batch_size=p.settings.max_batch_size,
            next_base=bases[n + 1] if n + 1 < len(bases) else None,
            previous_max_epoch=max_epoch,
            deep=p.settings.deep_iteration,
        )
        max_epoch = seg.max_epoch
        if progress is not None:
            progress(seg.size)
        for k, suffix in _MISSABLE if idx[0] is None or idx[1] is None else ():
            if idx[k] is not None:
                continue
            name = layout.segment_file_name(base, suffix)
            if name not in files.unread:
                p.findings.append(
                    Finding(
                        "index_missing",
                        p.file(name),
                        detail=f"{fname} has no {suffix[1:]} file",
                    )
                )
        p.segments.append(seg)
        if seg.last_offset is not None:
            previous_last = seg.last_offset


_MISSABLE = ((0, layout.INDEX_SUFFIX), (1, layout.TIME_INDEX_SUFFIX))
"""The indexes whose absence is a finding (a `.txnindex` is there only for aborted
transactions)."""

COMPACTED_TOPICS = ("__consumer_offsets", "__transaction_state")
"""Kafka's internal topics, always `cleanup.policy=compact`."""


def compacted(p: PartitionScan) -> bool:
    """Whether offset gaps between the partition's segments can be the log cleaner's: its topic's
    `cleanup.policy` when given, else evidence that the cleaner has run on it (an entry in
    cleaner-offset-checkpoint) or an internal topic (always compacted)."""
    policy = p.settings.compacted if p.settings is not None else None
    if policy is not None:
        return policy
    return p.cleaner_offset is not None or p.topic in COMPACTED_TOPICS


def check_holes(p: PartitionScan) -> None:
    """`offset_hole`: a segment in the middle of the partition that holds no batch, though it
    held some (bytes in its file, or indexes naming offsets), while the next segment starts above
    it. Kafka rolls a segment only to append to it and deletes an empty active segment it rolls,
    so outside compaction such a segment means its offsets were lost. The hole runs from where
    the data before it ends to the next segment's base (at or past the log start). Its indexes'
    complaints are the same loss said worse, and are dropped."""
    if compacted(p) or p.left_alone is not None:
        return  # (a segment left unread may be the data between)
    data_end: int | None = None
    for seg, nxt in zip(p.segments, p.segments[1:], strict=False):
        if seg.runs:
            data_end = seg.next_offset
            continue
        if seg.size == 0 and seg.indexed_last_offset is None:
            continue  # nothing says it ever held a batch
        first = seg.base_offset if data_end is None else min(data_end, seg.base_offset)
        first = max(first, p.log_start_checkpoint or 0)
        last = nxt.base_offset - 1
        if first > last:
            continue
        held = (
            f"its indexes name offsets up to {seg.indexed_last_offset}"
            if seg.indexed_last_offset is not None
            else f"its {seg.size} bytes hold no valid batch"
        )
        seg.index_findings = [f for f in seg.index_findings if f.kind not in _INDEX_KINDS]
        seg.findings.insert(
            0,
            Finding(
                "offset_hole",
                seg.name,
                0,
                seg.size,
                first,
                f"offsets {first}..{last} are missing: segment {seg.base_offset} holds no batch "
                f"({held}) and the next segment starts at {nxt.base_offset}",
                last_offset=last,
            ),
        )
        data_end = nxt.base_offset


_INDEX_KINDS = ("offset_index_corrupt", "time_index_corrupt")


def scan_swap_segments(disk: Disk, p: PartitionScan, files: PartitionFiles) -> None:
    """The `.log.swap` files of an interrupted compaction or split, each on its own."""
    for base in sorted(files.swap_logs):
        p.swap_segments.append(
            scan_segment(
                disk,
                join(p.path, files.swap_logs[base]),
                p.file(files.swap_logs[base]),
                base,
                previous_last_offset=None,
                index_interval_bytes=p.settings.index_interval_bytes,
                index_paths=(None, None, None),
                max_batch_size=p.settings.max_batch_size,
            )
        )


def check_orphan_indexes(disk: Disk, p: PartitionScan, files: PartitionFiles) -> None:
    for (base, _kind), fname in sorted(files.indexes.items()):
        if base not in files.logs and layout.log_file_name(base) not in files.unread:
            p.findings.append(
                Finding(
                    "index_orphan",
                    p.file(fname),
                    length=disk.size(join(p.path, fname)),
                    detail=f"no {layout.log_file_name(base)}",
                )
            )
