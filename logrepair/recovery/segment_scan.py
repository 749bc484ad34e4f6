"""One pass over a segment's `.log`: every byte a valid batch or inside a finding, plus Kafka's view.

The pass keeps two readings of the same bytes side by side:

- the strict one (what verify reports and the strict modes act on, strict_reading.py): every
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

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..format.batch import RecordBatch
from ..format.batch_layout import (
    CONTROL_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_MASK,
)
from ..format.errors import Defect, FormatError
from ..format.legacy import LegacyBatch
from ..format.walker import CRC_VALID_KINDS, Walker
from ..storage.disk import Disk
from ..storage.scan import DEFAULT_MAX_BATCH_SIZE, DEFAULT_WINDOW_SIZE, LogScan
from .findings import Finding
from .index_checks import SegmentIndexChecks
from .indexes import batch_header
from .kafka_reading import KafkaReading, Piece, kafka_keeps_bad_magic
from .quiet_batches import QuietBatches
from .quiet_segment import read_index_files, take_quiet_segment
from .strict_reading import INT64_MAX, Run, StrictReading

_TXN_MARKER = TRANSACTIONAL_MASK | CONTROL_MASK
_NEVER = 2**63


def java_long(value: int) -> int:
    """`value` as Java's long arithmetic leaves it: a last offset `base + delta` past 2^63 - 1
    wraps to a negative number in Kafka (the base offset is outside the CRC, so any value is
    possible)."""
    return (value + 2**63) % 2**64 - 2**63


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
    size, whole = _read_whole(disk, path)
    seg = SegmentScan(base_offset, name, size)
    raws = (None, None)
    if whole is not None and not deep:
        raws = read_index_files(disk, index_paths)
        if take_quiet_segment(
            disk,
            seg,
            whole,
            raws,
            index_paths[2],
            previous_last_offset=previous_last_offset,
            next_base=next_base,
            previous_max_epoch=previous_max_epoch,
            message_max_bytes=message_max_bytes,
            index_interval_bytes=index_interval_bytes,
            max_batch_size=max_batch_size,
        ):
            return seg
    index_checks = SegmentIndexChecks(disk, seg, index_paths, next_base is None, raws)
    kafka = KafkaReading(seg, index_interval_bytes)
    strict = StrictReading(
        seg, previous_last_offset, next_base, previous_max_epoch, message_max_bytes,
        index_interval_bytes,
    )  # fmt: skip
    _read_batches(disk, path, whole, max_batch_size, deep, strict, kafka, index_checks)
    strict.finish()
    kafka.finish(disk, path, max_batch_size)
    index_checks.finish(disk)
    kafka.rebuild_indexes(index_checks.raw())
    return seg


def _read_whole(disk: Disk, path: str) -> tuple[int, memoryview | None]:
    """The `.log`'s size, and its bytes when it fits one window (most segments of a log dir):
    one open for both."""
    with disk.open(path) as f:
        size = f.size()
        if size > DEFAULT_WINDOW_SIZE:
            return size, None
        data = f.read_at(0, size)  # (one read, into memory nobody zeroes first)
        if len(data) < size:  # a short read: read on to the end, which may have moved
            buf = bytearray(size)
            data = memoryview(buf)[: f.read_into(0, buf)]
    return size, memoryview(data)  # (a file that shrank under the read ends where it did)


def _read_batches(
    disk: Disk,
    path: str,
    whole: memoryview | None,
    max_batch_size: int | None,
    deep: bool,
    strict: StrictReading,
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
    for item in _items(disk, path, whole, max_batch_size, deep, quiet):
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


def _items(
    disk: Disk,
    path: str,
    whole: memoryview | None,
    max_batch_size: int | None,
    deep: bool,
    quiet: QuietBatches | None,
) -> Iterable[RecordBatch | LegacyBatch | Defect]:
    """The batches and defects of the `.log` that the quiet runs leave to the loop. A file read
    whole (`whole`) is offered to the quiet runs straight away, as the walker would offer it: a
    clean one is taken whole, with nothing to iterate; the walker goes on from where they stop.
    A larger file is scanned window by window (`LogScan`)."""
    if whole is None:
        return LogScan(
            disk,
            path,
            resync=True,
            check_offsets=False,
            max_batch_size=max_batch_size,
            deep=deep,
            quiet_runs=quiet,
        )
    mv, got = whole, len(whole)
    pos, expected = 0, None
    if quiet is not None:
        max_length = (max_batch_size or 2**31) - LOG_OVERHEAD  # (the walker's bad_length bound)
        while pos + RECORD_BATCH_OVERHEAD <= got:
            n, end, last = quiet(mv, pos, got, 0, max_length, _ANY_OFFSET)
            if not n:
                break
            pos, expected = end, last + 1
    if pos >= got:
        return ()
    return Walker(
        mv[pos:],
        file_position=pos,
        file_size=got,
        resync=True,
        check_offsets=False,
        expected_offset=expected,
        max_batch_size=max_batch_size,
        deep=deep,
        carry_damage=True,
        quiet_runs=quiet,
    )


_ANY_OFFSET = -(2**63)  # the floor a walk without offset checks offers the quiet runs


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
