"""What a repair costs each partition, in the terms an application owner understands: offsets.

Per partition the plan touches: the offsets it removes (valid batches cut or deleted, and the damaged
ranges between kept batches), the offset gaps the repaired log is left with, the bytes removed, and
the acknowledged offsets lost — offsets below the checkpointed high watermark (Kafka's high watermark
is the first offset not yet acknowledged) that the repaired log no longer holds, a torn tail's
included — with the high watermark and recovery point before and after. Ranges are of one partition
only (notation.merge never joins two partitions' offsets).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..json_out import Prerendered, Rendered
from ..storage import layout
from ..storage.layout import TopicPartition
from . import notation
from .defects import is_data_defect
from .modes.checkpoints import entry_after
from .modes.partition_plan import PartitionPlan
from .plan import Action, Plan
from .scan import PartitionScan
from .state_checks import Checkpoints

NOT_RECORDS = frozenset({"garbage_tail", "offset_hole"})
"""Data defects whose bytes hold no records (zeros or junk after the last batch, a segment that
holds no batch): removing them loses nothing."""


@dataclass(slots=True)
class PartitionLoss(Prerendered):
    topic: str
    partition: int
    path: str
    """The partition dir relative to the repaired PATH ('' when PATH is the partition dir)."""
    removed_offsets: list[tuple[int, int]] = field(default_factory=list)
    gaps: list[tuple[int, int]] = field(default_factory=list)
    removed_bytes: int = 0
    acknowledged_lost: list[tuple[int, int]] = field(default_factory=list)
    high_watermark: tuple[int | None, int | None] = (None, None)
    recovery_point: tuple[int | None, int | None] = (None, None)
    log_end_offset: tuple[int, int] = (0, 0)
    records_removed: bool = False
    """Records were removed: valid batches, or damaged ones (not only zero padding or junk)."""
    damaged_tail: bool = False
    """Among them, damaged batches after the partition's last valid batch, whose offsets cannot
    be read (a torn tail): the report says "from the log end on"."""
    changed: bool = False
    """The plan has an action in the partition dir or changes one of its checkpoint entries."""
    rendered: Rendered | None = field(default=None, compare=False, repr=False)
    """`to_json()`'s text, rendered beside the partition's scan for `--json`."""
    line: str | None = field(default=None, compare=False, repr=False)
    """`describe()`'s text, made beside the partition's scan for the text output."""

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}" if self.partition >= 0 else self.topic

    @property
    def offsets_lost(self) -> list[tuple[int, int]]:
        """Every offset the repaired log lacks that this report knows by number: removed, left as
        a gap, or acknowledged but gone."""
        return notation.merge([*self.removed_offsets, *self.gaps, *self.acknowledged_lost])

    @property
    def lost(self) -> bool:
        """What sets a repair's exit status 1: records removed or acknowledged offsets lost."""
        return self.records_removed or bool(self.acknowledged_lost)

    def to_json(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "removed_offsets": [list(r) for r in self.removed_offsets],
            "gaps": [list(g) for g in self.gaps],
            "removed_bytes": self.removed_bytes,
            "acknowledged_lost": [list(r) for r in self.acknowledged_lost],
            "high_watermark": list(self.high_watermark),
            "recovery_point": list(self.recovery_point),
            "log_end_offset": list(self.log_end_offset),
        }

    def describe(self) -> str:
        """One line of the repair's text output."""
        if self.removed_offsets:
            n = notation.count(self.removed_offsets)
            removed = (
                f"offsets removed {notation.offset_ranges(self.removed_offsets)} "
                f"({n} offset{'s' if n > 1 else ''}, {self.removed_bytes:,} bytes)"
            )
        elif self.records_removed:
            removed = f"damaged batches removed ({self.removed_bytes:,} bytes)"
        else:
            removed = f"no offsets removed ({self.removed_bytes:,} bytes)"
        parts = [removed]
        if self.gaps:
            parts.append(f"gaps left {notation.offset_ranges(self.gaps)}")
        parts.append(
            "acknowledged offsets lost "
            + (
                "unknown (no high watermark checkpointed)"
                if self.high_watermark[0] is None
                else notation.offset_ranges(self.acknowledged_lost)
            )
        )
        parts.append(f"log end {_change(self.log_end_offset)}")
        parts.append(f"high watermark {_change(self.high_watermark)}")
        parts.append(f"recovery point {_change(self.recovery_point)}")
        return f"{self.name}: " + "; ".join(parts)


def _change(pair: tuple[int | None, int | None]) -> str:
    before, after = ("none" if v is None else str(v) for v in pair)
    return before if before == after else f"{before} -> {after}"


def actions_by_dir(actions: list[Action]) -> dict[str, list[Action]]:
    """The actions grouped by the directory (relative to the repaired PATH) of their file, ""
    for PATH itself: one pass, however many partitions the log dir holds."""
    out: dict[str, list[Action]] = {}
    for a in actions:
        out.setdefault(a.file.rpartition("/")[0], []).append(a)
    return out


def partition_loss(
    p: PartitionScan,
    actions: list[Action],
    *,
    gaps: list[tuple[int, int]],
    missing: list[tuple[int, int]],
    log_end: int,
    high_watermark: tuple[int | None, int | None],
    recovery_point: tuple[int | None, int | None],
) -> PartitionLoss:
    """The loss of one partition under `actions` (the plan's actions in its dir), given the gaps
    its cuts leave, the offsets already `missing` before it that the repaired log still lacks
    between kept batches (holes), its log end after the plan, and its checkpoint values before
    and after. Holes are gaps left, and acknowledged loss below the high watermark, but not
    offsets this repair removed."""
    missing = [m for m in missing if m[1] < log_end]  # the repaired log goes on after it
    removed = notation.subtract(
        [a.removed_offsets for a in actions if a.removed_offsets is not None] + gaps, missing
    )
    loss = PartitionLoss(
        p.topic,
        p.partition,
        p.rel,
        removed_offsets=removed,
        gaps=notation.merge([*gaps, *missing]),
        removed_bytes=sum(a.removed_bytes for a in actions),
        high_watermark=high_watermark,
        recovery_point=recovery_point,
        log_end_offset=(p.log_end_offset, log_end),
    )
    hw = high_watermark[0]
    if hw is not None:
        below_hw = [*removed, *loss.gaps]
        if log_end < hw:
            below_hw.append((log_end, hw - 1))
        loss.acknowledged_lost = notation.clip(below_hw, p.log_start_offset, hw - 1)
    damaged, loss.damaged_tail = _damaged_records_removed(p, actions)
    loss.records_removed = bool(removed) or damaged
    loss.changed = (
        bool(actions)
        or high_watermark[0] != high_watermark[1]
        or (recovery_point[0] != recovery_point[1])
    )
    return loss


def _damaged_records_removed(p: PartitionScan, actions: list[Action]) -> tuple[bool, bool]:
    """Whether a cut or deleted `.log` range holds a damaged batch (not only zeros or junk after
    the last batch, or a segment holding none), and whether one of those lies after the last
    valid batch of the partition's last segment."""
    by_file = {s.name: s for s in p.segments}
    last = p.segments[-1] if p.segments else None
    damaged = tail = False
    for a in actions:
        if not a.removed_bytes or not a.file.endswith(layout.LOG_SUFFIX):
            continue
        seg = by_file.get(a.file)
        if seg is None:
            damaged = True  # a file the scan did not read as a segment: assume the worst
            continue
        cut_from = a.size if a.action == "truncate" and a.size is not None else 0
        for f in seg.findings:
            if (
                is_data_defect(f.kind)
                and f.kind not in NOT_RECORDS
                and (f.position is None or f.position + (f.length or 0) > cut_from)
            ):
                damaged = True
                after_runs = all(r.end <= (f.position or 0) for r in seg.runs)
                tail = tail or (seg is last and after_runs)
    return damaged, tail


def plan_losses(
    plan: Plan,
    partition_plans: list[tuple[PartitionPlan, int, PartitionShareLoss | None]],
    after: dict[str, dict[TopicPartition, int] | None],
) -> list[PartitionLoss]:
    """The loss of every partition the plan touches, from each partition's plan and its log end as
    checkpoints are held to, and the root checkpoints as the plan leaves them (`after`). A loss
    made beside the partition's scan (`loss_alone`) is taken where it was made of the same
    actions and checkpoint entries (the same inputs: the same loss)."""
    out = []
    by_dir = actions_by_dir(plan.actions)
    for pp, end, made in partition_plans:
        p = pp.p
        actions = by_dir.get(p.rel, [])
        hw = _before_after(after, layout.REPLICATION_CHECKPOINT, p)
        rp = _before_after(after, layout.RECOVERY_POINT_CHECKPOINT, p)
        if made is not None and made.fits(actions, hw, rp):
            loss = made.loss
        else:
            loss = partition_loss(
                p, actions, gaps=pp.gaps, missing=holes(p), log_end=end, high_watermark=hw,
                recovery_point=rp,
            )  # fmt: skip
        if loss.changed or loss.lost:
            out.append(loss)
    return out


@dataclass(slots=True)
class PartitionShareLoss:
    """A partition's loss made beside its scan, with the actions it was made of."""

    loss: PartitionLoss
    actions: list[Action]

    def fits(
        self,
        actions: list[Action],
        hw: tuple[int | None, int | None],
        rp: tuple[int | None, int | None],
    ) -> bool:
        return (
            self.loss.high_watermark == hw
            and self.loss.recovery_point == rp
            and len(actions) == len(self.actions)
            and all(a is b for a, b in zip(actions, self.actions, strict=True))
        )


def loss_alone(
    pp: PartitionPlan, end: int, new_rp: int | None, ck: Checkpoints
) -> PartitionShareLoss:
    """The partition's loss as `plan_losses` makes it, from the partition alone (beside its scan,
    in a log dir): its checkpoint entries after as `entry_after` sees them."""
    p = pp.p
    hw = rp = (None, None)
    if checkpointed(p):
        bounds = repaired_bounds(pp, end)
        hw = (
            p.high_watermark,
            entry_after(ck, layout.REPLICATION_CHECKPOINT, p.tp, p.high_watermark, bounds, None),
        )
        rp = (
            p.recovery_point,
            entry_after(
                ck, layout.RECOVERY_POINT_CHECKPOINT, p.tp, p.recovery_point, bounds, new_rp
            ),
        )
    actions = pp.plan.actions
    loss = partition_loss(
        p, actions, gaps=pp.gaps, missing=holes(p), log_end=end, high_watermark=hw,
        recovery_point=rp,
    )  # fmt: skip
    return PartitionShareLoss(loss, actions)


def repaired_bounds(pp: PartitionPlan, end: int) -> tuple[int, int]:
    """The partition's log start and end offsets as repaired: its checkpoint entries' bounds."""
    first_base = pp.segs[0].base if pp.segs else 0
    return max(pp.log_start or 0, first_base), end


def holes(p: PartitionScan) -> list[tuple[int, int]]:
    """The offsets missing between the partition's segments before the repair."""
    return [
        (f.offset, f.last_offset)
        for f in p.all_findings
        if f.kind == "offset_hole" and f.offset is not None and f.last_offset is not None
    ]


def checkpointed(p: PartitionScan) -> bool:
    """The root checkpoints' entry for the partition's topic-partition is this dir's: a live (or
    future) dir's, never a `-delete` or `-stray` dir's of the same topic-partition."""
    return p.dir_kind in ("live", "future")


def _before_after(
    after: dict[str, dict[TopicPartition, int] | None], name: str, p: PartitionScan
) -> tuple[int | None, int | None]:
    """The partition's entry in checkpoint `name` before the repair and as the repair leaves it."""
    if not checkpointed(p):
        return None, None
    before = {
        layout.REPLICATION_CHECKPOINT: p.high_watermark,
        layout.RECOVERY_POINT_CHECKPOINT: p.recovery_point,
    }[name]
    entries = after.get(name)
    return before, (before if entries is None else entries.get(p.tp))
