"""Kafka's reading of a segment, kept beside the strict one in the same pass (spec rec §6.6.1).

Kafka's recovery stops only at a batch that fails `ensureValid` or cannot be framed, empties the
segment when an offset-index append would go backwards (InvalidOffsetException), and splits it
when an offset overflows the relative range; it never notices an offset regression between index
points. What it would keep is what `kafka` mode keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..format.crc import crc32c
from ..format.errors import Defect
from ..storage.abstract_index import IndexFileError, IndexOffsetOverflowError, InvalidOffsetError
from ..storage.disk import Disk
from ..storage.index_builder import RecoveryIndex
from .indexes import UNBOUNDED_INDEX

if TYPE_CHECKING:
    from .segment_scan import SegmentScan

INT_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_V2_MIN_LENGTH = 49  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD (61) less the offset and length


@dataclass(slots=True)
class Piece:
    """Where Kafka's overflow split would start a new segment: position and its base offset."""

    position: int
    base_offset: int


class KafkaReading:
    """The batches Kafka's recovery keeps, fed one by one (`batch`) until it would stop."""

    __slots__ = (
        "seg",
        "interval",
        "on",
        "bytes",
        "last",
        "piece_base",
        "last_index_pos",
        "last_index_offset",
        "index",
        "index_error",
        "piece",
        "piece_start",
        "piece_failed",
    )

    def __init__(self, seg: SegmentScan, index_interval_bytes: int) -> None:
        self.seg = seg
        self.interval = index_interval_bytes
        self.on = True
        """False once Kafka's recovery would stop reading (the rest of the segment is cut)."""
        self.bytes = 0
        """Bytes of the batches it keeps."""
        self.last: int | None = None
        self.piece_base = seg.base_offset
        self.last_index_pos = 0
        self.last_index_offset: int | None = None
        self.index: RecoveryIndex | None = RecoveryIndex(
            seg.base_offset, index_interval_bytes, UNBOUNDED_INDEX
        )
        """The index Kafka's recovery writes, built as the batches pass: nothing is kept per
        batch."""
        self.index_error: IndexFileError | None = None
        """What the index rebuild threw (it is fed nothing more after)."""
        self.piece: RecoveryIndex | None = None
        """Once an overflow splits the segment, the index of the piece being read: Kafka recovers
        each piece again (spec rec §6.7 step 3), with index points of its own."""
        self.piece_start = 0
        self.piece_failed: int | None = None
        """After an overflow split: the base offset of the first piece whose rebuild throws."""

    def batch(self, position: int, first: int, last: int, size: int, ts: int | None) -> None:
        """One batch Kafka's recovery reads (only while `on`)."""
        seg = self.seg
        if last == INT64_MAX:
            # The log end after it (last + 1) does not fit a long: no segment can hold it (a split
            # would name one 09223372036854775807.log and Kafka's next offset would wrap), so
            # kafka mode stops reading here and cuts it (spec-notes: "offsets at 2^63 - 1").
            self.on = False
            return
        if not 0 <= last - self.piece_base <= INT_MAX:
            if not seg.kafka_pieces:
                seg.kafka_pieces.append(Piece(0, seg.base_offset))
            self.piece_base = first
            seg.kafka_pieces.append(Piece(position, first))
            self._next_piece(first)
        if self.bytes - self.last_index_pos > self.interval and not seg.kafka_pieces:
            # (once Kafka must split, each piece is indexed on its own: `piece`)
            if self.last_index_offset is not None and last <= self.last_index_offset:
                seg.kafka_invalid_offset = True
                self.on = False
                return
            self.last_index_offset = last
            self.last_index_pos = self.bytes
        if self.last is not None and first <= self.last:
            seg.unordered = True
        ts = -1 if ts is None else ts
        if self.index is not None:
            try:
                self.index.add(self.bytes, last, ts)
            except IndexFileError as e:
                self.index, self.index_error = None, e
        piece = self.piece
        if piece is not None:
            try:
                piece.add(self.bytes - self.piece_start, last, ts)
            except (InvalidOffsetError, IndexOffsetOverflowError):
                self.piece_failed, self.piece = piece.base_offset, None  # (the first to fail)
        self.bytes += size
        self.last = last

    def quiet_limits(self) -> tuple[int, int] | None:
        """The lowest base offset and highest last offset of a batch `batch` would only count and
        index (None once an overflow split has begun: then each piece is followed batch by batch)."""
        if self.seg.kafka_pieces:
            return None
        floor = self.piece_base if self.last is None else max(self.piece_base, self.last + 1)
        return floor, self.piece_base + INT_MAX

    def extend(
        self, kept: int, last: int, index_pos: int, index_offset: int | None, points: bytes
    ) -> None:
        """Batches that met `quiet_limits`, read in one go (`format.batch_runs.quiet_run`): the
        bytes kept after them, the last offset, where the index was last written, and their
        (position, last offset, max timestamp) points as native int64s, added to the index at
        once."""
        self.bytes = kept
        self.last = last
        self.last_index_pos = index_pos
        self.last_index_offset = index_offset
        if self.index is not None:
            try:
                self.index.add_points(points)
            except IndexFileError as e:
                self.index, self.index_error = None, e

    def finish(self) -> None:
        """The segment is read: can Kafka split it where an offset overflows, and would each
        piece's recovery hold?"""
        seg = self.seg
        seg.kafka_last_offset = self.last
        if seg.kafka_pieces and not _kafka_can_split(seg.kafka_pieces, self.last, seg.base_offset):
            seg.kafka_pieces = []
            seg.kafka_split_fails = True
        if seg.kafka_pieces:
            self._close_piece()
            seg.kafka_piece_invalid = self.piece_failed

    def _next_piece(self, base_offset: int) -> None:
        """An overflow splits the segment here: the piece before is read (the first piece is the
        segment's start, whose index is the segment's so far), the next one starts."""
        self._close_piece()
        if self.piece_failed is None:  # (past the first piece that fails, none is looked at)
            self.piece = RecoveryIndex(base_offset, self.interval, UNBOUNDED_INDEX)
            self.piece_start = self.bytes

    def _close_piece(self) -> None:
        """Would the rebuild of the piece read so far throw (its last time entry included)?"""
        if self.piece_failed is not None:
            return
        # (no piece index yet: the first piece, the segment's start, is what `index` holds)
        index, base = (self.index, self.seg.base_offset) if self.piece is None else (
            self.piece, self.piece.base_offset
        )  # fmt: skip
        try:
            if index is None:
                raise self.index_error  # what it threw while the batches passed
            index.result()
        except (InvalidOffsetError, IndexOffsetOverflowError):
            self.piece_failed = base

    def rebuild_indexes(self, existing: tuple[bytes, bytes] | None) -> None:
        """The indexes Kafka's recovery writes for what it keeps, where kafka mode will replace
        the segment's own (cut, wrong, missing, or merely other bytes than Kafka's: `existing`,
        the offset and time index files); where offsets go back, the rebuild itself may throw
        as Kafka's does, and Kafka empties the segment."""
        seg = self.seg
        rewrite = bool(seg.index_findings) or self.bytes < seg.size or not seg.has_index
        rewrite = rewrite or not seg.has_time_index
        suspect = rewrite or seg.unordered or bool(seg.findings)  # offsets may go back somewhere
        if (suspect or existing) and not seg.kafka_pieces and not seg.kafka_invalid_offset:
            try:
                if self.index is None:
                    raise self.index_error  # what it threw while the batches passed
                kafka_index = self.index.result()
                seg.kafka_index_entries = len(kafka_index[0]) // 8
                if existing is not None:
                    # indexes that agree with the log can still differ from Kafka's rebuild
                    # (entries a crash lost, another index.interval.bytes)
                    seg.kafka_index_differs = kafka_index != existing
                    rewrite = rewrite or seg.kafka_index_differs
                if rewrite:  # kept only where used, so memory follows the damage
                    seg.kafka_indexes = kafka_index
            except IndexOffsetOverflowError:
                pass  # Kafka's index append throws on an offset out of the relative range
            except InvalidOffsetError:
                # The time index refuses an offset below its last entry (offsets go back between
                # index points): Kafka's recovery throws InvalidOffsetException and empties the
                # segment.
                seg.kafka_invalid_offset = True
        self.index = None
        seg.kafka_valid_bytes = 0 if seg.kafka_invalid_offset else self.bytes
        if seg.kafka_invalid_offset:
            seg.kafka_last_offset = None


def kafka_keeps_bad_magic(disk: Disk, path: str, defect: Defect) -> int | None:
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


def _kafka_can_split(pieces: list[Piece], last_offset: int | None, base_offset: int) -> bool:
    """`LogSegment.hasOverflow()` (the last offset is out of range), and pieces in offset order."""
    if last_offset is None or last_offset - base_offset <= INT_MAX:
        return False
    bases = [p.base_offset for p in pieces]
    return all(a < b for a, b in zip(bases, bases[1:], strict=False))
