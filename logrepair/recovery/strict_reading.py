"""The strict reading of a segment's batches (what verify reports and the strict modes act on).

Valid runs, and a finding for every batch whose offsets do not belong where it is: offsets that
regress or overflow, batches over the size limit, epoch stretches, and a stale tail a lost
truncation left past the next segment's base offset. `segment_scan` feeds it batch by batch, or a
run of quiet batches at once (`extend`, quiet_batches.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..format.errors import Defect
from ..storage.abstract_index import IndexFileError
from ..storage.index_builder import RecoveryIndex
from .findings import Finding
from .indexes import UNBOUNDED_INDEX
from .kafka_reading import INT_MAX

if TYPE_CHECKING:
    from .segment_scan import SegmentScan

NO_EPOCH = -(2**40)  # no leader epoch is this: every epoch of a batch needs a look
INT64_MAX = 2**63 - 1


@dataclass(slots=True)
class Run:
    """Consecutive valid batches: `[start, end)` of the file holding offsets first..last."""

    start: int
    end: int
    first_offset: int
    last_offset: int


class StrictReading:
    """The strict reading of the batches: valid runs, and a finding for every batch whose
    offsets do not belong where it is."""

    __slots__ = (
        "seg",
        "previous_last_offset",
        "next_base",
        "message_max_bytes",
        "last",
        "run",
        "segment_max_epoch",
        "max_epoch",
        "relative_base",
        "regressions",
        "too_large",
        "stale_at",
        "stale_last",
        "stale_first",
        "interval",
        "run_index",
    )

    def __init__(
        self,
        seg: SegmentScan,
        previous_last_offset: int | None,
        next_base: int | None,
        previous_max_epoch: int,
        message_max_bytes: int | None,
        index_interval_bytes: int,
    ) -> None:
        self.seg = seg
        self.interval = index_interval_bytes
        self.run_index: RecoveryIndex | None = None
        """The index of the current run as a segment of its own (runs past byte 0 only)."""
        self.previous_last_offset = previous_last_offset
        self.next_base = next_base
        self.message_max_bytes = message_max_bytes
        self.last = previous_last_offset
        """The last valid offset so far (of this segment or the ones before)."""
        self.run: Run | None = None
        self.segment_max_epoch = -1
        """Within this segment: where the leader epoch rises (`SegmentScan.strict_epochs`)."""
        self.max_epoch = previous_max_epoch
        """Over the partition: where it regresses."""
        self.relative_base = seg.base_offset
        """What the segment's relative offsets count from (moves at a split point)."""
        self.regressions = _Stretches("batch_epoch_regression", seg.name, seg.index_findings)
        self.too_large = _Stretches("batch_too_large", seg.name, seg.index_findings)
        self.stale_at: int | None = None
        """The position of the first valid batch at or past `next_base`."""
        self.stale_last: int | None = None
        self.stale_first = 0

    def quiet_limits(self) -> tuple[int, int, int, int] | None:
        """What a batch must satisfy for `batch` to do no more than `extend` does with it: its
        base offset at least the first value, its last offset at most the second, its size at most
        the third, its leader epoch negative or the fourth. None while a stretch is open or a stale
        tail has begun: then every batch goes through `batch`."""
        if self.too_large.open is not None or self.regressions.open is not None:
            return None
        if self.stale_at is not None:
            return None
        seg = self.seg
        floor = 0 if self.last is None else self.last + 1
        if not seg.runs and not seg.misnamed and seg.base_offset > floor:
            floor = seg.base_offset
        max_last = min(INT64_MAX - 1, self.relative_base + INT_MAX)
        if self.next_base is not None:
            max_last = min(max_last, self.next_base - 1)
        max_size = self.message_max_bytes
        max_size = INT64_MAX if max_size is None else min(max_size, INT64_MAX)
        epoch = self.max_epoch if self.max_epoch <= self.segment_max_epoch else NO_EPOCH
        return floor, max_last, max_size, epoch

    def rises_to(self, epoch: int) -> bool:
        """Whether a batch of this leader epoch (while `quiet_limits` holds) would only record a
        rise: the first of its epoch in the segment, at or above every epoch before it. A run
        that starts with such a batch may take the later batches of its epoch too (`extend`
        with `rise`)."""
        return epoch > self.segment_max_epoch and epoch >= self.max_epoch

    def extend(
        self,
        start: int,
        end: int,
        first: int,
        last: int,
        max_ts: int,
        points: bytes | None,
        rise: int | None = None,
    ) -> None:
        """Batches from `start` to `end` at offsets `first`..`last` that met `quiet_limits`:
        what `batch` does with each of them, at once. `points`: their (position in the run, last
        offset, max timestamp) for the run's index, when it has one. `rise`: the first batch's
        leader epoch, where it rises (`rises_to`); the others are of that epoch or negative."""
        run = self.run
        if run is None:
            self._close_run_index()
            self.run = Run(start, end, first, last)
            self.seg.runs.append(self.run)
            if start:
                self.run_index = RecoveryIndex(first, self.interval, UNBOUNDED_INDEX)
        else:
            run.end = end
            run.last_offset = last
        if points is None:  # (the caller could not give them)
            self.run_index = None
        elif self.run_index is not None:
            try:
                self.run_index.add_points(points)
            except IndexFileError:
                self.run_index = None
        self.last = last
        if max_ts > self.seg.max_timestamp:
            self.seg.max_timestamp = max_ts
        if rise is not None:
            self._epoch(rise, start, end - start, first, last)

    def defect(self, item: Defect) -> None:
        """A damaged region (LogScan reports one once, however many windows it spans)."""
        self.run = None
        self.seg.findings.append(
            Finding(item.kind, self.seg.name, item.position, item.length, item.offset, item.detail)
        )

    def batch(self, item, position: int, first: int, last: int, size: int) -> None:
        """A batch that framed and passed its checks: valid unless its offsets are out of
        place."""
        if first < 0 or not 0 <= last - first <= INT_MAX or last >= INT64_MAX:
            self._offsets_invalid(position, size, first, last)
            return
        if self.last is not None and first <= self.last:
            self._offsets_go_back(position, size, first, last)
            return
        seg = self.seg
        if first < seg.base_offset and not seg.runs and not seg.misnamed:
            self._misnamed(position, first)
        elif last - self.relative_base > INT_MAX:
            self._overflow(position, first, last)
        if self.message_max_bytes is not None and size > self.message_max_bytes:
            self.too_large.flag(
                position,
                size,
                first,
                last,
                f"larger than message.max.bytes {self.message_max_bytes} (the first: {size} bytes)",
            )
        elif self.too_large.open is not None:  # (tested here: no call for the usual batch)
            self.too_large.end()
        run = self.run
        if run is None:
            self._close_run_index()
            run = self.run = Run(position, position + size, first, last)
            seg.runs.append(run)
            if position:
                self.run_index = RecoveryIndex(first, self.interval, UNBOUNDED_INDEX)
        else:
            run.end = position + size
            run.last_offset = last
        if self.stale_at is None and self.next_base is not None and last >= self.next_base:
            self.stale_at, self.stale_last, self.stale_first = position, self.last, first
        self.last = last
        ts = item.max_timestamp
        if ts is not None and ts > seg.max_timestamp:
            seg.max_timestamp = ts
        if self.run_index is not None:
            try:
                self.run_index.add(position - run.start, last, -1 if ts is None else ts)
            except IndexFileError:
                self.run_index = None  # (rebuilt from the file, which says why, if it is split)
        epoch = item.partition_leader_epoch
        if epoch is not None and epoch >= 0:
            self._epoch(epoch, position, size, first, last)
        elif self.regressions.open is not None and self.stale_at is None:
            self.regressions.end()

    def _epoch(self, epoch: int, position: int, size: int, first: int, last: int) -> None:
        """Where the leader epoch rises in the segment, and regressions measured over the whole
        partition, so a repair that keeps a subsequence of the batches (salvage's splits) can only
        lose such findings, never make new ones. A stale tail (cut by the strict modes) sets no
        epoch to regress from."""
        if epoch > self.segment_max_epoch:
            self.segment_max_epoch = epoch
            self.seg.strict_epochs.append((epoch, first, position))
        if self.stale_at is not None:
            return
        if epoch < self.max_epoch:
            self.regressions.flag(
                position,
                size,
                first,
                last,
                f"below the leader epoch {self.max_epoch} of an earlier batch (the first: epoch "
                f"{epoch}; Kafka never checks this)",
            )
            return
        if epoch > self.max_epoch:
            self.max_epoch = epoch
        if self.regressions.open is not None:
            self.regressions.end()

    def _offsets_invalid(self, position: int, size: int, first: int, last: int) -> None:
        """The offset fields lie outside the CRC: a flipped bit there leaves the CRC valid. A batch
        spanning more offsets than a segment's relative range has no segment it can be in."""
        self.run = None
        self.seg.findings.append(
            Finding(
                "offset_invalid",
                self.seg.name,
                position,
                size,
                first,
                f"batch at offsets {first}..{last}: a negative, inverted or impossible offset "
                "range (the log end after it would not fit a long, or it is wider than a "
                "segment's 2^31 - 1 relative offsets)",
            )
        )

    def _offsets_go_back(self, position: int, size: int, first: int, last: int) -> None:
        """The indexes of a log whose offsets go back cannot be held against it entry by entry
        (Kafka's own rebuild would fail such a check); their structure is still checked."""
        seg = self.seg
        seg.unordered = True
        self.run = None
        overlap = not seg.runs and self.previous_last_offset == self.last
        seg.findings.append(
            Finding(
                "offset_overlap" if overlap else "offset_regression",
                seg.name,
                position,
                size,
                first,
                f"batch at offsets {first}..{last} does not follow offset {self.last}",
            )
        )

    def _misnamed(self, position: int, first: int) -> None:
        """The segment is named above its first batch (Kafka cannot recover it: the relative
        offset is negative). Its batches are otherwise fine: salvage renames the segment."""
        seg = self.seg
        seg.misnamed = True
        seg.findings.append(
            Finding(
                "segment_name_mismatch",
                seg.name,
                position,
                0,
                first,
                f"segment {seg.base_offset} starts with a batch at offset {first}",
            )
        )
        self.relative_base = first

    def _overflow(self, position: int, first: int, last: int) -> None:
        """A valid batch that needs a segment of its own (legacy data, spec rec §6.7): a
        zero-length finding marks where the segment must be split; the batch stays valid."""
        self.seg.findings.append(
            Finding(
                "offset_overflow",
                self.seg.name,
                position,
                0,
                first,
                f"batch at offsets {first}..{last} overflows the relative offsets of a segment "
                f"based at {self.relative_base}; the segment must be split here",
            )
        )
        self.relative_base = first
        self.run = None

    def _close_run_index(self) -> None:
        """The run that just ended: its index, for a split to write as it is."""
        if self.run_index is not None:
            run = self.seg.runs[-1]
            try:
                self.seg.run_indexes[(run.start, run.end)] = self.run_index.result()
            except IndexFileError:
                pass
            self.run_index = None

    def finish(self) -> None:
        """The segment is read: close the open stretches and cut a stale tail."""
        seg = self.seg
        self._close_run_index()
        seg.max_epoch = self.max_epoch
        self.regressions.end()
        self.too_large.end()
        if self.stale_at is not None:
            _cut_stale_tail(seg, self.stale_at, self.stale_last, self.stale_first, self.next_base)


class _Stretches:
    """The findings of one reported-only kind, one per stretch of flagged batches.

    A stretch ends at the next valid batch that is not flagged, so the flagged batches are exactly
    the valid ones in the stretches' offset ranges, and the report stays bounded however many
    batches a bit flip in one epoch field makes regress."""

    __slots__ = ("kind", "name", "findings", "open", "count", "why")

    def __init__(self, kind: str, name: str, findings: list[Finding]) -> None:
        self.kind = kind
        self.name = name
        self.findings = findings
        self.open: Finding | None = None
        self.count = 0
        self.why = ""

    def flag(self, position: int, size: int, first: int, last: int, why: str) -> None:
        """Adds a flagged batch; `why` is said of the stretch's first one."""
        f = self.open
        if f is None:
            f = Finding(self.kind, self.name, position, size, first, "", last_offset=last)
            self.findings.append(f)
            self.open = f
            self.count = 0
            self.why = why
        self.count += 1
        f.length = position + size - f.position
        f.last_offset = last

    def end(self) -> None:
        """The next valid batch is not flagged (or the segment ends): the stretch is complete."""
        f = self.open
        if f is not None:
            what = "batch" if self.count == 1 else f"{self.count} batches"
            f.detail = f"{what} at offsets {f.offset}..{f.last_offset}: {self.why}"
            self.open = None


def _cut_stale_tail(
    seg: SegmentScan, position: int, last_before: int | None, first: int, next_base: int
) -> None:
    """Takes the batches from `position` on out of the valid runs: the next segment, named
    `next_base`, was created when the log ended there, so they were truncated away (a follower
    truncation whose fsync was lost) and only look valid. Offsets only go up in the runs, so they
    are a tail: everything after the first one is at or past `next_base` too."""
    end = seg.runs[-1].end
    kept = []
    for r in seg.runs:
        if r.end <= position:
            kept.append(r)
        elif r.start < position:
            kept.append(Run(r.start, position, r.first_offset, last_before))
    seg.runs[:] = kept
    seg.stale_from = position
    seg.findings.append(
        Finding(
            "offset_overlap",
            seg.name,
            position,
            end - position,
            first,
            f"batches from offset {first} are at or past the next segment's base offset "
            f"{next_base}: a truncation that was never made durable",
        )
    )
    seg.findings.sort(key=lambda f: f.position or 0)
