"""Kafka's producer-state replay while it recovers segments (spec rec §6.5): the `.txnindex` of
each recovered segment, and where the replay itself throws.

`LogLoader.recoverSegment` builds a fresh ProducerStateManager for each segment it recovers: it
deletes the snapshots above the segment's base offset and at or below the log start, loads the
latest readable one at or below the base (none: an empty state at the log start), replays the
batches from there up to the base, recovers the segment (each ABORT marker that completes a
transaction appends a `.txnindex` entry) and takes a snapshot at the segment's next offset. This
does the same over the scanned bytes, in memory: the snapshots it "takes" are never written.
Kafka reads the segments below by their size fields only: one below 14 bytes (a zeroed block)
throws an exception nothing catches at load, and the broker does not start.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..format.batch import RecordBatch
from ..format.control import ControlType
from ..format.errors import Defect, FormatError
from ..format.walker import CRC_VALID_KINDS
from ..storage import layout
from ..storage.disk import Disk, join
from ..storage.producer_snapshot import (
    CorruptSnapshotError,
    ProducerSnapshotEntry,
    read_snapshot,
)
from ..storage.producer_state import ProducerState, ProducerStateError
from ..storage.scan import LogScan
from .kafka_reading import kafka_keeps_bad_magic

_SIZE = struct.Struct(">i")
_OFFSET = struct.Struct(">q")
_INDEX_ENTRY = struct.Struct(">ii")
_HEADER_TO_LAST_DELTA = 27  # base offset, length, leader epoch, magic, crc, attributes, delta
_HEADER_UP_TO_MAGIC = 17  # FileLogInputStream reads no batch with fewer bytes left
_MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0
TxnEntry = tuple[int, int, int, int]
"""(producer id, first offset, last offset, last stable offset) of an aborted transaction."""


@dataclass(frozen=True, slots=True)
class _Batch:
    """What the replay needs of one v2 batch."""

    position: int
    base_offset: int
    last_offset: int
    producer_id: int
    epoch: int
    base_sequence: int
    max_timestamp: int
    transactional: bool
    control: bool
    marker: tuple[bool, int] | None
    """For a COMMIT/ABORT marker: (is abort, coordinator epoch)."""


Source = str | ProducerState | tuple[ProducerSnapshotEntry, ...]
"""Where the replay gets the producer state at a snapshot's offset: the snapshot file's name
(read when used), a state it made, or the entries the scan decoded from the file."""


class TxnReplay:
    """The replay of one partition; `recover` once per recovered segment, in Kafka's order."""

    def __init__(
        self,
        disk: Disk,
        path: str,
        log_start: int,
        snapshots: dict[int, Source],
        max_batch: int,
    ) -> None:
        self.disk = disk
        self.path = path
        self.log_start = log_start
        self.max_batch = max_batch
        self._snapshots: dict[int, Source] = dict(snapshots)
        self._batches: dict[int, list[_Batch]] = {}
        self.problems: list[str] = []
        """Batches the replay rejects (Kafka's InvalidTxnStateException: its startup aborts)."""
        self.sizes: dict[int, int] = {}
        """Each segment's size as Kafka's recovery has left it so far (by base offset), which the
        caller keeps up to date; a segment not in it is read to its end."""
        self.fatal: str | None = None
        """Where Kafka's replay of a segment below one it recovers throws (startup aborts)."""

    def recover(
        self, bases: list[int], base: int, next_offset: int, *, with_state: bool = True
    ) -> list[TxnEntry]:
        """The `.txnindex` entries Kafka's recovery of the segment at `base` writes; `bases` are
        the partition's segments in offset order, `next_offset` where Kafka's recovery of this
        segment ends. Without `with_state` (no transaction marker anywhere: no entries) only the
        replay's reads are followed, for `fatal`."""
        state = self._reload(base)
        below = [b for b in bases if b < base]
        for i, b in enumerate(below):
            end = below[i + 1] if i + 1 < len(below) else base
            if end <= state.map_end_offset:
                continue
            start = max(state.map_end_offset, self.log_start)
            if self.fatal is None:
                self.fatal = self._read_fails(b, start=start)
            for batch in self._read(b) if with_state else ():
                if batch.base_offset >= base:
                    break
                if batch.last_offset >= start:
                    self._apply(state, batch)
        state.map_end_offset = max(state.map_end_offset, base)
        entries: list[TxnEntry] = []
        for batch in self._read(base) if with_state else ():
            aborted = self._apply(state, batch)
            if aborted is not None:
                entries.append(aborted)
        end = max(state.map_end_offset, next_offset)
        self._snapshots[end] = ProducerState(end, state.entries)
        return entries

    def load_fails(self, bases: list[int], log_start: int, log_end: int) -> tuple[int, str] | None:
        """The last steps of Kafka's load: stray snapshots removed, the producer state rebuilt
        up to the log end, then the log read at the first offset of the earliest open
        transaction (`maybeIncrementFirstUnstableOffset`). Where that throws (startup aborts): the
        segment's base offset and the exception's message."""
        self._remove_stray(bases)
        self.log_start = log_start
        state = self._reload(log_end)
        below = [b for b in bases if b < log_end]
        for i, b in enumerate(below):
            end = below[i + 1] if i + 1 < len(below) else log_end
            if end <= state.map_end_offset:
                continue
            start = max(state.map_end_offset, self.log_start)
            failed = self._read_fails(b, start=start)
            if failed is not None:
                return b, failed
            for batch in self._read(b):
                if batch.last_offset >= start:
                    self._apply(state, batch)
        ongoing = [first for first, _ in state.ongoing()]
        if not ongoing:
            return None
        first = max(min(ongoing), log_start)
        floor = [b for b in bases if b <= first]
        failed = self._read_fails(floor[-1], until=first) if floor else None
        return None if failed is None else (floor[-1], failed)

    def _remove_stray(self, bases: list[int]) -> None:
        """`ProducerStateManager.removeStraySnapshots`: those not at a segment base go, except
        the latest when it is past the last segment's base."""
        stray = sorted(o for o in self._snapshots if o not in set(bases))
        keep = stray[-1] if stray and bases and stray[-1] > max(bases) else None
        for offset in stray:
            if offset != keep:
                del self._snapshots[offset]

    def _read_fails(
        self, base: int, until: int | None = None, start: int | None = None
    ) -> str | None:
        """Kafka reads the segment batch by batch by its size fields alone (no CRC check): the
        replay from offset `start` to the end (`LogSegment.read`), looking for offset `until` up
        to the batch holding it; either begins at the offset index's entry at or below that
        offset (`translateOffset`), at the segment's start without one. A size below 14 bytes
        throws CorruptRecordException, which nothing catches while the log loads. The message,
        when it throws."""
        name = layout.log_file_name(base)
        path = join(self.path, name)
        if not self.disk.exists(path):
            return None
        target = until if until is not None else start
        position = 0 if target is None or target <= base else self._index_lookup(base, target)
        with self.disk.open(path) as f:
            end = min(f.size(), self.sizes.get(base, f.size()))
            while position + _HEADER_UP_TO_MAGIC < end:
                head = f.read_at(position, _HEADER_TO_LAST_DELTA)
                size = _SIZE.unpack_from(head, 8)[0]
                if size < _MIN_RECORD_OVERHEAD:
                    return (
                        f"Found record size {size} smaller than minimum record overhead "
                        f"({_MIN_RECORD_OVERHEAD}) in file {name} at position {position}"
                    )
                if position > end - 12 - size:
                    break
                if until is not None and len(head) == _HEADER_TO_LAST_DELTA:
                    last = _OFFSET.unpack_from(head)[0]
                    if head[16] >= 2:
                        last += _SIZE.unpack_from(head, 23)[0]
                    if last >= until:
                        break
                position += 12 + size
        return None

    def _index_lookup(self, base: int, offset: int) -> int:
        """`OffsetIndex.lookup`: the position of the largest entry at or below `offset` (binary
        search over every 8-byte slot of the file, as the loaded index has them), else 0."""
        path = join(self.path, layout.index_file_name(base))
        if not self.disk.exists(path):
            return 0
        raw = self.disk.read_file(path)
        lo, hi, found = 0, len(raw) // 8 - 1, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            relative, position = _INDEX_ENTRY.unpack_from(raw, mid * 8)
            if base + relative <= offset:
                found, lo = position, mid + 1
            else:
                hi = mid - 1
        return found

    def _reload(self, base: int) -> ProducerState:
        """`ProducerStateManager.truncateAndReload(logStart, base)` on a fresh manager."""
        for offset in [o for o in self._snapshots if o > base or o <= self.log_start]:
            del self._snapshots[offset]
        for offset in sorted(self._snapshots, reverse=True):
            source = self._snapshots[offset]
            if isinstance(source, ProducerState):
                return ProducerState(source.map_end_offset, source.entries)
            if isinstance(source, tuple):  # (its entries, decoded already)
                return ProducerState(offset, source)
            try:
                entries = read_snapshot(self.disk, join(self.path, source))
            except CorruptSnapshotError:
                del self._snapshots[offset]  # Kafka deletes it and tries the one before
                continue
            return ProducerState(offset, tuple(entries))
        return ProducerState(self.log_start)

    def _apply(self, state: ProducerState, batch: _Batch) -> TxnEntry | None:
        aborted = None
        try:
            if batch.marker is not None:
                is_abort, coordinator_epoch = batch.marker
                txn = state.append_end_txn(
                    batch.producer_id,
                    batch.epoch,
                    batch.base_offset,
                    batch.max_timestamp,
                    is_abort,
                    coordinator_epoch,
                )
                if txn is not None:
                    aborted = (
                        txn.producer_id,
                        txn.first_offset,
                        txn.last_offset,
                        txn.last_stable_offset,
                    )
            elif batch.producer_id >= 0 and not batch.control:
                state.append_data(
                    batch.producer_id,
                    batch.epoch,
                    batch.base_sequence,
                    batch.base_offset,
                    batch.last_offset,
                    batch.max_timestamp,
                    batch.transactional,
                )
        except ProducerStateError as e:
            self.problems.append(
                f"{layout.log_file_name(batch.base_offset)} @{batch.position}: {e}"
            )
        state.map_end_offset = (
            batch.last_offset + 1
        )  # every v2 batch moves it (`updateMapEndOffset`)
        return aborted

    def _read(self, base: int) -> list[_Batch]:
        """The v2 batches of the segment at `base` up to its first defect (where Kafka stops)."""
        cached = self._batches.get(base)
        if cached is not None:
            return cached
        out: list[_Batch] = []
        path = join(self.path, layout.log_file_name(base))
        if self.disk.exists(path):
            for item in LogScan(
                self.disk, path, check_offsets=False, max_batch_size=self.max_batch
            ):
                last = False
                if isinstance(item, Defect):
                    kept = self._kept_in_damage(path, item)
                    if kept is None:
                        break
                    item, last = kept
                if not isinstance(item, RecordBatch):
                    continue
                marker = None
                if item.is_control and item.is_transactional:
                    try:
                        kind = item.control_type()
                        if kind in (ControlType.ABORT, ControlType.COMMIT):
                            end = item.end_txn_marker()
                            marker = (end.control_type is ControlType.ABORT, end.coordinator_epoch)
                    except (FormatError, ValueError) as e:
                        self.problems.append(f"{layout.log_file_name(base)} @{item.position}: {e}")
                out.append(
                    _Batch(
                        item.position,
                        item.base_offset,
                        item.last_offset,
                        item.producer_id,
                        item.producer_epoch,
                        item.base_sequence,
                        item.max_timestamp,
                        item.is_transactional,
                        item.is_control,
                        marker,
                    )
                )
                if last:
                    break
        self._batches[base] = out
        return out

    def _kept_in_damage(self, path: str, defect: Defect) -> tuple[RecordBatch, bool] | None:
        """The batch at the start of a damaged region that Kafka's recovery keeps (its CRC holds:
        records that do not parse, or a magic byte of 3-127), read as the v2 header Kafka reads,
        and whether Kafka's recovery stops after it; None where it stops before."""
        if defect.kind in CRC_VALID_KINDS:
            with self.disk.open(path) as f:
                size = 12 + _SIZE.unpack_from(f.read_at(defect.position + 8, 4))[0]
        elif defect.kind in ("bad_magic", "garbage_tail"):
            size = kafka_keeps_bad_magic(self.disk, path, defect)
        else:
            size = None
        if size is None:
            return None
        with self.disk.open(path) as f:
            raw = bytearray(f.read_at(defect.position, size))
        raw[16] = 2  # outside the CRC: read as Kafka reads it
        try:
            batch = RecordBatch.parse(bytes(raw), 0)
        except FormatError:
            return None
        return batch, size < defect.length
