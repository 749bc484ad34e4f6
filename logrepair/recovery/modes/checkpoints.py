"""The log dir's root checkpoints, rewritten where they are malformed or out of bounds."""

from __future__ import annotations

from ...storage import layout
from ...storage.checkpoints import format_offsets
from ...storage.layout import TopicPartition
from ..plan import Action, Plan
from ..scan import LogDirScan
from ..state_checks import Checkpoints


def bounded_entry(name: str, value: int, lso: int, leo: int) -> int:
    """A partition's entry in root checkpoint `name` held to its repaired log's offsets."""
    if name == layout.RECOVERY_POINT_CHECKPOINT:
        return min(value, leo)
    if name == layout.REPLICATION_CHECKPOINT:
        return min(max(value, lso), leo)
    if name == layout.LOG_START_OFFSET_CHECKPOINT:
        # past the end: kafka mode's log now ends there; the others fixed it from the data
        return value if value <= leo else min(lso, leo)
    return value


def entry_after(
    ck: Checkpoints,
    name: str,
    tp: TopicPartition,
    before: int | None,
    bounds: tuple[int, int],
    flushed: int | None,
) -> int | None:
    """A partition's entry in the recovery-point or replication checkpoint as `plan_checkpoints`
    leaves it, seen from the partition alone (its entry `before`, its repaired `bounds`, its new
    recovery point if the repair flushes it): None in a file written empty, `before` with no
    file. (`plan_checkpoints` sees every partition: the two agree unless two dirs hold one
    topic-partition, which `plan_losses` checks.)"""
    if name in ck.malformed:
        return None
    current = ck.recovery_points if name == layout.RECOVERY_POINT_CHECKPOINT else ck.high_watermarks
    if current is None:
        return before
    if name == layout.RECOVERY_POINT_CHECKPOINT and flushed is not None:
        return flushed
    value = current.get(tp)
    return None if value is None else bounded_entry(name, value, *bounds)


def plan_checkpoints(
    scan: LogDirScan, plan: Plan, ends: dict, flushed: dict
) -> dict[str, dict[TopicPartition, int] | None]:
    """Rewrites root checkpoints that are malformed or out of bounds after the repair; returns
    each checkpoint's entries as the repair leaves them (None: no such file).

    `ends` maps each partition's TopicPartition to (log start offset, log end offset) as repaired;
    `flushed` maps each partition the repair changed and flushed to its new recovery point."""
    after: dict[str, dict[TopicPartition, int] | None] = {}
    if not scan.is_log_dir:
        return after
    ck = scan.checkpoints
    for name, current in (
        (layout.RECOVERY_POINT_CHECKPOINT, ck.recovery_points),
        (layout.REPLICATION_CHECKPOINT, ck.high_watermarks),
        (layout.LOG_START_OFFSET_CHECKPOINT, ck.log_start_offsets),
        (layout.CLEANER_CHECKPOINT, ck.cleaner_offsets),
    ):
        if name in ck.malformed:
            plan.actions.append(
                Action(
                    "write_file",
                    name,
                    "malformed (checkpoint_malformed): written empty, so each partition takes "
                    "Kafka's default for a missing entry",
                    content=format_offsets({}),
                )
            )
            after[name] = {}
            continue
        after[name] = current
        if current is None:
            continue
        new = dict(current)
        for tp, value in current.items():
            if tp in ends:
                new[tp] = bounded_entry(name, value, *ends[tp])
        reason = "offsets within the repaired logs"
        if name == layout.RECOVERY_POINT_CHECKPOINT and flushed:
            new.update(flushed)
            reason = "the log ends of the partitions the repair changed and flushed"
        after[name] = new
        if new != current:
            changed = sorted(str(tp) for tp in new if new[tp] != current.get(tp))
            plan.actions.append(
                Action(
                    "write_file",
                    name,
                    f"{reason} ({', '.join(changed)})",
                    content=format_offsets(new),
                )
            )
    return after
