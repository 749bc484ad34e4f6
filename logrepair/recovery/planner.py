"""Scan + mode → plan: the decisions of a repair, made before anything is touched."""

from __future__ import annotations

from dataclasses import dataclass

from ..storage import layout
from ..storage.layout import TopicPartition, printable
from .loss import PartitionShareLoss, checkpointed, loss_alone, plan_losses, repaired_bounds
from .modes import kafka, kraft, point_in_time, salvage
from .modes.checkpoints import plan_checkpoints
from .modes.finish import finish_partition
from .modes.flush import plan_flush
from .modes.heal import HealSource
from .modes.leftovers import start_partition
from .modes.partition_plan import PartitionPlan
from .modes.resolution import left_json, unresolved
from .plan import Action, Plan
from .scan import LogDirScan, PartitionScan
from .state_checks import Checkpoints

MODES = ("kafka", "point-in-time", "salvage")
REPAIR_MODES = (*MODES, "heal")
"""`heal` needs replicas (`heal=`): the modes a scan alone decides are MODES."""

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


def make_plan(scan: LogDirScan, mode: str, heal: HealSource | None = None) -> Plan:
    """The plan of `mode` for `scan`: log-dir notes and leftovers, each partition (its mode's cuts,
    then indexes, snapshots and epochs, then its flush), the root checkpoints, what it costs each
    partition, and the defects it leaves. `heal` (mode "heal"): the replicas it reads."""
    if mode not in MODES and not (mode == "heal" and heal is not None):
        raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
    plan = Plan(mode, scan.root)
    _start(scan, plan)
    can_checkpoint = _can_checkpoint(scan.is_log_dir, scan.checkpoints)
    planned: list[tuple[PartitionPlan, int, PartitionShareLoss | None]] = []
    ends: dict[TopicPartition, tuple[int, int]] = {}
    flushed: dict[TopicPartition, int] = {}
    for p in scan.partitions:
        if _left_alone(plan, p):
            continue
        share = scan.prepared.get(p.rel) if heal is None else None
        made = None
        if isinstance(share, PartitionShare) and share.pp.plan.mode == mode:
            made = share.loss
            pp, end, new_rp = share.adopt(plan)
        else:
            pp, end, new_rp = _plan_partition(p, plan, can_checkpoint, heal)
        if checkpointed(p):
            if new_rp is not None:
                flushed[p.tp] = new_rp
            ends[p.tp] = repaired_bounds(pp, end)
        planned.append((pp, end, made))
    after = plan_checkpoints(scan, plan, ends, flushed)
    plan.partitions = plan_losses(plan, planned, after)
    plan.left = left_json(unresolved(scan, plan, [pp for pp, _, _ in planned]), mode)
    return plan


def _can_checkpoint(is_log_dir: bool, ck: Checkpoints) -> bool:
    """A recovery point can be checkpointed only in a log dir's well-formed recovery-point file."""
    return (
        is_log_dir
        and ck.recovery_points is not None
        and layout.RECOVERY_POINT_CHECKPOINT not in ck.malformed
    )


@dataclass(slots=True)
class PartitionShare:
    """One partition planned beside its scan (in a worker) on a plan of its own: `make_plan`
    adopts its actions and notes in partition order, as if it had planned it there."""

    pp: PartitionPlan
    end: int
    new_rp: int | None
    loss: PartitionShareLoss | None = None
    """Its loss, made beside it (`plan_losses` takes it where it holds)."""

    def adopt(self, plan: Plan) -> tuple[PartitionPlan, int, int | None]:
        own = self.pp.plan
        self.pp.first_action = len(plan.actions)
        plan.actions.extend(own.actions)
        plan.notes.extend(own.notes)
        self.pp.plan = plan
        return self.pp, self.end, self.new_rp


def plan_partition_alone(
    mode: str, p: PartitionScan, checkpoints: Checkpoints, root: str, *, render: bool = False
) -> PartitionShare | None:
    """`scan_path`'s step for a repair in `mode` (not heal): the partition's plan, made where it
    was scanned (None for a partition every mode leaves alone: `make_plan` notes it), and the
    output of its actions and loss made there too (`render`: their JSON, else their lines)."""
    if p.left_alone is not None:
        return None
    pp, end, new_rp = _plan_partition(p, Plan(mode, root), _can_checkpoint(True, checkpoints))
    pp.txn_replay = None  # the replay's working state (and its Disk) stays in the worker
    share = PartitionShare(pp, end, new_rp, loss_alone(pp, end, new_rp, checkpoints))
    pp.plan.render(as_json=render)
    share.loss.loss.prerender(render)
    return share


def _start(scan: LogDirScan, plan: Plan) -> None:
    """What the plan says and does first for the log dir as a whole."""
    if scan.clean_shutdown_marker:
        plan.notes.append(
            "found .kafka_cleanshutdown: reported, not trusted; the logs are checked as after an "
            "unclean shutdown"
        )
    for f in scan.findings:
        if f.kind == "checkpoint_malformed" and f.file in MALFORMED_REWRITE:
            # what Kafka does with it is the finding's own explanation (one per kind, the scan's)
            plan.notes.append(f"{f.file}: {f.detail}. Here: {MALFORMED_REWRITE[f.file](plan.mode)}")
    # Before any checkpoint rewrite: writing `<name>` goes through `<name>.tmp`, which must be
    # in quarantine by then.
    for f in scan.findings:
        if f.kind == "tmp_leftover":
            plan.actions.append(
                Action("delete", f.file, "leftover of an interrupted checkpoint write")
            )
    if not scan.is_log_dir and plan.mode == "kafka":
        plan.notes.append("a partition dir on its own: recovered whole (recovery point 0)")


def _left_alone(plan: Plan, p: PartitionScan) -> bool:
    """A partition no mode touches (a symlink or special file in it), noted. (A dir whose name
    Kafka could not have made is no partition: the scan calls it a stray directory.)"""
    if p.left_alone is not None:
        plan.notes.append(f"{printable(p.rel or p.path)}: left as it is: {p.left_alone}")
        return True
    return False


def _plan_partition(
    p: PartitionScan, plan: Plan, can_checkpoint: bool, heal: HealSource | None = None
) -> tuple[PartitionPlan, int, int | None]:
    """One partition: leftovers, the mode's cuts, the rest brought in line, the flush. Returns
    its plan, its log end as checkpoints are held to, and its new recovery point (None:
    unchanged)."""
    mode = plan.mode
    first_action = len(plan.actions)
    pp = start_partition(p, plan)
    rp = p.recovery_point if p.recovery_point is not None else 0
    if mode == "kafka":
        if p.dir_kind == "delete":
            plan.notes.append(f"{p.rel or p.path}: marked for deletion; Kafka does not recover it")
            epochs_from = None
        else:
            epochs_from = kafka.plan_partition(pp, rp)
    elif mode == "point-in-time":
        epochs_from = point_in_time.plan_partition(pp)
    elif heal is not None:
        epochs_from = heal.plan_partition(pp)
    else:
        epochs_from = salvage.plan_partition(pp)
    if mode != "kafka":
        pp.start_from_data()
    finish_partition(pp, epochs_from=epochs_from, mode=mode)
    kraft.note_metadata_log_start(pp)
    # Where kafka mode leaves offsets going back, Kafka's log end (after the last batch) and
    # verify's (after the last batch in order) differ: checkpoints are held to the lower one,
    # the safe side (more recovery, a lower high watermark).
    end = min(pp.log_end_offset, pp.verified_end_offset)
    changed = len(plan.actions) > first_action
    return pp, end, plan_flush(pp, rp, end, changed and can_checkpoint)
