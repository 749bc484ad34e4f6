"""A segment that is quiet from its first byte to its last: scanned in a few C calls.

Most segments of a healthy log dir hold nothing to report: every batch valid and in order, the
leader epoch rising only at the start of a run, the offset and time index entries where they
belong. For such a segment the scan's batch loop, its two readings and its index checks would
only count (`quiet_batches.py`); `take_quiet_segment` gets the same `SegmentScan` from
`format.batch_runs.quiet_run` over the whole file, Kafka's index rebuild over its points, and
the index files' own checks, without building them. Where anything is not quiet (a defect, an
offset out of step, an epoch that does not rise, an index entry off a batch, preallocated index
slots, a file larger than one window), it changes nothing and says so, and the segment goes
through the full scan (`segment_scan.scan_segment`), which reads nothing twice but the indexes'
checks. A property test holds the two equal on random and damaged partitions.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..format.batch_runs import NONE, quiet_run
from ..storage.abstract_index import IndexFileError
from ..storage.disk import Disk, FileTooLarge
from ..storage.index_builder import RecoveryIndex
from .index_checks import MAX_INDEX_LOAD, check_txn_index, time_entries_problem, zero_tail
from .indexes import UNBOUNDED_INDEX
from .kafka_reading import INT_MAX
from .quiet_batches import MOST_BATCHES
from .strict_reading import INT64_MAX, NO_EPOCH, Run

if TYPE_CHECKING:
    from .segment_scan import SegmentScan

_SAFE_BASE = 2**62  # (as quiet_batches: base + a 31-bit relative offset stays inside int64)
_EPOCH = struct.Struct(">i")  # a v2 batch's partitionLeaderEpoch, at byte 12
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def read_index_files(
    disk: Disk, paths: tuple[str | None, str | None, str | None]
) -> tuple[bytes | None, bytes | None]:
    """The offset and time index files' bytes (None: absent, or too large to load: the index
    checks read such a file again and say so)."""
    out = []
    for path in paths[:2]:
        try:
            out.append(None if path is None else disk.read_small(path, MAX_INDEX_LOAD))
        except FileTooLarge:
            out.append(None)
    return out[0], out[1]


def take_quiet_segment(
    disk: Disk,
    seg: SegmentScan,
    whole: memoryview,
    raws: tuple[bytes | None, bytes | None],
    txn_path: str | None,
    *,
    previous_last_offset: int | None,
    next_base: int | None,
    previous_max_epoch: int,
    message_max_bytes: int | None,
    index_interval_bytes: int,
    max_batch_size: int | None,
) -> bool:
    """Fills `seg` (just made, of the file's size) as the full scan would, when the whole file
    `whole` is quiet and its offset and time indexes (`raws`) hold; else changes nothing and
    returns False. The arguments are `scan_segment`'s."""
    oi_raw, ti_raw = raws
    base = seg.base_offset
    size = len(whole)
    if oi_raw is None or ti_raw is None or not size or size != seg.size or base >= _SAFE_BASE:
        return False
    oi_n, ti_n = len(oi_raw) // 8, len(ti_raw) // 12
    if len(oi_raw) % 8 or len(ti_raw) % 12 or zero_tail(oi_raw, oi_n, 8):
        return False  # (the index checks say what is wrong, or which slots are preallocated)
    if zero_tail(ti_raw, ti_n, 12) or time_entries_problem(ti_raw, ti_n, base) is not None:
        return False
    # What the strict reading and Kafka's allow a batch of the run (`quiet_limits` of both)
    floor = max(base, 0 if previous_last_offset is None else previous_last_offset + 1)
    max_last = min(INT64_MAX - 1, base + INT_MAX)
    if next_base is not None:
        max_last = min(max_last, next_base - 1)
    max_size = INT64_MAX if message_max_bytes is None else min(message_max_bytes, INT64_MAX)
    max_length = min((max_batch_size or 2**31) - 12, INT64_MAX)
    kafka_index = RecoveryIndex(base, index_interval_bytes, UNBOUNDED_INDEX)
    try:
        runs = _quiet_runs(
            whole, floor, max_last, max_size, max_length, previous_max_epoch, oi_raw, ti_raw,
            kafka_index,
        )  # fmt: skip
        rebuilt = kafka_index.result()
    except IndexFileError:
        return False  # (what the rebuild throws, the full scan says)
    if runs is None:
        return False
    first, last, max_ts, txn, epochs, max_epoch = runs
    if not ti_n and max_ts >= 0 and next_base is not None:
        return False  # (an empty time index of a closed segment that holds timestamps)
    seg.runs.append(Run(0, size, first, last))
    seg.strict_epochs.extend(epochs)
    seg.max_epoch = max_epoch
    if max_ts > seg.max_timestamp:
        seg.max_timestamp = max_ts
    seg.has_txn_batches = bool(txn & 1)
    seg.has_txn_markers = bool(txn & 2)
    seg.kafka_last_offset = last
    named = [base + _OFFSET_ENTRY.unpack_from(oi_raw, 8 * oi_n - 8)[0]] if oi_n else []
    if ti_n:
        named.append(base + _TIME_ENTRY.unpack_from(ti_raw, 12 * ti_n - 12)[1])
    seg.indexed_last_offset = max(named, default=None)
    if txn_path is not None:
        check_txn_index(disk, txn_path, seg, seg.name)
        seg.has_txn_index = True
    # `KafkaReading.rebuild_indexes`, with both index files there and nothing cut
    seg.kafka_index_entries = len(rebuilt[0]) // 8
    seg.kafka_index_differs = rebuilt != (oi_raw, ti_raw)
    seg.kafka_index_checked = True
    if seg.kafka_index_differs or seg.index_findings:
        seg.kafka_indexes = rebuilt
    seg.kafka_valid_bytes = size
    return True


def _quiet_runs(
    whole: memoryview,
    floor: int,
    max_last: int,
    max_size: int,
    max_length: int,
    max_epoch: int,
    oi_raw: bytes,
    ti_raw: bytes,
    kafka_index: RecoveryIndex,
) -> tuple[int, int, int, int, list[tuple[int, int, int]], int] | None:
    """The whole file as quiet runs (as `QuietBatches` offers them: `MOST_BATCHES` at most per
    call, a run starting where the leader epoch rises), their points fed to Kafka's index as they come:
    first and last offset, highest timestamp, transaction bits, the rises `(epoch, base offset,
    position)` and the highest epoch after them; None where a batch is not quiet."""
    size = len(whole)
    base = kafka_index.base_offset
    oi_n, ti_n = len(oi_raw) // 8, len(ti_raw) // 12
    pos = oi_i = ti_i = k_pos = txn = 0
    oi_prev = k_offset = first = last = max_ts = NONE
    segment_max_epoch = -1
    epochs: list[tuple[int, int, int]] = []
    while pos < size:
        if pos + 61 > size or whole[pos + 16] != 2:
            return None
        epoch = max_epoch if max_epoch <= segment_max_epoch else NO_EPOCH
        rise = _EPOCH.unpack_from(whole, pos + 12)[0]
        if rise < 0 or rise == epoch:
            rise = None
        elif rise > segment_max_epoch and rise >= max_epoch:
            epoch = rise
        else:
            return None  # (an epoch regression: flagged batch by batch)
        n, end, run_first, last, run_ts, run_txn, oi_i, oi_prev, ti_i, _, k_pos, k_offset, run = (
            quiet_run(
                whole, pos, size, 0, max_length, floor, max_last, max_size,
                epoch, oi_raw, oi_i, oi_n, base, oi_prev, ti_raw, ti_i, ti_n, base,
                True, pos, k_pos, k_offset, kafka_index.interval, MOST_BATCHES,
            )
        )  # fmt: skip
        if not n:
            return None
        if rise is not None:
            epochs.append((rise, run_first, pos))
            segment_max_epoch = max_epoch = rise
        if first == NONE:
            first = run_first
        max_ts = max(max_ts, run_ts)
        txn |= run_txn
        kafka_index.add_points(run)
        del run  # (before the next call makes the next span's)
        floor = last + 1
        pos = end
    if oi_i != oi_n or ti_i != ti_n:
        return None  # (entries past the last batch)
    return first, last, max_ts, txn, epochs, max_epoch
