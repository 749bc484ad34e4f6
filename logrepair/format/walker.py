"""The segment walker: every byte of a `.log` buffer is either a batch or a `Defect` with a reason.

`Walker(buf, ...)` iterates the batches and defects of a buffer that holds
`[file_position, file_position + len(buf))` of a file of `file_size` bytes. Nothing escapes as an
exception. When the buffer ends before the file does, the walker stops cleanly before the first batch
that does not fit (`walker.position` is where to resume, `walker.needed` how many bytes from there the
next buffer must hold), so a storage scanner can slide a bounded window along a file of any size.
`walker.validate()` walks the same way but yields only the defects: the fast path for verification.

Without `resync`, the walk stops at the first invalid frame, as the broker's recovery does, and one
defect covers everything from there to the end of the file, named from the bytes where it starts (so
any window size gives the same answer). With `resync`, the walker searches forward for the first
position where a valid batch starts (its CRC checks, its offsets continue, and it is laid out as
writers lay batches out), reports the skipped bytes as one defect, and goes on, as LevelDB's log
reader reports what it drops. The search runs in C over zero-filled and random regions alike
(damaged_regions.py: where each damaged region ends, and its name).

Defect kinds (stable names):

- `torn_tail`: the file ends inside a batch (its header says it runs past the end of the file).
- `garbage_tail`: zeros or junk after the last batch, including up to 17 trailing bytes Kafka never parses.
- `bad_length`: a batch length that cannot be (< 14, < 61 for magic 2, above the maximum batch size,
  or past the end of the file while valid batches follow).
- `bad_magic`: a magic byte other than 0, 1 or 2.
- `crc_mismatch`: the stored CRC differs from the computed one (Kafka: `Record is corrupt`).
- `offset_regression`: a valid batch whose base offset is not above the previous batch's last offset.
- `record_count_mismatch`: the record count disagrees with the offset range or with the records present.
- `invalid_records`: (deep) a record that does not parse (Kafka: `InvalidRecordException`).
- `decompression_failed`: (deep) the records region does not decompress, or decompresses past the cap.
- `unknown_codec`: (deep) compression id 5-7.

Legacy (magic 0/1) entries report the same kinds (their CRC is CRC-32 over the message).

`offset_regression`, `record_count_mismatch`, `invalid_records`, `decompression_failed` and
`unknown_codec` cover a whole batch whose CRC is valid: the broker's recovery keeps such a batch
(`CRC_VALID_KINDS`); the other kinds are where recovery would truncate.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from .batch import RecordBatch
from .batch_layout import HEADER, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from .crc import crc32c
from .damaged_regions import (
    HEADER_SIZE_UP_TO_MAGIC,
    MIN_ENTRY_SIZE,
    NOT_NEXT,
    OVERHEAD_HEAD,
    DamagedRegions,
    Region,
)
from .errors import Defect, FormatError
from .legacy import LegacyBatch
from .record_codec import check_records

__all__ = ["CRC_VALID_KINDS", "Walker"]

CRC_VALID_KINDS = frozenset(
    {
        "offset_regression",
        "record_count_mismatch",
        "invalid_records",
        "decompression_failed",
        "unknown_codec",
    }
)

# baseOffset, batchLength, magic, crc, lastOffsetDelta, recordsCount: what the fast path checks.
_CHECKED_FIELDS = struct.Struct(">qi4xbI2xi30xi")
_NO_FLOOR = -(2**63)

QuietRuns = Callable[[memoryview, int, int, int, int, int], tuple[int, int, int]]


class Walker:
    """Walks the batches of one buffer of a `.log` file; see the module docstring.

    `buf` holds `[file_position, file_position + len(buf))` of a file of `file_size` bytes (default:
    the buffer is the whole file). `expected_offset` is the next offset the log expects (from the
    previous window or segment); `check_offsets` makes a batch below it an `offset_regression`.
    `max_batch_size` makes longer batches `bad_length` (Kafka's file scan has no maximum). `deep`
    parses every record too; `max_output` caps each batch's decompressed size.

    After (or during) a walk: `position` is the absolute position up to which every byte is
    accounted for, `needed` the bytes from there the next buffer must hold when the walk stopped
    at the end of this one (0 otherwise), `batches` the valid batches seen, `expected_offset` the
    last valid batch's last offset + 1.

    With `resync`, a damaged region can run past the end of the buffer before the search finds
    where it ends. By default the walker then reports the part it searched as one defect and the
    next window goes on from there. With `carry_damage`, it yields nothing for that region and
    leaves it in `open_damage` (a `Defect` of the bytes so far); passing that to the next window's
    walker as `open_damage` makes the whole region one defect, while memory stays one window.

    `quiet_runs(buf, pos, limit, file_position, max_length, floor)`, when given, is offered every
    position where a batch may start (`floor`: the lowest base offset the walk takes there, -2^63
    for any); it returns `(n, end, last)`: the n batches up to buffer index `end` (the last ending
    at offset `last`) are valid and need nothing more from this walk (they are counted, not
    yielded; see `batch_runs`). With n == 0 the walk goes on as without it.
    """

    def __init__(
        self,
        buf,
        *,
        file_position: int = 0,
        file_size: int | None = None,
        resync: bool = False,
        check_offsets: bool = True,
        expected_offset: int | None = None,
        max_batch_size: int | None = None,
        deep: bool = False,
        max_output: int | None = None,
        carry_damage: bool = False,
        open_damage: Defect | None = None,
        quiet_runs: QuietRuns | None = None,
    ) -> None:
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        if mv.ndim != 1 or mv.itemsize != 1:
            mv = mv.cast("B")
        self._mv = mv
        self.file_position = file_position
        self.file_size = file_position + len(mv) if file_size is None else file_size
        if self.file_size < file_position:
            raise ValueError(f"file_size {file_size} is before file_position {file_position}")
        self.resync = resync
        self.check_offsets = check_offsets
        self.expected_offset = expected_offset
        self.max_batch_size = max_batch_size
        self.deep = deep
        self.max_output = max_output
        self._max_length = (max_batch_size or 2**31) - LOG_OVERHEAD
        self.position = file_position
        self.needed = 0
        self.batches = 0
        self.carry_damage = carry_damage
        if open_damage is not None and open_damage.position + open_damage.length != file_position:
            raise ValueError("open_damage must end where this buffer starts")
        self._resumed = open_damage
        self.open_damage: Defect | None = None
        self.quiet_runs = quiet_runs

    @property
    def done(self) -> bool:
        """True once every byte up to `file_size` is accounted for."""
        return self.position >= self.file_size

    def __iter__(self) -> Iterator[RecordBatch | Defect]:
        return self._walk(True)

    def validate(self) -> Iterator[Defect]:
        """The walk, yielding only defects; valid batches are counted in `batches`."""
        return self._walk(False)

    # --- the walk --------------------------------------------------------------------------------

    def _walk(self, emit: bool) -> Iterator:
        mv = self._mv
        fp = self.file_position
        file_end = self.file_size
        limit = min(len(mv), file_end - fp)
        pos = self.position - fp
        check_header = _CHECKED_FIELDS.unpack_from
        unpack_header = HEADER.unpack_from
        crc = crc32c
        check = self.check_offsets
        deep = self.deep
        max_length = self._max_length
        expected = self.expected_offset
        floor = expected if check and expected is not None else _NO_FLOOR
        batches = self.batches
        quiet = self.quiet_runs
        self.needed = 0
        self.open_damage = None
        resumed, self._resumed = self._resumed, None
        if resumed is not None:
            start = resumed.position - fp
            region = self._regions().region(
                pos, limit, resumed.kind, resumed.detail, expected, start
            )
            step = self._taken(region, pos, start, expected)
            if step is None:
                return
            pos = step[0]
            self.position = fp + pos
            yield Defect(
                step[1], resumed.position, fp + pos - resumed.position, step[2], resumed.offset
            )
        while True:
            # Offered again after each run: a run may stop only where a call's span ends.
            while quiet is not None and pos + 61 <= limit:
                n, end, last = quiet(mv, pos, limit, fp, max_length, floor)
                if not n:
                    break
                batches += n
                expected = last + 1
                if check:
                    floor = expected
                pos = end
                self.position = fp + end
                self.expected_offset = expected
                self.batches = batches
            # Fast path: a whole v2 batch that is in the buffer and valid, in one unpack of the
            # fields it checks (the whole header when the batch object will need it) and one CRC
            # over a zero-copy slice.
            if pos + 61 <= limit:
                if emit:
                    header = unpack_header(mv, pos)
                    (
                        base_offset,
                        length,
                        _,
                        magic,
                        stored_crc,
                        _,
                        last_delta,
                        _,
                        _,
                        _,
                        _,
                        _,
                        count,
                    ) = header
                else:
                    base_offset, length, magic, stored_crc, last_delta, count = check_header(
                        mv, pos
                    )
                end = pos + 12 + length
                if (
                    magic == 2
                    and 49 <= length <= max_length
                    and end <= limit
                    and base_offset >= floor
                    and 0 <= count <= last_delta + 1
                    and crc(mv[pos + 21 : end]) == stored_crc
                ):
                    previous = expected
                    expected = base_offset + last_delta + 1
                    if check:
                        floor = expected
                    if deep and count:
                        if mv[pos + 22] & 0x07:
                            bad = self._deep_check(RecordBatch(mv[pos:end], fp + pos), previous)
                        else:
                            # Uncompressed: records checked straight from the buffer, no batch
                            # object unless the caller wants one.
                            try:
                                check_records(mv[pos + 61 : end], count, fp + pos)
                                bad = None
                            except FormatError as e:
                                bad = Defect(e.kind, fp + pos, end - pos, e.detail, previous)
                        if bad is not None:
                            self.position = fp + end
                            self.expected_offset = expected
                            self.batches = batches
                            yield bad
                            pos = end
                            continue
                    batches += 1
                    if emit:
                        self.position = fp + end
                        self.expected_offset = expected
                        self.batches = batches
                        yield RecordBatch(mv[pos:end], fp + pos, header, True)
                    pos = end
                    continue
            # Slow path: end of buffer or file, a legacy entry, or something wrong at `pos`.
            self.batches = batches
            self.expected_offset = expected
            self.position = fp + pos
            step = self._classify(pos, limit, expected)
            if step is None:
                return
            kind, detail, end, item = step
            if item is not None:
                # A whole entry at pos: a valid batch (legacy, or v2 that needs no resync) or a
                # defect that covers exactly one CRC-valid batch.
                if kind is None:
                    bad = self._deep_check(item, expected) if deep else None
                    expected = item.last_offset + 1
                    if check:
                        floor = expected
                    if bad is None:
                        batches += 1
                    self.position = fp + end
                    self.expected_offset = expected
                    self.batches = batches
                    if bad is not None:
                        yield bad
                    elif emit:
                        yield item
                else:
                    self.position = fp + end
                    yield Defect(kind, fp + pos, end - pos, detail, expected)
                pos = end
                continue
            # A framing failure at pos: account for the damaged region, then go on or stop.
            region = self._regions().region(pos, limit, kind, detail, expected)
            step = self._taken(region, pos, pos, expected)
            if step is None:
                return  # undecided in this buffer; position, needed and open_damage are set
            region_end, kind, detail = step
            self.position = fp + region_end
            yield Defect(kind, fp + pos, region_end - pos, detail, expected)
            pos = region_end

    def _deep_check(self, batch, expected: int | None) -> Defect | None:
        """Decodes every record; a batch whose records fail becomes a defect over the whole batch."""
        try:
            if batch.magic == 2:
                batch.check_records(self.max_output)
            else:
                batch.records(self.max_output)
        except FormatError as e:
            return Defect(e.kind, batch.position, batch.size, e.detail, expected)
        return None

    def _classify(self, pos: int, limit: int, expected: int | None):
        """What starts at buffer index `pos`.

        Returns None to stop (end of file, or the buffer ends first: `needed` says how much more),
        `(None, '', end, batch)` for a valid entry, `(kind, detail, end, batch)` for a CRC-valid
        batch with a defect, or `(kind, detail, None, None)` for a framing failure.
        """
        mv = self._mv
        fp = self.file_position
        file_end = self.file_size
        remaining = file_end - (fp + pos)
        available = limit - pos
        if remaining <= 0:
            self.position = file_end
            return None
        if remaining <= HEADER_SIZE_UP_TO_MAGIC:
            if available < remaining:
                self.needed = remaining
                return None
            return "garbage_tail", "", None, None
        if available < HEADER_SIZE_UP_TO_MAGIC:
            self.needed = HEADER_SIZE_UP_TO_MAGIC
            return None
        base_offset, length = OVERHEAD_HEAD.unpack_from(mv, pos)
        magic = mv[pos + 16]
        magic = magic - 256 if magic > 127 else magic
        if length < MIN_ENTRY_SIZE:
            return (
                "bad_length",
                f"Found record size {length} smaller than minimum record overhead ({MIN_ENTRY_SIZE})",
                None,
                None,
            )
        if magic < 0 or magic > 2:
            return "bad_magic", f"Invalid magic found in record: {magic}", None, None
        size = length + 12
        if fp + pos + size > file_end:
            not_next = expected is not None and not expected <= base_offset < expected + 2**31
            return (
                "torn_tail",
                f"entry of {size} bytes at base offset {base_offset}"
                f"{f', {NOT_NEXT} {expected},' if not_next else ''} runs past the end of the "
                f"file ({remaining} bytes left)",
                None,
                None,
            )
        if length > self._max_length:
            return (
                "bad_length",
                f"Record size {size} exceeds the largest allowable message size "
                f"({self.max_batch_size}).",
                None,
                None,
            )
        if magic == 2 and size < RECORD_BATCH_OVERHEAD:
            return (
                "bad_length",
                f"Record batch is corrupt (the size {size} is smaller than the minimum allowed "
                f"overhead {RECORD_BATCH_OVERHEAD})",
                None,
                None,
            )
        if pos + size > limit:
            self.needed = size
            return None
        end = pos + size
        if magic == 2:
            batch = RecordBatch(mv[pos:end], fp + pos)
        else:
            try:
                batch = LegacyBatch.parse(mv[:end], pos, file_position=fp)
            except FormatError as e:
                return e.kind, e.detail, None, None
        if not batch.crc_valid:
            computed = crc32c(mv[pos + 21 : end]) if magic == 2 else batch.computed_crc()
            detail = f"Record is corrupt (stored crc = {batch.crc}, computed crc = {computed})"
            return "crc_mismatch", detail, None, None
        if magic == 2:
            count, lod = batch.count, batch.last_offset_delta
            if lod < 0:
                return (
                    "record_count_mismatch",
                    f"Batch has an invalid offset range: [{batch.base_offset}, {batch.last_offset}]",
                    end,
                    batch,
                )
            if count < 0 or count > lod + 1:
                return (
                    "record_count_mismatch",
                    f"record count {count} does not fit the offset range "
                    f"[{batch.base_offset}, {batch.last_offset}]",
                    end,
                    batch,
                )
            first = batch.base_offset
        else:
            first = batch.last_offset
        if self.check_offsets and expected is not None and first < expected:
            return (
                "offset_regression",
                f"batch [{first}, {batch.last_offset}] does not follow the previous last offset "
                f"{expected - 1}",
                end,
                batch,
            )
        return None, "", end, batch

    # --- damaged regions -------------------------------------------------------------------------

    def _regions(self) -> DamagedRegions:
        """The damaged-region search over this buffer, with this walk's settings."""
        return DamagedRegions(
            self._mv,
            self.file_position,
            self.file_size,
            self._max_length,
            self.check_offsets,
            self.resync,
        )

    def _taken(
        self, region: Region, pos: int, start: int, expected: int | None
    ) -> tuple[int, str, str] | None:
        """The damaged region from buffer index `start`, searched from `pos`, as this walk takes
        it: where it ends and what to call it; None when this buffer cannot tell, and then
        `needed` is set, and with `carry_damage` the region so far is left in `open_damage` and
        `position` is where its search stopped."""
        end, kind, detail, needed = region
        if not needed:
            return end, kind, detail
        if self.carry_damage:
            fp = self.file_position
            self.open_damage = Defect(kind, fp + start, end - start, detail, expected)
            self.position = fp + end
            self.needed = needed
            return None
        if end <= pos:
            self.needed = needed
            return None
        return end, kind, detail + "; the search goes on in the next window"
