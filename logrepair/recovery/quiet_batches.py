"""The segment scan's quiet batches: runs of them handed to `format.batch_runs.quiet_run` at once.

Most batches of a healthy segment change nothing in the scan but counters: each reading (strict,
Kafka's) and each index check says what a batch must satisfy for that to hold (`quiet_limits`),
`quiet_run` walks the batches that satisfy all of it in one call (in C when the accelerator is
built), and each reading takes the run at once (`extend`). The first batch that does not satisfy
it comes back to the walker, which yields it to the scan's loop as before, so findings and state
are exactly those of the batch-by-batch pass; only the number of Python steps changes.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..format.batch_runs import NONE, quiet_run

if TYPE_CHECKING:
    from .index_checks import SegmentIndexChecks
    from .kafka_reading import KafkaReading
    from .strict_reading import StrictReading

_NOTHING = (0, 0, 0)
_LENGTH = struct.Struct(">i").unpack_from
_EPOCH = struct.Struct(">i")  # a v2 batch's partitionLeaderEpoch, at byte 12
_EMPTY = b""
MOST_BATCHES = 1024
"""Batches one call takes at most: its points (24 bytes a batch, 24 KiB here) are bounded by this
count, so memory does not follow the number of batches in a window, while a call still walks the
whole window where batches are large (a span of bytes would bound the points only by the batches'
size: 4 MiB of 1 KiB batches is 96 KiB of points against 12 KiB for 8 KiB batches)."""
_SAFE_BASE = 2**62
"""Segments based below this keep every index offset (base + a 31-bit entry) inside int64."""
_INT64_MAX = 2**63 - 1  # (a configured maximum beyond it is no maximum)


class QuietBatches:
    """The walker's `quiet_runs` for one segment scan."""

    __slots__ = ("strict", "kafka", "index_checks")

    def __init__(
        self, strict: StrictReading, kafka: KafkaReading, index_checks: SegmentIndexChecks
    ) -> None:
        self.strict = strict
        self.kafka = kafka
        self.index_checks = index_checks

    def __call__(
        self,
        buf: memoryview,
        pos: int,
        limit: int,
        file_position: int,
        max_length: int,
        floor: int,
    ) -> tuple[int, int, int]:
        if pos + 12 + _LENGTH(buf, pos + 8)[0] > limit:
            return _NOTHING  # (the batch there runs past the window: the walker reads on)
        strict, kafka = self.strict, self.kafka
        seg = strict.seg
        limits = strict.quiet_limits()
        if limits is None or seg.base_offset >= _SAFE_BASE:
            return _NOTHING
        floor = max(floor, limits[0])
        _, max_last, max_size, epoch = limits
        # A run may begin where the leader epoch rises (a segment's first batch, most often): the
        # rise is recorded and the run takes that epoch.
        rise = None
        if buf[pos + 16] == 2:
            first_epoch = _EPOCH.unpack_from(buf, pos + 12)[0]
            if first_epoch != epoch and first_epoch >= 0 and strict.rises_to(first_epoch):
                epoch = rise = first_epoch
        k_on = kafka.on
        # The points (position, last offset, max timestamp) of the run go to Kafka's index while
        # Kafka reads on, else to the index of the strict run after damage (`run_index`), as if
        # Kafka recovered that run as a segment of its own (which is what salvage makes of it).
        run = strict.run
        run_index = None if run is None else strict.run_index  # (the ended run's is closed later)
        new_run = run is None and file_position + pos > 0
        if k_on:
            k_limits = kafka.quiet_limits()
            if k_limits is None or run_index is not None or new_run:
                return _NOTHING  # (both would want the points: batch by batch)
            floor = max(floor, k_limits[0])
            max_last = min(max_last, k_limits[1])
            k_state = (True, kafka.bytes, kafka.last_index_pos, kafka.last_index_offset)
        elif run_index is not None:
            run_index.flush()
            last_entry = run_index.last_entry_offset if run_index.offset_entries else None
            at = file_position + pos - run.start
            k_state = (True, at, run_index.last_indexed, last_entry)
        else:
            k_state = (new_run, 0, 0, None)
        offsets, times = self.index_checks.offsets, self.index_checks.times
        if offsets is None:
            oi = (_EMPTY, 0, 0, 0, NONE)
        else:
            prev = offsets.prev_offset
            n = offsets.n if offsets.problem is None else offsets.i
            oi = (offsets.raw, offsets.i, n, offsets.base, NONE if prev is None else prev)
        if times is None:
            ti = (_EMPTY, 0, 0, 0)
        else:
            ti = (times.raw, times.i, times.n if times.problem is None else times.i, times.base)
        k_indexed, k_bytes, k_pos, k_offset = k_state
        n, end, first, last, max_ts, txn, oi_i, oi_prev, ti_i, kept, k_pos, k_offset, points = (
            quiet_run(
                buf,
                pos,
                limit,
                file_position,
                min(max_length, _INT64_MAX),
                floor,
                max_last,
                max_size,
                epoch,
                *oi,
                *ti,
                k_indexed,
                k_bytes,
                k_pos,
                NONE if k_offset is None else k_offset,
                kafka.interval,
                MOST_BATCHES,
            )
        )
        if not n:
            return _NOTHING
        strict.extend(
            file_position + pos, file_position + end, first, last, max_ts,
            None if k_on or not k_indexed else points, rise,
        )  # fmt: skip
        if k_on:
            kafka.extend(first, kept, last, k_pos, None if k_offset == NONE else k_offset, points)
            if txn:
                seg.has_txn_batches = True
                seg.has_txn_markers = seg.has_txn_markers or bool(txn & 2)
        if offsets is not None:
            offsets.i = oi_i
            offsets.prev_offset = None if oi_prev == NONE else oi_prev
        if times is not None:
            times.i = ti_i
        return n, end, last
