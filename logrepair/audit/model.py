"""What the audit passes between its stages, as plain picklable data.

Discovery (on the driver) makes `LogDirPlan`s holding `SegmentTask`s; scanning a task (locally or on
a Spark executor) makes a `SegmentSummary`; the checks turn plans and summaries into the report
types at the bottom, whose `to_json` is the audit contract of design.md. Keeping every stage plain
data is what lets the single-machine audit and the Spark audit run the same functions and agree.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from ..recovery.defects import severity


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    detail: str

    @property
    def notice(self) -> bool:
        """Not damage (design: severity): reported, but the audit stays clean."""
        return severity(self.kind) == "notice"

    def to_json(self) -> dict:
        return {"kind": self.kind, "detail": self.detail, "severity": severity(self.kind)}


@dataclass(frozen=True, slots=True)
class SegmentTask:
    """One `.log` file to scan. `index` orders the segments of a partition (by base offset)."""

    log_dir: str
    partition_dir: str
    topic: str
    partition: int
    file: str
    base_offset: int
    size: int
    index: int
    consumer_offsets: bool = False


@dataclass(slots=True)
class BatchDigests:
    """Per valid batch: base offset, last offset, CRC, file position and size, in file order.

    Kept as int64 arrays (32 bytes a batch) rather than objects: they are the bulk of what a Spark
    task sends back, and all the cross-replica comparison needs."""

    base: array = field(default_factory=lambda: array("q"))
    last: array = field(default_factory=lambda: array("q"))
    crc: array = field(default_factory=lambda: array("q"))
    position: array = field(default_factory=lambda: array("q"))

    def add(self, base: int, last: int, crc: int, position: int) -> None:
        self.base.append(base)
        self.last.append(last)
        self.crc.append(crc)
        self.position.append(position)

    def __len__(self) -> int:
        return len(self.base)


@dataclass(slots=True)
class BatchDetails:
    """Per valid batch, beside its digest: size, partition leader epoch, max timestamp and producer
    id (-1 where a legacy entry has none, as in Kafka). Only the scan summaries keep them."""

    size: array = field(default_factory=lambda: array("q"))
    leader_epoch: array = field(default_factory=lambda: array("q"))
    max_timestamp: array = field(default_factory=lambda: array("q"))
    producer_id: array = field(default_factory=lambda: array("q"))


# A committed offset as the audit keeps it: (group, topic, partition) → (offset of the commit
# record, committed offset or None for a tombstone). The record with the highest offset wins, as
# when the group coordinator loads the log, so per-segment maps merge in any order.
CommitKey = tuple[str, str, int]
Commit = tuple[int, int | None]
PendingCommit = tuple[CommitKey, int, int | None]


@dataclass(slots=True)
class SegmentSummary:
    """What one scan of one `.log` found: valid batches, defects, epochs, consumer commits."""

    task: SegmentTask
    batches: int = 0
    valid_end: int = 0
    """Where the last valid batch ends: what follows is damage or a tail Kafka never parses."""
    first_offset: int | None = None
    next_offset: int | None = None
    defects: list[dict] = field(default_factory=list)
    digests: BatchDigests = field(default_factory=BatchDigests)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    """(partition leader epoch, base offset of the first batch carrying it), in the order seen."""
    commits: dict[CommitKey, Commit] = field(default_factory=dict)
    """Non-transactional commits, and transactional ones whose COMMIT marker is in this segment."""
    open_transactions: dict[int, list[PendingCommit]] = field(default_factory=dict)
    """Producer id → transactional commits still without a marker at the end of the segment."""
    transaction_ends: dict[int, bool] = field(default_factory=dict)
    """Producer id → committed? of its first marker here: it ends a transaction that an earlier
    segment left open, if any."""
    scan_error: str | None = None
    """An I/O error that stopped the scan (the file vanished or became unreadable)."""
    details: BatchDetails | None = None
    """Filled when the scan is asked for them (the scan summaries)."""
    recovery_cut: tuple[int, int] | None = None
    """(recovery point, position of the first valid batch reaching it), when the scan was given
    the recovery point: where the unflushed bytes start, without the digests."""


@dataclass(slots=True)
class PartitionPlan:
    """A partition directory and what the log dir's checkpoints say about it."""

    log_dir: str
    path: str
    topic: str
    partition: int
    state: str  # live | delete | future | stray
    recovery_point: int | None = None
    log_start_checkpoint: int | None = None
    high_watermark: int | None = None
    cleaner_offset: int | None = None
    leader_epochs: list[tuple[int, int]] | None = None
    """leader-epoch-checkpoint entries, None when the file is missing or malformed."""
    leader_epochs_malformed: bool = False
    findings: list[Finding] = field(default_factory=list)
    segments: list[SegmentTask] = field(default_factory=list)


@dataclass(slots=True)
class MetaProperties:
    version: int | None = None
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: str | None = None


@dataclass(slots=True)
class LogDirPlan:
    """A broker's log dir: root files read, partition dirs listed, segments to scan."""

    path: str
    broker: str
    clean_shutdown: bool
    meta: MetaProperties | None = None
    findings: list[Finding] = field(default_factory=list)
    partitions: list[PartitionPlan] = field(default_factory=list)
    checkpoints: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    """The root offset checkpoints as read (file name → topic-partition → offset)."""


# --- the report ------------------------------------------------------------------------------


@dataclass(slots=True)
class PartitionAudit:
    path: str
    log_dir: str
    broker: str
    topic: str
    partition: int
    state: str
    log_start_offset: int
    log_end_offset: int
    recovery_point: int | None
    high_watermark: int | None
    unflushed_bytes: int
    recovery_bytes: int
    segments: int
    bytes: int
    batches: int
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "log_dir": self.log_dir,
            "broker": self.broker,
            "topic": self.topic,
            "partition": self.partition,
            "state": self.state,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "recovery_point": self.recovery_point,
            "high_watermark": self.high_watermark,
            "unflushed_bytes": self.unflushed_bytes,
            "recovery_bytes": self.recovery_bytes,
            "segments": self.segments,
            "bytes": self.bytes,
            "batches": self.batches,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(slots=True)
class ReplicaAudit:
    topic: str
    partition: int
    paths: list[str]
    brokers: list[str]
    log_end_offsets: list[int]
    high_watermarks: list[int | None]
    diverged_at: int | None
    diverged_paths: list[str]
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "paths": self.paths,
            "brokers": self.brokers,
            "log_end_offsets": self.log_end_offsets,
            "high_watermarks": self.high_watermarks,
            "diverged_at": self.diverged_at,
            "diverged_paths": self.diverged_paths,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(slots=True)
class LogDirAudit:
    path: str
    broker: str
    cluster_id: str | None
    node_id: int | None
    clean_shutdown: bool
    partitions: int
    unflushed_bytes: int
    recovery_bytes: int
    recovery_seconds: float
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "broker": self.broker,
            "cluster_id": self.cluster_id,
            "node_id": self.node_id,
            "clean_shutdown": self.clean_shutdown,
            "partitions": self.partitions,
            "unflushed_bytes": self.unflushed_bytes,
            "recovery_bytes": self.recovery_bytes,
            "recovery_seconds": self.recovery_seconds,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(slots=True)
class ConsumerOffsetAudit:
    """The latest commit of a (group, topic, partition), held against that partition's offsets."""

    group: str
    topic: str
    partition: int
    offset: int
    log_start_offset: int | None
    log_end_offset: int | None
    source: str
    """The `__consumer_offsets` partition dir the commit was read from."""
    status: str  # ok | beyond_end | below_start | unknown_partition

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "source": self.source,
            "status": self.status,
        }


@dataclass(slots=True)
class AuditReport:
    log_dirs: list[LogDirAudit]
    partitions: list[PartitionAudit]
    replicas: list[ReplicaAudit]
    consumer_offsets: list[ConsumerOffsetAudit]
    findings: list[Finding]
    """Fleet-level findings (meta.properties across log dirs and brokers)."""
    recovery_rate: int
    """Bytes per second the recovery-time estimate assumes."""

    @property
    def clean(self) -> bool:
        """No damage anywhere (notices do not count)."""
        return all(f.notice for _, _, f in self.all_findings())

    def all_findings(self) -> list[tuple[str, str, Finding]]:
        """Every finding as (scope, where, finding): for the table, the HTML report and Parquet."""
        out = [("fleet", "", f) for f in self.findings]
        out += [("log_dir", d.path, f) for d in self.log_dirs for f in d.findings]
        out += [("partition", p.path, f) for p in self.partitions for f in p.findings]
        out += [
            ("replicas", f"{r.topic}-{r.partition}", f) for r in self.replicas for f in r.findings
        ]
        return out

    def to_json(self) -> dict:
        return {
            "clean": self.clean,
            "recovery_rate": self.recovery_rate,
            "findings": [f.to_json() for f in self.findings],
            "log_dirs": [d.to_json() for d in self.log_dirs],
            "partitions": [p.to_json() for p in self.partitions],
            "replicas": [r.to_json() for r in self.replicas],
            "consumer_offsets": [c.to_json() for c in self.consumer_offsets],
        }
