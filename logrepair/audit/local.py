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
from ..storage.osdisk import OsDisk
from .checks import PartitionResult, audit_partition
from .discovery import discover
from .fleet import build_report, compare_replicas, latest_commits, replica_groups
from .model import AuditReport, BatchDigests, LogDirPlan, PartitionPlan
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
    plans = discover(disk, paths)
    replicated = _replicated(plans)
    work = [
        PartitionWork(p, d.broker, d.clean_shutdown, (p.topic, p.partition) in replicated)
        for d in plans
        for p in d.partitions
    ]
    results = list((partitions or serial)(audit_one, disk, work))
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
    """One partition to audit, with what its log dir says about it."""

    plan: PartitionPlan
    broker: str
    clean_shutdown: bool
    replicated: bool
    """Its topic-partition is live under another log dir too: the replica comparison needs its
    batch digests."""


def audit_one(disk: Disk, work: PartitionWork) -> PartitionResult:
    """One partition scanned and checked (in a worker process, or here). Its batch digests (32
    bytes a batch) are kept only where a replica comparison needs them, so what comes back is
    small whatever the partition holds."""
    summaries = [summarize_segment(disk, task) for task in work.plan.segments]
    result = audit_partition(
        work.plan, summaries, broker=work.broker, clean_shutdown=work.clean_shutdown
    )
    if not work.replicated:
        result.digests = BatchDigests()
    return result


def _replicated(plans: list[LogDirPlan]) -> set[tuple[str, int]]:
    """The topic-partitions live under more than one log dir (`replica_groups`' rule)."""
    seen: Counter[tuple[str, int]] = Counter(
        (p.topic, p.partition) for d in plans for p in d.partitions if p.state == "live"
    )
    return {tp for tp, n in seen.items() if n > 1}
