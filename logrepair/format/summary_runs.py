"""Summary runs: the audit's per-batch bookkeeping over many valid batches in one call.

The audit keeps, per segment, counters (batches, first and next offset, where the valid bytes
end), the leader epochs as they rise, where the recovery point is crossed, and, when asked, each
batch's digest (base offset, last offset, CRC, position) and details (size, leader epoch, max
timestamp, producer id). `summary_run` takes the batches at a buffer position that the walker
would take as valid on its fast path (a whole v2 batch whose framing, counts and CRC hold, its
base offset at or above `floor`) and that the segment can hold (last offset at most `max_last`,
and below 2^63 - 1), and returns what they add up to. It stops before the first batch that needs
a closer look
(damage, a legacy entry, a misplaced batch, the end of the buffer), which the walker then yields
one at a time. It reports the first batch whose last offset reaches `cut_from` and the first whose
leader epoch rises above `top_epoch`, and stops before a batch that would raise it again, so each
call reports at most one rise (one call takes a segment of one leader's batches).

The C accelerator (`logrepair.format._records.summary_run`) does the same in one pass with the
interpreter's lock released; `summary_run_python` here is the reference, and a property test holds
the two equal on valid, damaged and random buffers. `LOGREPAIR_PURE_PYTHON=1` selects the
reference.

Arguments (ints unless said): `buf` (any buffer), `pos`, `limit` (walk `buf[pos:limit]`),
`file_position` (where `buf[0]` lies in the file), `max_length` (the largest batch length field),
`floor`, `max_last`, `top_epoch`, `cut_from` (as above), `keep`: 0 keeps nothing per batch, 1 the
digests, 2 the digests and the details.

Returns `(n, end, first, last, top_epoch, epoch_base, cut_position, columns)`: n batches ending at
buffer index `end`, the first's base offset and the last's last offset (`NONE`: no batch), the
highest leader epoch after them and the base offset of the batch that raised it (`NONE`: none
did), the file position of the batch that reached `cut_from` (`NONE`: none did), and `columns`:
native int64s, n of each kept field one column after the other (base, last, crc, position, then
size, leader epoch, max timestamp, producer id). With n == 0, `end` is `pos`.
"""

from __future__ import annotations

import struct
from array import array

from .batch_runs import NONE
from .crc import crc32c
from .record_codec import _ACCELERATOR

__all__ = ["ACCELERATED", "DIGEST_FIELDS", "DETAIL_FIELDS", "NONE", "summary_run"]

DIGEST_FIELDS = ("base", "last", "crc", "position")
DETAIL_FIELDS = ("size", "leader_epoch", "max_timestamp", "producer_id")

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, lastOffsetDelta, maxTimestamp,
# producerId, recordsCount
_FIELDS = struct.Struct(">qiibI2xi8xqq6xi")
_INT64_MAX = 2**63 - 1


def summary_run_python(
    buf,
    pos: int,
    limit: int,
    file_position: int,
    max_length: int,
    floor: int,
    max_last: int,
    top_epoch: int,
    cut_from: int,
    keep: int,
) -> tuple:
    """The reference of `summary_run` (see the module docstring)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    limit = min(limit, len(mv))
    max_last = min(max_last, _INT64_MAX - 1)  # the offset after a batch must be an int64 too
    unpack = _FIELDS.unpack_from
    columns = [array("q") for _ in range(4 * min(keep, 2) if keep > 0 else 0)]
    n = 0
    start = pos
    first = last = epoch_base = cut_position = NONE
    while pos + 61 <= limit:
        base, length, epoch, magic, crc, delta, max_ts, producer_id, count = unpack(mv, pos)
        size = length + 12
        end = pos + size
        if (
            magic != 2
            or not 49 <= length <= max_length
            or end > limit
            or not 0 <= count <= delta + 1
            or base < floor
            or base + delta > max_last
            or crc32c(mv[pos + 21 : end]) != crc
        ):
            break
        if epoch > top_epoch and epoch_base != NONE:
            break  # a second rise: the next call reports it
        last = base + delta
        position = file_position + pos
        if n == 0:
            first = base
        n += 1
        values = (base, last, crc, position, size, epoch, max_ts, producer_id)
        for column, value in zip(columns, values, strict=False):
            column.append(value)
        floor = last + 1
        pos = end
        if epoch > top_epoch:
            top_epoch, epoch_base = epoch, base
        if last >= cut_from:
            cut_position, cut_from = position, _INT64_MAX
    return (
        n,
        pos if n else start,
        first,
        last,
        top_epoch,
        epoch_base,
        cut_position,
        b"".join(c.tobytes() for c in columns),
    )


summary_run = getattr(_ACCELERATOR, "summary_run", None) or summary_run_python
ACCELERATED = summary_run is not summary_run_python
