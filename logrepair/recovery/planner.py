"""Scan + mode → plan: the decisions of a repair, made before anything is touched."""

from __future__ import annotations

from ..storage import layout
from ..storage.layout import printable
from .modes import kafka, point_in_time, salvage
from .modes.checkpoints import plan_checkpoints
from .modes.finish import finish_partition
from .modes.flush import plan_flush
from .modes.leftovers import start_partition
from .modes.resolution import left_json, unresolved
from .plan import Action, Plan
from .scan import LogDirScan

MODES = ("kafka", "point-in-time", "salvage")


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
    if mode == "kafka" and layout.RECOVERY_POINT_CHECKPOINT in ck.malformed:
        plan.notes.append(
            "recovery-point-offset-checkpoint is malformed: Kafka resets every recovery point to "
            "0 and takes the log dir offline; here every partition is recovered from 0 and the "
            "file is rewritten empty"
        )
    if layout.REPLICATION_CHECKPOINT in ck.malformed:
        plan.notes.append(
            "replication-offset-checkpoint is malformed: Kafka takes the log dir offline; here it "
            "is rewritten empty, so each high watermark starts at the log start offset"
        )
    # Before any checkpoint rewrite: writing `<name>` goes through `<name>.tmp`, which must be
    # in quarantine by then.
    for f in scan.findings:
        if f.kind == "tmp_leftover":
            plan.actions.append(
                Action("delete", f.file, "leftover of an interrupted checkpoint write")
            )
    if not scan.is_log_dir and mode == "kafka":
        plan.notes.append("a partition dir on its own: recovered whole (recovery point 0)")
    partition_plans = []
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
        finish_partition(pp, epochs_from=epochs_from, mode=mode)
        # Where kafka mode leaves offsets going back, Kafka's log end (after the last batch) and
        # verify's (after the last batch in order) differ: checkpoints are held to the lower one,
        # the safe side (more recovery, a lower high watermark).
        end = min(pp.log_end_offset, pp.verified_end_offset)
        changed = len(plan.actions) > first_action
        new_rp = plan_flush(pp, rp, end, changed and can_checkpoint)
        if new_rp is not None:
            flushed[p.tp] = new_rp
        first_base = pp.segs[0].base if pp.segs else 0
        ends[p.tp] = (max(p.log_start_checkpoint or 0, first_base), end)
        partition_plans.append(pp)
    plan_checkpoints(scan, plan, ends, flushed)
    plan.left = left_json(unresolved(scan, plan, partition_plans), mode)
    return plan


def fixing_modes(scan: LogDirScan) -> dict[int, list[str]]:
    """For each finding (by id), the modes whose plan for this scan removes it.

    Exact for this log dir: `kafka` fixes a corrupt batch only at or after the recovery point."""
    out: dict[int, list[str]] = {id(f): [] for f in scan.all_findings()}
    for mode in MODES:
        plan = make_plan(scan, mode)
        left = {(f["kind"], f["file"], f["position"], f["offset"]) for f in plan.left}
        for f in scan.all_findings():
            if (f.kind, printable(f.file), f.position, f.offset) not in left:
                out[id(f)].append(mode)
    return out
