"""Copies of a partition as `heal` reads them: the local one being repaired and other brokers'.

A copy is read through the same scan as verify (so "valid" means the same thing everywhere) and
is never written or locked: a replica may be another broker's live log dir, mounted read only.
What heal needs from a copy is its valid batches in offset order with where they lie
(`BatchRef`), whether two neighbouring batches are joined (nothing damaged or missing between
them), its leader-epoch history and the high watermark its log dir checkpointed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..storage import layout
from ..storage.checkpoints import CheckpointError, read_offsets
from ..storage.disk import Disk, join, parent_of
from ..storage.scan import LogScan
from .path_kind import ROOT_MARKERS, NotALogDir, classify
from .scan import PartitionScan, scan_path
from .settings import Settings


@dataclass(frozen=True, slots=True)
class BatchRef:
    """One valid batch of a copy: where it lies and what identifies it."""

    file: str
    """The `.log` holding it: relative to the repaired PATH for the local copy, else absolute."""
    position: int
    size: int
    base_offset: int
    last_offset: int
    epoch: int
    """Its partition leader epoch (-1 for magic 0/1)."""
    crc: int
    magic: int
    max_timestamp: int
    is_txn_marker: bool

    @property
    def key(self) -> tuple[int, int, int, int, int, int]:
        """What two byte-identical batches share (the CRC covers the rest of the bytes)."""
        return (self.base_offset, self.last_offset, self.size, self.crc, self.epoch, self.magic)


@dataclass(frozen=True, slots=True)
class Step:
    """A batch of a copy's walk, and whether it follows the previous one with nothing between."""

    batch: BatchRef
    joined: bool
    segment: int
    """Index of its segment in the copy's scan."""


@dataclass(slots=True)
class PartitionCopy:
    """One copy of a partition: its scan, where its files are, its epochs and high watermark."""

    label: str
    """How reports name it: the replica path as given, or the repaired PATH."""
    disk: Disk
    scan: PartitionScan
    local: bool
    compacted: bool
    high_watermark: int | None
    leader_epochs: list[tuple[int, int]] | None
    txn_by_marker: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    """Its `.txnindex` entries by the offset of the marker that ended the transaction."""

    def file(self, seg_name: str) -> str:
        """A segment's `.log` as a heal piece names it: relative to the repaired PATH for the
        local copy (segment names in a scan are), absolute for a replica."""
        return seg_name if self.local else join(self.scan.path, seg_name.rpartition("/")[2])

    def walk(self, from_offset: int, max_batch_size: int | None) -> Iterator[Step]:
        """The valid batches from the segment that holds `from_offset` on (one earlier batch
        included, when there is one, so the caller can hold it against its own)."""
        segments = self.scan.segments
        bases = [s.base_offset for s in segments]
        first = max(0, bisect_right(bases, from_offset) - 1)
        # the segment before, when the one found starts with `from_offset`: its last batch
        if first > 0 and segments[first].first_offset in (None, from_offset):
            first -= 1
        previous_end: tuple[int, int] | None = None  # (segment index, last offset) if clean end
        for n in range(first, len(segments)):
            seg = segments[n]
            if seg.size == 0 and previous_end is not None:
                previous_end = (n, previous_end[1])  # an empty segment hides nothing
            run_end = None
            for run in seg.runs:
                if run_end is not None:
                    joined_run = run.start == run_end  # split where nothing was damaged
                else:
                    joined_run = (
                        run.start == 0
                        and previous_end is not None
                        and previous_end[0] == n - 1
                        and (self.compacted or run.first_offset == previous_end[1] + 1)
                    )
                run_end = run.end
                scan = LogScan(
                    self.disk,
                    join(self.scan.path, seg.name.rpartition("/")[2]),
                    start=run.start,
                    end=run.end,
                    check_offsets=False,
                    max_batch_size=max_batch_size,
                )
                is_first = True
                for b in scan:
                    if not hasattr(b, "base_offset"):
                        break  # the scan said these bytes were valid: changed under us
                    yield Step(
                        _ref(self.file(seg.name), b),
                        joined=joined_run if is_first else True,
                        segment=n,
                    )
                    is_first = False
            last_run = seg.runs[-1] if seg.runs else None
            if last_run is not None and last_run.end == seg.size:
                previous_end = (n, last_run.last_offset)
            elif seg.size:
                previous_end = None


def _ref(file: str, b) -> BatchRef:
    magic = b.magic
    marker = bool(magic >= 2 and b.is_control and b.is_transactional)
    ts = b.max_timestamp
    return BatchRef(
        file,
        b.position,
        b.size,
        b.base_offset,
        b.last_offset,
        b.partition_leader_epoch if magic >= 2 else -1,
        b.crc,
        magic,
        -1 if ts is None else ts,
        marker,
    )


def open_replica(
    disk: Disk, path: str, tp: layout.TopicPartition, settings: Settings
) -> PartitionCopy | str:
    """The copy of `tp` under a replica path (another broker's log dir or a partition dir), or
    why there is none."""
    path = path.rstrip("/") or "/"
    try:
        is_log_dir = classify(disk, path)
    except NotALogDir as e:
        return str(e)
    if is_log_dir:
        log_dir = path
        pdir = join(path, layout.log_dir_name(tp))
        if not disk.is_dir(pdir) or disk.is_symlink(pdir):
            return f"no {layout.log_dir_name(tp)} in it"
    else:
        pdir = path
        parent = parent_of(path)
        names = disk.list_dir(parent) if disk.is_dir(parent) else []
        log_dir = parent if any(n in ROOT_MARKERS for n in names) else None
    scanned = scan_path(disk, pdir, settings)
    if not scanned.partitions:
        return "no partition there"
    p = scanned.partitions[0]
    if p.tp != tp:
        return f"it holds {p.tp}, not {tp}"
    hw = _root_offset(disk, log_dir, layout.REPLICATION_CHECKPOINT, tp)
    compacted = _root_offset(disk, log_dir, layout.CLEANER_CHECKPOINT, tp) is not None
    return make_copy(path, disk, p, local=False, compacted=compacted, high_watermark=hw)


def make_copy(
    label: str,
    disk: Disk,
    p: PartitionScan,
    *,
    local: bool,
    compacted: bool,
    high_watermark: int | None,
) -> PartitionCopy:
    copy = PartitionCopy(
        label,
        disk,
        p,
        local,
        compacted,
        high_watermark,
        [(e, s) for e, s in p.leader_epochs or [] if e >= 0 and s >= 0] or None,
    )
    for seg in p.segments:
        for entry in seg.txn_entries:
            copy.txn_by_marker.setdefault(entry[2], entry)
    return copy


def _root_offset(
    disk: Disk, log_dir: str | None, name: str, tp: layout.TopicPartition
) -> int | None:
    if log_dir is None or not disk.exists(join(log_dir, name)):
        return None
    try:
        return read_offsets(disk, join(log_dir, name)).get(tp)
    except CheckpointError:
        return None


def epoch_at(entries: list[tuple[int, int]], offset: int) -> int | None:
    """The leader epoch a history assigns to `offset` (the last entry starting at or below it)."""
    found = None
    for epoch, start in entries:
        if start > offset:
            break
        found = epoch
    return found
