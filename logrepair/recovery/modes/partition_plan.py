"""The plan of one partition as a mode builds it.

A mode plans one partition at a time on a `PartitionPlan`, which holds the partition's segment list
as it will be after the actions planned so far (a completed swap adds segments, a deletion drops
them), so later steps reason about the repaired state rather than the damaged one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...storage import layout
from ..plan import Action, Plan
from ..scan import PartitionScan
from ..segment_scan import SegmentScan
from ..txn_replay import TxnReplay

INT_MAX = 2**31 - 1
SEGMENT_SUFFIXES = (
    layout.LOG_SUFFIX,
    layout.INDEX_SUFFIX,
    layout.TIME_INDEX_SUFFIX,
    layout.TXN_INDEX_SUFFIX,
)


@dataclass(slots=True)
class Seg:
    """A segment of the repaired partition: its scan, and the `.log` name it will have."""

    scan: SegmentScan
    log: str
    base: int
    new_size: int | None = None
    """Set when the plan truncates the `.log`."""
    next_offset: int | None = None
    """The next offset after the repair (None: as scanned)."""
    rebuild: bool = False
    txn_entries: list[tuple[int, int, int, int]] | None = None
    """What its `.txnindex` must hold (None: as scanned)."""
    disk_txn: list[tuple[int, int, int, int]] | None = None
    derived: bool = False
    """Made by this plan's split of another segment (its batches were checked there)."""
    """What its `.txnindex` holds now, when `scan` is not the scan of this file."""

    def stem(self) -> str:
        return self.log[: -len(layout.LOG_SUFFIX)]

    @property
    def end_offset(self) -> int:
        return self.scan.next_offset if self.next_offset is None else self.next_offset


@dataclass(slots=True)
class PartitionPlan:
    p: PartitionScan
    plan: Plan
    segs: list[Seg] = field(default_factory=list)
    first_action: int = field(init=False)
    """Where this partition's actions start in `plan.actions`: partitions are planned one after
    another, so what it changed is looked for there, not in the whole log dir's plan."""
    deleted: set[str] = field(default_factory=set)
    renamed_in: set[str] = field(default_factory=set)
    """Names a planned rename (a finished swap) brings in."""
    created: list[Seg] = field(default_factory=list)
    data_removed: bool = False
    clear_epochs: bool = False
    epochs_before: list[Seg] = field(default_factory=list)
    """kafka mode: segments below the first one recovered whose batches' leader epochs Kafka's
    recovery assigns first, because it recovered them while loading (missing `.index`)."""
    recovered: set[str] = field(default_factory=set)
    """`.log` names Kafka's loader recovers (kafka mode rebuilds indexes only there)."""
    txn_replay: TxnReplay | None = None
    """kafka mode: Kafka's producer-state replay, for the `.txnindex` of recovered segments."""
    unrecoverable: list[int] = field(default_factory=list)
    """Base offsets of segments Kafka's recovery fails on, which kafka mode leaves as they are."""
    gaps: list[tuple[int, int]] = field(default_factory=list)
    """Offset ranges the repaired log is left without between kept batches (`[first, last]`)."""
    log_start: int | None = field(init=False)
    """The log start offset the repair leaves: the checkpointed one, unless a data-keeping mode
    fixes it from the data (`start_from_data`)."""

    def __post_init__(self) -> None:
        self.log_start = self.p.log_start_checkpoint
        self.first_action = len(self.plan.actions)

    def start_from_data(self) -> None:
        """Salvage and point-in-time: a log start checkpointed past the log end would hide every
        batch (Kafka deletes them all); the entry is fixed from the data instead, to the first
        segment's base offset (what Kafka takes when there is no entry)."""
        if self.log_start is None or not self.segs or self.log_start <= self.log_end_offset:
            return
        self.plan.notes.append(
            f"{self.p.rel or self.p.path}: log start {self.log_start} is past the log end "
            f"{self.log_end_offset}; it is set to {self.segs[0].base}, where the log's data "
            "starts, so that no batch is hidden (kafka mode deletes every segment, as Kafka does)"
        )
        self.log_start = self.segs[0].base

    @property
    def interval(self) -> int:
        return self.p.settings.index_interval_bytes

    def add(self, action: Action) -> None:
        if action.action == "rebuild_indexes":
            action.index_interval_bytes = self.interval
        if action.action == "delete":
            if action.file in self.deleted:
                return
            self.deleted.add(action.file)
        if action.action == "rename" and action.to is not None:
            self.deleted.discard(action.to)
            self.renamed_in.add(action.to)
        self.plan.actions.append(action)

    def exists(self, rel: str) -> bool:
        name = rel.rpartition("/")[2]
        return (name in self.p.files or rel in self.renamed_in) and rel not in self.deleted

    def delete_segment_files(self, seg: Seg, reason: str) -> None:
        """Moves the files of a segment whose data the plan keeps elsewhere to quarantine."""
        stem = seg.stem()
        for suffix in SEGMENT_SUFFIXES:
            rel = stem + suffix
            if self.exists(rel) or suffix == layout.LOG_SUFFIX:
                self.add(Action("delete", rel, reason))

    def delete_segment(self, seg: Seg, reason: str) -> None:
        """Moves every file of a segment to quarantine (Kafka's asynchronous delete)."""
        offsets = (seg.scan.first_offset, seg.scan.last_offset) if seg.scan.runs else None
        log_bytes = seg.scan.size if seg.new_size is None else seg.new_size
        stem = seg.stem()
        for suffix in SEGMENT_SUFFIXES:
            rel = stem + suffix
            if self.exists(rel) or (suffix == layout.LOG_SUFFIX and seg in self.created):
                self.add(
                    Action(
                        "delete",
                        rel,
                        reason,
                        removed_bytes=log_bytes if suffix == layout.LOG_SUFFIX else 0,
                        removed_offsets=offsets if suffix == layout.LOG_SUFFIX else None,
                    )
                )
        if log_bytes:
            self.data_removed = True
        self.segs.remove(seg)

    def truncate_segment(self, seg: Seg, size: int, reason: str) -> None:
        """Cuts a `.log` at a batch boundary and marks its indexes for rebuilding."""
        removed_offsets = None
        lost = [r for r in seg.scan.runs if r.end > size]
        if lost:
            removed_offsets = (_next_offset_at(seg.scan, size), lost[-1].last_offset)
        current = seg.scan.size if seg.new_size is None else seg.new_size
        if size >= current:
            return
        self.add(
            Action(
                "truncate",
                seg.log,
                reason,
                size=size,
                removed_bytes=current - size,
                removed_offsets=removed_offsets,
                keeps_offsets=kept_offsets(seg.scan, size),
            )
        )
        self.data_removed = True
        seg.new_size = size
        seg.next_offset = _next_offset_at(seg.scan, size)
        seg.rebuild = True

    @property
    def log_end_offset(self) -> int:
        """The log end the repaired partition has, as Kafka computes it."""
        if not self.segs:
            return self.log_start or 0
        return self.segs[-1].end_offset

    @property
    def verified_end_offset(self) -> int:
        """The log end verify will see after the repair: past the last batch in order (differs
        from Kafka's only where kafka mode leaves offsets going backwards)."""
        if not self.segs:
            return self.log_start or 0
        last = self.segs[-1]
        if last.new_size is None:
            return last.scan.next_offset
        return _next_offset_at(last.scan, last.new_size)


def kept_offsets(scan: SegmentScan, size: int) -> tuple[int, int] | None:
    """The offsets of the batches a segment cut at `size` keeps (None: none)."""
    kept = [r for r in scan.runs if r.end <= size]
    return (kept[0].first_offset, kept[-1].last_offset) if kept else None


def _next_offset_at(scan: SegmentScan, size: int) -> int:
    """The next offset of the segment cut at `size`.

    Every cut a mode makes is at the start of a defect or at Kafka's valid bytes, never inside a
    run of valid batches, so the runs that end by `size` are exactly the batches that remain."""
    last = None
    for run in scan.runs:
        if run.end > size:
            break
        last = run.last_offset
    return scan.base_offset if last is None else last + 1
