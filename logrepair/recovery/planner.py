"""Scan + mode → plan: the decisions of a repair, made before anything is touched."""

from __future__ import annotations

from ..storage import layout
from ..storage.layout import TopicPartition, printable
from . import notation
from .loss import PartitionLoss, partition_actions, partition_loss
from .modes import kafka, point_in_time, salvage
from .modes.checkpoints import plan_checkpoints
from .modes.finish import finish_partition
from .modes.flush import plan_flush
from .modes.leftovers import start_partition
from .modes.partition_plan import PartitionPlan
from .modes.resolution import left_json, unresolved
from .plan import Action, Plan
from .scan import LogDirScan, PartitionScan

MODES = ("kafka", "point-in-time", "salvage")

MALFORMED_REWRITE = {
    layout.RECOVERY_POINT_CHECKPOINT: lambda mode: (
        ("every partition is recovered from 0 and " if mode == "kafka" else "")
        + "the file is rewritten empty"
    ),
    layout.REPLICATION_CHECKPOINT: lambda mode: (
        "it is rewritten empty, so each high watermark starts at the log start offset"
    ),
    layout.LOG_START_OFFSET_CHECKPOINT: lambda mode: (
        "it is rewritten empty, so each log start is its first segment's base offset"
    ),
    layout.CLEANER_CHECKPOINT: lambda mode: (
        "it is rewritten empty, so cleaning starts again at the log start offset"
    ),
}
"""What a repair does with each malformed root checkpoint (by mode); what Kafka does with it is
the `checkpoint_malformed` finding's detail."""


def make_plan(scan: LogDirScan, mode: str) -> Plan:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
    plan = Plan(mode, scan.root)
    if scan.clean_shutdown_marker:
        plan.notes.append(
            "found .kafka_cleanshutdown: reported, not trusted; the logs are checked as after an "
            "unclean shutdown"
        )
    ck = scan.checkpoints
    for f in scan.findings:
        if f.kind == "checkpoint_malformed" and f.file in MALFORMED_REWRITE:
            # what Kafka does with it is the finding's own explanation (one per kind, the scan's)
            plan.notes.append(f"{f.file}: {f.detail}. Here: {MALFORMED_REWRITE[f.file](mode)}")
    # Before any checkpoint rewrite: writing `<name>` goes through `<name>.tmp`, which must be
    # in quarantine by then.
    for f in scan.findings:
        if f.kind == "tmp_leftover":
            plan.actions.append(
                Action("delete", f.file, "leftover of an interrupted checkpoint write")
            )
    if not scan.is_log_dir and mode == "kafka":
        plan.notes.append("a partition dir on its own: recovered whole (recovery point 0)")
    partition_plans: list[tuple[PartitionPlan, int]] = []
    ends = {}
    flushed = {}
    # a recovery point can be checkpointed only in a well-formed recovery-point file
    can_checkpoint = (
        scan.is_log_dir
        and ck.recovery_points is not None
        and layout.RECOVERY_POINT_CHECKPOINT not in ck.malformed
    )
    for p in scan.partitions:
        if p.left_alone is not None:
            plan.notes.append(f"{printable(p.rel or p.path)}: left as it is: {p.left_alone}")
            continue
        if scan.is_log_dir and not layout.is_legal(p.tp):
            plan.notes.append(
                f"{printable(p.rel)}: not a name Kafka gives a partition dir (topic "
                "[a-zA-Z0-9._-], at most 249 characters, numeric partition): a stray, left as it "
                "is and never written into the checkpoints"
            )
            continue
        first_action = len(plan.actions)
        pp = start_partition(p, plan)
        rp = p.recovery_point if p.recovery_point is not None else 0
        if mode == "kafka":
            if p.dir_kind == "delete":
                plan.notes.append(
                    f"{p.rel or p.path}: marked for deletion; Kafka does not recover it"
                )
                epochs_from = None
            else:
                epochs_from = kafka.plan_partition(pp, rp)
        elif mode == "point-in-time":
            epochs_from = point_in_time.plan_partition(pp)
        else:
            epochs_from = salvage.plan_partition(pp)
        if mode != "kafka":
            pp.start_from_data()
        finish_partition(pp, epochs_from=epochs_from, mode=mode)
        # Where kafka mode leaves offsets going back, Kafka's log end (after the last batch) and
        # verify's (after the last batch in order) differ: checkpoints are held to the lower one,
        # the safe side (more recovery, a lower high watermark).
        end = min(pp.log_end_offset, pp.verified_end_offset)
        changed = len(plan.actions) > first_action
        new_rp = plan_flush(pp, rp, end, changed and can_checkpoint)
        if checkpointed(p):
            if new_rp is not None:
                flushed[p.tp] = new_rp
            first_base = pp.segs[0].base if pp.segs else 0
            ends[p.tp] = (max(pp.log_start or 0, first_base), end)
        partition_plans.append((pp, end))
    after = plan_checkpoints(scan, plan, ends, flushed)
    plan.partitions = _losses(scan, plan, partition_plans, after)
    plan.left = left_json(unresolved(scan, plan, [pp for pp, _ in partition_plans]), mode)
    return plan


def _losses(
    scan: LogDirScan,
    plan: Plan,
    partition_plans: list[tuple[PartitionPlan, int]],
    after: dict[str, dict[TopicPartition, int] | None],
) -> list[PartitionLoss]:
    """The loss of every partition the plan touches (loss.py)."""
    out = []
    for pp, end in partition_plans:
        p = pp.p
        loss = partition_loss(
            p,
            partition_actions(p, plan.actions),
            gaps=pp.gaps,
            missing=[
                (f.offset, f.last_offset)
                for f in p.all_findings
                if f.kind == "offset_hole" and f.offset is not None and f.last_offset is not None
            ],
            log_end=end,
            high_watermark=_before_after(after, layout.REPLICATION_CHECKPOINT, p),
            recovery_point=_before_after(after, layout.RECOVERY_POINT_CHECKPOINT, p),
        )
        if loss.changed or loss.lost:
            out.append(loss)
    return out


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


def fixing_modes(scan: LogDirScan) -> dict[int, list[tuple[str, Plan]]]:
    """For each finding (by id), the modes whose plan for this scan removes it, with that plan.

    Exact for this log dir: `kafka` fixes a corrupt batch only at or after the recovery point."""
    out: dict[int, list[tuple[str, Plan]]] = {id(f): [] for f in scan.all_findings()}
    for mode in MODES:
        plan = make_plan(scan, mode)
        left = {(f["kind"], f["file"], f["position"], f["offset"]) for f in plan.left}
        for f in scan.all_findings():
            if (f.kind, f.file, f.position, f.offset) not in left:
                out[id(f)].append((mode, plan))
    return out


def fix_hints(scan: LogDirScan) -> dict[int, str]:
    """For each finding (by id), verify's "fixed by" hint: each mode that removes it in this log
    dir and what that mode's repair would cost, as its dry run computes it — the offsets it
    removes from the finding's partition (from the whole log dir, for a log-dir-level finding)."""
    owner = {id(f): p.rel for p in scan.partitions for f in p.all_findings}
    for f in scan.findings:
        owner[id(f)] = f.partition
    hints = {}
    for fid, fixers in fixing_modes(scan).items():
        rel = owner.get(fid)
        costs = []
        for mode, plan in fixers:
            losses = [p for p in plan.partitions if rel is None or p.path == rel]
            costs.append(f"{mode} ({_cost(losses, whole_dir=rel is None)})")
        hints[fid] = ", ".join(costs) or "reported only"
    return hints


def _cost(losses: list[PartitionLoss], *, whole_dir: bool) -> str:
    removed = [r for p in losses for r in p.removed_offsets]
    acknowledged = [r for p in losses for r in p.acknowledged_lost]
    if whole_dir:
        touched = sum(1 for p in losses if p.removed_offsets)
        text = (
            f"removes {notation.count(removed)} offsets in {touched} partition(s)"
            if removed
            else "removes no offsets"
        )
    elif removed:
        plural = "s" if notation.count(removed) > 1 else ""
        text = f"removes offset{plural} {notation.offset_ranges(removed)}"
    elif any(p.records_removed for p in losses):
        text = "removes only the damaged batches"
    else:
        text = "removes no offsets"
    if acknowledged and whole_dir:
        text += f"; {notation.count(acknowledged)} acknowledged offsets lost"
    elif acknowledged:
        text += f"; acknowledged offsets lost {notation.offset_ranges(acknowledged)}"
    return text
