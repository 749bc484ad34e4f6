"""Quiet runs: the batches at a buffer position that every per-batch check would pass silently.

A segment scan spends most of its time on batches where nothing happens: a whole v2 batch whose
framing and CRC hold (the walker's fast path), whose offsets continue the log, whose epoch and
size say nothing, whose index entries are where they should be. `quiet_run` walks such batches
in one call and returns what they add up to, stopping before the first one that needs a closer
look (a defect, an offset or epoch out of step, an index entry that does not match, a
transactional marker Kafka's reading must see, the end of the buffer); the caller handles that
batch one at a time and calls again. So the per-batch work of a clean segment is one call per
buffer, not one per batch.

The C accelerator (`logrepair.format._records.quiet_run`) does the same in one pass with the
interpreter's lock released; `quiet_run_python` here is the reference, and a property test holds
the two equal on valid, damaged and random buffers. `LOGREPAIR_PURE_PYTHON=1` selects the
reference, as for deep reading.

Arguments, all ints unless said (a "limit" is a value a quiet batch must stay within):

- `buf` (any buffer), `pos` and `limit`: walk `buf[pos:limit]`; `file_position` is where `buf[0]`
  lies in the file (index entries name file positions); `max_length`: the largest batch length
  field (the walker's `bad_length` bound).
- `floor`: a quiet batch's base offset is at least this; `max_last`: its last offset at most this;
  `max_size`: its size at most this; `epoch`: its leader epoch is negative or exactly this
  (`NONE`: any epoch).
- the offset index: `oi_raw` (bytes of 8-byte entries), `oi_i` the next entry to check, `oi_n`
  the entries to check (`oi_i == oi_n`: none left), `oi_base` the segment's base offset,
  `oi_prev` the offset of the last entry checked (`NONE`: none yet). An entry at a batch must name
  an offset at or past its last one and above the previous entry's; none may fall between batches.
- the time index: `ti_raw` (12-byte entries), `ti_i`, `ti_n`, `ti_base`: an entry's offset must be
  the last offset of a batch.
- Kafka's reading (`k_on` false: not reading any more): `k_bytes` the bytes it has kept,
  `k_index_pos` and `k_index_offset` (`NONE`: none yet) where its recovery last indexed, and
  `k_interval` its index interval; an entry due at a batch must name a higher offset than the
  last. Each quiet batch adds (bytes kept before it, last offset, max timestamp) to `points`.
- `max_batches` (optional; negative: no bound): the run stops after this many batches, which
  bounds its `points` (24 bytes a batch) whatever the span of `buf` it is given.

Returns `(n, end, first, last, max_ts, txn, oi_i, oi_prev, ti_i, k_bytes, k_index_pos,
k_index_offset, points)`: n quiet batches ending at buffer index `end`, the first's base offset and
the last's last offset, the highest max timestamp (`NONE`: no batch), `txn` bit 1 when one is
transactional and bit 2 when one is a transaction marker, the index and Kafka state after them,
and `points` as native int64 triples (bytes). With n == 0, `end` is `pos` and the state is as
passed.
"""

from __future__ import annotations

import struct
from array import array

from .crc import crc32c
from .record_codec import _ACCELERATOR

NONE = -(2**63)
"""Stands for None among the int arguments and results (no entry yet, no timestamp)."""

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# maxTimestamp, recordsCount
_FIELDS = struct.Struct(">qiibIhi8xq14xi")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_TRANSACTIONAL = 0x10
_MARKER = 0x30  # transactional and control


def quiet_run_python(
    buf,
    pos: int,
    limit: int,
    file_position: int,
    max_length: int,
    floor: int,
    max_last: int,
    max_size: int,
    epoch: int,
    oi_raw: bytes,
    oi_i: int,
    oi_n: int,
    oi_base: int,
    oi_prev: int,
    ti_raw: bytes,
    ti_i: int,
    ti_n: int,
    ti_base: int,
    k_on: bool,
    k_bytes: int,
    k_index_pos: int,
    k_index_offset: int,
    k_interval: int,
    max_batches: int = -1,
) -> tuple:
    """The reference of `quiet_run` (see the module docstring)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    limit = min(limit, len(mv))
    unpack = _FIELDS.unpack_from
    n = 0
    start = pos
    first_offset = last = max_ts = NONE
    txn = 0
    points = array("q")
    if max_batches < 0:
        max_batches = len(mv)  # (no bound: a batch is longer than a byte)
    while pos + 61 <= limit and n < max_batches:
        base, length, leader_epoch, magic, crc, attributes, delta, ts, count = unpack(mv, pos)
        size = length + 12
        end = pos + size
        if (
            magic != 2
            or not 49 <= length <= max_length
            or end > limit
            or not 0 <= count <= delta + 1
            or delta < 0
            or base < floor
            or base > max_last - delta
            or size > max_size
            or (leader_epoch >= 0 and leader_epoch != epoch and epoch != NONE)
        ):
            break
        batch_last = base + delta
        position = file_position + pos
        # The offset index: an entry at this batch must hold; none may lie before it.
        oi_next = oi_i
        oi_offset = oi_prev
        if oi_i < oi_n:
            rel, entry_pos = _OFFSET_ENTRY.unpack_from(oi_raw, oi_i * 8)
            if entry_pos < position:
                break
            if entry_pos == position:
                oi_offset = oi_base + rel
                if rel < 0 or oi_offset < batch_last or (oi_prev != NONE and oi_prev >= base):
                    break
                oi_next = oi_i + 1
        # The time index: every entry up to this batch's last offset names exactly it.
        ti_next = ti_i
        while ti_next < ti_n:
            offset = ti_base + _TIME_ENTRY.unpack_from(ti_raw, ti_next * 12)[1]
            if offset > batch_last:
                break
            if offset < batch_last:
                ti_next = -1
                break
            ti_next += 1
        if ti_next < 0:
            break
        # Kafka's reading: its next index entry must name a higher offset than its last.
        k_indexed = k_on and k_bytes - k_index_pos > k_interval
        if k_indexed and k_index_offset != NONE and batch_last <= k_index_offset:
            break
        if crc32c(mv[pos + 21 : end]) != crc:
            break
        if k_indexed:
            k_index_offset, k_index_pos = batch_last, k_bytes
        if k_on:
            points.extend((k_bytes, batch_last, ts))
            k_bytes += size
        oi_i, oi_prev, ti_i = oi_next, oi_offset, ti_next
        if n == 0:
            first_offset = base
        n += 1
        last = batch_last
        if ts > max_ts:
            max_ts = ts
        attributes &= 0xFF
        if attributes & _TRANSACTIONAL:
            txn |= 1
            if attributes & _MARKER == _MARKER:
                txn |= 2
        # (a batch's offsets go up from here on: its successor must start past it)
        floor = batch_last + 1
        pos = end
    return (
        n,
        pos if n else start,
        first_offset,
        last,
        max_ts,
        txn,
        oi_i,
        oi_prev,
        ti_i,
        k_bytes,
        k_index_pos,
        k_index_offset,
        points.tobytes(),
    )


quiet_run = getattr(_ACCELERATOR, "quiet_run", None) or quiet_run_python
ACCELERATED = quiet_run is not quiet_run_python

index_points = getattr(_ACCELERATOR, "index_points", None)
"""`storage.index_builder.RecoveryIndex.add` over many (position, last offset, max timestamp)
triples, in C: None where the accelerator is not active (`RecoveryIndex.add_points` then adds
them one by one, its reference)."""
