"""One pass over a segment's `.log`: every byte a valid batch or inside a finding, plus Kafka's view.

The pass keeps two readings of the same bytes side by side:

- the strict one (what verify reports and the strict modes act on, `_StrictReading`): every
  structural defect, and batches whose offsets do not increase past everything before them, in
  this segment or earlier;
- Kafka's (what `kafka` mode acts on, kafka_reading.py).

The segment's indexes are checked in the same pass by merging their entries with the batches as
they stream by (index_checks.py), so memory stays bounded by the index files, never by the `.log`.

`scan_segment` reads as its steps: load the index checks → one pass over the batches, fed to both
readings and the index checks → finish the strict reading (epoch stretches, a stale tail) → finish
Kafka's (overflow split) → report the indexes → Kafka's index rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..format.batch import CONTROL_MASK, TRANSACTIONAL_MASK, RecordBatch
from ..format.errors import Defect, FormatError
from ..format.legacy import LegacyBatch
from ..format.walker import CRC_VALID_KINDS
from ..storage.abstract_index import IndexFileError
from ..storage.disk import Disk
from ..storage.index_builder import RecoveryIndex
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan
from .findings import Finding
from .index_checks import SegmentIndexChecks
from .indexes import UNBOUNDED_INDEX, batch_header
from .kafka_reading import INT_MAX, KafkaReading, Piece, kafka_keeps_bad_magic
from .quiet_batches import QuietBatches

_TXN_MARKER = TRANSACTIONAL_MASK | CONTROL_MASK
_NEVER = 2**63
_NO_EPOCH = -(2**40)  # no leader epoch is this: every epoch of a batch needs a look
INT64_MAX = 2**63 - 1


def java_long(value: int) -> int:
    """`value` as Java's long arithmetic leaves it: a last offset `base + delta` past 2^63 - 1
    wraps to a negative number in Kafka (the base offset is outside the CRC, so any value is
    possible)."""
    return (value + 2**63) % 2**64 - 2**63


@dataclass(slots=True)
class Run:
    """Consecutive valid batches: `[start, end)` of the file holding offsets first..last."""

    start: int
    end: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class SegmentScan:
    base_offset: int
    name: str
    """File name relative to the scanned PATH."""
    size: int
    runs: list[Run] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    index_findings: list[Finding] = field(default_factory=list)
    kafka_valid_bytes: int = 0
    kafka_invalid_offset: bool = False
    """Kafka's recovery would throw InvalidOffsetException and empty the segment."""
    kafka_pieces: list[Piece] = field(default_factory=list)
    """Non-empty when Kafka's recovery would hit an offset overflow and split the segment."""
    strict_epochs: list[tuple[int, int, int]] = field(default_factory=list)
    """(epoch, base offset, position) where the leader epoch rises among strictly valid batches."""
    kafka_last_offset: int | None = None
    has_index: bool = True
    has_time_index: bool = True
    has_txn_index: bool = False
    txn_corrupt_for_kafka: bool = False
    """`TransactionIndex.sanityCheck` fails: Kafka rebuilds the segment at load."""
    txn_kafka_fatal: str | None = None
    """Set with the above when the check throws a KafkaException instead: start-up aborts."""
    txn_entries: list[tuple[int, int, int, int]] = field(default_factory=list)
    """The `.txnindex` entries (producer id, first offset, last offset, last stable offset)."""
    has_txn_markers: bool = False
    """A transaction's COMMIT or ABORT marker is among the batches Kafka's recovery reads."""
    has_txn_batches: bool = False
    """A transactional batch (data or marker) is among the batches Kafka's recovery reads."""
    max_timestamp: int = -1
    misnamed: bool = False
    """The first batch lies below the base offset in the name (`segment_name_mismatch`)."""
    unordered: bool = False
    """Batch offsets go back somewhere in the segment, in either reading (an `offset_regression`
    or `offset_overlap`, or a CRC-valid batch Kafka keeps whose offsets go back)."""
    kafka_piece_invalid: int | None = None
    """After Kafka's overflow split, the base offset of the first piece whose recovery throws
    InvalidOffsetException (offsets going back at an index entry of the piece)."""
    kafka_split_fails: bool = False
    """An offset outside the relative range that Kafka cannot split away (`hasOverflow()` is
    false, or the pieces would not be in offset order): Kafka's startup fails on it."""
    max_epoch: int = -1
    """The highest leader epoch of the partition's valid batches up to the end of this segment
    (stale tails left out): where the next segment's epoch regressions are measured from."""
    stale_from: int | None = None
    """Where the batches at or past the next segment's base offset start (a truncation that was
    never made durable): the strict modes cut here and keep the later segments."""
    kafka_indexes: tuple[bytes, bytes] | None = None
    """The `.index` and `.timeindex` Kafka's recovery writes for its valid prefix, when the
    segment's own indexes will be replaced (from the batches of the same pass, through
    `storage.index_builder.recovery_index_bytes`)."""
    indexed_last_offset: int | None = None
    """The highest offset the segment's own offset or time index names (None: no entry): an
    emptied segment's indexes say what it held."""
    kafka_index_entries: int = 0
    """Entries of the offset index Kafka's recovery would write (0 when not computed)."""
    kafka_index_differs: bool = False
    """The indexes agree with the log but are not the bytes Kafka's recovery writes."""
    run_indexes: dict[tuple[int, int], tuple[bytes, bytes]] = field(default_factory=dict)
    """By `(start, end)`: the `.index` and `.timeindex` of each run that starts past byte 0 (after
    damage), as a segment of its own named by its first offset, which is what salvage's split
    makes of it; computed in the pass, so the split's new segment is not read again. A run
    cut after the pass (a stale tail) no longer matches its key."""
    kafka_index_checked: bool = False
    """The offset and time index files were held byte for byte against Kafka's rebuild
    (`kafka_index_differs` says how that went): rebuild-index plans from it without a reread."""

    @property
    def first_offset(self) -> int | None:
        return self.runs[0].first_offset if self.runs else None

    @property
    def last_offset(self) -> int | None:
        return self.runs[-1].last_offset if self.runs else None

    @property
    def next_offset(self) -> int:
        last = self.last_offset
        return self.base_offset if last is None else last + 1

    @property
    def kafka_next_offset(self) -> int:
        last = self.kafka_last_offset
        return self.base_offset if last is None else last + 1

    @property
    def first_data_defect(self) -> Finding | None:
        return min(self.findings, key=lambda f: f.position or 0, default=None)

    @property
    def valid_bytes(self) -> int:
        return sum(r.end - r.start for r in self.runs)

    def prefix_indexes(self, end: int) -> tuple[bytes, bytes] | None:
        """The indexes of the segment cut at `end`, when Kafka's rebuild in the pass covered
        exactly its batches: the first run, from byte 0 to `end`, where Kafka's reading stops too
        (None otherwise: the cut is rebuilt from the file)."""
        first = self.runs[0] if self.runs else None
        if first is None or (first.start, first.end) != (0, end) or self.kafka_pieces:
            return None
        return self.kafka_indexes if self.kafka_valid_bytes == end else None


def scan_segment(
    disk: Disk,
    path: str,
    name: str,
    base_offset: int,
    *,
    previous_last_offset: int | None,
    index_interval_bytes: int,
    index_paths: tuple[str | None, str | None, str | None],
    message_max_bytes: int | None = None,
    max_batch_size: int | None = DEFAULT_MAX_BATCH_SIZE,
    next_base: int | None = None,
    previous_max_epoch: int = -1,
    deep: bool = False,
) -> SegmentScan:
    """Scans `path` (a `.log`, or a `.log.swap`), named `name` in findings.

    `previous_last_offset` is the last valid offset of the segments before this one: batches at or
    below it are overlaps. `next_base` is the next segment's base offset: a segment named N was
    created when the log ended at N, so batches here at or past N are the tail of a truncation that
    was never made durable (`offset_overlap`, from `stale_from` on). `index_paths` are the offset,
    time and transaction index (None when the file does not exist). `previous_max_epoch` is the
    highest leader epoch of the valid batches before this segment (`SegmentScan.max_epoch`).
    `deep` decodes every record (decompression capped as the dump caps it): a batch whose records
    fail is a finding of a CRC-valid kind, which Kafka's recovery keeps and a consumer stops at."""
    seg = SegmentScan(base_offset, name, disk.size(path))
    index_checks = SegmentIndexChecks(disk, seg, index_paths, active=next_base is None)
    kafka = KafkaReading(seg, index_interval_bytes)
    strict = _StrictReading(
        seg, previous_last_offset, next_base, previous_max_epoch, message_max_bytes,
        index_interval_bytes,
    )  # fmt: skip
    _read_batches(disk, path, max_batch_size, deep, strict, kafka, index_checks)
    strict.finish()
    kafka.finish(disk, path, max_batch_size)
    index_checks.finish(disk)
    kafka.rebuild_indexes(index_checks.raw())
    return seg


def _read_batches(
    disk: Disk,
    path: str,
    max_batch_size: int | None,
    deep: bool,
    strict: _StrictReading,
    kafka: KafkaReading,
    index_checks: SegmentIndexChecks,
) -> None:
    """The one pass: frames every batch and feeds it to Kafka's reading (while Kafka would read
    on), the index checks and the strict reading; a defect ends the strict reading's run.

    This loop is most of a scan's CPU: plain attributes, and index entries are visited only at
    the batches they name, so most batches skip both index calls."""
    seg = strict.seg
    offset_check, time_check = index_checks.offsets, index_checks.times
    oc_next = _NEVER if offset_check is None else offset_check.next_position()
    tc_next = _NEVER if time_check is None else time_check.next_offset()
    quiet = None if deep else QuietBatches(strict, kafka, index_checks)
    for item in LogScan(
        disk,
        path,
        resync=True,
        check_offsets=False,
        max_batch_size=max_batch_size,
        deep=deep,
        quiet_runs=quiet,
    ):
        cls = item.__class__
        if cls is LegacyBatch and item.is_compressed:
            item = _wrapper_or_defect(item)
            cls = item.__class__
        if cls is Defect:
            strict.defect(item)
            if not kafka.on:
                continue
            # (a bad magic that runs to the end of the file is named `garbage_tail`)
            bad_magic = item.kind in ("bad_magic", "garbage_tail")
            kept = kafka_keeps_bad_magic(disk, path, item) if bad_magic else None
            if item.kind not in CRC_VALID_KINDS and kept is None:
                kafka.on = False
                continue
            # A batch whose CRC holds: Kafka's recovery keeps it (spec fmt §2.9) and goes through
            # the same steps as for any batch, reading only its header; so do the index checks.
            header = batch_header(disk, path, item.position)
            position, first = item.position, header.base_offset
            last = java_long(header.last_offset)
            size = item.length if kept is None else kept
            kafka.batch(position, first, last, size, header.max_timestamp)
            if size < item.length:
                kafka.on = False  # Kafka reads on past the batch, into what the walker skipped
        else:
            position = item.position
            first = item.base_offset
            if cls is RecordBatch:
                size = len(item.raw)
                last = strict_last = first + item.last_offset_delta
                attributes = item.attributes
                if attributes & TRANSACTIONAL_MASK and kafka.on:
                    seg.has_txn_batches = True
                    if attributes & _TXN_MARKER == _TXN_MARKER:
                        seg.has_txn_markers = True
                if last > INT64_MAX:  # the strict reading calls it `offset_invalid`
                    last = java_long(last)
            else:
                size = item.size
                last = strict_last = item.last_offset
            if kafka.on:
                kafka.batch(position, first, last, size, item.max_timestamp)
        if position >= oc_next:
            oc_next = offset_check.batch(position, first, last)
        if last >= tc_next:
            tc_next = time_check.batch(last)
        if cls is not Defect:
            strict.batch(item, position, first, strict_last, size)


def _wrapper_or_defect(wrapper: LegacyBatch) -> LegacyBatch | Defect:
    """A compressed legacy wrapper, or the defect that stops its base offset being read (the
    offset field is outside the CRC: a negative one, or inner records that do not decompress).
    Kafka's recovery reads only the wrapper's header, so it keeps such a batch (a CRC-valid
    kind)."""
    try:
        wrapper.base_offset  # noqa: B018 - decompresses, and keeps the records
    except FormatError as e:
        return Defect(e.kind, wrapper.position, wrapper.size, e.detail, None)
    return wrapper


class _StrictReading:
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
        epoch = self.max_epoch if self.max_epoch <= self.segment_max_epoch else _NO_EPOCH
        return floor, max_last, max_size, epoch

    def extend(
        self, start: int, end: int, first: int, last: int, max_ts: int, points: bytes | None
    ) -> None:
        """Batches from `start` to `end` at offsets `first`..`last` that met `quiet_limits`:
        what `batch` does with each of them, at once. `points`: their (position in the run, last
        offset, max timestamp) for the run's index, when it has one."""
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
        if self.run_index is not None:
            try:
                if points is None:
                    raise IndexFileError("no points")  # (the caller could not give them)
                self.run_index.add_points(points)
            except IndexFileError:
                self.run_index = None
        self.last = last
        if max_ts > self.seg.max_timestamp:
            self.seg.max_timestamp = max_ts

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
