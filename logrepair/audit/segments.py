"""Scanning one `.log` for the audit: the function that runs on the driver or on a Spark executor.

It runs storage's windowed scan (the format walker over a bounded window, through the Disk seam)
with resync on, so batches after a damaged region still count, and keeps per batch only what the
audit compares: offsets, CRC, position, partition leader epoch. In `__consumer_offsets` it also
decodes the records and replays the offset commits as the group coordinator does.
"""

from __future__ import annotations

from ..decoders.consumer_offsets import OffsetCommit, decode_offsets_record
from ..decoders.schema import DecodeError
from ..format.control import ControlType
from ..format.errors import Defect, FormatError
from ..storage.disk import Disk
from ..storage.scan import LogScan
from .model import BatchDetails, CommitKey, SegmentSummary, SegmentTask

INT_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_TXN_ENDS = (ControlType.COMMIT, ControlType.ABORT)


def summarize_details(disk: Disk, task: SegmentTask) -> SegmentSummary:
    """One segment's summary with every batch's details, as the scan summaries keep it (in a
    worker process, or here)."""
    return summarize_segment(disk, task, details=True)


def summarize_segment(
    disk: Disk,
    task: SegmentTask,
    *,
    details: bool = False,
    digests: bool = True,
    recovery_point: int | None = None,
) -> SegmentSummary:
    """Scans `task.file`; never raises for bad bytes (they become defects) or for I/O errors
    (they become `scan_error`, so one unreadable file does not fail a fleet audit). `details`
    keeps each batch's size, epoch, max timestamp and producer id too.

    `digests` False keeps nothing per batch (a partition with no replica to compare with): the
    summary is then the same size for any number of batches; with `recovery_point` it records
    where the unflushed bytes start (`recovery_cut`), which the digests would otherwise give."""
    summary = SegmentSummary(task, details=BatchDetails() if details else None)
    top_epoch = -1
    d, more = summary.digests, summary.details
    add_base, add_last, add_crc, add_position = (
        (d.base.append, d.last.append, d.crc.append, d.position.append)
        if digests
        else (_keep_nothing,) * 4
    )
    cut_from = INT64_MAX if recovery_point is None else recovery_point
    try:
        for item in LogScan(disk, task.file, resync=True):
            if isinstance(item, Defect):
                summary.defects.append(_defect_json(task.file, item))
                continue
            base, last = item.base_offset, item.last_offset
            if base < task.base_offset or last - task.base_offset > INT_MAX:
                summary.defects.append(_defect_json(task.file, _misplaced(task, item)))
                continue
            if summary.first_offset is None:
                summary.first_offset = base
            summary.next_offset = last + 1
            summary.batches += 1
            position, size, epoch = item.position, item.size, item.partition_leader_epoch
            summary.valid_end = position + size
            add_base(base)
            add_last(last)
            add_crc(item.crc)
            add_position(position)
            if last >= cut_from:
                summary.recovery_cut = (cut_from, position)
                cut_from = INT64_MAX
            if more is not None:
                _add_details(more, size, epoch, item.max_timestamp, item.producer_id)
            if epoch is not None and epoch > top_epoch:
                top_epoch = epoch
                summary.epochs.append((epoch, base))
            if task.consumer_offsets:
                _collect_commits(item, summary)
    except (OSError, RuntimeError) as e:
        summary.scan_error = f"{task.file}: {getattr(e, 'strerror', None) or e}"
    return summary


def _keep_nothing(_: int) -> None:
    pass


def _add_details(more: BatchDetails, size: int, epoch, timestamp, producer_id) -> None:
    """-1 where a legacy entry has no such field, as Kafka writes it."""
    more.size.append(size)
    more.leader_epoch.append(-1 if epoch is None else epoch)
    more.max_timestamp.append(-1 if timestamp is None else timestamp)
    more.producer_id.append(-1 if producer_id is None else producer_id)


def _misplaced(task: SegmentTask, batch) -> Defect:
    """A batch the segment's name cannot hold (the strict reading of recovery's segment scan)."""
    first, last = batch.base_offset, batch.last_offset
    if first < task.base_offset:
        kind = "segment_name_mismatch"
        detail = f"batch at offsets {first}..{last} is below the segment base {task.base_offset}"
    else:
        kind = "offset_overflow"
        detail = (
            f"batch at offsets {first}..{last} overflows the relative offsets of segment "
            f"{task.base_offset}"
        )
    return Defect(kind, batch.position, batch.size, detail, first)


def _collect_commits(batch, summary: SegmentSummary) -> None:
    """The group coordinator's replay: a transactional commit counts once its transaction's
    COMMIT marker follows (an ABORT drops it); a tombstone deletes; the latest record wins."""
    pid = batch.producer_id
    try:
        if batch.is_control:
            if batch.is_transactional and batch.control_type() in _TXN_ENDS:
                committed = batch.control_type() is ControlType.COMMIT
                pending = summary.open_transactions.pop(pid, [])
                summary.transaction_ends.setdefault(pid, committed)
                if committed:
                    for key, at, offset in pending:
                        offer_commit(summary.commits, key, at, offset)
            return
        records = batch.records()
    except FormatError as e:
        summary.defects.append(
            _defect_json(
                summary.task.file,
                Defect(e.kind, batch.position, batch.size, e.detail, batch.base_offset),
            )
        )
        return
    for record in records:
        if record.key is None:
            continue
        try:
            decoded = decode_offsets_record(record.key, record.value)
        except DecodeError:
            continue  # a record type this version does not know; not a commit
        if isinstance(decoded, OffsetCommit):
            key = (decoded.group, decoded.topic, decoded.partition)
            offset = None if decoded.value is None else decoded.value.offset
            if batch.is_transactional:
                summary.open_transactions.setdefault(pid, []).append((key, record.offset, offset))
            else:
                offer_commit(summary.commits, key, record.offset, offset)


def offer_commit(commits: dict, key: CommitKey, at: int, offset: int | None) -> None:
    """Keeps the commit written at the highest log offset."""
    held = commits.get(key)
    if held is None or at > held[0]:
        commits[key] = (at, offset)


def _defect_json(file: str, d: Defect) -> dict:
    return {
        "kind": d.kind,
        "file": file,
        "position": d.position,
        "length": d.length,
        "offset": d.offset,
        "detail": d.detail,
    }
