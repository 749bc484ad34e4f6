"""Damaged regions of a `.log` buffer: where each ends, and what to call it.

The walker (walker.py) hands over every framing failure. Without resync the region runs to the
end of the file, named from the bytes where it starts (so any window size gives the same answer).
With resync, the search goes forward for the first position where a valid batch starts (its CRC
checks, its offsets continue, and it is laid out as writers lay batches out); the candidates are
found by regexes, so the search runs in C over zero-filled and random regions alike. When the
buffer ends before the search can tell, the region says where the search stopped and how many
bytes from there the next buffer must hold; what to make of that is the walker's (windows).
"""

from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass
from typing import NamedTuple

from .batch_layout import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from .crc import crc32c
from .errors import FormatError
from .legacy import LegacyBatch

HEADER_SIZE_UP_TO_MAGIC = 17
MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0: Kafka's minimum for every magic
OVERHEAD_HEAD = struct.Struct(">qi")
_ZERO_HEADER = bytes(HEADER_SIZE_UP_TO_MAGIC)
_ZERO_PREFIX = "zero-filled region: "
# A header cut short by the end of the file is a torn write only if its offset could be the next
# entry's: junk whose magic byte happens to be 0-2 (1 in 85) is not a batch, and holds no records.
NOT_NEXT = "where the next offset is"

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


class Region(NamedTuple):
    """A damaged region from the position it was asked about: it ends at buffer index `end`, and
    is a defect of `kind` with `detail`. `needed` > 0: this buffer could not tell where it ends;
    the search stopped at `end`, and the next buffer must hold `needed` bytes from there."""

    end: int
    kind: str
    detail: str
    needed: int = 0


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


def _tail_kind(kind: str, detail: str, zero_start: bool, length: int) -> tuple[str, str]:
    """A damaged region that runs to the end of the file: name it for what it most likely is."""
    if zero_start:
        return "garbage_tail", f"{length} bytes, zero-filled, to the end of the file"
    if (
        kind == "bad_magic"
        or (kind == "bad_length" and "smaller than minimum" in detail)
        or (kind == "torn_tail" and NOT_NEXT in detail)
    ):
        return "garbage_tail", f"{length} bytes of junk to the end of the file ({detail})"
    return kind, detail


@dataclass(slots=True)
class DamagedRegions:
    """The damaged regions of one buffer that holds `[file_position, file_position + len(mv))` of
    a file of `file_size` bytes, as the walker over it with these settings sees them."""

    mv: memoryview
    file_position: int
    file_size: int
    max_length: int
    check_offsets: bool
    resync: bool

    def region(
        self,
        pos: int,
        limit: int,
        kind: str,
        detail: str,
        expected: int | None,
        start: int | None = None,
    ) -> Region:
        """Where the damage at `pos` (a failure of `kind`, `detail`) ends, and what to call it.

        `start` is where a region carried over from the previous window began (a negative buffer
        index); the search then goes on from `pos` itself.
        """
        mv = self.mv
        to_end = self.file_size - self.file_position  # buffer index of the end of the file
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
                return Region(
                    limit,
                    "torn_tail",
                    f"{len(tail)} bytes of a batch header at the end of the file",
                )
            return Region(limit, "garbage_tail", f"{len(tail)} trailing bytes after the last batch")
        if not self.resync:
            # Stop here as broker recovery does. The name comes from the bytes at `pos` only, so
            # a walk through windows of any size reports the same defect.
            return Region(to_end, *_tail_kind(kind, detail, zero_start, to_end - start))
        found, search_end = self._next_valid(pos, limit, expected, include_pos=continued)
        if zero_start and not continued:
            detail = _ZERO_PREFIX + detail
        if found is not None:
            if kind == "torn_tail":
                kind = "bad_length"  # the length ran past the end, yet a valid batch follows
            return Region(
                found, kind, detail + f"; {found - start} bytes skipped to the next valid batch"
            )
        if search_end == limit and limit >= to_end:
            return Region(to_end, *_tail_kind(kind, detail, zero_start, to_end - start))
        # The buffer ends before the search could decide: at a candidate that does not fit it,
        # or with fewer than a header's bytes left to search.
        if search_end == limit:
            search_end = max(pos, limit - RECORD_BATCH_OVERHEAD + 1)
            needed = RECORD_BATCH_OVERHEAD
        else:
            needed = LOG_OVERHEAD + OVERHEAD_HEAD.unpack_from(mv, search_end)[1]
        return Region(search_end, kind, detail, needed)

    def _next_valid(
        self, pos: int, limit: int, expected: int | None, include_pos: bool = False
    ) -> tuple[int | None, int]:
        """(buffer index of the first valid batch after `pos` or None, where the search stopped).

        Every candidate the regexes find is tried in order, so the first valid batch wins even
        when the damaged entry's length points past it. The search stops early at a plausible
        batch that runs past the buffer.
        """
        mv = self.mv
        patterns = _candidate_patterns(self.max_length)
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

    def _valid_at(self, q: int, limit: int, expected: int | None) -> bool | None:
        """Whether a valid batch that continues the offsets starts at buffer index `q`.

        None when the header is plausible but the batch runs past the buffer (not the file). What
        the bytes in the buffer can refute is checked before that, so that junk rarely makes a
        scanner read again as many bytes as a length it cannot trust claims: besides its CRC, a
        resync point must be laid out as every writer lays it out (v2: no unused attribute bit
        set, a known codec; legacy: key and value filling the message exactly). A batch in step
        with the one before it needs none of this (`_classify`).
        """
        mv = self.mv
        if q + HEADER_SIZE_UP_TO_MAGIC > limit:
            return False
        base_offset, length = OVERHEAD_HEAD.unpack_from(mv, q)
        magic = mv[q + 16]
        if length < MIN_ENTRY_SIZE or magic > 2 or length > self.max_length:
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
        mv = self.mv
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
