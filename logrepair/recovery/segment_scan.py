"""One pass over a segment's `.log`: every byte a valid batch or inside a finding, plus Kafka's view.

The pass keeps two readings of the same bytes side by side:

- the strict one (what verify reports and the strict modes act on): every structural defect, and
  batches whose offsets do not increase past everything before them, in this segment or earlier;
- Kafka's (what `kafka` mode acts on, spec rec §6.6.1): Kafka stops only at a batch that fails
  `ensureValid` or cannot be framed, empties the segment when an offset-index append would go
  backwards, and splits it when an offset overflows the relative range; it never notices an offset
  regression between index points.

The segment's indexes are checked in the same pass by merging their entries with the batches as
they stream by, so memory stays bounded by the index files, never by the `.log`.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass, field
from typing import Self

from ..format.batch import CONTROL_MASK, TRANSACTIONAL_MASK, RecordBatch
from ..format.crc import crc32c
from ..format.errors import Defect
from ..format.walker import CRC_VALID_KINDS
from ..storage.abstract_index import IndexOffsetOverflowError, InvalidOffsetError
from ..storage.disk import Disk
from ..storage.index_builder import recovery_index_bytes
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, LogScan
from .findings import Finding
from .indexes import UNBOUNDED_INDEX, batch_header

INT_MAX = 2**31 - 1
# Index files larger than this (or than segment.index.bytes, when that is larger) are reported,
# not loaded: Kafka's default segment.index.bytes is 10 MiB.
MAX_INDEX_LOAD = 64 * 1024 * 1024

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
TXN_ENTRY = struct.Struct(">hqqqq")
TXN_ENTRY_SIZE = 34
_TXN_MARKER = TRANSACTIONAL_MASK | CONTROL_MASK
_V2_MIN_LENGTH = 49  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD (61) less the offset and length


@dataclass(slots=True)
class Run:
    """Consecutive valid batches: `[start, end)` of the file holding offsets first..last."""

    start: int
    end: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class Piece:
    """Where Kafka's overflow split would start a new segment: position and its base offset."""

    position: int
    base_offset: int


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
    unordered: bool = False
    """Batch offsets go back somewhere in the segment (an `offset_regression`/`offset_overlap`)."""
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
    kafka_index_differs: bool = False
    """The indexes agree with the log but are not the bytes Kafka's recovery writes."""
    kafka_index_entries: int = 0
    """The first batch lies below the base offset in the name (`segment_name_mismatch`)."""

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
) -> SegmentScan:
    """Scans `path` (a `.log`, or a `.log.swap`), named `name` in findings.

    `previous_last_offset` is the last valid offset of the segments before this one: batches at or
    below it are overlaps. `next_base` is the next segment's base offset: a segment named N was
    created when the log ended at N, so batches here at or past N are the tail of a truncation that
    was never made durable (`offset_overlap`, from `stale_from` on). `index_paths` are the offset,
    time and transaction index (None when the file does not exist). `previous_max_epoch` is the
    highest leader epoch of the valid batches before this segment (`SegmentScan.max_epoch`)."""
    size = disk.size(path)
    seg = SegmentScan(base_offset, name, size)
    active = next_base is None
    offset_check = _OffsetIndexCheck.load(disk, index_paths[0], base_offset, seg, name, active)
    time_check = _TimeIndexCheck.load(disk, index_paths[1], base_offset, seg, name, active)
    seg.has_index = index_paths[0] is not None
    seg.has_time_index = index_paths[1] is not None

    last = previous_last_offset
    run: Run | None = None
    kafka_on = True
    kafka_bytes = 0
    last_index_pos = 0
    last_index_offset: int | None = None
    strict_max_epoch = -1  # within this segment: where the leader epoch rises
    max_epoch = previous_max_epoch  # over the partition: where it regresses
    piece_base = base_offset
    strict_base = base_offset
    # (position, last offset, max timestamp) of each batch Kafka's recovery keeps, for its index
    # rebuild: 24 bytes a batch
    kafka_points = array("q")  # position, last offset, max timestamp, ...
    add_point = kafka_points.extend
    runs = seg.runs
    findings = seg.findings
    regressions = _Stretches("batch_epoch_regression", name, seg.index_findings)
    too_large = _Stretches("batch_too_large", name, seg.index_findings)
    stale_at: int | None = None  # the first valid batch at or past `next_base`
    stale_last: int | None = None
    stale_first = 0
    kafka_last: int | None = None
    never = 2**63
    oc_next = never if offset_check is None else offset_check.next_position()
    tc_next = never if time_check is None else time_check.next_offset()

    for item in LogScan(
        disk, path, resync=True, check_offsets=False, max_batch_size=max_batch_size
    ):
        cls = item.__class__
        if cls is Defect:
            run = None
            # LogScan reports a damaged region once, however many windows it spans.
            findings.append(
                Finding(item.kind, name, item.position, item.length, item.offset, item.detail)
            )
            if not kafka_on:
                continue
            kept = _kafka_keeps_bad_magic(disk, path, item) if item.kind == "bad_magic" else None
            if item.kind not in CRC_VALID_KINDS and kept is None:
                kafka_on = False
                continue
            # A batch whose CRC holds: Kafka's recovery keeps it (spec fmt §2.9) and goes through
            # the same steps as for any batch, reading only its header.
            header = batch_header(disk, path, item.position)
            position = item.position
            first = header.base_offset
            batch_size = item.length if kept is None else kept
            last_off = header.last_offset
            ts = header.max_timestamp
            strict = False
        else:
            position = item.position
            first = item.base_offset
            if cls is RecordBatch:  # plain attributes: the per-batch cost is most of a scan's CPU
                batch_size = len(item.raw)
                last_off = first + item.last_offset_delta
                attributes = item.attributes
                if attributes & TRANSACTIONAL_MASK and kafka_on:
                    seg.has_txn_batches = True
                    if attributes & _TXN_MARKER == _TXN_MARKER:
                        seg.has_txn_markers = True
            else:
                batch_size = item.size
                last_off = item.last_offset
            ts = item.max_timestamp
            strict = True
        if kafka_on:
            if not 0 <= last_off - piece_base <= INT_MAX:
                if not seg.kafka_pieces:
                    seg.kafka_pieces.append(Piece(0, base_offset))
                piece_base = first
                seg.kafka_pieces.append(Piece(position, first))
            if kafka_bytes - last_index_pos > index_interval_bytes and not seg.kafka_pieces:
                # (once Kafka must split, each piece is indexed on its own: `_piece_index_fails`)
                if last_index_offset is not None and last_off <= last_index_offset:
                    seg.kafka_invalid_offset = True
                    kafka_on = False
                else:
                    last_index_offset = last_off
                    last_index_pos = kafka_bytes
            if kafka_on:
                add_point((kafka_bytes, last_off, -1 if ts is None else ts))
                kafka_bytes += batch_size
                kafka_last = last_off
                if cls is Defect and batch_size < item.length:
                    kafka_on = False  # Kafka reads on past the batch, into what the walker skipped
        # Index entries are visited only at the batches they name: most batches skip both calls.
        # (A flagged batch whose CRC holds is one Kafka's recovery indexes.)
        if position >= oc_next:
            oc_next = offset_check.batch(position, first, last_off)
        if last_off >= tc_next:
            tc_next = time_check.batch(last_off)
        if not strict:
            continue
        # strict reading
        if first < 0 or last_off < first:
            # The offset fields lie outside the CRC: a flipped bit there leaves the CRC valid.
            findings.append(
                Finding(
                    "offset_invalid",
                    name,
                    position,
                    batch_size,
                    first,
                    f"batch at offsets {first}..{last_off}: a negative or inverted offset range",
                )
            )
            run = None
            continue
        if last is not None and first <= last:
            # The indexes of a log whose offsets go back cannot be held against it entry by entry
            # (Kafka's own rebuild would fail such a check); their structure is still checked.
            seg.unordered = True
            oc_next = tc_next = never
            kind = (
                "offset_overlap"
                if not runs and previous_last_offset == last
                else "offset_regression"
            )
            findings.append(
                Finding(
                    kind,
                    name,
                    position,
                    batch_size,
                    first,
                    f"batch at offsets {first}..{last_off} does not follow offset {last}",
                )
            )
            run = None
            continue
        if first < base_offset and not runs and not seg.misnamed:
            # The segment is named above its first batch (Kafka cannot recover it: the relative
            # offset is negative). Its batches are otherwise fine: salvage renames the segment.
            seg.misnamed = True
            findings.append(
                Finding(
                    "segment_name_mismatch",
                    name,
                    position,
                    0,
                    first,
                    f"segment {base_offset} starts with a batch at offset {first}",
                )
            )
            strict_base = first
        elif last_off - strict_base > INT_MAX:
            # A valid batch that needs a segment of its own (legacy data, spec rec §6.7): a
            # zero-length finding marks where the segment must be split; the batch stays valid.
            findings.append(
                Finding(
                    "offset_overflow",
                    name,
                    position,
                    0,
                    first,
                    f"batch at offsets {first}..{last_off} overflows the relative offsets of a "
                    f"segment based at {strict_base}; the segment must be split here",
                )
            )
            strict_base = first
            run = None
        if message_max_bytes is not None and batch_size > message_max_bytes:
            too_large.flag(
                position,
                batch_size,
                first,
                last_off,
                f"larger than message.max.bytes {message_max_bytes} (the first: {batch_size} "
                "bytes)",
            )
        elif too_large.open is not None:  # (tested here: no call for the usual batch)
            too_large.end()
        if run is None:
            run = Run(position, position + batch_size, first, last_off)
            runs.append(run)
        else:
            run.end = position + batch_size
            run.last_offset = last_off
        if stale_at is None and next_base is not None and last_off >= next_base:
            stale_at, stale_last, stale_first = position, last, first
        last = last_off
        if ts is not None and ts > seg.max_timestamp:
            seg.max_timestamp = ts
        epoch = item.partition_leader_epoch
        if epoch is not None and epoch >= 0:
            if epoch > strict_max_epoch:
                strict_max_epoch = epoch
                seg.strict_epochs.append((epoch, first, position))
        # Regressions are measured over the whole partition, so a repair that keeps a
        # subsequence of the batches (salvage's splits) can only lose such findings, never make
        # new ones. A stale tail (cut by the strict modes) sets no epoch to regress from.
        if stale_at is not None:
            continue
        if epoch is not None and epoch >= 0 and epoch < max_epoch:
            regressions.flag(
                position,
                batch_size,
                first,
                last_off,
                f"below the leader epoch {max_epoch} of an earlier batch (the first: epoch "
                f"{epoch}; Kafka never checks this)",
            )
            continue
        if epoch is not None and epoch > max_epoch:
            max_epoch = epoch
        if regressions.open is not None:
            regressions.end()

    seg.max_epoch = max_epoch
    regressions.end()
    too_large.end()
    if stale_at is not None:
        _cut_stale_tail(seg, stale_at, stale_last, stale_first, next_base)
    seg.kafka_last_offset = kafka_last
    if seg.kafka_pieces and not _kafka_can_split(seg.kafka_pieces, kafka_last, base_offset):
        seg.kafka_pieces = []
        seg.kafka_split_fails = True
    if seg.kafka_pieces:
        seg.kafka_piece_invalid = _piece_index_fails(
            seg.kafka_pieces, kafka_points, kafka_bytes, index_interval_bytes
        )
    if offset_check is not None:
        offset_check.finish()
    if time_check is not None:
        time_check.finish(seg.last_offset)
    if index_paths[2] is not None:
        _check_txn_index(disk, index_paths[2], seg, name)
        seg.has_txn_index = True
    # kafka mode rewrites the indexes of a segment it cuts or whose indexes are wrong or missing;
    # where offsets go back, the rebuild itself may fail as Kafka's does
    rewrite = bool(seg.index_findings) or kafka_bytes < size or not seg.has_index
    rewrite = rewrite or not seg.has_time_index
    suspect = rewrite or seg.unordered or bool(seg.findings)  # offsets may go back somewhere
    # indexes that agree with the log can still differ from Kafka's rebuild (entries a crash
    # lost, another index.interval.bytes): a recovered segment gets Kafka's bytes
    compare = not suspect and offset_check is not None and time_check is not None
    if (suspect or compare) and not seg.kafka_pieces and not seg.kafka_invalid_offset:
        try:
            kafka_index = recovery_index_bytes(
                zip(kafka_points[0::3], kafka_points[1::3], kafka_points[2::3], strict=True),
                base_offset,
                index_interval_bytes,
                UNBOUNDED_INDEX,
            )
            seg.kafka_index_entries = len(kafka_index[0]) // 8
            if compare and offset_check is not None and time_check is not None:
                seg.kafka_index_differs = kafka_index != (offset_check.raw, time_check.raw)
                rewrite = seg.kafka_index_differs
            if rewrite:  # kept only where used, so memory follows the damage
                seg.kafka_indexes = kafka_index
        except IndexOffsetOverflowError:
            pass  # Kafka's index append throws on an offset out of the relative range
        except InvalidOffsetError:
            # The time index refuses an offset below its last entry (offsets go back between
            # index points): Kafka's recovery throws InvalidOffsetException and empties the segment.
            seg.kafka_invalid_offset = True
    seg.kafka_valid_bytes = 0 if seg.kafka_invalid_offset else kafka_bytes
    if seg.kafka_invalid_offset:
        seg.kafka_last_offset = None
    return seg


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


def _piece_index_fails(pieces: list[Piece], points: array, end: int, interval: int) -> int | None:
    """Kafka recovers each piece of a split again (spec rec §6.7 step 3), with index points of its
    own: the base offset of the first piece whose index rebuild throws, if any."""
    bounds = [pc.position for pc in pieces[1:]] + [end]
    k, n = 0, len(points)
    for pc, stop in zip(pieces, bounds, strict=True):
        own = []
        while k < n and points[k] < stop:
            own.append((points[k] - pc.position, points[k + 1], points[k + 2]))
            k += 3
        try:
            recovery_index_bytes(own, pc.base_offset, interval, UNBOUNDED_INDEX)
        except (InvalidOffsetError, IndexOffsetOverflowError):
            return pc.base_offset
    return None


def _kafka_can_split(pieces: list[Piece], last_offset: int | None, base_offset: int) -> bool:
    """`LogSegment.hasOverflow()` (the last offset is out of range), and pieces in offset order."""
    if last_offset is None or last_offset - base_offset <= INT_MAX:
        return False
    bases = [p.base_offset for p in pieces]
    return all(a < b for a, b in zip(bases, bases[1:], strict=False))


class _IndexCheck:
    """What the offset and time index checks share: the entries, the first problem found, and the
    finding it becomes."""

    KIND = ""
    SUFFIX = ""
    LABEL = ""
    ENTRY = 1

    def __init__(self, raw: bytes, base: int, seg: SegmentScan, file: str) -> None:
        self.raw = raw
        self.n = len(raw) // self.ENTRY
        self.i = 0
        """The next entry to hold against the batches."""
        self.base = base
        self.seg = seg
        self.file = file
        self.problem: str | None = None
        self.against_log = False
        self.active = False
        """The partition's last segment: Kafka adds its last time index entry only when it closes
        it, and rebuilds its indexes at an unclean start."""

    @classmethod
    def load(
        cls, disk: Disk, path: str | None, base: int, seg: SegmentScan, name: str, active: bool
    ) -> Self | None:
        """The check of the index at `path` (None: no such file, or too large to load).

        The active (last) segment's indexes are preallocated while the broker runs and trimmed only
        when it closes them, so after a crash their zero-filled slots are the expected state, which
        Kafka's recovery of that segment rebuilds: not a finding there (all slots zero: nothing
        indexed yet). Anywhere else the trim did not happen and it is one."""
        if path is None:
            return None
        file = _index_name(name, cls.SUFFIX)
        raw = _read_index(disk, path, seg, cls.KIND, file)
        if raw is None:
            return None
        size = len(raw)
        check = cls(raw, base, seg, file)
        check.active = active
        if size % cls.ENTRY:
            check.fail(
                f"{cls.LABEL} file {path} is corrupt, found {size} bytes which is neither "
                f"positive nor a multiple of {cls.ENTRY}"
            )
        zeros = _zero_tail(raw[: check.n * cls.ENTRY], cls.ENTRY)
        if zeros and active and check.n > 1:
            check.n -= zeros
            check.check_entries(check.n)
        elif zeros and zeros < check.n:
            check.fail(f"{zeros} zero-filled slots after the last entry (active at a crash)")
            check.check_entries(check.n - zeros)
            check.n -= zeros
        else:
            check.check_entries(check.n)
        return check

    def check_entries(self, n: int) -> None:
        """Checks the first `n` entries among themselves, before any batch is read."""

    def fail(self, detail: str, against_log: bool = False) -> None:
        """Records the first problem; `against_log` marks one found by holding the entries
        against the batches, which means nothing when the batches' own offsets go back."""
        if self.problem is None:
            self.problem = detail
            self.against_log = against_log

    def report(self) -> None:
        if self.problem is not None and not (self.against_log and self.seg.unordered):
            self.seg.index_findings.append(
                Finding(self.KIND, self.file, None, len(self.raw), None, self.problem)
            )


class _OffsetIndexCheck(_IndexCheck):
    """Checks `.index` entries against the batches as they pass (spec fmt §6.7)."""

    KIND = "offset_index_corrupt"
    SUFFIX = ".index"
    LABEL = "Index"
    ENTRY = 8

    def __init__(self, raw: bytes, base: int, seg: SegmentScan, file: str) -> None:
        super().__init__(raw, base, seg, file)
        self.prev_offset: int | None = None

    def next_position(self) -> int:
        """Where the next unchecked entry points (the scan calls `batch` only from there on)."""
        if self.problem is not None or self.i >= self.n:
            return 2**63
        return _OFFSET_ENTRY.unpack_from(self.raw, self.i * 8)[1]

    def batch(self, position: int, first: int, last: int) -> int:
        """Checks the entry at this batch, if any; returns `next_position()`."""
        if self.problem is not None or self.i >= self.n:
            return 2**63
        rel, pos = _OFFSET_ENTRY.unpack_from(self.raw, self.i * 8)
        if pos < position:
            self.fail(
                f"entry {self.i} points at byte {pos}, which is not the start of a batch", True
            )
        elif pos == position:
            offset = self.base + rel
            if rel < 0 or offset < last:
                self.fail(
                    f"entry {self.i} says offset {offset} at byte {pos}, where batch "
                    f"{first}..{last} starts",
                    True,
                )
            elif self.prev_offset is not None and self.prev_offset >= first:
                self.fail(
                    f"entry {self.i - 1} offset {self.prev_offset} is not below the batch at "
                    f"the next entry ({first})",
                    True,
                )
            else:
                self.prev_offset = offset
                self.i += 1
        return self.next_position()

    def finish(self) -> None:
        if self.problem is None and self.i < self.n:
            rel, pos = _OFFSET_ENTRY.unpack_from(self.raw, self.i * 8)
            self.fail(
                f"{self.n - self.i} entries from entry {self.i} (offset {self.base + rel}, byte "
                f"{pos}) point past the last valid batch",
                True,
            )
        self.report()


class _TimeIndexCheck(_IndexCheck):
    """Checks `.timeindex` entries: increasing timestamps, offsets that are batch last offsets."""

    KIND = "time_index_corrupt"
    SUFFIX = ".timeindex"
    LABEL = "Time index"
    ENTRY = 12

    def check_entries(self, n: int) -> None:
        prev_ts: int | None = None
        prev_off = self.base
        for k in range(n):
            ts, rel = _TIME_ENTRY.unpack_from(self.raw, k * 12)
            offset = self.base + rel
            if rel < 0:
                self.fail(f"entry {k} has offset {offset}, below the base offset {self.base}")
                return
            if prev_ts is not None and ts <= prev_ts:
                self.fail(f"entry {k} timestamp {ts} does not increase past {prev_ts}")
                return
            if offset < prev_off:
                self.fail(f"entry {k} offset {offset} goes back from {prev_off}")
                return
            prev_ts, prev_off = ts, offset

    def next_offset(self) -> int:
        """The offset the next unchecked entry names (the scan calls `batch` only from there)."""
        if self.problem is not None or self.i >= self.n:
            return 2**63
        return self.base + _TIME_ENTRY.unpack_from(self.raw, self.i * 12)[1]

    def batch(self, last: int) -> int:
        """Checks the entries up to this batch's last offset; returns `next_offset()`."""
        while self.problem is None and self.i < self.n:
            _, rel = _TIME_ENTRY.unpack_from(self.raw, self.i * 12)
            offset = self.base + rel
            if offset > last:
                break
            if offset < last:
                self.fail(
                    f"entry {self.i} points at offset {offset}, which is not a batch's last offset",
                    True,
                )
                break
            self.i += 1
        return self.next_offset()

    def finish(self, log_last_offset: int | None) -> None:
        if self.problem is None and self.i < self.n:
            _, rel = _TIME_ENTRY.unpack_from(self.raw, self.i * 12)
            self.fail(
                f"entry {self.i} points at offset {self.base + rel}, past the log's last offset "
                f"{log_last_offset}",
                True,
            )
        if self.problem is None and self.n == 0 and self.seg.max_timestamp >= 0 and not self.active:
            self.fail(
                f"empty, but the segment holds timestamps up to {self.seg.max_timestamp} "
                "(lookups by time miss it)"
            )
        self.report()


def _kafka_keeps_bad_magic(disk: Disk, path: str, defect: Defect) -> int | None:
    """A batch with magic 3-127 is read by Kafka as v2 and kept when its CRC holds (the CRC does
    not cover the magic byte; spec-notes): its size, when that is so at the start of `defect`."""
    with disk.open(path) as f:
        head = f.read_at(defect.position, 21)
        if len(head) < 21:
            return None
        length = int.from_bytes(head[8:12], "big", signed=True)
        size = 12 + length
        if not 3 <= head[16] <= 127 or length < _V2_MIN_LENGTH or size > defect.length:
            return None
        body = f.read_at(defect.position + 21, size - 21)
    return size if crc32c(body) == int.from_bytes(head[17:21], "big") else None


def _index_name(log_name: str, suffix: str) -> str:
    """The index file beside a segment, named as findings name it."""
    return (log_name[: -len(".log")] if log_name.endswith(".log") else log_name) + suffix


def _read_index(disk: Disk, path: str, seg: SegmentScan, kind: str, file: str) -> bytes | None:
    """An index file's bytes, or None (and a finding) when it is too large to hold in memory."""
    size = disk.size(path)
    if size > MAX_INDEX_LOAD:
        seg.index_findings.append(Finding(kind, file, 0, size, None, f"{size} bytes is too large"))
        return None
    return disk.read_file(path)


def _check_txn_index(disk: Disk, path: str, seg: SegmentScan, name: str) -> None:
    file = _index_name(name, ".txnindex")
    raw = _read_index(disk, path, seg, "txn_index_corrupt", file)
    if raw is None:
        return
    problem = None
    prev_last: int | None = None
    # past every batch the file holds in either reading: kafka mode keeps batches whose offsets
    # go back (and their markers), the strict modes cut them and drop their entries
    end = max(seg.next_offset, seg.kafka_next_offset)
    for k in range(len(raw) // TXN_ENTRY_SIZE):
        version, pid, first, last, lso = TXN_ENTRY.unpack_from(raw, k * TXN_ENTRY_SIZE)
        seg.txn_entries.append((pid, first, last, lso))
        if problem is not None:
            continue
        if version > 0:
            # `AbortedTxn.version()` is a signed short; the loader's sanity check throws a
            # KafkaException (not a CorruptIndexException) above version 0: startup aborts
            problem = f"entry {k} has version {version}; Kafka reads only version 0"
            seg.txn_corrupt_for_kafka = True
            seg.txn_kafka_fatal = problem
        elif last < seg.base_offset:
            problem = (
                f"Last offset of aborted transaction (producer {pid}, last offset {last}) is less "
                f"than start offset {seg.base_offset}"
            )
            seg.txn_corrupt_for_kafka = True
        elif last >= end:
            problem = f"entry {k} (abort marker at {last}) is past the log end {end}"
        elif first > last:
            problem = f"entry {k} first offset {first} is past its last offset {last}"
        elif prev_last is not None and last <= prev_last:
            problem = f"entry {k} last offset {last} does not increase"
        prev_last = last
    if len(raw) % TXN_ENTRY_SIZE and problem is None:
        problem = f"{len(raw) % TXN_ENTRY_SIZE} trailing bytes are not a whole entry"
    if problem is not None:
        seg.index_findings.append(Finding("txn_index_corrupt", file, None, len(raw), None, problem))


def _zero_tail(raw: bytes, entry: int) -> int:
    """Count of all-zero entries at the end (preallocated slots a crash left)."""
    n = len(raw) // entry
    # rstrip runs in C: a crashed broker's preallocated 10 MiB index is 1.3M slots to look at
    used = len(bytes(raw[: n * entry]).rstrip(b"\0"))
    return n - -(-used // entry)
