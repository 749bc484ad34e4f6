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
from .indexes import UNBOUNDED_INDEX, index_batches

if TYPE_CHECKING:
    from .segment_scan import SegmentScan

INT_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_V2_MIN_LENGTH = 49  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD (61) less the offset and length
_HEADER_UP_TO_MAGIC = 17  # Records.HEADER_SIZE_UP_TO_MAGIC: less than this left ends the file
_RECORD_OVERHEAD_V0 = 14  # LegacyRecord.RECORD_OVERHEAD_V0: the smallest size field that frames
_V2_LAST_DELTA_END = 27  # a v2 header up to its lastOffsetDelta


@dataclass(slots=True)
class Piece:
    """Where Kafka's overflow split would start a new segment: position and its base offset, the
    last offset of its last batch, and where Kafka's recovery of the piece alone stops (None: at
    its end). The split copies every batch; its retry recovers only the pieces from the one
    holding the recovery point on, each from its own start."""

    position: int
    base_offset: int
    last_offset: int
    valid_end: int | None = None


class KafkaReading:
    """The batches Kafka's recovery keeps, fed one by one (`batch`) until it would stop."""

    __slots__ = (
        "seg",
        "interval",
        "on",
        "bytes",
        "last",
        "overflow",
        "pieces",
        "piece_base",
        "last_index_pos",
        "last_index_offset",
        "index",
        "index_error",
        "piece_index",
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
        self.overflow = False
        """An offset out of the segment's relative range: Kafka's recovery splits the segment."""
        self.pieces: list[Piece] = []
        """The pieces `LocalLog.splitOverflowedSegment` would cut the batches so far into, each
        named by its first batch (the first piece too, not by the segment's name): kept while
        reading, used only when `overflow` is found."""
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
        self.piece_index: RecoveryIndex | None = None
        """The index of the piece being read, as Kafka recovers each piece of a split again (spec
        rec §6.7 step 3): `index` itself when the piece starts the segment at its base offset."""
        self.piece_failed: int | None = None
        """The base offset of the first piece whose index rebuild throws."""

    def batch(self, position: int, first: int, last: int, size: int, ts: int | None) -> None:
        """One batch Kafka's recovery reads (only while `on`)."""
        seg = self.seg
        if last == INT64_MAX:
            # The log end after it (last + 1) does not fit a long: no segment can hold it (a split
            # would name one 09223372036854775807.log and Kafka's next offset would wrap), so
            # kafka mode stops reading here and cuts it (spec-notes: "offsets at 2^63 - 1").
            self.on = False
            return
        if not self.pieces or not 0 <= last - self.piece_base <= INT_MAX:
            # `appendFromFile` takes batches while their last offset fits the piece begun at
            # the first batch that did not fit the one before
            self.piece_base = first
            self.pieces.append(Piece(position, first, last))
            self._next_piece(first)
        self.pieces[-1].last_offset = last
        if not self.overflow and not 0 <= last - seg.base_offset <= INT_MAX:
            self.overflow = True  # `ensureOffsetInRange`: LogSegmentOffsetOverflowException
        if self.bytes - self.last_index_pos > self.interval and not self.overflow:
            # (once Kafka must split, each piece is indexed on its own: `piece_index`)
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
                self._index_fails(e)
        piece = self.piece_index
        if piece is not None and piece is not self.index:
            try:
                piece.add(self.bytes - self.pieces[-1].position, last, ts)
            except (InvalidOffsetError, IndexOffsetOverflowError):
                self._piece_fails(piece.base_offset)
        self.bytes += size
        self.last = last

    def quiet_limits(self) -> tuple[int, int] | None:
        """The lowest base offset and highest last offset of a batch `batch` would only count and
        index: in order, within the segment's relative range and the current piece's (None once
        an overflow split has begun: then each piece is followed batch by batch). Before the
        first batch, the run that `extend` takes begins the first piece, as `batch` would."""
        if self.last is None:
            return None if self.pieces else (self.seg.base_offset, self.seg.base_offset + INT_MAX)
        if self.overflow:
            return None
        floor = max(self.last + 1, self.piece_base, self.seg.base_offset)
        return floor, min(self.piece_base, self.seg.base_offset) + INT_MAX

    def extend(
        self,
        first: int,
        kept: int,
        last: int,
        index_pos: int,
        index_offset: int | None,
        points: bytes,
    ) -> None:
        """Batches that met `quiet_limits`, read in one go (`format.batch_runs.quiet_run`): the
        first one's base offset, the bytes kept after them, the last offset, where the index was
        last written, and their (position, last offset, max timestamp) points as native int64s."""
        if not self.pieces:  # the segment's first batches: they begin the first piece
            self.piece_base = first
            self.pieces.append(Piece(0, first, last))
            self._next_piece(first)
        self.bytes = kept
        self.last = last
        self.pieces[-1].last_offset = last
        self.last_index_pos = index_pos
        self.last_index_offset = index_offset
        if self.index is not None:
            try:
                self.index.add_points(points)
            except IndexFileError as e:
                self._index_fails(e)
        piece = self.piece_index
        if piece is not None and piece is not self.index:
            # (only the first piece, from byte 0, is read in quiet runs: the points are its own)
            try:
                piece.add_points(points)
            except (InvalidOffsetError, IndexOffsetOverflowError):
                self._piece_fails(piece.base_offset)

    def finish(self, disk: Disk, path: str, max_batch_size: int | None) -> None:
        """The segment is read: can Kafka split it where an offset overflows, and would each
        piece's recovery hold?"""
        seg = self.seg
        seg.kafka_last_offset = self.last
        if self.overflow:
            framed_last = self._split_the_rest(disk, path)
            if framed_last is not None and _kafka_can_split(
                self.pieces, framed_last, seg.base_offset
            ):
                seg.kafka_pieces = self.pieces
            else:
                seg.kafka_split_fails = True
        self._close_piece()
        if seg.kafka_pieces:
            if self.bytes < seg.size:
                self._recover_pieces(disk, path, max_batch_size)
            seg.kafka_piece_invalid = self.piece_failed

    def _next_piece(self, base_offset: int) -> None:
        """A piece begins at this batch: the one before is read."""
        self._close_piece()
        if self.piece_failed is not None:
            return  # (past the first piece that fails, none is looked at)
        starts_segment = self.bytes == 0 and base_offset == self.seg.base_offset
        self.piece_index = (
            self.index
            if starts_segment and self.index is not None
            else RecoveryIndex(base_offset, self.interval, UNBOUNDED_INDEX)
        )

    def _close_piece(self) -> None:
        """Would the rebuild of the piece read so far throw (its last time entry included)?"""
        piece = self.piece_index
        if piece is None or self.piece_failed is not None:
            return
        try:
            piece.result()
        except (InvalidOffsetError, IndexOffsetOverflowError):
            self._piece_fails(piece.base_offset)
        if piece is not self.index:
            self.piece_index = None

    def _index_fails(self, e: IndexFileError) -> None:
        """The rebuild threw; when it is the first piece's too, so did that piece's."""
        if self.piece_index is self.index and isinstance(
            e, (InvalidOffsetError, IndexOffsetOverflowError)
        ):
            self._piece_fails(self.seg.base_offset)
        self.index, self.index_error = None, e

    def _piece_fails(self, base_offset: int) -> None:
        if self.piece_failed is None:
            self.piece_failed = base_offset
        if self.piece_index is not self.index:
            self.piece_index = None

    def _recover_pieces(self, disk: Disk, path: str, max_batch_size: int | None) -> None:
        """Where Kafka's recovery of each piece stops, from the one holding the first invalid
        batch on (that one stops at it; the reading of the segment stopped there). Kafka's retry
        recovers a piece after it on its own when the recovery point is at or past it."""
        pieces = self.pieces
        ends = [pc.position for pc in pieces[1:]] + [self.seg.size]
        for pc, end in zip(pieces, ends, strict=True):
            if end <= self.bytes:
                continue
            if pc.position <= self.bytes:
                pc.valid_end = self.bytes
                continue
            index = RecoveryIndex(pc.base_offset, self.interval, UNBOUNDED_INDEX)
            position = pc.position
            try:
                for b in index_batches(disk, path, max_batch_size, pc.position):
                    if position >= end:
                        break
                    if not 0 <= b.last_offset - pc.base_offset <= INT_MAX:
                        break  # (`ensureOffsetInRange`: a base offset field, outside the CRC)
                    index.add(position - pc.position, b.last_offset, b.max_timestamp)
                    position += b.size
                index.result()
            except (InvalidOffsetError, IndexOffsetOverflowError):
                self._piece_fails(pc.base_offset)
            if position < end:
                pc.valid_end = position

    def _split_the_rest(self, disk: Disk, path: str) -> int | None:
        """`splitOverflowedSegment` copies the whole file, not only what recovery read: the
        batches past where it stopped, framed by their size fields alone (`FileLogInputStream`),
        join the pieces. The last offset of the last framed batch (what `hasOverflow()` reads),
        or None where the split throws: bytes at the end that do not frame (a torn batch:
        NoSuchElementException; a size below 14: CorruptRecordException)."""
        position, last = self.bytes, self.last
        size = self.seg.size
        with disk.open(path) as f:
            while position < size:
                head = f.read_at(position, _V2_LAST_DELTA_END)
                if len(head) < _HEADER_UP_TO_MAGIC:
                    return None
                length = int.from_bytes(head[8:12], "big", signed=True)
                if length < _RECORD_OVERHEAD_V0 or position + 12 + length > size:
                    return None
                first = int.from_bytes(head[0:8], "big", signed=True)
                last = first  # a legacy message's offset field is its last offset
                if head[16] >= 2 and len(head) == _V2_LAST_DELTA_END:
                    last = first + int.from_bytes(head[23:27], "big", signed=True)
                    last = (last + 2**63) % 2**64 - 2**63  # Java's long arithmetic wraps
                if not 0 <= last - self.piece_base <= INT_MAX:
                    self.piece_base = first
                    self.pieces.append(Piece(position, first, last))
                self.pieces[-1].last_offset = last
                position += 12 + length
        return last

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
                    seg.kafka_index_checked = True
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
