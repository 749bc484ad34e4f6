"""The checks that span log dirs: replicas, consumer offsets, meta.properties, the report.

Pure functions over the per-partition results; both the local audit and the Spark audit call them
(Spark runs `compare_replicas` on executors, one task per topic-partition), so both build their
report through `build_report` and agree field for field.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .checks import PartitionResult
from .healable import healable_findings
from .model import (
    AuditReport,
    BatchDigests,
    CommitKey,
    ConsumerOffsetAudit,
    Finding,
    LogDirAudit,
    LogDirPlan,
    PartitionAudit,
    ReplicaAudit,
)

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"


def compare_replicas(replicas: list[PartitionResult]) -> ReplicaAudit:
    """Compares the replicas of one topic-partition batch by batch (offsets and CRC).

    The replica with the highest log end is the reference; each other replica diverges at the first
    offset where its batches differ from the reference's. Offsets below the highest cleaner
    checkpoint among them are skipped: each broker compacts its own replica, so cleaned batches
    legitimately differ."""
    cleaned_up_to = max(r.cleaner_offset or 0 for r in replicas)
    replicas = sorted(replicas, key=lambda r: (-r.audit.log_end_offset, r.audit.path))
    ref = replicas[0]
    diverged: dict[str, int] = {}
    for other in replicas[1:]:
        at = first_divergence(ref.digests, other.digests, cleaned_up_to)
        if at is not None:
            diverged[other.audit.path] = at
    ordered = sorted(replicas, key=lambda r: r.audit.path)
    audits = [r.audit for r in ordered]
    findings: list[Finding] = []
    for path, at in sorted(diverged.items(), key=lambda x: (x[1], x[0])):
        findings.append(
            Finding(
                "replica_diverged",
                f"{path} differs from {ref.audit.path} from offset {at} on",
            )
        )
    top_hw = max((a.high_watermark for a in audits if a.high_watermark is not None), default=None)
    if top_hw is not None:
        for a in audits:
            if a.log_end_offset < top_hw:
                findings.append(
                    Finding(
                        "replica_behind_high_watermark",
                        f"{a.path} ends at {a.log_end_offset}, below the high watermark {top_hw} "
                        "of another replica",
                    )
                )
    findings += healable_findings(ordered, set(diverged), top_hw, cleaned_up_to)
    return ReplicaAudit(
        topic=ref.audit.topic,
        partition=ref.audit.partition,
        paths=[a.path for a in audits],
        brokers=[a.broker for a in audits],
        log_end_offsets=[a.log_end_offset for a in audits],
        high_watermarks=[a.high_watermark for a in audits],
        diverged_at=min(diverged.values()) if diverged else None,
        diverged_paths=sorted(diverged),
        findings=findings,
    )


def first_divergence(a: BatchDigests, b: BatchDigests, from_offset: int = 0) -> int | None:
    """The first offset at which the batch sequences differ, comparing only where both hold data
    (a replica that merely ends earlier, or starts later after retention, has not diverged)."""
    if not len(a) or not len(b):
        return None
    start = max(a.base[0], b.base[0], from_offset)
    i = _first_at_or_after(a, start)
    j = _first_at_or_after(b, start)
    n, m = len(a), len(b)
    while i < n and j < m:
        # a batch one replica lacks (a hole: damage or a lost segment) is not a divergence
        if a.last[i] < b.base[j]:
            i += 1
            continue
        if b.last[j] < a.base[i]:
            j += 1
            continue
        if a.base[i] != b.base[j] or a.last[i] != b.last[j] or a.crc[i] != b.crc[j]:
            return max(start, min(a.base[i], b.base[j]))
        i += 1
        j += 1
    return None


def _first_at_or_after(d: BatchDigests, offset: int) -> int:
    lo, hi = 0, len(d)
    while lo < hi:  # first batch whose last offset reaches `offset`
        mid = (lo + hi) // 2
        if d.last[mid] < offset:
            lo = mid + 1
        else:
            hi = mid
    return lo


def latest_commits(results: Iterable[PartitionResult]) -> dict[CommitKey, tuple[int, str]]:
    """The committed offsets of every group, read from the most complete replica of each
    `__consumer_offsets` partition: (group, topic, partition) → (offset, source path)."""
    best: dict[int, PartitionResult] = {}
    for r in results:
        a = r.audit
        if a.topic != CONSUMER_OFFSETS_TOPIC or a.state != "live":
            continue
        held = best.get(a.partition)
        if held is None or (a.log_end_offset, held.audit.path) > (
            held.audit.log_end_offset,
            a.path,
        ):
            best[a.partition] = r
    out: dict[CommitKey, tuple[int, str]] = {}
    for partition in sorted(best):
        r = best[partition]
        for key, (_, offset) in sorted(r.commits.items(), key=lambda kv: kv[1][0]):
            if offset is None:
                out.pop(key, None)
            else:
                out[key] = (offset, r.audit.path)
    return out


def consumer_offset_audits(
    commits: dict[CommitKey, tuple[int, str]], partitions: list[PartitionAudit]
) -> tuple[list[ConsumerOffsetAudit], list[Finding]]:
    """Each commit against its partition: the lowest log start and highest log end among the live
    replicas audited (a finding only when every replica would make the group reset)."""
    bounds: dict[tuple[str, int], tuple[int, int]] = {}
    for p in partitions:
        if p.state != "live":
            continue
        key = (p.topic, p.partition)
        lo, hi = bounds.get(key, (p.log_start_offset, p.log_end_offset))
        bounds[key] = (min(lo, p.log_start_offset), max(hi, p.log_end_offset))
    audits: list[ConsumerOffsetAudit] = []
    findings: list[Finding] = []
    for (group, topic, partition), (offset, source) in sorted(commits.items()):
        lso, leo = bounds.get((topic, partition), (None, None))
        if lso is None or leo is None:
            status = "unknown_partition"
        elif offset > leo:
            status = "beyond_end"
            findings.append(
                Finding(
                    "consumer_offset_beyond_end",
                    f"group {group!r} committed {offset} for {topic}-{partition}, past its log "
                    f"end {leo}",
                )
            )
        elif offset < lso:
            status = "below_start"
            findings.append(
                Finding(
                    "consumer_offset_below_start",
                    f"group {group!r} committed {offset} for {topic}-{partition}, below its log "
                    f"start {lso}",
                )
            )
        else:
            status = "ok"
        audits.append(
            ConsumerOffsetAudit(group, topic, partition, offset, lso, leo, source, status)
        )
    return audits, findings


def meta_findings(plans: list[LogDirPlan]) -> list[Finding]:
    """One cluster id across every log dir; one node id per broker; no node id on two brokers;
    no directory id on two log dirs."""
    out: list[Finding] = []
    clusters: dict[str, list[str]] = defaultdict(list)
    nodes_of_broker: dict[str, set[int]] = defaultdict(set)
    for p in plans:
        if p.meta is None:
            continue
        if p.meta.cluster_id is not None:
            clusters[p.meta.cluster_id].append(p.path)
        if p.meta.node_id is not None:
            nodes_of_broker[p.broker].add(p.meta.node_id)
    if len(clusters) > 1:
        listing = "; ".join(f"{cid}: {', '.join(paths)}" for cid, paths in sorted(clusters.items()))
        out.append(Finding("meta_properties_inconsistent", f"several cluster ids: {listing}"))
    dirs_of_id: dict[str, list[str]] = defaultdict(list)
    for p in plans:
        if p.meta is not None and p.meta.directory_id is not None:
            dirs_of_id[p.meta.directory_id].append(p.path)
    for directory_id, paths in sorted(dirs_of_id.items()):
        if len(paths) > 1:
            out.append(
                Finding(
                    "meta_properties_inconsistent",
                    f"directory id {directory_id} is in {', '.join(paths)}",
                )
            )
    brokers_of_node: dict[int, list[str]] = defaultdict(list)
    for broker, nodes in sorted(nodes_of_broker.items()):
        if len(nodes) > 1:
            out.append(
                Finding(
                    "meta_properties_inconsistent",
                    f"broker {broker} has log dirs with node ids {sorted(nodes)}",
                )
            )
        for node in nodes:
            brokers_of_node[node].append(broker)
    for node, brokers in sorted(brokers_of_node.items()):
        if len(brokers) > 1:
            out.append(
                Finding(
                    "meta_properties_inconsistent",
                    f"node id {node} is used by brokers {', '.join(brokers)}",
                )
            )
    return out


def duplicate_findings(partitions: list[PartitionAudit]) -> list[Finding]:
    """The same partition live in two log dirs of one broker: Kafka refuses to start."""
    seen: dict[tuple[str, str, int], list[str]] = defaultdict(list)
    for p in partitions:
        if p.state == "live":
            seen[(p.broker, p.topic, p.partition)].append(p.path)
    return [
        Finding(
            "duplicate_partition_dir",
            f"broker {broker} holds {topic}-{partition} in {' and '.join(paths)}",
        )
        for (broker, topic, partition), paths in sorted(seen.items())
        if len(paths) > 1
    ]


def build_report(
    plans: list[LogDirPlan],
    partitions: list[PartitionAudit],
    replicas: list[ReplicaAudit],
    commits: dict[CommitKey, tuple[int, str]],
    *,
    recovery_rate: int,
) -> AuditReport:
    partitions = sorted(partitions, key=lambda p: (p.log_dir, p.path))
    replicas = sorted(replicas, key=lambda r: (r.topic, r.partition))
    offsets, offset_findings = consumer_offset_audits(commits, partitions)
    by_dir: dict[str, list[PartitionAudit]] = defaultdict(list)
    for p in partitions:
        by_dir[p.log_dir].append(p)
    log_dirs = []
    for d in sorted(plans, key=lambda d: d.path):
        mine = [p for p in by_dir[d.path] if p.state != "delete"]
        recovery = sum(p.recovery_bytes for p in mine)
        log_dirs.append(
            LogDirAudit(
                path=d.path,
                broker=d.broker,
                cluster_id=d.meta.cluster_id if d.meta else None,
                node_id=d.meta.node_id if d.meta else None,
                clean_shutdown=d.clean_shutdown,
                partitions=len(by_dir[d.path]),
                unflushed_bytes=sum(p.unflushed_bytes for p in mine),
                recovery_bytes=recovery,
                recovery_seconds=0.0 if d.clean_shutdown else recovery / recovery_rate,
                findings=list(d.findings),
            )
        )
    findings = meta_findings(plans) + duplicate_findings(partitions) + offset_findings
    return AuditReport(log_dirs, partitions, replicas, offsets, findings, recovery_rate)


def replica_groups(
    results: Iterable[PartitionResult],
) -> dict[tuple[str, int], list[PartitionResult]]:
    """Live partitions found under more than one log dir, by topic-partition."""
    groups: dict[tuple[str, int], list[PartitionResult]] = defaultdict(list)
    for r in results:
        if r.audit.state == "live":
            groups[(r.audit.topic, r.audit.partition)].append(r)
    return {k: v for k, v in groups.items() if len(v) > 1}
