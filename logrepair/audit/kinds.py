"""The finding kinds only the audit reports, beside the scan's defect kinds.

An audit finding is either a defect kind from `logrepair.recovery.defects` (the scanner's, reused
as is: `crc_mismatch`, `recovery_point_beyond_end`, ...) or one of the kinds below, which hold the
state of a log dir against itself or against other replicas and brokers. The README table is made
by `kinds_markdown()`, so the documented list cannot drift from the code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AuditKind:
    name: str
    meaning: str


_KINDS = (
    AuditKind(
        "recovery_point_missing",
        "a partition with no entry in recovery-point-offset-checkpoint: an unclean start recovers "
        "all of it",
    ),
    AuditKind(
        "high_watermark_missing",
        "a partition with no entry in replication-offset-checkpoint: its high watermark restarts "
        "at the log start offset",
    ),
    AuditKind(
        "unreadable_segment",
        "a segment file the audit could not read (an I/O error, or it vanished during the scan)",
    ),
    AuditKind(
        "checkpoint_orphan_entry",
        "a checkpoint entry for a partition that has no directory in the log dir",
    ),
    AuditKind(
        "leader_epoch_mismatch",
        "leader-epoch-checkpoint disagrees with the partition leader epochs of the batches "
        "(an epoch missing, or starting at another offset)",
    ),
    AuditKind(
        "duplicate_partition_dir",
        "the same partition in two log dirs of one broker (Kafka refuses to start)",
    ),
    AuditKind(
        "consumer_offset_beyond_end",
        "a committed consumer offset past its partition's log end: that group will reset",
    ),
    AuditKind(
        "consumer_offset_below_start",
        "a committed consumer offset below its partition's log start: that group will reset",
    ),
    AuditKind(
        "meta_properties_malformed",
        "a meta.properties file that Kafka cannot read",
    ),
    AuditKind(
        "meta_properties_inconsistent",
        "log dirs or brokers that disagree on the cluster id, or brokers sharing a node id",
    ),
    AuditKind(
        "clean_shutdown_with_unflushed_data",
        "a clean-shutdown marker while data lies past the recovery point: the broker will trust "
        "bytes that were never flushed",
    ),
    AuditKind(
        "replica_diverged",
        "replicas of one partition hold different batches at the same offset",
    ),
    AuditKind(
        "replica_behind_high_watermark",
        "a replica whose log ends below another replica's high watermark (acknowledged data it "
        "does not have)",
    ),
    AuditKind(
        "replica_healable",
        "a damaged or missing range of one replica that another replica holds whole, with the "
        "same history: `logrepair repair --mode heal --replica` restores it with no loss",
    ),
)

KINDS: dict[str, AuditKind] = {k.name: k for k in _KINDS}


def kinds_markdown() -> str:
    """The README's table of audit-only finding kinds."""
    lines = ["| kind | meaning |", "| --- | --- |"]
    lines += [f"| `{k.name}` | {k.meaning} |" for k in _KINDS]
    return "\n".join(lines) + "\n"
