"""A segment's offset, time and transaction indexes held against its batches (spec fmt §6.7).

The offset and time index checks are fed the batches as the segment scan streams them
(`batch`), so memory stays bounded by the index files, never by the `.log`; each check keeps the
first problem it finds and reports it as one finding of its file.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Self

from ..storage.disk import Disk, FileTooLarge
from .findings import Finding

if TYPE_CHECKING:
    from .segment_scan import SegmentScan

# Index files larger than this (or than segment.index.bytes, when that is larger) are reported,
# not loaded: Kafka's default segment.index.bytes is 10 MiB.
MAX_INDEX_LOAD = 64 * 1024 * 1024

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
TXN_ENTRY = struct.Struct(">hqqqq")
TXN_ENTRY_SIZE = 34


class IndexCheck:
    """What the offset and time index checks share: the entries, the first problem found, and the
    finding it becomes."""

    KIND = ""
    SUFFIX = ""
    LABEL = ""
    ENTRY = 1

    def __init__(self, raw: bytes, base: int, seg: SegmentScan, file: str) -> None:
        self.raw = raw
        self.n = len(raw) // self.ENTRY
        self.i = 0
        """The next entry to hold against the batches."""
        self.base = base
        self.seg = seg
        self.file = file
        self.problem: str | None = None
        self.against_log = False
        self.active = False
        """The partition's last segment: Kafka adds its last time index entry only when it closes
        it, and rebuilds its indexes at an unclean start."""

    @classmethod
    def load(
        cls,
        disk: Disk,
        path: str | None,
        base: int,
        seg: SegmentScan,
        name: str,
        active: bool,
        raw: bytes | None = None,
    ) -> Self | None:
        """The check of the index at `path` (None: no such file, or too large to load); `raw`:
        its bytes, when they were read already.

        The active (last) segment's indexes are preallocated while the broker runs and trimmed only
        when it closes them, so after a crash their zero-filled slots are the expected state, which
        Kafka's recovery of that segment rebuilds: not a finding there (all slots zero: nothing
        indexed yet). Anywhere else the trim did not happen and it is one."""
        if path is None:
            return None
        file = _index_name(name, cls.SUFFIX)
        if raw is None:
            raw = _read_index(disk, path, seg, cls.KIND, file)
            if raw is None:
                return None
        size = len(raw)
        check = cls(raw, base, seg, file)
        check.active = active
        if size % cls.ENTRY:
            check.fail(
                f"{cls.LABEL} file {path} is corrupt, found {size} bytes which is neither "
                f"positive nor a multiple of {cls.ENTRY}"
            )
        zeros = zero_tail(raw, check.n, cls.ENTRY)
        if zeros and active and check.n > 1:
            check.n -= zeros
            check.check_entries(check.n)
        elif zeros and zeros < check.n:
            check.fail(f"{zeros} zero-filled slots after the last entry (active at a crash)")
            check.check_entries(check.n - zeros)
            check.n -= zeros
        else:
            check.check_entries(check.n)
        return check

    def check_entries(self, n: int) -> None:
        """Checks the first `n` entries among themselves, before any batch is read."""

    def last_named_offset(self) -> int | None:
        """The offset the last entry names (None: no entry)."""
        if self.n == 0:
            return None
        return self.base + self._relative_offset(self.n - 1)

    def _relative_offset(self, k: int) -> int:
        raise NotImplementedError

    def fail(self, detail: str, against_log: bool = False) -> None:
        """Records the first problem; `against_log` marks one found by holding the entries
        against the batches, which means nothing when the batches' own offsets go back."""
        if self.problem is None:
            self.problem = detail
            self.against_log = against_log

    def report(self) -> None:
        if self.problem is not None and not (self.against_log and self.seg.unordered):
            self.seg.index_findings.append(
                Finding(self.KIND, self.file, None, len(self.raw), None, self.problem)
            )


class OffsetIndexCheck(IndexCheck):
    """Checks `.index` entries against the batches as they pass (spec fmt §6.7)."""

    KIND = "offset_index_corrupt"
    SUFFIX = ".index"
    LABEL = "Index"
    ENTRY = 8

    def __init__(self, raw: bytes, base: int, seg: SegmentScan, file: str) -> None:
        super().__init__(raw, base, seg, file)
        self.prev_offset: int | None = None

    def _relative_offset(self, k: int) -> int:
        return _OFFSET_ENTRY.unpack_from(self.raw, k * 8)[0]

    def next_position(self) -> int:
        """Where the next unchecked entry points (the scan calls `batch` only from there on)."""
        if self.problem is not None or self.i >= self.n:
            return 2**63
        return _OFFSET_ENTRY.unpack_from(self.raw, self.i * 8)[1]

    def batch(self, position: int, first: int, last: int) -> int:
        """Checks the entry at this batch, if any; returns `next_position()`."""
        if self.problem is not None or self.i >= self.n:
            return 2**63
        rel, pos = _OFFSET_ENTRY.unpack_from(self.raw, self.i * 8)
        if pos < position:
            self.fail(
                f"entry {self.i} points at byte {pos}, which is not the start of a batch", True
            )
        elif pos == position:
            offset = self.base + rel
            if rel < 0 or offset < last:
                self.fail(
                    f"entry {self.i} says offset {offset} at byte {pos}, where batch "
                    f"{first}..{last} starts",
                    True,
                )
            elif self.prev_offset is not None and self.prev_offset >= first:
                self.fail(
                    f"entry {self.i - 1} offset {self.prev_offset} is not below the batch at "
                    f"the next entry ({first})",
                    True,
                )
            else:
                self.prev_offset = offset
                self.i += 1
        return self.next_position()

    def finish(self) -> None:
        if self.problem is None and self.i < self.n:
            rel, pos = _OFFSET_ENTRY.unpack_from(self.raw, self.i * 8)
            self.fail(
                f"{self.n - self.i} entries from entry {self.i} (offset {self.base + rel}, byte "
                f"{pos}) point past the last valid batch",
                True,
            )
        self.report()


class TimeIndexCheck(IndexCheck):
    """Checks `.timeindex` entries: increasing timestamps, offsets that are batch last offsets."""

    KIND = "time_index_corrupt"
    SUFFIX = ".timeindex"
    LABEL = "Time index"
    ENTRY = 12

    def check_entries(self, n: int) -> None:
        problem = time_entries_problem(self.raw, n, self.base)
        if problem is not None:
            self.fail(problem)

    def _relative_offset(self, k: int) -> int:
        return _TIME_ENTRY.unpack_from(self.raw, k * 12)[1]

    def next_offset(self) -> int:
        """The offset the next unchecked entry names (the scan calls `batch` only from there)."""
        if self.problem is not None or self.i >= self.n:
            return 2**63
        return self.base + _TIME_ENTRY.unpack_from(self.raw, self.i * 12)[1]

    def batch(self, last: int) -> int:
        """Checks the entries up to this batch's last offset; returns `next_offset()`."""
        while self.problem is None and self.i < self.n:
            _, rel = _TIME_ENTRY.unpack_from(self.raw, self.i * 12)
            offset = self.base + rel
            if offset > last:
                break
            if offset < last:
                self.fail(
                    f"entry {self.i} points at offset {offset}, which is not a batch's last offset",
                    True,
                )
                break
            self.i += 1
        return self.next_offset()

    def finish(self, log_last_offset: int | None) -> None:
        if self.problem is None and self.i < self.n:
            _, rel = _TIME_ENTRY.unpack_from(self.raw, self.i * 12)
            where = (
                "but the segment holds no batch"
                if log_last_offset is None
                else f"past the log's last offset {log_last_offset}"
            )
            self.fail(f"entry {self.i} points at offset {self.base + rel}, {where}", True)
        if self.problem is None and self.n == 0 and self.seg.max_timestamp >= 0 and not self.active:
            self.fail(
                f"empty, but the segment holds timestamps up to {self.seg.max_timestamp} "
                "(lookups by time miss it)"
            )
        self.report()


def time_entries_problem(raw: bytes, n: int, base: int) -> str | None:
    """What is wrong among the first `n` `.timeindex` entries themselves (None: nothing):
    offsets at or past the base and never going back, timestamps increasing."""
    prev_ts: int | None = None
    prev_off = base
    for k, (ts, rel) in enumerate(_TIME_ENTRY.iter_unpack(raw[: n * 12])):
        offset = base + rel
        if rel < 0:
            return f"entry {k} has offset {offset}, below the base offset {base}"
        if prev_ts is not None and ts <= prev_ts:
            return f"entry {k} timestamp {ts} does not increase past {prev_ts}"
        if offset < prev_off:
            return f"entry {k} offset {offset} goes back from {prev_off}"
        prev_ts, prev_off = ts, offset
    return None


def _index_name(log_name: str, suffix: str) -> str:
    """The index file beside a segment, named as findings name it."""
    return (log_name[: -len(".log")] if log_name.endswith(".log") else log_name) + suffix


def _read_index(disk: Disk, path: str, seg: SegmentScan, kind: str, file: str) -> bytes | None:
    """An index file's bytes, or None (and a finding) when it is too large to hold in memory."""
    try:  # one open and one read: thousands of partitions pay each call per index
        return disk.read_small(path, MAX_INDEX_LOAD)
    except FileTooLarge as e:
        seg.index_findings.append(
            Finding(kind, file, 0, e.size, None, f"{e.size} bytes is too large")
        )
        return None


def check_txn_index(disk: Disk, path: str, seg: SegmentScan, name: str) -> None:
    file = _index_name(name, ".txnindex")
    raw = _read_index(disk, path, seg, "txn_index_corrupt", file)
    if raw is None:
        return
    kafka_problem = other = None
    prev_last: int | None = None
    # past every batch the file holds in either reading: kafka mode keeps batches whose offsets
    # go back (and their markers), the strict modes cut them and drop their entries
    end = max(seg.next_offset, seg.kafka_next_offset)
    for k in range(len(raw) // TXN_ENTRY_SIZE):
        version, pid, first, last, lso = TXN_ENTRY.unpack_from(raw, k * TXN_ENTRY_SIZE)
        seg.txn_entries.append((pid, first, last, lso))
        # `AbortedTxn.version()` is `buffer.get(0)`: the first byte alone, signed
        kafka_version = version >> 8
        if kafka_problem is None:
            # `TransactionIndex.sanityCheck` reads the whole entries in order until one throws:
            # above version 0 a KafkaException (startup aborts), a last offset below the base
            # a CorruptIndexException (the segment is recovered while loading)
            if kafka_version > 0:
                kafka_problem = f"entry {k} has version {kafka_version}; Kafka reads only version 0"
                seg.txn_corrupt_for_kafka = True
                seg.txn_kafka_fatal = kafka_problem
            elif last < seg.base_offset:
                kafka_problem = (
                    f"Last offset of aborted transaction (producer {pid}, last offset {last}) is "
                    f"less than start offset {seg.base_offset}"
                )
                seg.txn_corrupt_for_kafka = True
        if other is None:
            if version != 0 and kafka_version <= 0:
                other = (
                    f"entry {k} has version bytes {version & 0xFFFF:04x} where Kafka writes 0000 "
                    f"(it reads the first byte alone, as version {kafka_version}, and loads it)"
                )
            elif last >= end:
                other = f"entry {k} (abort marker at {last}) is past the log end {end}"
            elif first > last:
                other = f"entry {k} first offset {first} is past its last offset {last}"
            elif prev_last is not None and last <= prev_last:
                other = f"entry {k} last offset {last} does not increase"
        prev_last = last
    if len(raw) % TXN_ENTRY_SIZE and other is None:
        other = f"{len(raw) % TXN_ENTRY_SIZE} trailing bytes are not a whole entry"
    problem = kafka_problem or other  # what decides Kafka's load is named first
    if problem is not None:
        seg.index_findings.append(Finding("txn_index_corrupt", file, None, len(raw), None, problem))


def zero_tail(raw: bytes, n: int, entry: int) -> int:
    """Count of all-zero entries at the end of the first `n` (preallocated slots a crash left)."""
    end = n * entry
    if not n or raw[end - entry : end] != _ZEROS[:entry]:
        return 0  # (the usual index: its last entry is not zero, and nothing is copied)
    # rstrip runs in C: a crashed broker's preallocated 10 MiB index is 1.3M slots to look at
    used = len(bytes(raw[:end]).rstrip(b"\0"))
    return n - -(-used // entry)


_ZEROS = bytes(16)


class SegmentIndexChecks:
    """The checks of one segment's three indexes: loaded before the segment's pass (entries
    checked among themselves), fed its batches during it, reported after it."""

    __slots__ = ("seg", "offsets", "times", "txn_path")

    def __init__(
        self,
        disk: Disk,
        seg: SegmentScan,
        paths: tuple[str | None, str | None, str | None],
        active: bool = False,
        raws: tuple[bytes | None, bytes | None] = (None, None),
    ) -> None:
        """`active`: the partition's last segment (see `IndexCheck.load`); `raws`: the offset
        and time index files' bytes, where they were read already."""
        self.seg = seg
        base, name = seg.base_offset, seg.name
        self.offsets = OffsetIndexCheck.load(disk, paths[0], base, seg, name, active, raws[0])
        self.times = TimeIndexCheck.load(disk, paths[1], base, seg, name, active, raws[1])
        self.txn_path = paths[2]
        seg.has_index = paths[0] is not None
        seg.has_time_index = paths[1] is not None
        named = [c.last_named_offset() for c in (self.offsets, self.times) if c is not None]
        seg.indexed_last_offset = max((o for o in named if o is not None), default=None)

    def raw(self) -> tuple[bytes, bytes] | None:
        """The offset and time index files' bytes, when both exist (and were loaded)."""
        if self.offsets is None or self.times is None:
            return None
        return self.offsets.raw, self.times.raw

    def finish(self, disk: Disk) -> None:
        """Reports what the pass left unchecked or found; reads the transaction index, whose
        entries are held against the log end both readings reached."""
        seg = self.seg
        if self.offsets is not None:
            self.offsets.finish()
        if self.times is not None:
            self.times.finish(seg.last_offset)
        if self.txn_path is not None:
            check_txn_index(disk, self.txn_path, seg, seg.name)
            seg.has_txn_index = True
