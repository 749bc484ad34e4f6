"""`logrepair audit PATH...` on one machine: discovery, scan, checks, in one process.

The stages are the same functions the Spark audit distributes (discovery.py, segments.py,
checks.py, fleet.py); only the loop that runs them is here.
"""

from __future__ import annotations

from ..storage.disk import Disk
from ..storage.osdisk import OsDisk
from .checks import PartitionResult, audit_partition
from .discovery import discover
from .fleet import build_report, compare_replicas, latest_commits, replica_groups
from .model import AuditReport, LogDirPlan
from .segments import summarize_segment

DEFAULT_RECOVERY_RATE = 100 * 2**20
"""Bytes per second one recovery thread re-reads at an unclean start (`--recovery-rate`).

A conservative figure for Kafka's LogSegment.recover on one thread (CRC, index rebuild and producer
state per batch; `num.recovery.threads.per.data.dir` defaults to 1); measure your own brokers'
`Recovering unflushed segment` log lines to replace it."""


def audit_paths(
    paths: list[str], *, recovery_rate: int = DEFAULT_RECOVERY_RATE, disk: Disk | None = None
) -> AuditReport:
    disk = disk or OsDisk()
    plans = discover(disk, paths)
    compared = _replicated(plans)
    results: list[PartitionResult] = []
    for d in plans:
        for p in d.partitions:
            # batch digests only where there are replicas to compare: otherwise memory stays
            # the same for any number of batches
            keep = (p.topic, p.partition) in compared and p.state == "live"
            summaries = [
                summarize_segment(disk, task, digests=keep, recovery_point=p.recovery_point or 0)
                for task in p.segments
            ]
            results.append(
                audit_partition(p, summaries, broker=d.broker, clean_shutdown=d.clean_shutdown)
            )
    replicas = [compare_replicas(group) for group in replica_groups(results).values()]
    return build_report(
        plans,
        [r.audit for r in results],
        replicas,
        latest_commits(results),
        recovery_rate=recovery_rate,
    )


def _replicated(plans: list[LogDirPlan]) -> set[tuple[str, int]]:
    """The topic-partitions live under more than one log dir (`fleet.replica_groups`' groups)."""
    seen: set[tuple[str, int]] = set()
    twice: set[tuple[str, int]] = set()
    for d in plans:
        for p in d.partitions:
            if p.state == "live":
                key = (p.topic, p.partition)
                (twice if key in seen else seen).add(key)
    return twice
