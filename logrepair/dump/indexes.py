"""Dumps of a segment's side files (spec fmt §10.4-10.7): `.index`, `.timeindex`, `.txnindex`,
`.snapshot`, each with kafka-dump-log's lines and checks.

Where kafka-dump-log dies with a stack trace (no `.log` beside an index, an entry pointing past the
log, an unreadable transaction index) this dump names the problem on one line and goes on.
"""

from __future__ import annotations

import os.path
import struct

from ..format.batch_layout import HEADER, RECORD_BATCH_OVERHEAD
from ..format.errors import Defect, FormatError
from ..storage.abstract_index import IndexFileError
from ..storage.disk import Disk, DiskFile, join, parent_of
from ..storage.layout import LOG_SUFFIX
from ..storage.offset_index import OffsetIndex
from ..storage.producer_snapshot import CorruptSnapshotError, read_snapshot
from ..storage.scan import LogScan
from ..storage.time_index import TimeIndex
from ..storage.txn_index import TransactionIndex
from .report import DumpOptions, DumpReport

_OVERHEAD = struct.Struct(">qi")
_HEADER_SIZE_UP_TO_MAGIC = 17
_MIN_ENTRY_SIZE = 14
INT32_MAX = 2**31 - 1
# Time index entries are a few KiB apart: a small window (grown by the scan for a big batch) keeps
# one lookup per entry cheap.
_SCAN_WINDOW = 64 << 10


def _sibling(path: str, suffix: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return join(parent_of(path), name.split(".", 1)[0] + suffix)


def _open_log(disk: Disk, index_path: str, report: DumpReport) -> DiskFile | None:
    log_path = _sibling(index_path, LOG_SUFFIX)
    if not disk.exists(log_path):
        report.error(f"{log_path} not found: the entries of {index_path} are not verified")
        return None
    return disk.open(log_path)


def dump_offset_index(
    disk: Disk, path: str, base_offset: int, opts: DumpOptions, report: DumpReport
) -> None:
    index = OffsetIndex.open(disk, path, base_offset, writable=False)
    try:
        if index.entries == 0:
            _say(report, opts, path, f"{path} is empty.", {"empty": True})
            return
        if opts.index_sanity_check:
            _sanity(report, opts, path, index.sanity_check)
            return
        log = _open_log(disk, path, report)
        mismatches: list[tuple[int, int]] = []
        try:
            for i, entry in enumerate(index.iter_entries()):
                if i > 0 and entry.offset == base_offset:
                    break  # zero-filled preallocated slots of a crashed active segment
                if log is not None:
                    found = _last_offset_at(log, entry.position, opts.max_message_size)
                    if found != entry.offset:
                        mismatches.append((entry.offset, -1 if found is None else found))
                if not opts.verify_index_only:
                    if opts.json:
                        report.json(
                            {"file": path, "offset": entry.offset, "position": entry.position}
                        )
                    else:
                        report.line(f"offset: {entry.offset} position: {entry.position}")
        finally:
            if log is not None:
                log.close()
        if mismatches:
            report.index_mismatches[os.path.abspath(path)] = mismatches
    finally:
        index.close()


def _last_offset_at(log: DiskFile, position: int, max_size: int) -> int | None:
    """The last offset of the entry at `position` in a slice of `max_size` bytes, as
    `FileRecords.slice(position, maxMessageSize).batches().next()` reads it (header only), or None
    where Kafka's iterator would find no whole entry or fail."""
    end = min(max_size, log.size() - position)
    if position < 0 or end <= _HEADER_SIZE_UP_TO_MAGIC:
        return None
    head = log.read_at(position, min(end, RECORD_BATCH_OVERHEAD))
    offset, size = _OVERHEAD.unpack_from(head)
    if size < _MIN_ENTRY_SIZE or size + 12 > end:
        return None
    if head[16] < 2 or head[16] >= 0x80:  # a legacy entry (negative magic too): its offset field
        return offset
    if len(head) < RECORD_BATCH_OVERHEAD:
        return None
    return offset + HEADER.unpack_from(head)[6]


def dump_time_index(
    disk: Disk, path: str, base_offset: int, opts: DumpOptions, report: DumpReport
) -> None:
    time_index = TimeIndex.open(disk, path, base_offset, writable=False)
    try:
        if opts.index_sanity_check:
            _sanity(report, opts, path, time_index.sanity_check)
            return
        log_path = _sibling(path, LOG_SUFFIX)
        index_path = _sibling(path, ".index")
        verify = disk.exists(log_path)
        if not verify:
            report.error(f"{log_path} not found: the entries of {path} are not verified")
        offset_index = (
            OffsetIndex.open(disk, index_path, base_offset, writable=False)
            if verify and disk.exists(index_path)
            else None
        )
        absolute = os.path.abspath(path)
        prev_timestamp = -1
        try:
            for i, entry in enumerate(time_index.iter_entries()):
                if i > 0 and entry.offset == base_offset:
                    break
                if verify:
                    position = offset_index.lookup(entry.offset).position if offset_index else 0
                    found, max_ts = _batch_for(disk, log_path, position, entry.offset)
                    if found is None or found != entry.offset:
                        report.time_not_found.setdefault(absolute, []).append(
                            (entry.offset, -1 if found is None else found)
                        )
                    else:
                        if max_ts != entry.timestamp:
                            report.time_mismatches.setdefault(absolute, []).append(
                                (entry.timestamp, max_ts)
                            )
                        if prev_timestamp >= entry.timestamp:
                            report.time_out_of_order.setdefault(absolute, []).append(
                                (entry.timestamp, prev_timestamp)
                            )
                if not opts.verify_index_only:
                    if opts.json:
                        report.json(
                            {"file": path, "timestamp": entry.timestamp, "offset": entry.offset}
                        )
                    else:
                        report.line(f"timestamp: {entry.timestamp} offset: {entry.offset}")
                prev_timestamp = entry.timestamp
        finally:
            if offset_index is not None:
                offset_index.close()
    finally:
        time_index.close()


def _batch_for(disk: Disk, log_path: str, position: int, offset: int) -> tuple[int | None, int]:
    """The first batch from `position` whose last offset is ≥ `offset`: (its last offset, the
    largest record timestamp in it); (None, -1) when the log has none before it ends or breaks."""
    scan = LogScan(disk, log_path, start=position, check_offsets=False, window_size=_SCAN_WINDOW)
    for item in scan:
        if isinstance(item, Defect):
            return None, -1
        if item.last_offset >= offset:
            if item.last_offset != offset:
                return item.last_offset, -1
            try:
                records = item.records()
            except FormatError:
                return item.last_offset, -1
            return item.last_offset, max(
                (-1 if r.timestamp is None else r.timestamp for r in records), default=-1
            )
    return None, -1


def dump_txn_index(
    disk: Disk, path: str, base_offset: int, opts: DumpOptions, report: DumpReport
) -> None:
    index = TransactionIndex(disk, path, base_offset)
    try:
        for txn in index.iter_entries():
            if opts.json:
                report.json(
                    {
                        "file": path,
                        "version": txn.version,
                        "producer_id": txn.producer_id,
                        "first_offset": txn.first_offset,
                        "last_offset": txn.last_offset,
                        "last_stable_offset": txn.last_stable_offset,
                    }
                )
            else:
                report.line(
                    f"version: {txn.version} producerId: {txn.producer_id} "
                    f"firstOffset: {txn.first_offset} lastOffset: {txn.last_offset} "
                    f"lastStableOffset: {txn.last_stable_offset}"
                )
    except IndexFileError as e:
        report.error(str(e))
        report.defects += 1
    finally:
        index.close()


def dump_snapshot(disk: Disk, path: str, opts: DumpOptions, report: DumpReport) -> None:
    try:
        entries = read_snapshot(disk, path)
    except CorruptSnapshotError as e:
        report.error(str(e))
        report.defects += 1
        return
    for e in entries:
        if opts.json:
            report.json(
                {
                    "file": path,
                    "producer_id": e.producer_id,
                    "producer_epoch": e.epoch,
                    "coordinator_epoch": e.coordinator_epoch,
                    "current_txn_first_offset": (
                        e.current_txn_first_offset if e.has_ongoing_transaction else None
                    ),
                    "last_timestamp": e.timestamp,
                    "last_sequence": e.last_sequence if e.has_batch_metadata else None,
                    "last_offset": e.last_offset if e.has_batch_metadata else None,
                    "offset_delta": e.offset_delta if e.has_batch_metadata else None,
                }
            )
            continue
        txn = (
            f"OptionalLong[{e.current_txn_first_offset}]"
            if e.has_ongoing_transaction
            else "OptionalLong.empty"
        )
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.epoch} "
            f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {txn} "
            f"lastTimestamp: {e.timestamp} "
        )
        if e.has_batch_metadata:
            first = _decrement_sequence(e.last_sequence, e.offset_delta)
            line += (
                f"firstSequence: {first} lastSequence: {e.last_sequence} "
                f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
            )
        report.line(line)


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """`DefaultRecordBatch.decrementSequence`: sequences wrap below 0 to Integer.MAX_VALUE."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _say(report: DumpReport, opts: DumpOptions, path: str, text: str, obj: dict) -> None:
    if opts.json:
        report.json({"file": path, **obj})
    else:
        report.line(text)


def _sanity(report: DumpReport, opts: DumpOptions, path: str, check) -> None:
    try:
        check()
    except IndexFileError as e:
        report.defects += 1
        if opts.json:
            report.json({"file": path, "sanity_check": "failed", "detail": str(e)})
        else:
            report.error(str(e))
        return
    _say(report, opts, path, f"{path} passed sanity check.", {"sanity_check": "passed"})
