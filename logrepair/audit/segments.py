"""Scanning one `.log` for the audit: the function that runs on the driver or on a Spark executor.

It runs storage's windowed scan (the format walker over a bounded window, through the Disk seam)
with resync on, so batches after a damaged region still count, and keeps per batch only what the
audit compares: offsets, CRC, position, partition leader epoch. In `__consumer_offsets` it also
decodes the records and replays the offset commits as the group coordinator does.

Most batches need nothing but tallying, so they are taken in runs (`format.summary_runs`, one C
call for many batches); only a batch that needs a closer look (damage, a legacy entry, a batch the
segment's name cannot hold) goes through the walker one at a time. A segment that fits a scan
window, as most of a broker's do, is read whole into one reused buffer and walked by runs alone
unless such a batch turns up, from where the windowed scan takes over.
"""

from __future__ import annotations

from array import array

from ..decoders.consumer_offsets import OffsetCommit, decode_offsets_record
from ..decoders.schema import DecodeError
from ..format.batch_layout import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from ..format.control import ControlType
from ..format.errors import Defect, FormatError
from ..format.summary_runs import DETAIL_FIELDS, DIGEST_FIELDS, NONE, summary_run
from ..storage.disk import Disk
from ..storage.os_copy import thread_buffer
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, DEFAULT_WINDOW_SIZE, LogScan
from .model import BatchDetails, CommitKey, SegmentSummary, SegmentTask

INT_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_TXN_ENDS = (ControlType.COMMIT, ControlType.ABORT)
_NOTHING = (0, 0, 0)
_SPAN = 1 << 20
"""Bytes of buffer one run walks at most: the columns it returns (64 bytes a batch at most) are
then bounded by this span, not by the scan's window."""
_MAX_LENGTH = DEFAULT_MAX_BATCH_SIZE - LOG_OVERHEAD
"""The largest batch length field a scan takes (`LogScan`'s default maximum batch size)."""


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
    runs: bool = True,
) -> SegmentSummary:
    """Scans `task.file`; never raises for bad bytes (they become defects) or for I/O errors
    (they become `scan_error`, so one unreadable file does not fail a fleet audit). `details`
    keeps each batch's size, epoch, max timestamp and producer id too.

    `digests` False keeps nothing per batch (a partition with no replica to compare with): the
    summary is then the same size for any number of batches; with `recovery_point` it records
    where the unflushed bytes start (`recovery_cut`), which the digests would otherwise give.

    The valid batches between those that need a closer look are tallied in runs
    (`format.summary_runs`, in C when the accelerator is built); `runs` False tallies every batch
    one at a time, the reference the runs are held to."""
    summary = SegmentSummary(task, details=BatchDetails() if details else None)
    tally = SegmentTally(summary, digests, recovery_point)
    runs = runs and not task.consumer_offsets
    try:
        resume = tally.whole_file(disk) if runs else (0, None)
        if resume is None:
            return summary
        start, expected = resume
        quiet = tally.run if runs else None
        scan = LogScan(
            disk, task.file, resync=True, start=start, expected_offset=expected, quiet_runs=quiet
        )
        for item in scan:
            if isinstance(item, Defect):
                summary.defects.append(_defect_json(task.file, item))
                continue
            if item.base_offset < task.base_offset or item.last_offset > tally.max_last:
                summary.defects.append(_defect_json(task.file, _misplaced(task, item)))
                continue
            tally.batch(item)
            if task.consumer_offsets:
                _collect_commits(item, summary)
    except (OSError, RuntimeError) as e:
        summary.scan_error = f"{task.file}: {getattr(e, 'strerror', None) or e}"
    return summary


class SegmentTally:
    """What a segment's valid batches add to its summary: one batch at a time (`batch`), or a run
    of them at once (`run`, the walker's `quiet_runs`)."""

    __slots__ = ("summary", "max_last", "top_epoch", "cut_from", "keep", "columns")

    def __init__(self, summary: SegmentSummary, digests: bool, recovery_point: int | None) -> None:
        self.summary = summary
        self.max_last = summary.task.base_offset + INT_MAX
        """The highest last offset the segment's name can hold (its relative offsets are int32)."""
        self.top_epoch = -1
        self.cut_from = INT64_MAX if recovery_point is None else recovery_point
        d, more = summary.digests, summary.details
        columns: list[array | None] = [getattr(d, f) if digests else None for f in DIGEST_FIELDS]
        if more is not None:
            columns += [getattr(more, f) for f in DETAIL_FIELDS]
        self.keep = 2 if more is not None else 1 if digests else 0
        self.columns = columns

    def batch(self, item) -> None:
        s = self.summary
        base, last, position, size = item.base_offset, item.last_offset, item.position, item.size
        epoch = item.partition_leader_epoch
        if s.first_offset is None:
            s.first_offset = base
        s.next_offset = last + 1
        s.batches += 1
        s.valid_end = position + size
        if self.keep:
            values = (base, last, item.crc, position, size, epoch, item.max_timestamp)
            for column, value in zip(self.columns, (*values, item.producer_id), strict=False):
                if column is not None:  # -1 where a legacy entry has no such field, as in Kafka
                    column.append(-1 if value is None else value)
        if last >= self.cut_from:
            s.recovery_cut = (self.cut_from, position)
            self.cut_from = INT64_MAX
        if epoch is not None and epoch > self.top_epoch:
            self.top_epoch = epoch
            s.epochs.append((epoch, base))

    def whole_file(self, disk: Disk) -> tuple[int, int | None] | None:
        """Runs over the whole file read at once into this thread's scratch buffer, when it fits
        a scan window (most segments): no window, no walker, no buffer to allocate and zero.
        None when they took every byte; else (position, next offset) where the scan goes on."""
        size = self.summary.task.size
        if size >= DEFAULT_WINDOW_SIZE:
            return 0, None
        # (one byte more: a file grown since it was listed shows)
        view = thread_buffer("whole segment", size + 1)[: size + 1]
        with disk.open(self.summary.task.file) as f:
            got = f.read_into(0, view)
        if got > size:
            return 0, None  # the windowed scan reads it as it is now
        pos, floor, expected = 0, -INT64_MAX - 1, None
        while pos + RECORD_BATCH_OVERHEAD <= got:  # (a smaller tail: the windowed scan names it)
            n, end, last = self.run(view, pos, got, 0, _MAX_LENGTH, floor)
            if not n:
                break
            pos, expected = end, last + 1
            floor = expected
        return None if pos == got else (pos, expected)

    def run(
        self, buf: memoryview, pos: int, limit: int, file_position: int, max_length: int, floor: int
    ) -> tuple[int, int, int]:
        s = self.summary
        n, end, first, last, top_epoch, epoch_base, cut_position, columns = summary_run(
            buf,
            pos,
            min(limit, pos + _SPAN),
            file_position,
            max_length,
            max(floor, s.task.base_offset),
            min(self.max_last, INT64_MAX),
            self.top_epoch,
            self.cut_from,
            self.keep,
        )
        if not n:
            return _NOTHING
        if s.first_offset is None:
            s.first_offset = first
        s.next_offset = last + 1
        s.batches += n
        s.valid_end = file_position + end
        if epoch_base != NONE:
            self.top_epoch = top_epoch
            s.epochs.append((top_epoch, epoch_base))
        if cut_position != NONE:
            s.recovery_cut = (self.cut_from, cut_position)
            self.cut_from = INT64_MAX
        if columns:
            view = memoryview(columns)
            for i, column in enumerate(self.columns):
                if column is not None:
                    column.frombytes(view[8 * n * i : 8 * n * (i + 1)])
        return n, end, last


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
