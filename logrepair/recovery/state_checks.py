"""The log dir's checkpoints and a partition's state files, read and held against its log.

Kafka reads these at startup (the root offset checkpoints, `leader-epoch-checkpoint`,
`partition.metadata`, producer snapshots); a file it cannot parse takes the log dir offline or
resets state, and an entry past the log end describes data that is gone. Each becomes a finding of
the file it is in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..storage import layout
from ..storage.checkpoints import MAX_CHECKPOINT_BYTES, CheckpointError, read_offsets
from ..storage.disk import Disk, join
from ..storage.layout import TopicPartition
from ..storage.leader_epoch import read_leader_epochs
from ..storage.partition_metadata import read_partition_metadata
from ..storage.producer_snapshot import CorruptSnapshotError, read_snapshot
from .findings import Finding

if TYPE_CHECKING:
    from .scan import LogDirScan, PartitionScan


@dataclass(slots=True)
class Checkpoints:
    """The log dir's offset checkpoints; a missing map means the file is missing or malformed."""

    recovery_points: dict[TopicPartition, int] | None = None
    log_start_offsets: dict[TopicPartition, int] | None = None
    high_watermarks: dict[TopicPartition, int] | None = None
    cleaner_offsets: dict[TopicPartition, int] | None = None
    malformed: dict[str, str] = field(default_factory=dict)
    """File name → Kafka's error, for each checkpoint that does not parse."""


def read_root_checkpoints(
    disk: Disk, root: str, names: list[str], findings: list[Finding]
) -> Checkpoints:
    out = Checkpoints()
    for name, attr in (
        (layout.RECOVERY_POINT_CHECKPOINT, "recovery_points"),
        (layout.LOG_START_OFFSET_CHECKPOINT, "log_start_offsets"),
        (layout.REPLICATION_CHECKPOINT, "high_watermarks"),
        (layout.CLEANER_CHECKPOINT, "cleaner_offsets"),
    ):
        if name not in names:
            continue
        try:
            offsets = read_offsets(disk, join(root, name), limit=MAX_CHECKPOINT_BYTES)
            setattr(out, attr, offsets)
        except CheckpointError as e:
            consequence = {
                "recovery_points": "Kafka resets every recovery point to 0",
                "log_start_offsets": "Kafka resets every log start to its first segment's base",
                "high_watermarks": "Kafka takes the log dir offline",
                "cleaner_offsets": "the log cleaner treats it as empty",
            }[attr]
            if e.structural and attr != "high_watermarks":
                consequence += " and takes the log dir offline"
            out.malformed[name] = str(e)
            findings.append(
                Finding("checkpoint_malformed", name, detail=f"{e.message}; {consequence}")
            )
    return out


def check_checkpoint_bounds(result: LogDirScan) -> None:
    ck = result.checkpoints
    for p in result.partitions:
        if p.left_alone is not None:
            continue  # a file of its log is not read: its log end is not known
        tp = p.tp
        leo = p.log_end_offset
        lso = p.log_start_offset
        rp = (ck.recovery_points or {}).get(tp)
        hw = (ck.high_watermarks or {}).get(tp)
        if rp is not None and rp > leo:
            result.findings.append(
                Finding(
                    "recovery_point_beyond_end",
                    layout.RECOVERY_POINT_CHECKPOINT,
                    offset=rp,
                    detail=f"{tp}: recovery point {rp} is past the log end {leo}",
                    partition=p.rel,
                )
            )
        if hw is not None and hw > leo:
            result.findings.append(
                Finding(
                    "high_watermark_beyond_end",
                    layout.REPLICATION_CHECKPOINT,
                    offset=hw,
                    detail=f"{tp}: high watermark {hw} is past the log end {leo}",
                    partition=p.rel,
                )
            )
        if p.log_start_checkpoint is not None and p.log_start_checkpoint > leo:
            result.findings.append(
                Finding(
                    "log_start_beyond_end",
                    layout.LOG_START_OFFSET_CHECKPOINT,
                    offset=p.log_start_checkpoint,
                    detail=f"{tp}: log start {p.log_start_checkpoint} is past the log end {leo}; "
                    "Kafka deletes every segment",
                    partition=p.rel,
                )
            )
        elif hw is not None and lso > hw and hw <= leo:
            result.findings.append(
                Finding(
                    "log_start_beyond_high_watermark",
                    layout.REPLICATION_CHECKPOINT,
                    offset=lso,
                    detail=f"{tp}: log start {lso} is past the high watermark {hw}",
                    partition=p.rel,
                )
            )


def check_partition_metadata(disk: Disk, path: str, p: PartitionScan, fname: str) -> None:
    try:
        read_partition_metadata(disk, path, limit=MAX_CHECKPOINT_BYTES)
    except CheckpointError as e:
        p.findings.append(
            Finding(
                "partition_metadata_malformed",
                p.file(fname),
                detail=f"{e.message}; Kafka takes the log dir offline",
            )
        )


def check_snapshots(disk: Disk, p: PartitionScan) -> None:
    """Corrupt snapshots, and snapshots past the log end (they describe data that is gone).

    Snapshots Kafka merely tidies at load (not at a segment base, at or below the log start) are
    normal on a healthy log and are not reported."""
    leo = p.log_end_offset
    for snap in p.snapshots:
        try:
            entries = read_snapshot(disk, join(p.path, snap.file))
            snap.entries = tuple(entries)
            late = [e for e in entries if e.last_offset >= snap.offset]
            if late:
                raise CorruptSnapshotError(
                    f"producer {late[0].producer_id} has last offset {late[0].last_offset}, at or "
                    f"past the snapshot's own offset {snap.offset}"
                )
        except CorruptSnapshotError as e:
            snap.corrupt = str(e)
            p.findings.append(
                Finding(
                    "producer_snapshot_corrupt",
                    p.file(snap.file),
                    offset=snap.offset,
                    detail=str(e),
                )
            )
            continue
        if snap.offset > leo and p.left_alone is None:
            p.findings.append(
                Finding(
                    "producer_snapshot_stray",
                    p.file(snap.file),
                    offset=snap.offset,
                    detail=f"snapshot {snap.offset} is past the log end {leo}; Kafka deletes it",
                )
            )


def load_leader_epochs(disk: Disk, path: str, p: PartitionScan) -> None:
    try:
        entries = read_leader_epochs(disk, path, limit=MAX_CHECKPOINT_BYTES)
        p.leader_epochs = [(e.epoch, e.start_offset) for e in entries]
    except CheckpointError as e:
        p.leader_epoch_malformed = e.message
        p.findings.append(
            Finding(
                "checkpoint_malformed",
                p.file(layout.LEADER_EPOCH_CHECKPOINT),
                detail=f"{e.message}; Kafka takes the log dir offline",
            )
        )


def check_leader_epochs(p: PartitionScan) -> None:
    if not p.leader_epochs:
        return
    file = p.file(layout.LEADER_EPOCH_CHECKPOINT)
    leo = p.log_end_offset
    prev: tuple[int, int] | None = None
    for epoch, start in p.leader_epochs:
        if epoch < 0 or start < 0 or (prev is not None and (epoch <= prev[0] or start < prev[1])):
            p.findings.append(
                Finding(
                    "leader_epoch_not_monotonic",
                    file,
                    offset=start,
                    detail=f"entry (epoch {epoch}, start {start}) after {prev}",
                )
            )
            break
        prev = (epoch, start)
    # An entry at the log end is what a leader election with nothing written since leaves.
    beyond = [(e, s) for e, s in p.leader_epochs if s > leo]
    if beyond and p.left_alone is None:
        p.findings.append(
            Finding(
                "leader_epoch_beyond_end",
                file,
                offset=beyond[0][1],
                detail=f"epochs {[e for e, _ in beyond]} start past the log end {leo}",
            )
        )
