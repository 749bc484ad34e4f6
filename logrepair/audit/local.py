"""`logrepair audit PATH...` on one machine: discovery, scan, checks, in one process.

The stages are the same functions the Spark audit distributes (discovery.py, segments.py,
checks.py, fleet.py); only the loop that runs them is here, and with `--jobs` it runs each
partition's scan and checks in worker processes (`logrepair.pool`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..pool import Mapper, serial
from ..storage.disk import Disk
from ..storage.layout import DirKind
from ..storage.osdisk import OsDisk
from .checks import PartitionResult, audit_partition
from .discovery import PartitionDir, discover_log_dirs, plan_partition
from .fleet import build_report, compare_replicas, latest_commits, replica_groups
from .model import AuditReport, PartitionPlan
from .segments import summarize_segment

DEFAULT_RECOVERY_RATE = 100 * 2**20
"""Bytes per second one recovery thread re-reads at an unclean start (`--recovery-rate`).

A conservative figure for Kafka's LogSegment.recover on one thread (CRC, index rebuild and producer
state per batch; `num.recovery.threads.per.data.dir` defaults to 1); measure your own brokers'
`Recovering unflushed segment` log lines to replace it."""


def audit_paths(
    paths: list[str],
    *,
    recovery_rate: int = DEFAULT_RECOVERY_RATE,
    disk: Disk | None = None,
    partitions: Mapper | None = None,
) -> AuditReport:
    """The audit of `paths`: discovery here, then each partition's scan and checks through
    `partitions` (`logrepair.pool` spreads them over worker processes; None: one after the other
    here), then the fleet-wide checks here, in partition order."""
    disk = disk or OsDisk()
    found = discover_log_dirs(disk, paths)
    replicated = _replicated([d for _, dirs in found for d in dirs])
    work = [
        PartitionWork(d, plan.broker, plan.clean_shutdown, _tp(d) in replicated)
        for plan, dirs in found
        for d in dirs
    ]
    owners = [plan for plan, dirs in found for _ in dirs]
    results: list[PartitionResult] = []
    for plan, (partition, result) in zip(
        owners, (partitions or serial)(audit_one, disk, work), strict=True
    ):
        plan.partitions.append(partition)
        results.append(result)
    plans = [plan for plan, _ in found]
    replicas = [compare_replicas(group) for group in replica_groups(results).values()]
    return build_report(
        plans,
        [r.audit for r in results],
        replicas,
        latest_commits(results),
        recovery_rate=recovery_rate,
    )


@dataclass(frozen=True, slots=True)
class PartitionWork:
    """One partition dir to audit, with what its log dir says about it."""

    dir: PartitionDir
    broker: str
    clean_shutdown: bool
    replicated: bool
    """Its topic-partition is live under another log dir too: the replica comparison needs its
    batch digests."""


def audit_one(disk: Disk, work: PartitionWork) -> tuple[PartitionPlan, PartitionResult]:
    """One partition dir listed, scanned and checked (in a worker process, or here). Its batch
    digests (32 bytes a batch) are not even collected unless a replica comparison needs them, so
    memory, and what comes back, is small whatever the partition holds."""
    plan = plan_partition(disk, work.dir)
    rp = plan.recovery_point or 0
    summaries = [
        summarize_segment(disk, task, digests=work.replicated, recovery_point=rp)
        for task in plan.segments
    ]
    result = audit_partition(
        plan, summaries, broker=work.broker, clean_shutdown=work.clean_shutdown
    )
    return plan, result


def _tp(d: PartitionDir) -> tuple[str, int]:
    return d.parsed.topic_partition.topic, d.parsed.topic_partition.partition


def _replicated(dirs: list[PartitionDir]) -> set[tuple[str, int]]:
    """The topic-partitions live under more than one log dir (`replica_groups`' rule)."""
    seen = Counter(_tp(d) for d in dirs if d.parsed.kind is DirKind.LIVE)
    return {tp for tp, n in seen.items() if n > 1}
