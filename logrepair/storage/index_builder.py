"""The deterministic index rebuild of Kafka's segment recovery (spec fmt §6.4(a), rec §6.6.1).

`recovery_index_bytes` is the one implementation of the rule, over `(position, last offset, max
timestamp)` of each batch; `build_indexes` feeds it batch objects. `Segment.rebuild_indexes` writes what
it returns, and anything else that needs the `.index` and `.timeindex` Kafka's recovery would leave
should call it rather than state the rule again.

It packs the entries itself instead of appending through `OffsetIndex` and `TimeIndex`: their
per-entry bookkeeping (~5 µs a batch) held a rebuild to 0.4x the speed of a plain verify.
`RecoveryIndex` holds the rule's state between calls, so a scan's pass can feed it as the batches
stream by and keep nothing per batch; `recovery_index_bytes` feeds it one iterable. It
raises what their appends raise, in the same order; tests hold it to an independent re-statement
of the spec rule and to the index classes.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from operator import attrgetter
from typing import Protocol

from ..format.batch_runs import NONE, index_points, quiet_run
from . import offset_index, time_index
from .abstract_index import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_MAX_INDEX_SIZE,
    INT32_MAX,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from .time_index import NO_TIMESTAMP

# (position, last offset, max timestamp) of a batch: what the rule reads. Positions rather than
# sizes because a scan's batches have them as plain attributes: reading `size` (a property) per
# batch made a rebuild of 1 KiB batches ~8 % slower.
IndexPoint = tuple[int, int, int | None]

_NO_INDEX = (b"", 0, 0, 0, NONE, b"", 0, 0, 0)  # no index files to check against the batches
_SAFE_BASE = 2**62  # segments based below it keep base + a 31-bit relative offset inside int64


class IndexedBatch(Protocol):
    """What the rebuild reads of a batch (the format layer's Batch protocol has it)."""

    @property
    def size(self) -> int: ...

    @property
    def last_offset(self) -> int: ...

    @property
    def max_timestamp(self) -> int | None:
        """None for magic 0, which counts as NO_TIMESTAMP."""


def build_indexes(
    batches: Iterable[IndexedBatch],
    base_offset: int,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
) -> tuple[bytes, bytes]:
    """`recovery_index_bytes` of batch objects, back to back from position 0."""
    return recovery_index_bytes(
        _positioned(batches), base_offset, index_interval_bytes, max_index_size
    )


def _positioned(batches: Iterable[IndexedBatch]) -> Iterator[IndexPoint]:
    position = 0
    for b in batches:
        yield position, b.last_offset, b.max_timestamp
        position += b.size


def recovery_index_bytes(
    batches: Iterable[IndexPoint],
    base_offset: int,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
) -> tuple[bytes, bytes]:
    """The trimmed `.index` and `.timeindex` bytes `LogSegment.recover` leaves for a segment whose
    valid batches these are, in file order from position 0 with no gap: each batch's position is
    the `validBytes` of Kafka's loop.

    The caller validates each batch first (CRC, and the segment's offset range: Kafka's
    `ensureOffsetInRange`). Raises IndexFullError, InvalidOffsetError and IndexOffsetOverflowError
    where Kafka's index appends throw during recovery; ValueError for a `max_index_size` too small
    for one time-index entry, as the index constructors do."""
    index = RecoveryIndex(base_offset, index_interval_bytes, max_index_size)
    add = index.add
    for valid, last, ts in batches:
        add(valid, last, ts)
    return index.result()


_PENDING = 3 * 4096
"""`RecoveryIndex.add` holds this many values (4,096 batches) before it runs the rule over them."""

_RUNNING_STATE = (
    "offset_entries",
    "time_entries",
    "last_entry_offset",
    "last_time",
    "last_time_offset",
    "max_ts",
    "max_ts_offset",
    "last_indexed",
)
"""What `RecoveryIndex` carries from batch to batch: `index_points` takes it after the limits and
gives it back, in this order."""
_running_state = attrgetter(*_RUNNING_STATE)


class RecoveryIndex:
    """`recovery_index_bytes` fed as a scan's batches pass, by a scan that keeps no list of its
    batches: it holds the index entries and at most a few thousand batches' points not yet run
    through the rule (`add` buffers them: one Python call into the rule per batch cost a third of
    a verify's time; `add_points` runs a chunk in C). A throw may surface at a later call, or at
    `result`."""

    __slots__ = (
        "base_offset",
        "interval",
        "max_offset_entries",
        "max_time_entries",
        "offsets",
        "times",
        *_RUNNING_STATE,
        "pending",
    )

    def __init__(
        self,
        base_offset: int,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
    ) -> None:
        if max_index_size < time_index.ENTRY_SIZE:
            raise ValueError(f"Invalid max index size: {max_index_size}")
        self.base_offset = base_offset
        self.interval = index_interval_bytes
        self.max_offset_entries = max_index_size // offset_index.ENTRY_SIZE
        # TimeIndex.isFull keeps one slot free for the final entry written after the loop.
        self.max_time_entries = max_index_size // time_index.ENTRY_SIZE - 1
        self.offsets = bytearray()
        self.times = bytearray()
        self.offset_entries = self.time_entries = 0
        self.last_entry_offset = base_offset
        # An empty time index reads as (NO_TIMESTAMP, base offset).
        self.last_time = NO_TIMESTAMP
        self.last_time_offset = base_offset
        self.max_ts = NO_TIMESTAMP
        self.max_ts_offset = base_offset
        self.last_indexed = 0
        self.pending = array("q")

    def add(self, valid: int, last: int, ts: int | None) -> None:
        """The batch at position `valid` (the bytes before it), its last offset and max
        timestamp (None for magic 0), buffered; raises as Kafka's index appends do, when the
        buffer is run."""
        pending = self.pending
        n = len(pending)
        try:
            pending.extend((valid, last, NO_TIMESTAMP if ts is None else ts))
        except OverflowError:  # past int64 (offsets outside the CRC): the rule, which says why
            del pending[n:]
            self.flush()
            self._add(valid, last, ts)
            return
        if n + 3 >= _PENDING:
            self.flush()

    def flush(self) -> None:
        """Runs the buffered points through the rule."""
        if self.pending:
            points, self.pending = self.pending, array("q")
            self._add_points(points)

    def _add(self, valid: int, last: int, ts: int | None) -> None:
        """The rule for one batch, at once."""
        if ts is not None and ts > self.max_ts:
            self.max_ts = ts
            self.max_ts_offset = last
        if valid - self.last_indexed > self.interval:
            self._entry(valid, last)

    def add_points(self, points: bytes) -> None:
        """`add` of each (position, last offset, max timestamp) native int64 triple of `points`
        (what `format.batch_runs.quiet_run` returns), in C when the accelerator is built: one call
        for a run of batches. Raises where `add` would, with the same state."""
        self.flush()
        self._add_points(points)

    def _add_points(self, points) -> None:
        done = 0
        if index_points is not None and self._fits_int64():
            (
                done,
                self.offset_entries,
                self.time_entries,
                self.last_entry_offset,
                self.last_time,
                self.last_time_offset,
                self.max_ts,
                self.max_ts_offset,
                self.last_indexed,
                offsets,
                times,
            ) = index_points(
                points,
                self.base_offset,
                self.interval,
                self.max_offset_entries,
                self.max_time_entries,
                *_running_state(self),
            )  # (the state in `_RUNNING_STATE`'s order)
            if offsets:
                self.offsets += offsets
            if times:
                self.times += times
            if 24 * done == memoryview(points).nbytes:
                return
        rest = (
            memoryview(points).cast("B")[24 * done :].cast("q")
        )  # (the triple that raises, in C's case)
        add = self._add
        for k in range(0, len(rest), 3):
            add(rest[k], rest[k + 1], rest[k + 2])

    def _fits_int64(self) -> bool:
        """The state C takes (a batch's offsets past int64 leave the rule to Python)."""
        held = (self.max_ts_offset, self.last_time_offset, self.last_entry_offset)
        return -(2**63) <= min(held) and max(held) < 2**63

    def take_run(
        self, buf, pos: int, limit: int, file_position: int, max_length: int, floor: int
    ) -> tuple[int, int, int]:
        """A scan's `quiet_runs` for a rebuild over a segment's batches from position 0 (see
        `storage.scan.LogScan`): the batches at `buf[pos:]` whose offsets stay in the segment's
        relative range and whose entries `add` would write without raising, added at once."""
        self.flush()
        base = self.base_offset
        if base >= _SAFE_BASE:
            return 0, pos, 0  # (its relative range would not fit int64: batch by batch)
        last_offset = self.last_entry_offset if self.offset_entries else NONE
        n, end, _, last, *_, points = quiet_run(
            buf,
            pos,
            limit,
            file_position,
            min(max_length, 2**63 - 1),
            max(floor, base),
            base + INT32_MAX,
            2**63 - 1,
            NONE,
            *_NO_INDEX,
            True,
            file_position + pos,
            self.last_indexed,
            last_offset,
            self.interval,
        )
        if n:
            self.add_points(points)
        return n, end, last

    def _entry(self, valid: int, last: int) -> None:
        """OffsetIndex.append, then TimeIndex.maybeAppend: their checks, in their order."""
        base_offset = self.base_offset
        if self.offset_entries >= self.max_offset_entries:
            raise IndexFullError(
                f"Attempt to append to a full index (size = {self.offset_entries})."
            )
        if self.offset_entries and last <= self.last_entry_offset:
            raise InvalidOffsetError(
                f"Attempt to append an offset {last} to position {self.offset_entries} no "
                f"larger than the last offset appended ({self.last_entry_offset})"
            )
        relative = last - base_offset  # AbstractIndex.relativeOffset
        if not 0 <= relative <= INT32_MAX:
            raise _overflow(last, base_offset)
        self.offsets += offset_index.encode_entry(relative, valid)
        self.offset_entries += 1
        self.last_entry_offset = last
        if self.time_entries >= self.max_time_entries:
            raise IndexFullError(
                f"Attempt to append to a full time index (size = {self.time_entries})."
            )
        if self.max_ts > self.last_time:
            self.times += _time_entry(
                self.max_ts, self.max_ts_offset, base_offset, self.time_entries,
                self.last_time_offset,
            )  # fmt: skip
            self.time_entries += 1
            self.last_time = self.max_ts
            self.last_time_offset = self.max_ts_offset
        self.last_indexed = valid

    def result(self) -> tuple[bytes, bytes]:
        """The two files' bytes, with the final "largest timestamp" entry (skipFullCheck: it may
        take the slot kept free); more may be added after."""
        self.flush()
        times = self.times
        if self.max_ts > self.last_time:
            times = times + _time_entry(
                self.max_ts, self.max_ts_offset, self.base_offset, self.time_entries,
                self.last_time_offset,
            )  # fmt: skip
        return bytes(self.offsets), bytes(times)


def _overflow(offset: int, base_offset: int) -> IndexOffsetOverflowError:
    return IndexOffsetOverflowError(
        f"Integer overflow for offset: {offset} (segment base offset {base_offset})"
    )


def _time_entry(
    timestamp: int, offset: int, base_offset: int, slot: int, last_offset: int
) -> bytes:
    """`TimeIndex.maybeAppend` of an entry it writes. It also refuses an offset below the last
    entry's when it writes nothing, but then the running maximum has not moved, nor its offset."""
    if slot and offset < last_offset:
        raise InvalidOffsetError(
            f"Attempt to append an offset ({offset}) to slot {slot} no larger than the last "
            f"offset appended ({last_offset})"
        )
    relative = offset - base_offset
    if not 0 <= relative <= INT32_MAX:
        raise _overflow(offset, base_offset)
    return time_index.encode_entry(timestamp, relative)
