"""Append runs: the v2 batches at the start of a follower's append that the walker takes as they
come, summed up in one call, so a replica fetch of hundreds of batches builds no batch objects.

`Log.append_batches` needs, of a valid append, only what its batches add up to (Kafka's
`LogAppendInfo`): where the whole batches end, the first and last offsets, the largest timestamp
and the offset of the batch that holds it, the leader epochs to assign, and what producer state
reads of each batch that carries a producer id. `append_run` walks the batches that
pass the walker's fast path (magic 2, framing, offsets above the previous batch, record count
within the offset range, CRC-32C) and returns that sum, stopping before the first batch that does
not pass; the caller gives anything else (a torn or legacy tail, a defect) to the walker, the
reference.

The C accelerator (`logrepair.format._records.append_run`) does the same in one pass with the
interpreter's lock released; `append_run_python` is its reference, and a property test holds the
two equal on valid, damaged and random buffers.

`append_run(buf, max_length)` walks `buf` from its start; `max_length` is the largest batch
length field. Returns `(n, end, first, last, max_ts, ts_offset, epochs, producers, txn)`: n
batches ending at `end`, the first's base offset and the last's last offset (`NONE` with n == 0),
the largest max timestamp (`NO_TIMESTAMP` when none is above it) and the last offset of the first
batch holding it (the run's last offset when none does); `epochs`, native int64 pairs (epoch, base
offset) where a batch's non-negative leader epoch differs from the last one so assigned: the
assignments Kafka's batch-by-batch `assign` leaves the epoch cache with; `producers`, native int64
rows (producer id, producer epoch, base sequence, base offset, last offset, max timestamp) of each
batch with a producer id, in order; `txn`, whether one of those is transactional or a control
batch (then producer state must read the batches themselves).
"""

from __future__ import annotations

import struct
from array import array
from typing import NamedTuple

from .batch_layout import NO_TIMESTAMP
from .batch_runs import NONE
from .crc import crc32c
from .record_codec import _ACCELERATOR

_INT64_MAX = 2**63 - 1

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_FIELDS = struct.Struct(">qiibIhi8xqqhii")
_TRANSACTIONAL_OR_CONTROL = 0x30


class AppendRun(NamedTuple):
    """`append_run`'s result, named (see the module docstring)."""

    n: int
    end: int
    first: int
    last: int
    max_timestamp: int
    offset_of_max_timestamp: int
    epochs: bytes
    producers: bytes
    txn: bool


def append_run_python(buf, max_length: int) -> tuple:
    """The reference of `append_run` (see the module docstring)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    limit = len(mv)
    unpack = _FIELDS.unpack_from
    pos = n = 0
    first = last = floor = NONE
    max_ts, ts_offset = NO_TIMESTAMP, NONE
    txn = False
    assigned = None
    epochs, producers = array("q"), array("q")
    while pos + 61 <= limit:
        (
            base, length, epoch, magic, crc, attributes, delta, ts, producer_id, producer_epoch,
            base_sequence, count,
        ) = unpack(mv, pos)  # fmt: skip
        end = pos + 12 + length
        if (
            magic != 2
            or not 49 <= length <= max_length
            or end > limit
            or delta < 0
            or not 0 <= count <= delta + 1
            or base < floor
            or base >= _INT64_MAX - delta  # the next offset fits in an int64
            or crc32c(mv[pos + 21 : end]) != crc
        ):
            break
        batch_last = base + delta
        if n == 0:
            first = base
        n += 1
        last = batch_last
        if ts > max_ts:
            max_ts, ts_offset = ts, batch_last
        if producer_id >= 0:
            producers.extend((producer_id, producer_epoch, base_sequence, base, batch_last, ts))
            if attributes & _TRANSACTIONAL_OR_CONTROL:
                txn = True
        if epoch >= 0 and epoch != assigned:
            epochs.extend((epoch, base))
            assigned = epoch
        floor = batch_last + 1
        pos = end
    if ts_offset == NONE:
        ts_offset = last
    return n, pos, first, last, max_ts, ts_offset, epochs.tobytes(), producers.tobytes(), txn


append_run = getattr(_ACCELERATOR, "append_run", None)
"""The C `append_run`, or None where the accelerator is not active: `Log.append_batches` then
walks every append with the walker, the reference of the whole check."""
