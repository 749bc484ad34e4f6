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
reader reports what it drops. The search runs in C over zero-filled and random regions alike.

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

import functools
import re
import struct
from collections.abc import Callable, Iterator

from .batch import HEADER, RECORD_BATCH_OVERHEAD, RecordBatch, check_records
from .crc import crc32c
from .errors import Defect, FormatError
from .legacy import LegacyBatch

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

HEADER_SIZE_UP_TO_MAGIC = 17
MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0: Kafka's minimum for every magic
LOG_OVERHEAD = 12
_OVERHEAD_HEAD = struct.Struct(">qi")
_ZERO_HEADER = bytes(HEADER_SIZE_UP_TO_MAGIC)
_ZERO_PREFIX = "zero-filled region: "
# A header cut short by the end of the file is a torn write only if its offset could be the next
# entry's: junk whose magic byte happens to be 0-2 (1 in 85) is not a batch, and holds no records.
_NOT_NEXT = "where the next offset is"
# baseOffset, batchLength, magic, crc, lastOffsetDelta, recordsCount: what the fast path checks.
_CHECKED_FIELDS = struct.Struct(">qi4xbI2xi30xi")
_NO_FLOOR = -(2**63)

# Resync looks for the next position where a batch could start with regexes, so that the scan of
# a damaged region runs in C, not one Python step per byte (see `_candidate_patterns`). A length
# of at least 14 has a non-zero byte, so a zero-filled region is skipped a run at a time.
_ZERO_RUN = re.compile(rb"\x00*")
_LENGTH = struct.Struct(">i")
# crc, attributes, lastOffsetDelta, recordsCount: what a resync candidate's v2 header must satisfy.
_RESYNC_FIELDS = struct.Struct(">17xIhi30xi")
_UNUSED_ATTRIBUTES = ~0x7F  # above the delete-horizon flag (bit 6): zero from every writer
# Legacy: the codec bits, and for magic 1 the timestamp type bit, are all that writers set.
_LEGACY_V0_UNUSED = 0xF8
_LEGACY_V1_UNUSED = 0xF0
_LEGACY_HEADER_SIZE = (12 + 6, 12 + 14)  # log overhead, crc, magic, attributes, [timestamp]
_TIMESTAMP = struct.Struct(">q")

QuietRuns = Callable[[memoryview, int, int, int, int, int], tuple[int, int, int]]


@functools.cache
def _candidate_patterns(max_length: int) -> tuple[re.Pattern[bytes], ...]:
    """Regexes that together match at the length field (entry byte 8) of every position where an
    entry of at most `max_length` bytes after the log overhead could start: the length's high byte
    in range, and magic 0, 1 or 2 at entry byte 16.

    Each starts with a literal byte, which the regex engine finds at over 1 GB/s in random junk,
    where a leading character class is tried at every position (about 70 MB/s): one regex per
    possible high byte up to 7 (lengths below 128 MiB), one with a class above that.
    """
    top = max_length >> 24
    tail = b".{7}[\\x00-\\x02]"
    if top < 8:
        return tuple(re.compile(b"(?s)" + re.escape(bytes([b])) + tail) for b in range(top + 1))
    return (re.compile(b"(?s)[\\x00-\\x%02x]" % top + tail),)


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
            step = self._damaged_region(
                pos,
                limit,
                resumed.kind,
                resumed.detail,
                expected,
                start=resumed.position - fp,
            )
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
            step = self._damaged_region(pos, limit, kind, detail, expected)
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
        base_offset, length = _OVERHEAD_HEAD.unpack_from(mv, pos)
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
                f"{f', {_NOT_NEXT} {expected},' if not_next else ''} runs past the end of the "
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

    def _damaged_region(
        self,
        pos: int,
        limit: int,
        kind: str,
        detail: str,
        expected: int | None,
        start: int | None = None,
    ) -> tuple[int, str, str] | None:
        """Where the damage at `pos` ends, and what to call it; None when this buffer cannot tell.

        `start` is where a region carried over from the previous window began (a negative buffer
        index); the search then goes on from `pos` itself.
        """
        mv = self._mv
        fp = self.file_position
        to_end = self.file_size - fp  # buffer index of the end of the file
        continued = start is not None
        if start is None:
            start = pos
            zero_start = (
                bytes(mv[pos : pos + HEADER_SIZE_UP_TO_MAGIC]) == _ZERO_HEADER[: limit - pos]
            )
        else:
            zero_start = detail.startswith(_ZERO_PREFIX)
        if kind == "garbage_tail" and not continued:  # at most 17 trailing bytes
            tail = bytes(mv[pos:limit])
            if (
                any(tail)
                and expected is not None
                and tail[:8] == expected.to_bytes(8, "big", signed=True)[: len(tail)]
            ):
                return (
                    limit,
                    "torn_tail",
                    f"{len(tail)} bytes of a batch header at the end of the file",
                )
            return limit, "garbage_tail", f"{len(tail)} trailing bytes after the last batch"
        if not self.resync:
            # Stop here as broker recovery does. The name comes from the bytes at `pos` only, so
            # a walk through windows of any size reports the same defect.
            return to_end, *self._tail_kind(kind, detail, zero_start, to_end - start)
        found, search_end = self._next_valid(pos, limit, expected, include_pos=continued)
        if zero_start and not continued:
            detail = _ZERO_PREFIX + detail
        if found is not None:
            if kind == "torn_tail":
                kind = "bad_length"  # the length ran past the end, yet a valid batch follows
            return found, kind, detail + f"; {found - start} bytes skipped to the next valid batch"
        if search_end == limit and limit >= to_end:
            return to_end, *self._tail_kind(kind, detail, zero_start, to_end - start)
        # The buffer ends before the search could decide: at a candidate that does not fit it,
        # or with fewer than a header's bytes left to search.
        if search_end == limit:
            search_end = max(pos, limit - RECORD_BATCH_OVERHEAD + 1)
            needed = RECORD_BATCH_OVERHEAD
        else:
            needed = LOG_OVERHEAD + _OVERHEAD_HEAD.unpack_from(mv, search_end)[1]
        if self.carry_damage:
            self.open_damage = Defect(kind, fp + start, search_end - start, detail, expected)
            self.position = fp + search_end
            self.needed = needed
            return None
        if search_end <= pos:
            self.needed = needed
            return None
        return search_end, kind, detail + "; the search goes on in the next window"

    def _next_valid(
        self, pos: int, limit: int, expected: int | None, include_pos: bool = False
    ) -> tuple[int | None, int]:
        """(buffer index of the first valid batch after `pos` or None, where the search stopped).

        Every candidate the regexes find is tried in order, so the first valid batch wins even
        when the damaged entry's length points past it. The search stops early at a plausible
        batch that runs past the buffer.
        """
        mv = self._mv
        patterns = _candidate_patterns(self._max_length)
        ahead = [-1] * len(patterns)  # each regex's next match; below the search start: stale
        zero_run = _ZERO_RUN.match
        q = pos if include_pos else pos + 1
        while True:
            # No entry starts before its length field reaches a non-zero byte: skip zero runs
            # first, so that the regexes do not each scan a zero-filled region.
            q = max(q, zero_run(mv, q + 8, limit).end() - 11)
            at = q + 8  # the regexes match at the length field
            h = limit
            for i, pattern in enumerate(patterns):
                a = ahead[i]
                if a < at:
                    match = pattern.search(mv, at, limit)
                    a = ahead[i] = limit if match is None else match.start()
                if a < h:
                    h = a
            if h >= limit:
                return None, limit
            q = h - 8
            valid = self._valid_at(q, limit, expected)
            if valid is True:
                return q, limit
            if valid is None:
                return None, q
            q += 1

    @staticmethod
    def _tail_kind(kind: str, detail: str, zero_start: bool, length: int) -> tuple[str, str]:
        """A damaged region that runs to the end of the file: name it for what it most likely is."""
        if zero_start:
            return "garbage_tail", f"{length} bytes, zero-filled, to the end of the file"
        if (
            kind == "bad_magic"
            or (kind == "bad_length" and "smaller than minimum" in detail)
            or (kind == "torn_tail" and _NOT_NEXT in detail)
        ):
            return "garbage_tail", f"{length} bytes of junk to the end of the file ({detail})"
        return kind, detail

    def _valid_at(self, q: int, limit: int, expected: int | None) -> bool | None:
        """Whether a valid batch that continues the offsets starts at buffer index `q`.

        None when the header is plausible but the batch runs past the buffer (not the file). What
        the bytes in the buffer can refute is checked before that, so that junk rarely makes a
        scanner read again as many bytes as a length it cannot trust claims: besides its CRC, a
        resync point must be laid out as every writer lays it out (v2: no unused attribute bit
        set, a known codec; legacy: key and value filling the message exactly). A batch in step
        with the one before it needs none of this (`_classify`).
        """
        mv = self._mv
        if q + HEADER_SIZE_UP_TO_MAGIC > limit:
            return False
        base_offset, length = _OVERHEAD_HEAD.unpack_from(mv, q)
        magic = mv[q + 16]
        if length < MIN_ENTRY_SIZE or magic > 2 or length > self._max_length:
            return False
        end = q + 12 + length
        if self.file_position + end > self.file_size:
            return False
        # A legacy entry's offset is its last offset, which must continue the log as well.
        if self.check_offsets and expected is not None and base_offset < expected:
            return False
        if magic == 2:
            if length + 12 < RECORD_BATCH_OVERHEAD:
                return False
            if q + RECORD_BATCH_OVERHEAD > limit:
                return None  # the batch runs past the buffer too
            stored_crc, attributes, last_delta, count = _RESYNC_FIELDS.unpack_from(mv, q)
            if attributes & _UNUSED_ATTRIBUTES or attributes & 0x07 > 4:
                return False
            if not 0 <= count <= last_delta + 1:
                return False
            if end > limit:
                return None
            return crc32c(mv[q + 21 : end]) == stored_crc
        framed = self._legacy_framing(q, end, limit, magic)
        if framed is not True:
            return framed
        if end > limit:
            return None
        try:
            entry = LegacyBatch.parse(mv[:end], q)
        except FormatError:
            return False
        return entry.crc_valid

    def _legacy_framing(self, q: int, end: int, limit: int, magic: int) -> bool | None:
        """Whether the legacy message at `q` is laid out as every writer lays it out (no unused
        attribute bit, a legacy codec, a timestamp of -1 or more, key and value ending exactly
        where it does); None when the buffer ends first.

        Random junk rarely passes this, where its CRC-32 would cost a pass over as many bytes as
        its length field claims.
        """
        mv = self._mv
        if q + _LEGACY_HEADER_SIZE[magic] > limit:
            return None
        attributes = mv[q + 17]
        if attributes & (_LEGACY_V0_UNUSED if magic == 0 else _LEGACY_V1_UNUSED):
            return False
        if attributes & 0x07 > 3 or (magic == 1 and _TIMESTAMP.unpack_from(mv, q + 18)[0] < -1):
            return False  # a codec legacy messages cannot have, a timestamp no writer writes
        p = q + _LEGACY_HEADER_SIZE[magic]
        for _ in ("key", "value"):
            if p + 4 > end:
                return False
            if p + 4 > limit:
                return None
            length = _LENGTH.unpack_from(mv, p)[0]
            p += 4 + max(length, 0)  # negative: null, as `LegacyRecord` reads it
        return p == end
